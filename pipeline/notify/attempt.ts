/**
 * One attempt of a lane's head job in the notify scheduler (`scheduler.ts`) and its bookkeeping:
 * storm control's admission, the attempt, then the outcome — delivered, refused, dead-lettered, or
 * retried later ({@link nextAttemptDueMs}) — in the delivery log, the destination's health, the
 * queue and the metrics; and the dead-lettering of jobs whose budget ran out while their
 * destination was unhealthy ({@link expireLeading}).
 * @module
 */
import type { Alert } from "../../lib/alerting/alert.js";
import { alertFromAvro } from "../../lib/alerting/avro.js";
import { stormPolicyOf } from "../../lib/alerting/storm.js";
import type { Logger } from "../../lib/logger.js";
import { type AttemptResult, CS_DELIVERY_EXHAUSTED, type Deliverer, type RetryPolicy, retryDelayMs } from "./deliver.js";
import { afterFailure, afterSuccess, type DestinationHealth, type HealthPolicy } from "./health.js";
import type { Lease } from "./lease.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import type { DeadLetterItem, DeliveryJob, DeliveryQueue } from "./queue.js";
import type { SchedulerMetrics } from "./scheduler-metrics.js";
import { CS_THROTTLED, type StormStore } from "./storm.js";

/** A queued job's time budget ran out while its destination was unhealthy (it waited for a probe instead of being attempted). */
export const CS_DESTINATION_UNHEALTHY = "CS_DESTINATION_UNHEALTHY";

/** What an attempt uses of its scheduler (`scheduler.ts` `SchedulerDeps`, defaults applied). */
export interface AttemptContext {
  queue: DeliveryQueue;
  deliverer: Deliverer;
  deliveryLog: DeliveryLog;
  /** Sends alerts to the dead-letter topic; rejects when Kafka fails. */
  deadLetter: (items: DeadLetterItem[]) => Promise<void>;
  /** Storm control's state; undefined: every alert is sent one by one. */
  storm: StormStore | undefined;
  /** The retry budget and the destination health policy (`SchedulerOptions`). */
  options: { retry: RetryPolicy; health: HealthPolicy };
  /** Clock, in ms since the epoch. */
  nowMs: () => number;
  /** Uniform [0, 1). */
  random: () => number;
  logger: Logger;
  metrics: SchedulerMetrics;
  /** The scheduler's counters (`Scheduler.stats`). */
  stats: { delivered: number; refused: number; deadLettered: number; retried: number; throttled: number };
  /** A job's time budget from enqueueing, in ms (`SchedulerOptions.retryWindowMs` resolved). */
  windowMs: number;
}

/** The channel type of a job's action (a metrics label), `unknown` when it cannot be read. */
function channelOf(job: DeliveryJob): string {
  try {
    return String((JSON.parse(job.alert.actionsJson) as Array<{ type?: string }>)[job.actionIndex]?.type ?? "unknown");
  } catch {
    return "unknown";
  }
}

/** Publishes a destination's health in `chainsift_notify_destination_unhealthy`. */
export function noteHealth(run: AttemptContext, destination: string, h: DestinationHealth): void {
  run.metrics.unhealthy.set({ destination }, h.unhealthy ? 1 : 0);
}

/** A job to dead-letter: its code, message, attempts so far and last HTTP status, if any. */
interface DeadLetterJob {
  job: DeliveryJob;
  code: string;
  message: string;
  attempts: number;
  status?: number;
}

/**
 * Dead-letters jobs (after checking the lease): their alerts to the dead-letter topic, then one
 * delivery-log entry per job. Does not pop them from the queue.
 * @throws {LeaseLostError} when the lane's lease was taken over (nothing sent).
 */
