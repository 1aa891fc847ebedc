/**
 * The notify scheduler: attempts the jobs of the delivery queue (`queue.ts`), one attempt at a
 * time per lane (rule × action), many lanes at once, and never sleeps in the alerts topic's
 * consuming loop. What it guarantees:
 *
 * - **Isolation.** A lane whose head job failed waits for its next attempt in Redis, not in a
 *   loop; other lanes go on. At most {@link SchedulerOptions.perDestinationConcurrency} attempts
 *   run against one destination at a time (and {@link SchedulerOptions.maxInFlight} in all), so a
 *   slow endpoint holds a few connections, not all of them.
 * - **Retry budget** as before (`maxAttempts` attempts, full-jitter backoff, `Retry-After`
 *   honoured; `retryDelayMs` of `deliver.ts`), plus a time budget (`retryWindowMs`): a job still
 *   undelivered after it is dead-lettered with `CS_DELIVERY_EXHAUSTED` or, when it never got an
 *   attempt because its destination was unhealthy, `CS_DESTINATION_UNHEALTHY`.
 * - **Destination health** (`health.ts`): after `unhealthyAfter` failures in a row a destination
 *   is unhealthy; then one job at a time probes it, on a doubling schedule, and all other lanes to
 *   it wait for the probe's outcome instead of retrying each alert against a known-dead host.
 * - **Order.** A lane is FIFO; its next job is attempted only after the head is done.
 * - **One worker per job.** A lane is worked under a lease with a fresh fencing token per claim,
 *   renewed every third of its length while the job is worked (so a long dead-lettering pass keeps
 *   it); before each side effect (the attempt, a refusal's log entry, a dead letter) the lease is
 *   renewed by compare-and-set, and the queue's pop/reschedule/defer are compare-and-set on the
 *   token. A worker whose lease was taken over stops without acking, logging or dead-lettering
 *   (`chainsift_notify_leases_lost_total`); only a successful send it already made is still marked
 *   delivered and logged, so the new holder skips it instead of sending it twice.
 * - **Bookkeeping** as `handle.ts` did: the redelivery guard, one delivery-log entry per job, the
 *   dead letter with the alert's original bytes (so `chainsift alerts replay` works unchanged).
 *
 * Its metrics are defined in `scheduler-metrics.ts`; storm control's digests are sent by `digests.ts`.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Registry } from "prom-client";
import type { Alert } from "../../lib/alerting/alert.js";
import { alertFromAvro } from "../../lib/alerting/avro.js";
import { stormPolicyOf } from "../../lib/alerting/storm.js";
import type { Logger } from "../../lib/logger.js";
import { type AttemptResult, CS_DELIVERY_EXHAUSTED, type Deliverer, type RetryPolicy, retryDelayMs } from "./deliver.js";
import { createDestinationSlots, type DestinationSlots } from "./destination-slots.js";
import { sendDigest as sendDigestOnce } from "./digests.js";
import { afterFailure, afterSuccess, type DestinationHealth, type HealthPolicy } from "./health.js";
import { holdLease, type Lease } from "./lease.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import { type DeadLetterItem, type DeliveryJob, type DeliveryQueue, LeaseLostError } from "./queue.js";
import { metricsIn, type SchedulerMetrics } from "./scheduler-metrics.js";
import { CS_THROTTLED, type StormStore } from "./storm.js";

/** A queued job's time budget ran out while its destination was unhealthy (it waited for a probe instead of being attempted). */
export const CS_DESTINATION_UNHEALTHY = "CS_DESTINATION_UNHEALTHY";

/** Tuning of {@link startScheduler}. */
export interface SchedulerOptions {
  /** Retry budget per job (attempts and backoff). */
  retry: RetryPolicy;
  /**
   * Time budget of a job from enqueueing, in ms: a job not delivered within it is dead-lettered
   * at its next failure, or without an attempt while its destination is unhealthy.
   * Default {@link defaultRetryWindowMs} of `retry` and `attemptTimeoutMs`.
   */
  retryWindowMs?: number;
  /** Longest duration of one attempt, in ms (the deliverer's timeout); sets the lease length. Default 10000. */
  attemptTimeoutMs?: number;
  /** When a destination becomes unhealthy and how often it is probed. */
  health: HealthPolicy;
  /** Attempts in flight against one destination, per process. Default 4. */
  perDestinationConcurrency?: number;
  /** Attempts in flight in all, per process. Default 64. */
  maxInFlight?: number;
  /** Longest sleep between looks at the queue when not woken, in ms. Default 250. */
  pollIntervalMs?: number;
  /**
   * Length of a lane's lease, in ms; it is renewed every `leaseMs / 3` while the job is worked, so
   * it only runs out when the worker stops renewing (process paused or dead, Redis unreachable).
   * Default `4 × attemptTimeoutMs + 10000` (an SMTP attempt may take one timeout per step).
   */
  leaseMs?: number;
}

