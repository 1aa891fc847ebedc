/**
 * The Redis side of windowed rules (docs/design/windows.md, "State in Redis"): keys and the Lua
 * scripts that add selected records (every member) and load and save a window's state (the owner
 * of the `blocks` partition), each with its KEYS/ARGV layout declared by name (`../lua.ts`).
 *
 * Keys, under the match stage's chain prefix (`chainKeyPrefix`, `../keys.ts`):
 *
 * | key | type | content |
 * |---|---|---|
 * | `win:<ruleId>:<version>` | hash | `s`: the `WindowState` JSON (lib/match/windows.ts); `rev`: revision, compare-and-set |
 * | `win:<ruleId>:<version>:r:<blockHash>` | hash | record id → `WindowRecord` JSON of one block (expires {@link RECORD_TTL_SECONDS} after the last write) |
 * | `win:dirty` | hash | `<ruleId>:<version>\|<blockHash>` → a counter, increased by every record write (late records for the owner) |
 *
 * A window whose rule version is no longer evaluated (deleted, disabled, new version) loses its
 * state, dirty fields and record hashes ({@link WINDOW_FOOTPRINT}, {@link DROP_WINDOW}, {@link DROP_RECORDS}).
 * @module
 */
import type { ChainId } from "../../../lib/config/index.js";
import { chainKeyPrefix } from "../keys.js";
import { luaScript } from "../lua.js";

/** Lifetime of a block's record hash after its last write: 3 days (longer than the largest window, 86,400 s, plus the reorg depth). */
export const RECORD_TTL_SECONDS = 259_200;

/** The keys of windowed rules of one chain (module table). */
export interface WindowKeys {
  /** `win:dirty`. */
  dirty: string;
  /** `win:<ruleId>:<version>`: the window's state hash. */
  state(windowId: string): string;
  /** `win:<ruleId>:<version>:r:<blockHash>`: a block's selected records. */
  records(windowId: string, blockHash: string): string;
}

/** The window id of a rule version: `<ruleId>:<version>` (a rule change starts a new window). */
export function windowId(rule: { id: string; version: number }): string {
  return `${rule.id}:${rule.version}`;
}

/** The keys of windowed rules of a chain. */
export function windowKeys(keyPrefix: string, chain: ChainId): WindowKeys {
  const base = `${chainKeyPrefix(keyPrefix, chain)}win:`;
  return {
    dirty: `${base}dirty`,
    state: (id) => `${base}${id}`,
    records: (id, blockHash) => `${base}${id}:r:${blockHash}`,
  };
}

/** Adds records (idempotent by id, `HSETNX`) and marks each (window, block) dirty. Returns how many were new. */
export const ADD_RECORDS = luaScript(
  { keys: ["dirty"], args: ["ttl"], item: { keys: ["records"], args: ["dirtyField", "id", "record"] } },
  `local added = 0
for i = 1, itemCount do
  local it = item(i)
  if redis.call('HSETNX', it.records, it.id, it.record) == 1 then
    added = added + 1
    redis.call('HINCRBY', dirty, it.dirtyField, 1)
  end
  redis.call('EXPIRE', it.records, ttl)
end
return added
`,
);

/**
 * A window's state and revision (`{s, rev}` as a flat list; nil when absent). When the revision is
 * still `known` (the one the caller holds in memory, "" for none) the state is not sent: `{nil, rev}`.
 */
export const LOAD_STATE = luaScript(
  { keys: ["state"], args: ["known"] },
  `local rev = redis.call('HGET', state, 'rev')
if rev and rev == known then return {false, rev} end
return redis.call('HMGET', state, 's', 'rev')`,
);

/** The records of one block: a flat list of id, record JSON. */
export const BLOCK_RECORDS = luaScript({ keys: ["records"], args: [] }, `return redis.call('HGETALL', records)`);

/** The dirty marks: a flat list of field, counter. */
export const DIRTY = luaScript({ keys: ["dirty"], args: [] }, `return redis.call('HGETALL', dirty)`);

/**
 * Saves a window's state if its revision is still `rev` ("" when it had none): compare-and-set,
 * so an owner that lost the `blocks` partition cannot overwrite a newer state. Clears the dirty
 * marks it consumed (`field`, `count`) unless they moved since. Returns 1 when saved, 0 when not.
 */
export const SAVE_STATE = luaScript(
  { keys: ["state", "dirty"], args: ["rev", "json"], item: { keys: [], args: ["field", "count"] } },
  `local cur = redis.call('HGET', state, 'rev')
if (cur or '') ~= rev then return 0 end
redis.call('HSET', state, 's', json, 'rev', tostring((tonumber(rev) or 0) + 1))
for i = 1, itemCount do
  local it = item(i)
  if redis.call('HGET', dirty, it.field) == it.count then redis.call('HDEL', dirty, it.field) end
end
return 1
`,
);

/**
 * Deletes the record hashes of blocks a saved state no longer holds (pruned below its final
 * height): the state keeps its blocks' records itself, and a record of a final block changes no
 * window, so only {@link RECORD_TTL_SECONDS} would bound them otherwise (a hash per rule and block
 * with matches for three days). Returns how many keys it deleted.
 */
export const DROP_RECORDS = luaScript(
  { keys: [], args: [], item: { keys: ["records"], args: [] } },
  `local n = 0
for i = 1, itemCount do n = n + redis.call('DEL', item(i).records) end
return n
`,
);

/**
 * What a window holds in Redis beyond its record hashes: its state JSON (`nil` when none) followed
 * by its `win:dirty` fields (`<windowId>|<blockHash>`, those starting with `prefix`). Read before
 * {@link DROP_WINDOW} to name the record hashes to delete.
 */
export const WINDOW_FOOTPRINT = luaScript(
  { keys: ["state", "dirty"], args: ["prefix"] },
  `local out = {redis.call('HGET', state, 's') or false}
for _, f in ipairs(redis.call('HKEYS', dirty)) do
  if string.sub(f, 1, #prefix) == prefix then out[#out + 1] = f end
end
return out
`,
);

/**
 * Deletes a window that no rule evaluates any more (its rule was deleted, disabled, changed
 * version or lost its window): the state hash and its `win:dirty` fields (`field` items). Its
 * record hashes go with {@link DROP_RECORDS}. Returns 1.
 */
export const DROP_WINDOW = luaScript(
  { keys: ["state", "dirty"], args: [], item: { keys: [], args: ["field"] } },
  `redis.call('DEL', state)
for i = 1, itemCount do redis.call('HDEL', dirty, item(i).field) end
return 1
`,
);
