/**
 * The tracker's Lua scripts, each with its KEYS/ARGV layout declared by name (`lua.ts`), so the
 * Lua prelude and the TypeScript argument arrays come from one description. Key names are those of
 * {@link ConfirmationKeys} (`keys.ts`); emitting scripts store what they emit in the outbox
 * (`outbox.ts`) in the same atomic call.
 * @module
 */
import type { ConfirmationKeys } from "../keys.js";
import { luaScript } from "../lua.js";
import { EMIT_ARGS, EMIT_LUA, OUTBOX_KEYS } from "./outbox.js";

/** Lua shared by the tracking scripts: `forget(state, ruleSet, member)` deletes a tracked match. */
const FORGET_LUA = `
local function forget(state, ruleSet, member)
  redis.call('DEL', state)
  redis.call('ZREM', matches, member)
  redis.call('ZREM', due, member)
  redis.call('SREM', ruleSet, member)
end
`;

/** The fixed part of the emitting scripts' layouts. */
const EMITTING = {
  keys: ["matches", "due", ...OUTBOX_KEYS],
  args: ["ttl", ...EMIT_ARGS],
} as const satisfies { keys: ReadonlyArray<keyof ConfirmationKeys>; args: readonly string[] };

/**
 * First sight of a batch of matches (`FirstSight` in `decide.ts`): unless the match's
 * `confirmed` guard exists, either emits `confirmed` now (guarded, nothing tracked) or starts
 * tracking it and emits `pending` when asked (guarded). Returns the outbox records emitted.
 */
export const FIRST_SIGHT = luaScript(
  {
    ...EMITTING,
    item: {
      keys: ["state", "ruleSet", "pendingGuard", "confirmedGuard", "ruleSequence"],
      args: ["member", "blockNumber", "dueHead", "confirmNow", "sendPending", "template", "confirmations", "pendingId", "confirmedId"],
    },
  },
  `${EMIT_LUA}${FORGET_LUA}
local out = {}
for i = 1, itemCount do
  local it = item(i)
  if redis.call('EXISTS', it.confirmedGuard) == 0 then
    if it.confirmNow == '1' then
      if redis.call('SET', it.confirmedGuard, '1', 'NX', 'EX', ttl) then
        forget(it.state, it.ruleSet, it.member)
        out[#out + 1] = emit(it.confirmedId, 'confirmed', it.ruleSequence, it.confirmations, it.template)
      end
    else
      if redis.call('EXISTS', it.state) == 0 then
        redis.call('HSET', it.state, 't', it.template, 'bn', it.blockNumber, 'ps', '0', 'cs', '0')
        redis.call('ZADD', matches, it.blockNumber, it.member)
        redis.call('ZADD', due, it.dueHead, it.member)
        redis.call('SADD', it.ruleSet, it.member)
      end
      if it.sendPending == '1' and redis.call('SET', it.pendingGuard, '1', 'NX', 'EX', ttl) then
        redis.call('HSET', it.state, 'ps', '1')
        out[#out + 1] = emit(it.pendingId, 'pending', it.ruleSequence, it.confirmations, it.template)
      end
    end
  end
end
return out
`,
);

/**
 * Finishes a batch of tracked matches (`Finalization` in `decide.ts`): each one still
 * tracked is forgotten, and its alert (status `confirmed` or `removed`) is emitted from the stored
 * template unless guarded — a `removed` one only when `pending` went out; `extra` is the outbox
 * record's extra JSON members (`,"r":{…}`, the replacing block of a removal; "" for none). Returns
 * the outbox records emitted.
 */
export const FINALIZE = luaScript(
  {
    ...EMITTING,
    item: { keys: ["state", "ruleSet", "guard", "ruleSequence"], args: ["status", "member", "alertId", "confirmations", "extra"] },
  },
  `${EMIT_LUA}${FORGET_LUA}
local out = {}
for i = 1, itemCount do
  local it = item(i)
  if redis.call('EXISTS', it.state) == 1 then
    local f = redis.call('HMGET', it.state, 't', 'ps')
    forget(it.state, it.ruleSet, it.member)
    if (it.status == 'confirmed' or f[2] == '1') and redis.call('SET', it.guard, '1', 'NX', 'EX', ttl) then
      out[#out + 1] = emit(it.alertId, it.status, it.ruleSequence, it.confirmations, f[1], it.extra)
    end
  end
end
return out
`,
);

/** Members of a sorted set with score ≤ `maxScore`, with their scores (flat list). */
export const RANGE = luaScript(
  { keys: ["set"], args: ["maxScore"] },
  `return redis.call('ZRANGEBYSCORE', set, '-inf', maxScore, 'WITHSCORES')`,
);

/** Forgets every tracked match of a rule; returns how many. */
export const DROP_RULE = luaScript(
  { keys: ["matches", "due", "ruleSet"], args: ["statePrefix"] },
  `${FORGET_LUA}
local members = redis.call('SMEMBERS', ruleSet)
for _, m in ipairs(members) do forget(statePrefix .. m, ruleSet, m) end
redis.call('DEL', ruleSet)
return #members
`,
);

/** The size of a sorted set. */
export const CARD = luaScript({ keys: ["set"], args: [] }, `return redis.call('ZCARD', set)`);