/** Dependencies of {@link startScheduler}. */
export interface SchedulerDeps {
  queue: DeliveryQueue;
  deliverer: Deliverer;
  /** The delivery log: the redelivery guard and one entry per finished job. */
  deliveryLog: DeliveryLog;
  /**
   * Sends alerts (original bytes: a job's, or a held alert's of a digest given up) to the
   * dead-letter topic; rejects when Kafka fails (the job then stays queued, the digest is retried).
   */
  deadLetter: (items: DeadLetterItem[]) => Promise<void>;
  logger: Logger;
  options: SchedulerOptions;
  /** Registry for the metrics below; default a private one. */
  registry?: Registry;
  /** Clock in ms (default `Date.now`). */
  nowMs?: () => number;
  /** Uniform [0, 1) (default `Math.random`). */
  random?: () => number;
  /**
   * Storm control's state (`storm.ts`): with it, actions with a throttle or digest policy
   * (lib/alerting/storm.ts, chat and e-mail by default) send at most their allowance per window and
   * hold the rest for the window's digest, which this scheduler sends when the window ends.
   * Without it, every alert is sent one by one.
   */
  storm?: StormStore;
}

/** A running scheduler. */
export interface Scheduler {
  /** Look at the queue now (called after an enqueue). */
  wake(): void;
  /** Attempts in flight. */
  inFlight(): number;
  /**
   * Jobs finished by this process so far, by outcome; `deadLettered` also counts the alerts of
   * given-up digests it dead-lettered, `digests` the digests it sent.
   */
  stats(): { delivered: number; refused: number; deadLettered: number; retried: number; throttled: number; digests: number };
  /** Stops claiming, waits for attempts in flight to finish (each bounded by the attempt timeout). */
  stop(): Promise<void>;
}

/**
 * Default time budget of a job: the sum of the backoff ceilings of `maxAttempts` attempts plus one
 * attempt timeout per attempt — the longest a job took under the old per-alert retry loop
 * (with defaults: 63.5 s + 8 × 10 s = 143.5 s).
 */
export function defaultRetryWindowMs(retry: RetryPolicy, attemptTimeoutMs: number): number {
  let waits = 0;
  for (let n = 1; n < retry.maxAttempts; n++) waits += Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (n - 1));
  return waits + retry.maxAttempts * attemptTimeoutMs;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The scheduler's counters ({@link Scheduler.stats}). */
type SchedulerStats = ReturnType<Scheduler["stats"]>;

/**
 * What the pieces of one running scheduler share: its dependencies with their defaults applied,
 * the resolved options, and its state (counters, the lanes put aside, the destination slots).
 */
