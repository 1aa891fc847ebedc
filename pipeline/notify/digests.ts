/**
 * Storm control's sending side in the notify scheduler (`scheduler.ts`): one due digest
 * (`storm.ts` `ClaimedDigest`) sent, logged in the delivery log and finished, or rescheduled.
 * @module
 */
import { digestFacts } from "../../lib/alerting/storm.js";
import type { Logger } from "../../lib/logger.js";
import { CS_DELIVERY_EXHAUSTED, type Deliverer, type RetryPolicy, retryDelayMs } from "./deliver.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import type { SchedulerMetrics } from "./scheduler-metrics.js";
import type { ClaimedDigest, StormStore } from "./storm.js";

/** What {@link sendDigest} uses of its scheduler. */
export interface DigestContext {
  storm: StormStore;
  deliverer: Deliverer;
  deliveryLog: DeliveryLog;
  /** Attempts and backoff of a digest, as of a job. */
  retry: RetryPolicy;
  /** Clock, in ms since the epoch. */
  nowMs: () => number;
  /** Jitter source in [0, 1). */
  random: () => number;
  logger: Logger;
  metrics: SchedulerMetrics;
  /** The scheduler's counters; `digests` counts digests sent. */
  stats: { digests: number };
}

/**
 * Attempts one claimed digest: sent or refused, it is logged (`state: "digest"`) and finished; a
 * retryable failure is rescheduled by the retry policy's backoff until `retry.maxAttempts` tries,
 * then logged as `CS_DELIVERY_EXHAUSTED` and finished.
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
  if (r.ok || !r.retryable) {
    await record(r);
    await storm.finish(c);
    metrics.deliveries.inc({ channel, outcome: r.ok ? "digest" : "refused" });
    if (r.ok) stats.digests++;
    if (!r.ok) logger.warn({ ruleId: d.ruleId, digestId: d.id, code: r.code, err: r.error }, "notify: digest refused");
    return;
  }
  if (c.tries + 1 >= retry.maxAttempts) {
    await record({
      ...r,
      final: false,
      code: CS_DELIVERY_EXHAUSTED,
      error: `gave up after ${c.tries + 1} attempts; last: ${r.code} ${r.error ?? ""}`.trim(),
    });
    await storm.finish(c);
    metrics.deliveries.inc({ channel, outcome: "dead_lettered" });
    logger.warn({ ruleId: d.ruleId, digestId: d.id, code: r.code, err: r.error }, "notify: digest given up");
    return;
  }
  await storm.retry(c, now + retryDelayMs(c.tries + 1, retry, r.retryAfterMs, random));
}
