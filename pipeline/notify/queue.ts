/**
 * The delivery queue of the notify stage, in Redis: the retry path that keeps a failing destination
 * off the alerts topic's consuming loop. The Kafka shell only **enqueues** each action of each
 * alert (one job per action) and commits; the scheduler (`scheduler.ts`) attempts the jobs.
 *
 * Jobs are kept in **lanes**, one per rule and action (`<ruleId>:<actionIndex>`), each a FIFO: a
 * lane's head job is attempted until it is delivered, refused for good or dead-lettered, and only
 * then the next one, so one rule's alerts reach each destination in `sequence` order even across
 * retries. Lanes are independent of each other: one rule's dead endpoint holds back only its own
 * lane.
 *
 * | key (under `<prefix>notify:`)      | type   | content                                                                 |
 * | ---------------------------------- | ------ | ----------------------------------------------------------------------- |
 * | `lane:<lane>`                      | list   | JSON {@link DeliveryJob}s, oldest first                                 |
 * | `due`                              | zset   | lane → time (ms) its head job may next be attempted                     |
 * | `lease:<lane>`                     | string | fencing token of the claim working the lane (PX lease, renewed while it works) |
 * | `queued:<alertId>:<actionIndex>`   | string | "this action is queued" (dedup of Kafka redelivery); EX 7 days          |
 * | `done:<alertId>:<actionIndex>`     | string | "this action was finished" (delivered, refused or dead-lettered); EX 7 days |
 * | `dest:<destination>`               | hash   | {@link DestinationHealth} of a destination; EX 7 days after last write  |
 * | `probe:<destination>`              | string | owner of the one probe of an unhealthy destination (PX lease)           |
 * | `destinations`                     | set    | destinations with a health record                                       |
 *
 * Why Redis and not retry topics with delay tiers: a delay tier delays every message of the tier
 * by the same amount and keeps no per-destination state, so it can neither hold a rule's later
 * alerts behind an earlier one that is being retried (per-rule order) nor stop sending to a
 * destination known to be dead (group backoff). Redis is already where the delivery log, the
 * redelivery guard and the signing secrets live, and its scripts make enqueue, claim and
 * completion atomic.
 *
 * **Leases are fenced.** Each claim holds the lane's lease under its own token (a fresh value per
 * claim); the worker renews it while it works ({@link DeliveryQueue.renew}), and every script that
 * changes the lane after the attempt (pop, reschedule, defer) is a compare-and-set on that token: a
 * worker whose lease expired and was taken over by another claim changes nothing
 * ({@link LeaseLostError}). A finished job leaves a `done:` marker for as long as the `queued:`
 * marker would have lived, so a Kafka redelivery of its alert (the process died before committing)
 * does not queue it again; only `chainsift alerts replay` (the `REPLAY_HEADER` header of topics/index.ts)
 * queues a finished job again. The scripts build some key names from arguments, so they assume one Redis
 * node (not Redis Cluster), as the rest of chainsift does.
 * @module
 */

import type { AlertAvro } from "../../lib/alerting/avro.js";
import { type DestinationHealth, HEALTHY, parseHealth, queueKeys } from "../../lib/alerting/destinations.js";
import type { AlertSource } from "../../lib/alerting/storm.js";
import { ChainsiftError } from "../../lib/errors.js";

export { actionDeliveryStatus } from "../../lib/alerting/delivery-status.js";
export { type ActionDeliveryStatus, laneOf, queueKeys } from "../../lib/alerting/destinations.js";