async function deadLetterJobs(run: AttemptContext, lease: Lease, items: DeadLetterJob[]): Promise<void> {
  await lease.check();
  await run.deadLetter(items.map(({ job, code, message }) => ({ job, code, message })));
  const at = new Date(run.nowMs());
  for (const it of items) {
    const alert = alertFromAvro(it.job.alert);
    const action = alert.actions[it.job.actionIndex];
    await run.deliveryLog.record(
      it.job.ruleId,
      deliveryLogEntry(
        alert,
        action ?? ({} as never),
        it.job.actionIndex,
        {
          ok: false,
          attempts: it.attempts,
          final: false,
          code: it.code,
          error: it.message.slice(0, 300),
          ...(it.status === undefined ? {} : { status: it.status }),
        },
        at,
      ),
    );
    run.metrics.deadLetters.inc({ code: it.code });
    run.metrics.deliveries.inc({ channel: channelOf(it.job), outcome: "dead_lettered" });
    run.stats.deadLettered++;
  }
}

/**
 * Dead-letters the lane's leading jobs whose time budget ran out (its destination is unhealthy,
 * so they will not get an attempt in time). Returns the first job still due an attempt, if any.
 */
export async function expireLeading(
  run: AttemptContext,
  lane: string,
  lease: Lease,
  health: DestinationHealth,
): Promise<DeliveryJob | undefined> {
  for (;;) {
    const jobs = await run.queue.peek(lane, 100);
    const now = run.nowMs();
    const expired = [];
    for (const j of jobs) {
      if (j.deadlineAtMs > now) break;
      expired.push(j);
    }
    if (expired.length === 0) return jobs[0];
    const since = new Date(health.unhealthySinceMs || now).toISOString();
    await deadLetterJobs(
      run,
      lease,
      expired.map((job) => ({
        job,
        attempts: job.attempts,
        code: CS_DESTINATION_UNHEALTHY,
        message:
          `destination ${job.destination} unhealthy since ${since}; the ${run.windowMs} ms budget ran out while waiting for it to recover, after ${job.attempts} attempt(s) of this delivery (last: ${health.lastCode || job.lastCode || "?"} ${health.lastError || job.lastError || ""})`.trim(),
        ...(job.lastStatus === undefined ? {} : { status: job.lastStatus }),
      })),
    );
    await run.queue.pop(
      lane,
      lease.token,
      expired.map((j) => j.id),
      now,
      false,
    );
    if (expired.length < jobs.length) return jobs[expired.length];
  }
}
/**
 * Storm control's admission of a job not yet admitted: when its action's policy holds the alert
 * back for the window's digest, logs it as throttled, pops it and returns null; otherwise returns
 * the job marked admitted (a retry of it is not counted again), or the job as is without a policy.
 */
async function admitThroughStorm(run: AttemptContext, job: DeliveryJob, alert: Alert, lease: Lease): Promise<DeliveryJob | null> {
  const { storm } = run;
  const action = alert.actions[job.actionIndex];
  const policy = storm && !job.admitted ? stormPolicyOf(action) : null;
  if (!storm || !policy) return job;
  const now = run.nowMs();
  if ((await storm.admit(job.lane, job.actionIndex, alert, policy, now, job.source)) === "held") {
    const windowEnd = new Date((Math.floor(now / policy.windowMs) + 1) * policy.windowMs).toISOString();
    const entry = deliveryLogEntry(
      alert,
      action ?? ({} as never),
      job.actionIndex,
      {
        ok: false,
        attempts: 0,
        final: true,
        code: CS_THROTTLED,
        error: `held back by the action's ${policy.max > 0 ? `throttle (${policy.max} per ${policy.windowMs / 1000} s)` : "digest"}: in the digest sent after ${windowEnd}`,
      },
      new Date(now),
    );
    await run.deliveryLog.record(job.ruleId, { ...entry, state: "throttled" });
    await run.queue.pop(job.lane, lease.token, [job.id], now, true);
    run.metrics.deliveries.inc({ channel: channelOf(job), outcome: "throttled" });
    run.stats.throttled++;
    return null;
  }
  return { ...job, admitted: true };
}

/**
 * Attempts a lane's head job once (unless the delivery log says it was delivered, or storm control
 * holds it back), then books the outcome: delivered, refused, dead-lettered, or retried later.
 */
