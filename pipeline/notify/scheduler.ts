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
import { alertFromAvro } from "../../lib/alerting/avro.js";
import { stormPolicyOf } from "../../lib/alerting/storm.js";
import type { Logger } from "../../lib/logger.js";
import { CS_DELIVERY_EXHAUSTED, type Deliverer, type RetryPolicy, retryDelayMs } from "./deliver.js";
import { sendDigest as sendDigestOnce } from "./digests.js";
import { afterFailure, afterSuccess, type DestinationHealth, type HealthPolicy } from "./health.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import { type DeadLetterItem, type DeliveryJob, type DeliveryQueue, LeaseLostError } from "./queue.js";
import { metricsIn } from "./scheduler-metrics.js";
import { type ClaimedDigest, CS_THROTTLED, type StormStore } from "./storm.js";

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

/** Starts the scheduler loop. */
export function startScheduler(deps: SchedulerDeps): Scheduler {
  const { queue, deliverer, deliveryLog, options } = deps;
  const nowMs = deps.nowMs ?? Date.now;
  const random = deps.random ?? Math.random;
  const logger = deps.logger.child({ stage: "notify" });
  const attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
  const windowMs = options.retryWindowMs ?? defaultRetryWindowMs(options.retry, attemptTimeoutMs);
  const perDest = Math.max(1, options.perDestinationConcurrency ?? 4);
  const maxInFlight = Math.max(1, options.maxInFlight ?? 64);
  const pollMs = Math.max(10, options.pollIntervalMs ?? 250);
  // An attempt may take a whole timeout per SMTP step (connect, greeting, socket): lease well beyond.
  const leaseMs = Math.max(30, options.leaseMs ?? attemptTimeoutMs * 4 + 10_000);
  const owner = `notify-${randomUUID()}`;
  let claims = 0;
  const metrics = metricsIn(deps.registry);

  const running = new Map<string, Promise<void>>();
  // Lanes not to look at again before a time (ms): leased by another process, or their
  // destination was at its concurrency bound. Keeps the loop from spinning on them.
  const notBefore = new Map<string, number>();
  const laneDestination = new Map<string, string>();
  const destInFlight = new Map<string, number>();
  const stats = { delivered: 0, refused: 0, deadLettered: 0, retried: 0, throttled: 0, digests: 0 };
  const storm = deps.storm;
  let flushing: Promise<void> | undefined;
  let stopping = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;

  const wake = () => {
    woken = true;
    wakeUp?.();
  };

  const channelOf = (job: DeliveryJob) => {
    try {
      return String((JSON.parse(job.alert.actionsJson) as Array<{ type?: string }>)[job.actionIndex]?.type ?? "unknown");
    } catch {
      return "unknown";
    }
  };

  function noteHealth(destination: string, h: DestinationHealth): void {
    metrics.unhealthy.set({ destination }, h.unhealthy ? 1 : 0);
  }

  /** A claim's lease, renewed in the background while its job is worked. */
  interface Lease {
    token: string;
    /** Renews the lease now; throws {@link LeaseLostError} when another claim took it over. */
    check(): Promise<void>;
    stop(): void;
  }

  function holdLease(lane: string, token: string): Lease {
    let lost = false;
    const timer = setInterval(
      () => {
        queue.renew(lane, token, leaseMs).then(
          (held) => {
            if (!held) lost = true;
          },
          () => {
            // Redis unreachable: the next renewal or check tries again.
          },
        );
      },
      Math.max(10, Math.floor(leaseMs / 3)),
    );
    timer.unref();
    return {
      token,
      async check() {
        if (lost || !(await queue.renew(lane, token, leaseMs))) {
          lost = true;
          throw new LeaseLostError(lane);
        }
      },
      stop: () => clearInterval(timer),
    };
  }

  async function deadLetterJobs(
    lease: Lease,
    items: Array<{ job: DeliveryJob; code: string; message: string; attempts: number; status?: number }>,
  ) {
    await lease.check();
    await deps.deadLetter(items.map(({ job, code, message }) => ({ job, code, message })));
    const at = new Date(nowMs());
    for (const it of items) {
      const alert = alertFromAvro(it.job.alert);
      const action = alert.actions[it.job.actionIndex];
      await deliveryLog.record(
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
      metrics.deadLetters.inc({ code: it.code });
      metrics.deliveries.inc({ channel: channelOf(it.job), outcome: "dead_lettered" });
      stats.deadLettered++;
    }
  }

  /**
   * Dead-letters the lane's leading jobs whose time budget ran out (its destination is unhealthy,
   * so they will not get an attempt in time). Returns the first job still due an attempt, if any.
   */
  async function expireLeading(lane: string, lease: Lease, health: DestinationHealth): Promise<DeliveryJob | undefined> {
    for (;;) {
      const jobs = await queue.peek(lane, 100);
      const now = nowMs();
      const expired = [];
      for (const j of jobs) {
        if (j.deadlineAtMs > now) break;
        expired.push(j);
      }
      if (expired.length === 0) return jobs[0];
      const since = new Date(health.unhealthySinceMs || now).toISOString();
      await deadLetterJobs(
        lease,
        expired.map((job) => ({
          job,
          attempts: job.attempts,
          code: CS_DESTINATION_UNHEALTHY,
          message:
            `destination ${job.destination} unhealthy since ${since}; the ${windowMs} ms budget ran out while waiting for it to recover, after ${job.attempts} attempt(s) of this delivery (last: ${health.lastCode || job.lastCode || "?"} ${health.lastError || job.lastError || ""})`.trim(),
          ...(job.lastStatus === undefined ? {} : { status: job.lastStatus }),
        })),
      );
      await queue.pop(
        lane,
        lease.token,
        expired.map((j) => j.id),
        now,
        false,
      );
      if (expired.length < jobs.length) return jobs[expired.length];
    }
  }

  async function runLane(lane: string): Promise<void> {
    const token = `${owner}:${++claims}`;
    const claimed = await queue.claim(lane, token, leaseMs);
    if (!claimed) {
      notBefore.set(lane, nowMs() + pollMs);
      return;
    }
    let job: DeliveryJob = claimed;
    const destination = job.destination;
    laneDestination.set(lane, destination);
    const busy = destInFlight.get(destination) ?? 0;
    if (busy >= perDest) {
      notBefore.set(lane, nowMs() + pollMs);
      await queue.release(lane, token);
      return;
    }
    destInFlight.set(destination, busy + 1);
    metrics.inFlight.inc();
    const lease = holdLease(lane, token);
    let probing = false;
    try {
      const health = await queue.health(destination);
      noteHealth(destination, health);
      if (health.unhealthy) {
        const head = await expireLeading(lane, lease, health);
        if (!head) {
          await queue.release(lane, token);
          return;
        }
        job = head;
        const now = nowMs();
        if (health.nextProbeAtMs > now) {
          await queue.defer(lane, token, health.nextProbeAtMs + Math.floor(random() * 250));
          return;
        }
        if (!(await queue.tryProbe(destination, owner, leaseMs))) {
          // Another delivery probes it: look again when that probe has had time to finish.
          await queue.defer(lane, token, now + Math.min(attemptTimeoutMs, 1000) + Math.floor(random() * 500));
          return;
        }
        probing = true;
      }
      await attemptHead(job, lease);
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
      metrics.leasesLost.inc();
      logger.warn({ lane, alertId: job.alertId }, "notify: lease of the lane was taken over; leaving the job to its new holder");
    } finally {
      lease.stop();
      if (probing) await queue.endProbe(destination, owner).catch(() => {});
      destInFlight.set(destination, (destInFlight.get(destination) ?? 1) - 1);
      metrics.inFlight.dec();
    }
  }

  async function attemptHead(head: DeliveryJob, lease: Lease): Promise<void> {
    let job = head;
    const alert = alertFromAvro(job.alert);
    const action = alert.actions[job.actionIndex];
    if (await deliveryLog.alreadyDelivered(job.alertId, job.actionIndex)) {
      await queue.pop(job.lane, lease.token, [job.id], nowMs(), true);
      return;
    }
    await lease.check();
    const policy = storm && !job.admitted ? stormPolicyOf(action) : null;
    if (storm && policy) {
      const now = nowMs();
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
        await deliveryLog.record(job.ruleId, { ...entry, state: "throttled" });
        await queue.pop(job.lane, lease.token, [job.id], now, true);
        metrics.deliveries.inc({ channel: channelOf(job), outcome: "throttled" });
        stats.throttled++;
        return;
      }
      job = { ...job, admitted: true }; // a retry of this job is not counted again
    }
    const r = await deliverer.attempt(alert, action ?? ({} as never), job.actionIndex);
    const attempts = job.attempts + r.attempts;
    const now = nowMs();
    const at = new Date(now);
    const channel = channelOf(job);
    metrics.attempts.inc({ outcome: r.ok ? "ok" : r.retryable ? "retryable" : "final" });
    if (r.ok) {
      // Sent: marked and logged even when the lease was lost meanwhile (a fact; the new holder then skips it).
      await deliveryLog.markDelivered(job.alertId, job.actionIndex, at);
      await deliveryLog.record(job.ruleId, deliveryLogEntry(alert, action ?? ({} as never), job.actionIndex, { ...r, attempts }, at));
      const h = await queue.health(job.destination);
      if (h.consecutiveFailures > 0 || h.unhealthy) {
        const next = afterSuccess(h, now);
        await queue.saveHealth(job.destination, next);
        noteHealth(job.destination, next);
        if (h.unhealthy) logger.info({ destination: job.destination }, "destination healthy again");
      }
      await queue.pop(job.lane, lease.token, [job.id], now, true);
      metrics.deliveries.inc({ channel, outcome: "delivered" });
      metrics.latency.observe({ channel }, Math.max(0, now - job.enqueuedAtMs) / 1000);
      // Records carry ISO 8601 UTC timestamps without a zone suffix (lib/records.ts).
      const blockAtMs = typeof alert.entity.timestamp === "string" ? Date.parse(`${alert.entity.timestamp}Z`) : Number.NaN;
      if (Number.isFinite(blockAtMs)) metrics.fromBlock.observe({ channel, status: alert.status }, Math.max(0, now - blockAtMs) / 1000);
      stats.delivered++;
      return;
    }
    if (!r.retryable) {
      if (r.final) {
        await lease.check();
        await deliveryLog.record(job.ruleId, deliveryLogEntry(alert, action ?? ({} as never), job.actionIndex, { ...r, attempts }, at));
        await queue.pop(job.lane, lease.token, [job.id], now, true);
        metrics.deliveries.inc({ channel, outcome: "refused" });
        stats.refused++;
      } else {
        await deadLetterJobs(lease, [{ job, attempts, code: r.code ?? "CS_DELIVERY_FAILED", message: r.error ?? "not delivered" }]);
        await queue.pop(job.lane, lease.token, [job.id], now, true);
      }
      return;
    }
    const counted = await queue.countFailure(job.destination);
    const health = afterFailure(
      { ...counted, consecutiveFailures: counted.consecutiveFailures - 1 },
      { code: r.code ?? "", error: r.error ?? "", ...(r.retryAfterMs === undefined ? {} : { retryAfterMs: r.retryAfterMs }) },
      now,
      options.health,
      random,
    );
    await queue.saveHealth(job.destination, health);
    noteHealth(job.destination, health);
    if (health.unhealthy && !counted.unhealthy) {
      logger.warn({ destination: job.destination, failures: health.consecutiveFailures, code: r.code }, "destination marked unhealthy");
    }
    const updated: DeliveryJob = {
      ...job,
      attempts,
      ...(r.code === undefined ? {} : { lastCode: r.code }),
      ...(r.error === undefined ? {} : { lastError: r.error.slice(0, 300) }),
      ...(r.status === undefined ? {} : { lastStatus: r.status }),
    };
    if (attempts >= options.retry.maxAttempts || now >= job.deadlineAtMs) {
      await deadLetterJobs(lease, [
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
    let due = now + retryDelayMs(attempts, options.retry, r.retryAfterMs, random);
    if (health.unhealthy) due = Math.max(due, health.nextProbeAtMs);
    stats.retried++;
    logger.debug(
      { lane: job.lane, alertId: job.alertId, attempts, code: r.code, dueInMs: due - now },
      "delivery attempt failed; retry scheduled",
    );
    await queue.reschedule(updated, lease.token, due);
  }

  /** Sends the digests due now (storm control), each under a lease; a failure is retried later. */
  async function flushDigests(): Promise<void> {
    if (!storm) return;
    const claimed = await storm.claimDue(nowMs(), leaseMs, owner);
    for (const c of claimed) {
      if (stopping) {
        await storm.retry(c, nowMs()).catch(() => {});
        continue;
      }
      await sendDigest(c);
    }
  }

  const sendDigest = (c: ClaimedDigest) =>
    sendDigestOnce(
      { storm: storm!, deliverer, deliveryLog, deadLetter: deps.deadLetter, retry: options.retry, nowMs, random, logger, metrics, stats },
      c,
    );

  function flushInBackground(): void {
    if (!storm || flushing || stopping) return;
    flushing = flushDigests()
      .catch((err) => logger.warn({ err }, "notify: cannot send the due digests; retrying"))
      .finally(() => {
        flushing = undefined;
      });
  }

  function launch(lane: string): void {
    const p = runLane(lane)
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
        if (running.size < maxInFlight) {
          const now = nowMs();
          const lanes = await queue.dueLanes(now, 1000);
          for (const lane of lanes) {
            if (stopping || running.size >= maxInFlight) break;
            if (running.has(lane)) continue;
            const until = notBefore.get(lane);
            if (until !== undefined) {
              if (until > now) continue;
              notBefore.delete(lane);
            }
            const d = laneDestination.get(lane);
            if (d !== undefined && (destInFlight.get(d) ?? 0) >= perDest) continue;
            launch(lane);
            launched++;
          }
          if (notBefore.size > 10_000) notBefore.clear();
        }
      } catch (err) {
        logger.warn({ err }, "notify: cannot read the delivery queue; retrying");
        await sleep(1000);
      }
      if (woken || stopping) continue;
      let waitMs = pollMs;
      try {
        const next = await queue.nextDueMs();
        // A lane already due that could not be started waits for a completion (which wakes the
        // loop) or the poll interval; only a due time still ahead shortens the sleep.
        if (next !== undefined) waitMs = next > nowMs() ? Math.min(pollMs, next - nowMs()) : launched > 0 ? 0 : pollMs;
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
    stats: () => ({ ...stats }),
    async stop() {
      stopping = true;
      wake();
      await looping;
      await Promise.allSettled([...running.values(), ...(flushing ? [flushing] : [])]);
    },
  };
}
