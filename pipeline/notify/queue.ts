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
 * | `lease:<lane>`                     | string | owner of the lane while one process works on it (PX lease)              |
 * | `queued:<alertId>:<actionIndex>`   | string | "this action is queued" (dedup of Kafka redelivery); EX 7 days          |
 * | `dest:<destination>`               | hash   | {@link DestinationHealth} of a destination; EX 7 days after last write  |
 * | `probe:<destination>`              | string | owner of the one probe of an unhealthy destination (PX lease)           |
 * | `destinations`                     | set    | destinations with a health record                                       |
 *
 * Why Redis and not retry topics with delay tiers: a delay tier delays every message of the tier
 * by the same amount and keeps no per-destination state, so it can neither hold a rule's later
 * alerts behind an earlier one that is being retried (per-rule order) nor stop sending to a
 * destination known to be dead (group backoff). Redis is already where the delivery log, the
 * redelivery guard and the signing secrets live, and its scripts make enqueue, claim and
 * completion atomic. The scripts build some key names from arguments, so they assume one Redis
 * node (not Redis Cluster), as the rest of chainsift does.
 * @module
 */

import type { AlertAvro } from "../../lib/alerting/avro.js";
import { type DestinationHealth, HEALTHY, parseHealth, queueKeys } from "../../lib/alerting/destinations.js";

export { type ActionDeliveryStatus, actionDeliveryStatus, laneOf, queueKeys } from "../../lib/alerting/destinations.js";

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
  /** The alert as its Avro record (JSON-safe). */
  alert: AlertAvro;
  /** Where the alert came from, to dead-letter it with its original bytes (base64). */
  source: { topic: string; partition: number; offset: string; keyB64: string | null; valueB64: string | null };
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

/** Lifetime of the `queued:` and `dest:` keys, in seconds (7 days, as the redelivery guard). */
const TTL_SEC = 7 * 24 * 3600;

// KEYS: queued marker, delivered guard, lane list, due zset. ARGV: job JSON, now ms, ttl s, lane.
const ENQUEUE = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
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

// Pops the head jobs whose ids are ARGV[6..] (in that order; an id no longer at the head is not
// popped), deletes their queued markers, makes the lane due at ARGV[4] ms or removes it when
// empty, and releases the lease when ARGV[5] is '1' and ARGV[2] holds it.
// KEYS: lane list, due, lease. ARGV: lane, owner, queued-key prefix, next due ms, release, ids...
const POP = `
local popped = 0
for i = 6, #ARGV do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then break end
  local ok, job = pcall(cjson.decode, head)
  if ok and job.id == ARGV[i] then
    redis.call('LPOP', KEYS[1])
    popped = popped + 1
  end
  redis.call('DEL', ARGV[3] .. ARGV[i])
end
if redis.call('LLEN', KEYS[1]) > 0 then
  redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
if ARGV[5] == '1' and redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) end
return popped`;

// Replaces the head job (when it is still the same job) and reschedules the lane; releases the
// lease. KEYS: lane list, due, lease. ARGV: lane, owner, job id, job JSON, due ms.
const RESCHEDULE = `
local head = redis.call('LINDEX', KEYS[1], 0)
if head then
  local ok, job = pcall(cjson.decode, head)
  if ok and job.id == ARGV[3] then redis.call('LSET', KEYS[1], 0, ARGV[4]) end
  redis.call('ZADD', KEYS[2], tonumber(ARGV[5]), ARGV[1])
end
if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) end
return 1`;

// Moves the lane's due time (only when the lane still exists) and releases the lease.
// KEYS: due, lease. ARGV: lane, owner, due ms.
const DEFER = `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('ZADD', KEYS[1], tonumber(ARGV[3]), ARGV[1]) end
if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
return 1`;

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
   * Appends jobs to their lanes, skipping a job already queued (Kafka redelivery) or already
   * delivered (the redelivery guard of `log.ts`). A new lane is due at once.
   * @returns How many jobs were added.
   */
  enqueue(jobs: DeliveryJob[], nowMs?: number): Promise<number>;
  /** Lanes whose head job may be attempted now (due time ≤ `nowMs`), earliest first, at most `limit`. */
  dueLanes(nowMs: number, limit: number): Promise<string[]>;
  /** The earliest due time of any lane (ms), or undefined when nothing is queued. */
  nextDueMs(): Promise<number | undefined>;
  /** Takes the lane's lease for `leaseMs` and returns its head job; undefined when leased elsewhere or empty. */
  claim(lane: string, owner: string, leaseMs: number): Promise<DeliveryJob | undefined>;
  /** The first `count` jobs of a lane, oldest first (unreadable entries are left out). */
  peek(lane: string, count: number): Promise<DeliveryJob[]>;
  /**
   * Removes the given jobs from the head of the lane (those that are still there, in order), makes
   * the lane due at `nextDueMs` when jobs remain, and releases the lease when `release` is true.
   */
  pop(lane: string, owner: string, jobIds: string[], nextDueMs: number, release: boolean): Promise<number>;
  /** Stores the updated head job and makes the lane due at `dueMs`; releases the lease. */
  reschedule(job: DeliveryJob, owner: string, dueMs: number): Promise<void>;
  /** Makes the lane due at `dueMs` without touching its jobs; releases the lease. */
  defer(lane: string, owner: string, dueMs: number): Promise<void>;
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
    async enqueue(jobs, nowMs = Date.now()) {
      const added = await Promise.all(
        jobs.map((job) =>
          redis.eval(ENQUEUE, {
            keys: [k.queued(job.id), k.delivered(job.id), k.lane(job.lane), k.due],
            arguments: [JSON.stringify(job), String(nowMs), String(TTL_SEC), job.lane],
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
    async claim(lane, owner, leaseMs) {
      const head = await redis.eval(CLAIM, { keys: [k.lease(lane), k.lane(lane), k.due], arguments: [owner, String(leaseMs), lane] });
      if (typeof head !== "string") return undefined;
      const job = parseJob(head);
      if (!job) {
        // An unreadable entry would block the lane for ever: drop it (it cannot be delivered or dead-lettered).
        await redis.eval(`if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then redis.call('LPOP', KEYS[1]) end return 1`, {
          keys: [k.lane(lane)],
          arguments: [head],
        });
        await this.release(lane, owner);
        return undefined;
      }
      return job;
    },
    async peek(lane, count) {
      const raw = await redis.lRange(k.lane(lane), 0, Math.max(0, count - 1));
      return raw.map(parseJob).filter((j): j is DeliveryJob => j !== undefined);
    },
    async pop(lane, owner, jobIds, nextDueMs, release) {
      const n = await redis.eval(POP, {
        keys: [k.lane(lane), k.due, k.lease(lane)],
        arguments: [lane, owner, `${k.prefix}queued:`, String(nextDueMs), release ? "1" : "0", ...jobIds],
      });
      return Number(n);
    },
    async reschedule(job, owner, dueMs) {
      await redis.eval(RESCHEDULE, {
        keys: [k.lane(job.lane), k.due, k.lease(job.lane)],
        arguments: [job.lane, owner, job.id, JSON.stringify(job), String(Math.floor(dueMs))],
      });
    },
    async defer(lane, owner, dueMs) {
      await redis.eval(DEFER, { keys: [k.due, k.lease(lane)], arguments: [lane, owner, String(Math.floor(dueMs))] });
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