/** One action of one alert waiting for delivery. */
export interface DeliveryJob {
  /** `<alertId>:<actionIndex>`. */
  id: string;
  alertId: string;
  ruleId: string;
  actionIndex: number;
  /** `<ruleId>:<actionIndex>` (see the module doc). */
  lane: string;
  /** Destination key (see `destinationKey` in `health.ts`). */
  destination: string;
  /** Attempts made so far. */
  attempts: number;
  /** When it was enqueued, ms since the epoch. */
  enqueuedAtMs: number;
  /** After this time (ms since the epoch) a failed or withheld job is dead-lettered instead of retried. */
  deadlineAtMs: number;
  /** Code and message of the last failed attempt. */
  lastCode?: string;
  lastError?: string;
  /** HTTP status or SMTP reply code of the last answered attempt. */
  lastStatus?: number;
  /** Storm control let this job through (`storm.ts`): its retries are not counted against the window again. */
  admitted?: boolean;
  /** The alert as its Avro record (JSON-safe). */
  alert: AlertAvro;
  /** Where the alert came from, to dead-letter it with its original bytes (base64). */
  source: AlertSource;
}

/**
 * One alert action to dead-letter (`SchedulerDeps.deadLetter`): a queued job, or an alert held in a
 * storm-control digest that was given up (`digests.ts`; `id` is then `<alertId>:<actionIndex>` too).
 */
export interface DeadLetterItem {
  /** The alert action: ids, rule and the source record whose bytes the letter carries. */
  job: Pick<DeliveryJob, "id" | "alertId" | "ruleId" | "actionIndex" | "source">;
  /** Error code of the dead letter, e.g. `CS_DELIVERY_EXHAUSTED`. */
  code: string;
  /** Why, for a person (the stage prefixes `alert <id> action <index>: `). */
  message: string;
}

/** The Redis commands used: a structural subset of a node-redis v5 client. */
export interface QueueRedis {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  zRangeByScore(
    key: string,
    min: number | string,
    max: number | string,
    options?: { LIMIT: { offset: number; count: number } },
  ): Promise<string[]>;
  zRangeWithScores(key: string, start: number, stop: number): Promise<Array<{ value: string; score: number }>>;
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  lLen(key: string): Promise<number>;
  hGetAll(key: string): Promise<Record<string, string>>;
  sMembers(key: string): Promise<string[]>;
  set(
    key: string,
    value: string,
    options?: { expiration?: { type: "PX" | "EX"; value: number }; condition?: "NX" },
  ): Promise<string | null>;
}

/**
 * Lifetime of the `queued:`, `done:` and `dest:` keys, in seconds (7 days, as the redelivery guard
 * and the alerts topic's retention: a Kafka redelivery can come that late after a crash).
 */
const TTL_SEC = 7 * 24 * 3600;

/**
 * A lease-fenced operation found the lane's lease held by another claim (or by none): this worker's
 * lease expired and the lane may be worked by another process, so nothing was changed. The worker
 * must stop working the job (no log entry, no dead letter, no pop).
 */
export class LeaseLostError extends ChainsiftError {
  /** Always `CS_LEASE_LOST`. */
  readonly code = "CS_LEASE_LOST";
  constructor(lane: string) {
    super(`lease of lane ${lane} lost to another claim; the job is left to it`);
    this.name = "LeaseLostError";
  }
}

// KEYS: queued marker, delivered guard, lane list, due zset, done marker. ARGV: job JSON, now ms,
// ttl s, lane, replay ('1': ignore the done marker).
const ENQUEUE = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if ARGV[5] ~= '1' and redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[3])) then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], 'NX', tonumber(ARGV[2]), ARGV[4])
return 1`;

// KEYS: lease, lane list, due. ARGV: owner, lease ms, lane. Returns the head job or false.
const CLAIM = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2])) then return false end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('DEL', KEYS[1])
  return false
end
return head`;