export async function attemptHead(run: AttemptContext, head: DeliveryJob, lease: Lease): Promise<void> {
  const alert = alertFromAvro(head.alert);
  const action = alert.actions[head.actionIndex];
  if (await run.deliveryLog.alreadyDelivered(head.alertId, head.actionIndex)) {
    await run.queue.pop(head.lane, lease.token, [head.id], run.nowMs(), true);
    return;
  }
  await lease.check();
  const job = await admitThroughStorm(run, head, alert, lease);
  if (!job) return;
  const r = await run.deliverer.attempt(alert, action ?? ({} as never), job.actionIndex);
  const attempts = job.attempts + r.attempts;
  const now = run.nowMs();
  run.metrics.attempts.inc({ outcome: r.ok ? "ok" : r.retryable ? "retryable" : "final" });
  const attempted: Attempted = { job, alert, r, attempts, now };
  if (r.ok) await bookDelivered(run, lease, attempted);
  else if (!r.retryable) await bookNotRetryable(run, lease, attempted);
  else await retryOrDeadLetter(run, lease, attempted);
}

/**
 * How stale a healthy destination's `lastSuccessAtMs` (the `lastSuccessAt` of the rules API's
 * `destinations`) may get, in ms: a success is written when the stored one is older than this.
 * Default 5000.
 */
export const SUCCESS_STAMP_EVERY_MS = 5_000;

/** An attempt made: the job (as attempted), its alert, the result, attempts in all so far, and when (ms). */
interface Attempted {
  job: DeliveryJob;
  alert: Alert;
  r: AttemptResult;
  attempts: number;
  now: number;
}

/**
 * A sent job: marked delivered and logged even when the lease was lost meanwhile (a fact; the new
 * holder then skips it), the destination's failure count reset, popped, and measured.
 */
async function bookDelivered(run: AttemptContext, lease: Lease, { job, alert, r, attempts, now }: Attempted): Promise<void> {
  const { queue, deliveryLog, metrics } = run;
  const action = alert.actions[job.actionIndex];
  const at = new Date(now);
  const channel = channelOf(job);
  await deliveryLog.markDelivered(job.alertId, job.actionIndex, at);
  await deliveryLog.record(job.ruleId, deliveryLogEntry(alert, action ?? ({} as never), job.actionIndex, { ...r, attempts }, at));
  const h = await queue.health(job.destination);
  // After failures the state must be reset now; otherwise only `lastSuccessAtMs` moves, and it is
  // written at most every SUCCESS_STAMP_EVERY_MS so a busy healthy destination costs no write per delivery.
  if (h.consecutiveFailures > 0 || h.unhealthy || now - h.lastSuccessAtMs >= SUCCESS_STAMP_EVERY_MS) {
    const next = afterSuccess(h, now);
    await queue.saveHealth(job.destination, next);
    noteHealth(run, job.destination, next);
    if (h.unhealthy) run.logger.info({ destination: job.destination }, "destination healthy again");
  }
  await queue.pop(job.lane, lease.token, [job.id], now, true);
  metrics.deliveries.inc({ channel, outcome: "delivered" });
  metrics.latency.observe({ channel }, Math.max(0, now - job.enqueuedAtMs) / 1000);
  // Records carry ISO 8601 UTC timestamps without a zone suffix (lib/records.ts).
  const blockAtMs = typeof alert.entity.timestamp === "string" ? Date.parse(`${alert.entity.timestamp}Z`) : Number.NaN;
  if (Number.isFinite(blockAtMs)) metrics.fromBlock.observe({ channel, status: alert.status }, Math.max(0, now - blockAtMs) / 1000);
  run.stats.delivered++;
}

/**
 * A failure not worth retrying: a final refusal (the destination said no) is logged and popped;
 * any other is dead-lettered with its code and popped.
 */
