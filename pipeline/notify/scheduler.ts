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
 * Its metrics are defined in `scheduler-metrics.ts`; storm control's digests are sent by `digests.ts`;
 * one attempt and its bookkeeping are `attempt.ts`, a lane's lease `lease.ts`, the per-destination
 * bound `destination-slots.ts`.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Registry } from "prom-client";
import type { Logger } from "../../lib/logger.js";
import { type AttemptContext, attemptHead, expireLeading, noteHealth } from "./attempt.js";
import type { Deliverer, RetryPolicy } from "./deliver.js";
import { createDestinationSlots, type DestinationSlots } from "./destination-slots.js";
import { sendDigest as sendDigestOnce } from "./digests.js";
import type { HealthPolicy } from "./health.js";
import { holdLease } from "./lease.js";
import type { DeliveryLog } from "./log.js";
import { type DeadLetterItem, type DeliveryJob, type DeliveryQueue, LeaseLostError } from "./queue.js";
import { metricsIn } from "./scheduler-metrics.js";
import type { StormStore } from "./storm.js";

/** Re-exported from `attempt.ts`, where it is given. */
export { CS_DESTINATION_UNHEALTHY } from "./attempt.js";

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
interface SchedulerRun extends AttemptContext {
  options: SchedulerOptions;
  stats: SchedulerStats;
  /** {@link SchedulerOptions.attemptTimeoutMs} resolved, in ms. */
  attemptTimeoutMs: number;
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