// Fenced: returns -1 and changes nothing unless ARGV[2] holds the lease. Pops the head jobs whose
// ids are ARGV[8..] (in that order; an id no longer at the head is not popped), replaces the queued
// marker of each popped one by a done marker (EX ARGV[7] s), makes the lane due at ARGV[4] ms or
// removes it when empty, and releases the lease when ARGV[5] is '1'.
// KEYS: lane list, due, lease. ARGV: lane, token, queued-key prefix, next due ms, release,
// done-key prefix, ttl s, ids...
const POP = `
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return -1 end
local popped = 0
for i = 8, #ARGV do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then break end
  local ok, job = pcall(cjson.decode, head)
  if ok and job.id == ARGV[i] then
    redis.call('LPOP', KEYS[1])
    popped = popped + 1
    redis.call('DEL', ARGV[3] .. ARGV[i])
    redis.call('SET', ARGV[6] .. ARGV[i], '1', 'EX', tonumber(ARGV[7]))
  end
end
if redis.call('LLEN', KEYS[1]) > 0 then
  redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
if ARGV[5] == '1' then redis.call('DEL', KEYS[3]) end
return popped`;

// Fenced (-1 unless ARGV[2] holds the lease). Replaces the head job (when it is still the same job)
// and reschedules the lane; releases the lease. KEYS: lane list, due, lease. ARGV: lane, token,
// job id, job JSON, due ms.
const RESCHEDULE = `
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return -1 end
local head = redis.call('LINDEX', KEYS[1], 0)
if head then
  local ok, job = pcall(cjson.decode, head)
  if ok and job.id == ARGV[3] then redis.call('LSET', KEYS[1], 0, ARGV[4]) end
  redis.call('ZADD', KEYS[2], tonumber(ARGV[5]), ARGV[1])
end
redis.call('DEL', KEYS[3])
return 1`;

// Fenced (-1 unless ARGV[2] holds the lease). Moves the lane's due time (only when the lane still
// exists) and releases the lease. KEYS: due, lease. ARGV: lane, token, due ms.
const DEFER = `
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('ZADD', KEYS[1], tonumber(ARGV[3]), ARGV[1]) end
redis.call('DEL', KEYS[2])
return 1`;

// Extends the lease by ARGV[2] ms when ARGV[1] holds it; 1 when renewed, 0 when not held.
// KEYS: the lease.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2])) end return 0`;

// Deletes a key when it holds ARGV[1] (lease release). KEYS: the key.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

// Counts a failure of a destination and returns its hash. KEYS: dest hash, destinations set.
// ARGV: destination, ttl s.
const FAIL = `
redis.call('HINCRBY', KEYS[1], 'consecutiveFailures', 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('SADD', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])`;