async function bookNotRetryable(run: AttemptContext, lease: Lease, { job, alert, r, attempts, now }: Attempted): Promise<void> {
  if (r.final) {
    const action = alert.actions[job.actionIndex];
    await lease.check();
    await run.deliveryLog.record(
      job.ruleId,
      deliveryLogEntry(alert, action ?? ({} as never), job.actionIndex, { ...r, attempts }, new Date(now)),
    );
    await run.queue.pop(job.lane, lease.token, [job.id], now, true);
    run.metrics.deliveries.inc({ channel: channelOf(job), outcome: "refused" });
    run.stats.refused++;
  } else {
    await deadLetterJobs(run, lease, [{ job, attempts, code: r.code ?? "CS_DELIVERY_FAILED", message: r.error ?? "not delivered" }]);
    await run.queue.pop(job.lane, lease.token, [job.id], now, true);
  }
}

/**
 * When the next attempt after a retryable failure is due (ms since the epoch), or null when the job
 * is to be dead-lettered: its attempts (`maxAttempts`) or its time budget (`deadlineAtMs`) are
 * spent. The backoff is `retryDelayMs` (`Retry-After` honoured), and never before the next probe
 * of an unhealthy destination.
 */
export function nextAttemptDueMs(
  attempts: number,
  now: number,
  deadlineAtMs: number,
  retry: RetryPolicy,
  retryAfterMs: number | undefined,
  health: Pick<DestinationHealth, "unhealthy" | "nextProbeAtMs">,
  random: () => number,
): number | null {
  if (attempts >= retry.maxAttempts || now >= deadlineAtMs) return null;
  const due = now + retryDelayMs(attempts, retry, retryAfterMs, random);
  return health.unhealthy ? Math.max(due, health.nextProbeAtMs) : due;
}

/**
 * A retryable failure: counted against the destination's health (which may turn unhealthy), then
 * the job is rescheduled ({@link nextAttemptDueMs}) or, its budget spent, dead-lettered with
 * `CS_DELIVERY_EXHAUSTED` and popped.
 */
async function retryOrDeadLetter(run: AttemptContext, lease: Lease, { job, r, attempts, now }: Attempted): Promise<void> {
  const { queue, options } = run;
  const counted = await queue.countFailure(job.destination);
  const health = afterFailure(
    { ...counted, consecutiveFailures: counted.consecutiveFailures - 1 },
    { code: r.code ?? "", error: r.error ?? "", ...(r.retryAfterMs === undefined ? {} : { retryAfterMs: r.retryAfterMs }) },
    now,
    options.health,
    run.random,
  );
  await queue.saveHealth(job.destination, health);
  noteHealth(run, job.destination, health);
  if (health.unhealthy && !counted.unhealthy) {
    run.logger.warn({ destination: job.destination, failures: health.consecutiveFailures, code: r.code }, "destination marked unhealthy");
  }
  const updated: DeliveryJob = {
    ...job,
    attempts,
    ...(r.code === undefined ? {} : { lastCode: r.code }),
    ...(r.error === undefined ? {} : { lastError: r.error.slice(0, 300) }),
    ...(r.status === undefined ? {} : { lastStatus: r.status }),
  };
  const due = nextAttemptDueMs(attempts, now, job.deadlineAtMs, options.retry, r.retryAfterMs, health, run.random);
  if (due === null) {
    await deadLetterJobs(run, lease, [
      {
        job: updated,
        attempts,
        code: CS_DELIVERY_EXHAUSTED,
        message: `gave up after ${attempts} attempts; last: ${r.code} ${r.error ?? ""}`.trim(),
        ...(r.status === undefined ? {} : { status: r.status }),
      },
    ]);
    await queue.pop(job.lane, lease.token, [job.id], now, true);
    return;
  }
  run.stats.retried++;
  run.logger.debug(
    { lane: job.lane, alertId: job.alertId, attempts, code: r.code, dueInMs: due - now },
    "delivery attempt failed; retry scheduled",
  );
  await queue.reschedule(updated, lease.token, due);
}
