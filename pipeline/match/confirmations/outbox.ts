/**
 * The transactional outbox of the confirmation tracker. The script that decides to emit an alert
 * (guard + sequence, `scripts.ts`) also stores the alert in the outbox, atomically, through
 * {@link EMIT_LUA}. The caller publishes the returned alerts and then acks them; an alert whose
 * emitter died in between stays in the outbox, and a later sweep claims it ({@link Outbox.claim})
 * and gets it identical (id, sequence, emittedAt, payload), so an emitted alert is never lost.
 *
 * An outbox record is `{"s":status,"q":sequence,"c":confirmations,"at":emittedAt,"t":template}`
 * (a `removed` one also `"r":{"number":…,"hash":…}`, the replacing block),
 * with the template JSON embedded verbatim (never re-encoded, so numbers keep their exact text);
 * {@link alertOfRecord} is the one function that turns it into an {@link Alert}, for the emitting
 * call and every later read alike.
 * @module
 */
import { type Alert, type AlertStatus, alertId, type ReplacingBlock } from "../../../lib/alerting/alert.js";
import type { ConfirmationKeys } from "../keys.js";
import { luaScript, runLua } from "../lua.js";
import type { MatchRedis } from "../redis.js";
import type { AlertTemplate } from "./decide.js";

/** The outbox keys every emitting script takes (names of its layout; see `keys.ts`). */
export const OUTBOX_KEYS = ["outbox", "outboxOrder", "outboxCount", "outboxVisible"] as const;
/** The arguments every emitting script takes: the alerts' `emittedAt` and the visibility window in ms. */
export const EMIT_ARGS = ["emittedAt", "visibilityMs"] as const;

/**
 * Lua for the emitting scripts (after their prelude, which binds {@link OUTBOX_KEYS} and
 * {@link EMIT_ARGS}): `emit(id, status, sequenceKey, confirmations, template, extra)` increases the rule's
 * sequence, stores the outbox record, makes it claimable after the visibility window (Redis time)
 * and returns it. It guards nothing itself. `extra` (optional) is JSON text of more members, each
 * with its leading comma (`,"r":{…}`), written verbatim.
 */
export const EMIT_LUA = `
local clock = redis.call('TIME')
local visibleAt = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + tonumber(visibilityMs)
local function emit(id, status, sequenceKey, confirmations, template, extra)
  local q = redis.call('INCR', sequenceKey)
  local rec = '{"s":"' .. status .. '","q":' .. q .. ',"c":' .. confirmations .. ',"at":"' .. emittedAt .. '"' .. (extra or '') .. ',"t":' .. template .. '}'
  redis.call('HSET', outbox, id, rec)
  redis.call('ZADD', outboxOrder, redis.call('INCR', outboxCount), id)
  redis.call('ZADD', outboxVisible, visibleAt, id)
  return rec
end
`;

/** Removes the given alert ids from the outbox. */
const ACK = luaScript(
  { keys: ["outbox", "outboxOrder", "outboxVisible"], args: [], item: { keys: [], args: ["id"] } },
  `
for i = 1, itemCount do
  local id = item(i).id
  redis.call('HDEL', outbox, id)
  redis.call('ZREM', outboxOrder, id)
  redis.call('ZREM', outboxVisible, id)
end
return itemCount
`,
);

/** Outbox records in emission order, up to rank `lastRank` (-1: all). */
const UNACKED = luaScript(
  { keys: ["outbox", "outboxOrder"], args: ["lastRank"] },
  `
local ids = redis.call('ZRANGE', outboxOrder, 0, tonumber(lastRank))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', outbox, id)
  if rec then out[#out + 1] = rec end
end
return out
`,
);

/**
 * Claims up to `limit` outbox alerts visible now (Redis time), hiding each for `leaseMs`.
 * Returns a flat list: emission number, record, ….
 */
const CLAIM = luaScript(
  { keys: ["outbox", "outboxOrder", "outboxVisible"], args: ["leaseMs", "limit"] },
  `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', outboxVisible, '-inf', now, 'LIMIT', 0, tonumber(limit))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', outbox, id)
  if rec then
    redis.call('ZADD', outboxVisible, now + tonumber(leaseMs), id)
    out[#out + 1] = redis.call('ZSCORE', outboxOrder, id) or '0'
    out[#out + 1] = rec
  else
    redis.call('ZREM', outboxVisible, id)
    redis.call('ZREM', outboxOrder, id)
  end
end
return out
`,
);

/** An outbox record as stored (module doc). */
interface OutboxRecord {
  s: AlertStatus;
  q: number;
  c: number;
  at: string;
  t: AlertTemplate;
  /** Only on removals: the replacing block. */
  r?: ReplacingBlock;
}

/** The {@link Alert} of an outbox record (module doc). */
export function alertOfRecord(json: string): Alert {
  const r = JSON.parse(json) as OutboxRecord;
  const t = r.t;
  return {
    id: alertId(t.ruleId, t.entityId, t.blockHash, r.s),
    ruleId: t.ruleId,
    ruleVersion: t.ruleVersion,
    ruleName: t.ruleName ?? null,
    accountId: t.accountId,
    sequence: r.q,
    status: r.s,
    confirmations: r.c,
    maxConfirmationCount: t.maxConfirmationCount,
    chain: t.chain,
    targetType: t.targetType,
    entityId: t.entityId,
    blockHash: t.blockHash,
    blockNumber: t.blockNumber,
    payload: t.payload,
    entity: t.entity,
    actions: t.actions,
    emittedAt: r.at,
    ...(r.r ? { replacedBy: r.r } : {}),
  };
}

/** The reading and acknowledging side of the outbox. */
export interface Outbox {
  /** Removes published alerts; unknown ids are ignored. */
  ack(alertIds: readonly string[]): Promise<void>;
  /** Emitted alerts not acked yet, in emission order (claims nothing); at most `limit` (the oldest), default all. */
  unacked(limit?: number): Promise<Alert[]>;
  /** Outbox alerts whose visibility window has passed, in emission order, each hidden for `leaseMs` (see `tracker.ts`). */
  claim(limit: number, leaseMs: number): Promise<Alert[]>;
}

/**
 * The outbox of one chain.
 * @param batchSize - alert ids per Redis call of {@link Outbox.ack}.
 */
export function createOutbox(redis: MatchRedis, keys: ConfirmationKeys, batchSize: number): Outbox {
  return {
    async ack(alertIds) {
      for (let i = 0; i < alertIds.length; i += batchSize) {
        const ids = alertIds.slice(i, i + batchSize).map((id) => ({ id }));
        await runLua(redis, ACK, keys, ids);
      }
    },
    async unacked(limit) {
      if (limit !== undefined && !(limit >= 1)) return [];
      const lastRank = limit === undefined ? -1 : Math.floor(limit) - 1;
      const records = (await runLua(redis, UNACKED, { ...keys, lastRank })) as unknown[];
      return records.map((r) => alertOfRecord(String(r)));
    },
    async claim(limit, leaseMs) {
      const flat = (await runLua(redis, CLAIM, { ...keys, leaseMs, limit })) as unknown[];
      const claimed: { n: number; alert: Alert }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) claimed.push({ n: Number(flat[i]), alert: alertOfRecord(String(flat[i + 1])) });
      return claimed.sort((a, b) => a.n - b.n).map((c) => c.alert);
    },
  };
}
