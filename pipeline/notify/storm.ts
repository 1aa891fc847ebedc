/**
 * Storm control's state in Redis (the policy and the digest text are lib/alerting/storm.ts): which
 * alerts of a window an action sent one by one, which it held back for the window's digest, and the
 * digests due. Every step is one Lua script keyed by the alert id, so a notify process killed at any
 * point neither loses nor doubles an alert in a digest: a job re-run after a crash gets the same
 * answer ({@link StormStore.admit} is idempotent), and a digest is sent under a lease (like the
 * delivery lanes, `queue.ts`) and removed in the same script that records it sent.
 *
 * | key (under `<prefix>notify:storm:`) | type | content |
 * |---|---|---|
 * | `sent:<lane>:<window>` | set | alert ids sent one by one in the window (at most `max`) |
 * | `held:<lane>:<window>` | hash | alert id → JSON `HeldAlert`, the digest's alerts, each with its source record (alerts-topic position, key and Avro value in base64) to dead-letter it if the digest is given up |
 * | `ctx:<lane>:<window>` | string | JSON `DigestContext` (rule, action, window), from the first held alert |
 * | `lock:<lane>:<window>` | string | the lease of the process sending the digest |
 * | `tries:<lane>:<window>` | string | failed attempts at sending the digest |
 * | `due` | sorted set | `<lane>|<window>` scored by when its digest is due (window end, or a retry) |
 *
 * `<window>` is the window index `floor(time / windowMs)`. Keys expire after {@link STORM_TTL_SEC}
 * (the `held:` hash from its last write; a digest is due when its window ends, at most a day after
 * the first write, and given up after the retry policy's attempts, so well before).
 * @module
 */
import type { Alert } from "../../lib/alerting/alert.js";
import {
  type AlertSource,
  type Digest,
  type DigestContext,
  type HeldAlert,
  heldOf,
  makeDigest,
  type StormPolicy,
  windowOf,
} from "../../lib/alerting/storm.js";
import type { QueueRedis } from "./queue.js";

/** Delivery-log code of an alert held back by storm control (in the window's digest; not an error). */
export const CS_THROTTLED = "CS_THROTTLED";

/** Lifetime of the storm-control keys, in seconds (7 days: a digest that cannot be sent for a week is given up). */
export const STORM_TTL_SEC = 7 * 24 * 3600;

/** The Redis commands used (a structural subset of a node-redis v5 client). */
export interface StormRedis extends Pick<QueueRedis, "eval" | "zRangeByScore" | "hGetAll"> {
  get(key: string): Promise<string | null>;
}

// KEYS: sent, held, ctx, due. ARGV: alertId, max, heldJson, member, dueMs, ttlSec, ctxJson.
const ADMIT = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 'send' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 'held' end
if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('SADD', KEYS[1], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  return 'send'
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('SET', KEYS[3], ARGV[7], 'NX', 'EX', ARGV[6])
redis.call('ZADD', KEYS[4], 'NX', ARGV[5], ARGV[4])
return 'held'
`;

// KEYS: lock. ARGV: token, leaseMs.
const CLAIM = `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`;

// KEYS: held, ctx, lock, tries, due. ARGV: member, token. Removes the digest (sent, or given up).
const FINISH = `
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) end
return 1
`;

// KEYS: lock, tries, due. ARGV: member, token, dueMs, ttlSec. Returns the failed attempts so far.
const RETRY = `
local n = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], 'XX', ARGV[3], ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[2] then redis.call('DEL', KEYS[1]) end
return n
`;

/** A due digest claimed by this process: send it, then {@link StormStore.finish} or {@link StormStore.retry}. */
export interface ClaimedDigest {
  /** `<lane>|<window>`. */
  member: string;
  token: string;
  digest: Digest;
  /** Failed attempts at sending it so far. */
  tries: number;
}

/** The storm-control state. */
export interface StormStore {
  /**
   * Whether the alert's job is sent now (`send`) or held for the window's digest (`held`), under
   * `policy` at time `nowMs`. Idempotent by alert id within the window. A held alert is kept with
   * `source` (its job's source record), so that it can be dead-lettered if its digest is given up.
   */
  admit(lane: string, actionIndex: number, alert: Alert, policy: StormPolicy, nowMs: number, source: AlertSource): Promise<"send" | "held">;
  /** Claims up to `limit` digests due at `nowMs` with a lease of `leaseMs`; each with its held alerts. */
  claimDue(nowMs: number, leaseMs: number, token: string, limit?: number): Promise<ClaimedDigest[]>;
  /** The digest was sent (or refused for good): forget it. */
  finish(c: ClaimedDigest): Promise<void>;
  /** Try again at `dueMs`; returns the failed attempts so far. */
  retry(c: ClaimedDigest, dueMs: number): Promise<number>;
}

/** Creates the Redis-backed {@link StormStore}. */
export function createStormStore(redis: StormRedis, keyPrefix: string): StormStore {
  const base = `${keyPrefix}notify:storm:`;
  const k = (kind: string, member: string) => `${base}${kind}:${member.replace("|", ":")}`;
  const due = `${base}due`;
  return {
    async admit(lane, actionIndex, alert, policy, nowMs, source) {
      const w = windowOf(nowMs, policy.windowMs);
      const member = `${lane}|${w.index}`;
      const ctx: DigestContext = {
        ruleId: alert.ruleId,
        ...(alert.ruleName ? { ruleName: alert.ruleName } : {}),
        accountId: alert.accountId,
        chain: alert.chain,
        targetType: alert.targetType,
        actionIndex,
        action: alert.actions[actionIndex]!,
        policy,
        windowStartMs: w.startMs,
        windowEndMs: w.endMs,
        entity: alert.entity,
      };
      const r = await redis.eval(ADMIT, {
        keys: [k("sent", member), k("held", member), k("ctx", member), due],
        arguments: [
          alert.id,
          String(policy.max),
          JSON.stringify(heldOf(alert, source)),
          member,
          String(w.endMs),
          String(STORM_TTL_SEC),
          JSON.stringify(ctx),
        ],
      });
      return r === "held" ? "held" : "send";
    },
    async claimDue(nowMs, leaseMs, token, limit = 20) {
      const members = await redis.zRangeByScore(due, "-inf", nowMs, { LIMIT: { offset: 0, count: limit } });
      const out: ClaimedDigest[] = [];
      for (const member of members) {
        if (Number(await redis.eval(CLAIM, { keys: [k("lock", member)], arguments: [token, String(leaseMs)] })) !== 1) continue;
        const ctxRaw = await redis.get(k("ctx", member));
        const held = Object.values(await redis.hGetAll(k("held", member))).map((v) => JSON.parse(v) as HeldAlert);
        const tries = Number((await redis.get(k("tries", member))) ?? 0);
        const claimed = { member, token, tries, digest: undefined as unknown as Digest };
        if (ctxRaw === null || held.length === 0) {
          await this.finish(claimed); // expired or already sent by a process whose lease ran out
          continue;
        }
        out.push({ ...claimed, digest: makeDigest(JSON.parse(ctxRaw) as DigestContext, held) });
      }
      return out;
    },
    async finish(c) {
      await redis.eval(FINISH, {
        keys: [k("held", c.member), k("ctx", c.member), k("lock", c.member), k("tries", c.member), due],
        arguments: [c.member, c.token],
      });
    },
    async retry(c, dueMs) {
      return Number(
        await redis.eval(RETRY, {
          keys: [k("lock", c.member), k("tries", c.member), due],
          arguments: [c.member, c.token, String(Math.floor(dueMs)), String(STORM_TTL_SEC)],
        }),
      );
    },
  };
}