/** The queue's operations. Every method may reject with a Redis error (retryable). */
export interface DeliveryQueue {
  /**
   * Appends jobs to their lanes, skipping a job already queued or finished (Kafka redelivery: the
   * `queued:` and `done:` markers) or already delivered (the redelivery guard of `log.ts`). A new
   * lane is due at once.
   * @param options.replay The jobs come from `chainsift alerts replay` (the `REPLAY_HEADER`
   *   header): a finished (dead-lettered) job is queued again; queued or delivered ones are still skipped.
   * @returns How many jobs were added.
   */
  enqueue(jobs: DeliveryJob[], nowMs?: number, options?: { replay?: boolean }): Promise<number>;
  /** Lanes whose head job may be attempted now (due time ≤ `nowMs`), earliest first, at most `limit`. */
  dueLanes(nowMs: number, limit: number): Promise<string[]>;
  /** The earliest due time of any lane (ms), or undefined when nothing is queued. */
  nextDueMs(): Promise<number | undefined>;
  /**
   * Takes the lane's lease for `leaseMs` under `token` and returns its head job; undefined when
   * leased elsewhere or empty. `token` must be unique per claim (it fences the claim's later
   * operations, see the module doc).
   */
  claim(lane: string, token: string, leaseMs: number): Promise<DeliveryJob | undefined>;
  /** Extends the lease of the claim `token` by `leaseMs` from now; false when `token` no longer holds it. */
  renew(lane: string, token: string, leaseMs: number): Promise<boolean>;
  /** The first `count` jobs of a lane, oldest first (unreadable entries are left out). */
  peek(lane: string, count: number): Promise<DeliveryJob[]>;
  /**
   * Removes the given jobs from the head of the lane (those that are still there, in order) and
   * marks them finished (`done:`), makes the lane due at `nextDueMs` when jobs remain, and releases
   * the lease when `release` is true.
   * @throws {LeaseLostError} when `token` does not hold the lease (nothing changed).
   */
  pop(lane: string, token: string, jobIds: string[], nextDueMs: number, release: boolean): Promise<number>;
  /**
   * Stores the updated head job and makes the lane due at `dueMs`; releases the lease.
   * @throws {LeaseLostError} when `token` does not hold the lease (nothing changed).
   */
  reschedule(job: DeliveryJob, token: string, dueMs: number): Promise<void>;
  /**
   * Makes the lane due at `dueMs` without touching its jobs; releases the lease.
   * @throws {LeaseLostError} when `token` does not hold the lease (nothing changed).
   */
  defer(lane: string, token: string, dueMs: number): Promise<void>;
  /** Releases the lane's lease (when `owner` holds it). */
  release(lane: string, owner: string): Promise<void>;
  /** Jobs waiting in a lane. */
  laneLength(lane: string): Promise<number>;
  /** The destination's health ({@link HEALTHY} when unknown). */
  health(destination: string): Promise<DestinationHealth>;
  /**
   * Counts one failed attempt atomically and returns the state with the new count (the caller
   * computes the rest with `afterFailure` and saves it with {@link DeliveryQueue.saveHealth}).
   */
  countFailure(destination: string): Promise<DestinationHealth>;
  /** Writes the destination's state (all fields). */
  saveHealth(destination: string, health: DestinationHealth): Promise<void>;
  /** Every destination with a health record and its state. */
  destinations(): Promise<Array<{ destination: string; health: DestinationHealth }>>;
  /** Takes the probe lease of an unhealthy destination; false when another delivery probes it. */
  tryProbe(destination: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Gives the probe lease back. */
  endProbe(destination: string, owner: string): Promise<void>;
}

function parseJob(raw: string): DeliveryJob | undefined {
  try {
    return JSON.parse(raw) as DeliveryJob;
  } catch {
    return undefined;
  }
}

/** Redis replies of HGETALL inside a script come back as a flat [field, value, …] list. */
function pairsToRecord(reply: unknown): Record<string, string> {
  if (!Array.isArray(reply)) return (reply ?? {}) as Record<string, string>;
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  return out;
}

/**
 * Creates the Redis-backed {@link DeliveryQueue}.
 * @param redis A connected client; not closed by the queue.
 * @param keyPrefix Config `redisKeyPrefix` (tests use a unique one).
 */
export function createDeliveryQueue(redis: QueueRedis, keyPrefix: string): DeliveryQueue {
  const k = queueKeys(keyPrefix);
  return {
    async enqueue(jobs, nowMs = Date.now(), options = {}) {
      const added = await Promise.all(
        jobs.map((job) =>
          redis.eval(ENQUEUE, {
            keys: [k.queued(job.id), k.delivered(job.id), k.lane(job.lane), k.due, k.done(job.id)],
            arguments: [JSON.stringify(job), String(nowMs), String(TTL_SEC), job.lane, options.replay ? "1" : "0"],
          }),
        ),
      );
      return added.filter((a) => Number(a) === 1).length;
    },
    dueLanes(nowMs, limit) {
      return redis.zRangeByScore(k.due, "-inf", nowMs, { LIMIT: { offset: 0, count: limit } });
    },
    async nextDueMs() {
      const [first] = await redis.zRangeWithScores(k.due, 0, 0);
      return first ? Number(first.score) : undefined;
    },
    async claim(lane, token, leaseMs) {
      const head = await redis.eval(CLAIM, { keys: [k.lease(lane), k.lane(lane), k.due], arguments: [token, String(leaseMs), lane] });
      if (typeof head !== "string") return undefined;
      const job = parseJob(head);
      if (!job) {
        // An unreadable entry would block the lane for ever: drop it (it cannot be delivered or dead-lettered).
        await redis.eval(`if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then redis.call('LPOP', KEYS[1]) end return 1`, {
          keys: [k.lane(lane)],
          arguments: [head],
        });
        await this.release(lane, token);
        return undefined;
      }
      return job;
    },
    async peek(lane, count) {
      const raw = await redis.lRange(k.lane(lane), 0, Math.max(0, count - 1));
      return raw.map(parseJob).filter((j): j is DeliveryJob => j !== undefined);
    },
    async renew(lane, token, leaseMs) {
      return Number(await redis.eval(RENEW, { keys: [k.lease(lane)], arguments: [token, String(Math.max(1, Math.floor(leaseMs)))] })) === 1;
    },
    async pop(lane, token, jobIds, nextDueMs, release) {
      const n = Number(
        await redis.eval(POP, {
          keys: [k.lane(lane), k.due, k.lease(lane)],
          arguments: [lane, token, k.queued(""), String(nextDueMs), release ? "1" : "0", k.done(""), String(TTL_SEC), ...jobIds],
        }),
      );
      if (n < 0) throw new LeaseLostError(lane);
      return n;
    },
    async reschedule(job, token, dueMs) {
      const r = await redis.eval(RESCHEDULE, {
        keys: [k.lane(job.lane), k.due, k.lease(job.lane)],
        arguments: [job.lane, token, job.id, JSON.stringify(job), String(Math.floor(dueMs))],
      });
      if (Number(r) < 0) throw new LeaseLostError(job.lane);
    },
    async defer(lane, token, dueMs) {
      const r = await redis.eval(DEFER, { keys: [k.due, k.lease(lane)], arguments: [lane, token, String(Math.floor(dueMs))] });
      if (Number(r) < 0) throw new LeaseLostError(lane);
    },
    async release(lane, owner) {
      await redis.eval(RELEASE, { keys: [k.lease(lane)], arguments: [owner] });
    },
    laneLength(lane) {
      return redis.lLen(k.lane(lane));
    },
    async health(destination) {
      const h = await redis.hGetAll(k.dest(destination));
      return Object.keys(h).length === 0 ? { ...HEALTHY } : parseHealth(h);
    },
    async countFailure(destination) {
      const reply = await redis.eval(FAIL, { keys: [k.dest(destination), k.destinations], arguments: [destination, String(TTL_SEC)] });
      return parseHealth(pairsToRecord(reply));
    },
    async saveHealth(destination, h) {
      const fields: string[] = [];
      for (const [key, value] of Object.entries(h)) fields.push(key, typeof value === "boolean" ? (value ? "1" : "0") : String(value));
      await redis.eval(
        `redis.call('HSET', KEYS[1], unpack(ARGV, 3)) redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2])) redis.call('SADD', KEYS[2], ARGV[1]) return 1`,
        { keys: [k.dest(destination), k.destinations], arguments: [destination, String(TTL_SEC), ...fields] },
      );
    },
    async destinations() {
      const names = await redis.sMembers(k.destinations);
      const out = await Promise.all(names.map(async (destination) => ({ destination, raw: await redis.hGetAll(k.dest(destination)) })));
      return out.filter((d) => Object.keys(d.raw).length > 0).map((d) => ({ destination: d.destination, health: parseHealth(d.raw) }));
    },
    async tryProbe(destination, owner, leaseMs) {
      return (await redis.set(k.probe(destination), owner, { expiration: { type: "PX", value: leaseMs }, condition: "NX" })) !== null;
    },
    async endProbe(destination, owner) {
      await redis.eval(RELEASE, { keys: [k.probe(destination)], arguments: [owner] });
    },
  };
}
