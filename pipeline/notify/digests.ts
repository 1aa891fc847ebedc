/**
 * Storm control's sending side in the notify scheduler (`scheduler.ts`): one due digest
 * (`storm.ts` `ClaimedDigest`) sent, logged in the delivery log and finished, rescheduled, or given
 * up — then every alert it held is dead-lettered like an exhausted job, so nothing is lost and
 * `chainsift alerts replay` can send it again.
 * @module
 */
import { type Digest, digestFacts, type HeldAlert } from "../../lib/alerting/storm.js";
import type { Logger } from "../../lib/logger.js";
import { type AttemptResult, CS_DELIVERY_EXHAUSTED, type Deliverer, type RetryPolicy, retryDelayMs } from "./deliver.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import type { DeadLetterItem } from "./queue.js";
import type { SchedulerMetrics } from "./scheduler-metrics.js";
import type { ClaimedDigest, StormStore } from "./storm.js";

/** What {@link sendDigest} uses of its scheduler. */
export interface DigestContext {
  storm: StormStore;
  deliverer: Deliverer;
  deliveryLog: DeliveryLog;
  /** Sends alerts to the dead-letter topic (the scheduler's `deadLetter`); rejects when Kafka fails. */
  deadLetter: (items: DeadLetterItem[]) => Promise<void>;
  /** Attempts and backoff of a digest, as of a job. */
  retry: RetryPolicy;
  /** Clock, in ms since the epoch. */
  nowMs: () => number;
  /** Jitter source in [0, 1). */
  random: () => number;
  logger: Logger;
  metrics: SchedulerMetrics;
  /** The scheduler's counters; `digests` counts digests sent, `deadLettered` held alerts dead-lettered. */
  stats: { digests: number; deadLettered: number };
}

/**
 * The dead letters of a digest given up: one per held alert that kept its source record (the
 * others, held before sources were kept, are returned apart). Each names the digest, its rule and
 * `why` (the stage prefixes the alert id and action index).
 */
export function digestDeadLetters(d: Digest, code: string, why: string): { items: DeadLetterItem[]; sourceless: HeldAlert[] } {
  const message = `in digest ${d.id} of rule ${d.ruleId} (window ${new Date(d.windowStartMs).toISOString()}, ${d.alerts.length} alerts), given up: ${why}`;
  const items: DeadLetterItem[] = [];
  const sourceless: HeldAlert[] = [];
  for (const a of d.alerts) {
    if (!a.source) {
      sourceless.push(a);
      continue;
    }
    const job = { id: `${a.alertId}:${d.actionIndex}`, alertId: a.alertId, ruleId: d.ruleId, actionIndex: d.actionIndex, source: a.source };
    items.push({ job, code, message });
  }
  return { items, sourceless };
}

/**
 * Attempts one claimed digest: sent (each held alert's action then marked delivered, as a job's
 * is) or refused for good, it is logged (`state: "digest"`) and finished; a retryable failure is rescheduled by the retry policy's backoff until
 * `retry.maxAttempts` tries, then given up with `CS_DELIVERY_EXHAUSTED`; a failure that is neither
 * retryable nor final (`CS_MAILER_UNCONFIGURED`) is given up at once with its code. Giving up
 * dead-letters every held alert (see {@link digestDeadLetters}), logs the digest and finishes it;
 * when the dead letters cannot be written (Kafka down) the digest is rescheduled instead.
 */
export async function sendDigest(ctx: DigestContext, c: ClaimedDigest): Promise<void> {
  const { storm, deliverer, deliveryLog, retry, nowMs, random, logger, metrics, stats } = ctx;
  const d = c.digest;
  const r = await deliverer.attemptDigest(d);
  const now = nowMs();
  const last = d.alerts[d.alerts.length - 1]!;
  const facts = digestFacts(d);
  const record = async (result: Parameters<typeof deliveryLogEntry>[3]) => {
    const entry = deliveryLogEntry(
      { id: d.id, sequence: last.sequence, status: last.status },
      d.action,
      d.actionIndex,
      { ...result, attempts: c.tries + result.attempts },
      new Date(now),
    );
    await deliveryLog.record(d.ruleId, { ...entry, state: "digest", digestCount: facts.count });
  };
  const channel = String(d.action?.type ?? "unknown");
  if (r.ok || (!r.retryable && r.final)) {
    // Delivered in the digest: the redelivery guard skips these actions when a replay (of a dead
    // letter of another action of the same alert) puts the alert back.
    if (r.ok) await Promise.all(d.alerts.map((a) => deliveryLog.markDelivered(a.alertId, d.actionIndex, new Date(now))));
    await record(r);
    await storm.finish(c);
    metrics.deliveries.inc({ channel, outcome: r.ok ? "digest" : "refused" });
    if (r.ok) stats.digests++;
    if (!r.ok) logger.warn({ ruleId: d.ruleId, digestId: d.id, code: r.code, err: r.error }, "notify: digest refused");
    return;
  }
  if (!r.retryable || c.tries + 1 >= retry.maxAttempts) {
    const code = r.retryable ? CS_DELIVERY_EXHAUSTED : (r.code ?? "CS_DELIVERY_FAILED");
    const why = r.retryable
      ? `gave up after ${c.tries + 1} attempts; last: ${r.code} ${r.error ?? ""}`.trim()
      : `${r.code} ${r.error ?? "not delivered"}`.trim();
    await giveUp(ctx, c, r, code, why, record);
    return;
  }
  await storm.retry(c, now + retryDelayMs(c.tries + 1, retry, r.retryAfterMs, random));
}

async function giveUp(
  ctx: DigestContext,
  c: ClaimedDigest,
  r: AttemptResult,
  code: string,
  why: string,
  record: (result: Parameters<typeof deliveryLogEntry>[3]) => Promise<void>,
): Promise<void> {
  const { storm, logger, metrics, stats } = ctx;
  const d = c.digest;
  const channel = String(d.action?.type ?? "unknown");
  const { items, sourceless } = digestDeadLetters(d, code, why);
  try {
    if (items.length > 0) await ctx.deadLetter(items);
  } catch (err) {
    logger.warn({ ruleId: d.ruleId, digestId: d.id, err }, "notify: cannot dead-letter the alerts of a given-up digest; retrying");
    await storm.retry(c, ctx.nowMs() + retryDelayMs(c.tries + 1, ctx.retry, undefined, ctx.random));
    return;
  }
  for (const _ of items) {
    metrics.deadLetters.inc({ code });
    metrics.deliveries.inc({ channel, outcome: "dead_lettered" });
    stats.deadLettered++;
  }
  if (sourceless.length > 0) {
    metrics.deliveries.inc({ channel, outcome: "given_up" }, sourceless.length);
    logger.error(
      { ruleId: d.ruleId, digestId: d.id, alertIds: sourceless.map((a) => a.alertId) },
      "notify: digest given up; these held alerts predate kept source records and cannot be dead-lettered (listed in the delivery log)",
    );
  }
  const fate = `${items.length} held alert(s) dead-lettered${sourceless.length ? `; ${sourceless.length} without a source record not (see their "throttled" entries)` : ""}`;
  await record({ ...r, final: false, code, error: `${why}; ${fate}` });
  await storm.finish(c);
  logger.warn({ ruleId: d.ruleId, digestId: d.id, code: r.code, err: r.error, deadLettered: items.length }, "notify: digest given up");
}