interface SchedulerRun {
  queue: DeliveryQueue;
  deliverer: Deliverer;
  deliveryLog: DeliveryLog;
  deadLetter: SchedulerDeps["deadLetter"];
  storm: StormStore | undefined;
  options: SchedulerOptions;
  nowMs: () => number;
  random: () => number;
  logger: Logger;
  metrics: SchedulerMetrics;
  stats: SchedulerStats;
  /** {@link SchedulerOptions.attemptTimeoutMs} resolved, in ms. */
  attemptTimeoutMs: number;
  /** {@link SchedulerOptions.retryWindowMs} resolved, in ms. */
  windowMs: number;
  /** {@link SchedulerOptions.maxInFlight} resolved. */
  maxInFlight: number;
  /** {@link SchedulerOptions.pollIntervalMs} resolved, in ms. */
  pollMs: number;
  /** {@link SchedulerOptions.leaseMs} resolved, in ms. */
  leaseMs: number;
  /** This process's name in leases and probes (`notify-<uuid>`). */
  owner: string;
  /** Claims made so far (the fencing token's suffix). */
  claims: number;
  /**
   * Lanes not to look at again before a time (ms): leased by another process, or their
   * destination was at its concurrency bound. Keeps the loop from spinning on them.
   */
  notBefore: Map<string, number>;
  /** {@link SchedulerOptions.perDestinationConcurrency}. */
  slots: DestinationSlots;
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
function noteHealth(run: SchedulerRun, destination: string, h: DestinationHealth): void {
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
async function deadLetterJobs(run: SchedulerRun, lease: Lease, items: DeadLetterJob[]): Promise<void> {
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
async function expireLeading(run: SchedulerRun, lane: string, lease: Lease, health: DestinationHealth): Promise<DeliveryJob | undefined> {
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
 * Works one lane: claims it (or puts it aside when another process holds it or its destination is
 * at its bound), then, when its destination is unhealthy, dead-letters the jobs whose budget ran
 * out and attempts the head only as the destination's probe; otherwise attempts the head.
 */
async function runLane(run: SchedulerRun, lane: string): Promise<void> {
  const { queue } = run;
  const token = `${run.owner}:${++run.claims}`;
  const claimed = await queue.claim(lane, token, run.leaseMs);
  if (!claimed) {
    run.notBefore.set(lane, run.nowMs() + run.pollMs);
    return;
  }
  let job: DeliveryJob = claimed;
  const destination = job.destination;
  run.slots.noteLane(lane, destination);
  if (!run.slots.tryTake(destination)) {
    run.notBefore.set(lane, run.nowMs() + run.pollMs);
    await queue.release(lane, token);
    return;
  }
  run.metrics.inFlight.inc();
  const lease = holdLease(queue, lane, token, run.leaseMs);
  let probing = false;
  try {
    const health = await queue.health(destination);
    noteHealth(run, destination, health);
    if (health.unhealthy) {
      const head = await expireLeading(run, lane, lease, health);
      if (!head) {
        await queue.release(lane, token);
        return;
      }
      job = head;
      const now = run.nowMs();
      if (health.nextProbeAtMs > now) {
        await queue.defer(lane, token, health.nextProbeAtMs + Math.floor(run.random() * 250));
        return;
      }
      if (!(await queue.tryProbe(destination, run.owner, run.leaseMs))) {
        // Another delivery probes it: look again when that probe has had time to finish.
        await queue.defer(lane, token, now + Math.min(run.attemptTimeoutMs, 1000) + Math.floor(run.random() * 500));
        return;
      }
      probing = true;
    }
    await attemptHead(run, job, lease);
  } catch (err) {
    if (!(err instanceof LeaseLostError)) throw err;
    run.metrics.leasesLost.inc();
    run.logger.warn({ lane, alertId: job.alertId }, "notify: lease of the lane was taken over; leaving the job to its new holder");
  } finally {
    lease.stop();
    if (probing) await queue.endProbe(destination, run.owner).catch(() => {});
    run.slots.give(destination);
    run.metrics.inFlight.dec();
  }
}

/**
 * Storm control's admission of a job not yet admitted: when its action's policy holds the alert
 * back for the window's digest, logs it as throttled, pops it and returns null; otherwise returns
 * the job marked admitted (a retry of it is not counted again), or the job as is without a policy.
 */
async function admitThroughStorm(run: SchedulerRun, job: DeliveryJob, alert: Alert, lease: Lease): Promise<DeliveryJob | null> {
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
async function attemptHead(run: SchedulerRun, head: DeliveryJob, lease: Lease): Promise<void> {
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
async function bookDelivered(run: SchedulerRun, lease: Lease, { job, alert, r, attempts, now }: Attempted): Promise<void> {
  const { queue, deliveryLog, metrics } = run;
  const action = alert.actions[job.actionIndex];
  const at = new Date(now);
  const channel = channelOf(job);
  await deliveryLog.markDelivered(job.alertId, job.actionIndex, at);
  await deliveryLog.record(job.ruleId, deliveryLogEntry(alert, action ?? ({} as never), job.actionIndex, { ...r, attempts }, at));
  const h = await queue.health(job.destination);
  if (h.consecutiveFailures > 0 || h.unhealthy) {
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
async function bookNotRetryable(run: SchedulerRun, lease: Lease, { job, alert, r, attempts, now }: Attempted): Promise<void> {
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
async function retryOrDeadLetter(run: SchedulerRun, lease: Lease, { job, r, attempts, now }: Attempted): Promise<void> {
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

/** Sends the digests due now (storm control), each under a lease; a failure is retried later. */
async function flushDigests(run: SchedulerRun, stopping: () => boolean): Promise<void> {
  const { storm } = run;
  if (!storm) return;
  const claimed = await storm.claimDue(run.nowMs(), run.leaseMs, run.owner);
  for (const c of claimed) {
    if (stopping()) {
      await storm.retry(c, run.nowMs()).catch(() => {});
      continue;
    }
    const { deliverer, deliveryLog, deadLetter, options, nowMs, random, logger, metrics, stats } = run;
    await sendDigestOnce({ storm, deliverer, deliveryLog, deadLetter, retry: options.retry, nowMs, random, logger, metrics, stats }, c);
  }
}

/**
 * One look at the due-queue: starts (`launch`) the due lanes that are not running, not put aside
 * ({@link SchedulerRun.notBefore}) and whose destination has a free slot, up to `maxInFlight` in
 * all. Returns how many it started.
 * @throws Redis errors of `dueLanes` (the caller waits and looks again).
 */
async function launchDueLanes(
  run: SchedulerRun,
  running: ReadonlyMap<string, unknown>,
  launch: (lane: string) => void,
  stopping: () => boolean,
): Promise<number> {
  let launched = 0;
  if (running.size >= run.maxInFlight) return launched;
  const now = run.nowMs();
  const lanes = await run.queue.dueLanes(now, 1000);
  for (const lane of lanes) {
    if (stopping() || running.size >= run.maxInFlight) break;
    if (running.has(lane)) continue;
    const until = run.notBefore.get(lane);
    if (until !== undefined) {
      if (until > now) continue;
      run.notBefore.delete(lane);
    }
    if (run.slots.laneFull(lane)) continue;
    launch(lane);
    launched++;
  }
  if (run.notBefore.size > 10_000) run.notBefore.clear();
  return launched;
}

/**
 * How long the loop sleeps before its next look at the queue, in ms (0: look again now). A lane
 * already due that could not be started waits for a completion (which wakes the loop) or the poll
 * interval; only a due time still ahead shortens the sleep.
 * @param nextDueMs - the queue's earliest due time (ms since the epoch), undefined when empty.
 * @param launched - lanes the last look started.
 */
function pollWaitMs(nextDueMs: number | undefined, now: number, pollMs: number, launched: number): number {
  if (nextDueMs === undefined) return pollMs;
  return nextDueMs > now ? Math.min(pollMs, nextDueMs - now) : launched > 0 ? 0 : pollMs;
}

/** Starts the scheduler loop. */
export function startScheduler(deps: SchedulerDeps): Scheduler {
  const { options } = deps;
  const attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
  const run: SchedulerRun = {
    queue: deps.queue,
    deliverer: deps.deliverer,
    deliveryLog: deps.deliveryLog,
    deadLetter: deps.deadLetter,
    storm: deps.storm,
    options,
    nowMs: deps.nowMs ?? Date.now,
    random: deps.random ?? Math.random,
    logger: deps.logger.child({ stage: "notify" }),
    metrics: metricsIn(deps.registry),
    stats: { delivered: 0, refused: 0, deadLettered: 0, retried: 0, throttled: 0, digests: 0 },
    attemptTimeoutMs,
    windowMs: options.retryWindowMs ?? defaultRetryWindowMs(options.retry, attemptTimeoutMs),
    maxInFlight: Math.max(1, options.maxInFlight ?? 64),
    pollMs: Math.max(10, options.pollIntervalMs ?? 250),
    // An attempt may take a whole timeout per SMTP step (connect, greeting, socket): lease well beyond.
    leaseMs: Math.max(30, options.leaseMs ?? attemptTimeoutMs * 4 + 10_000),
    owner: `notify-${randomUUID()}`,
    claims: 0,
    notBefore: new Map(),
    slots: createDestinationSlots(Math.max(1, options.perDestinationConcurrency ?? 4)),
  };
  const { logger, pollMs } = run;
  const running = new Map<string, Promise<void>>();
  let flushing: Promise<void> | undefined;
  let stopping = false;
  const isStopping = () => stopping;
  let wakeUp: (() => void) | undefined;
  let woken = false;

  const wake = () => {
    woken = true;
    wakeUp?.();
  };

  function flushInBackground(): void {
    if (!run.storm || flushing || stopping) return;
    flushing = flushDigests(run, isStopping)
      .catch((err) => logger.warn({ err }, "notify: cannot send the due digests; retrying"))
      .finally(() => {
        flushing = undefined;
      });
  }

  function launch(lane: string): void {
    const p = runLane(run, lane)
      .catch((err) => {
        logger.warn({ err, lane }, "notify: lane failed (retried after its lease expires)");
      })
      .finally(() => {
        running.delete(lane);
        wake();
      });
    running.set(lane, p);
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      woken = false;
      let launched = 0;
      flushInBackground();
      try {
        launched = await launchDueLanes(run, running, launch, isStopping);
      } catch (err) {
        logger.warn({ err }, "notify: cannot read the delivery queue; retrying");
        await sleep(1000);
      }
      if (woken || stopping) continue;
      let waitMs = pollMs;
      try {
        waitMs = pollWaitMs(await run.queue.nextDueMs(), run.nowMs(), pollMs, launched);
      } catch {
        // keep the poll interval
      }
      if (woken || waitMs === 0) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, waitMs);
        wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  }

  const looping = loop();
  return {
    wake,
    inFlight: () => running.size,
    stats: () => ({ ...run.stats }),
    async stop() {
      stopping = true;
      wake();
      await looping;
      await Promise.allSettled([...running.values(), ...(flushing ? [flushing] : [])]);
    },
  };
}
