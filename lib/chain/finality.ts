/**
 * The node's `finalized` block as ingest last read it (`eth_getBlockByNumber("finalized")`, every
 * `finalizedEveryPolls` polls), published in Redis for the match stage's "confirm on finality"
 * (docs/rules.md, "Confirm on finality") and the API's warning:
 *
 * | key | content |
 * |---|---|
 * | `<prefix>ingest:<technology>/<blockchain>/<network>:finalized` | the finalized block number (decimal); absent when the node never answered the tag |
 *
 * The value only grows (a Lua max), so a lagging endpoint of a pool never moves it back.
 * @module
 */
import type { ChainId } from "../config/index.js";
import { type ChainStateRedis, ingestKeyPrefix } from "./ingest-keys.js";

/** The Redis key of a chain's finalized block number (module doc). */
export function finalizedKey(keyPrefix: string, chain: ChainId): string {
  return `${ingestKeyPrefix(keyPrefix, chain)}finalized`;
}

const RAISE = `local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
local n = tonumber(ARGV[1])
if n > cur then redis.call('SET', KEYS[1], ARGV[1]) return n end
return cur`;

/**
 * Records the node's finalized block number (kept when a lower one arrives).
 * @param redis - a connected client (structural subset).
 * @param key - {@link finalizedKey}.
 * @param finalized - a block number, or null (the node did not answer the tag: nothing is written).
 */
export async function recordFinalized(redis: Pick<ChainStateRedis, "eval">, key: string, finalized: number | null): Promise<void> {
  if (finalized === null || !Number.isSafeInteger(finalized) || finalized < 0) return;
  await redis.eval(RAISE, { keys: [key], arguments: [String(finalized)] });
}

/**
 * The finalized block number ingest last recorded, or null when none was (the node has no
 * `finalized` tag, or ingest has not read it yet).
 */
export async function readFinalized(redis: Pick<ChainStateRedis, "get">, key: string): Promise<number | null> {
  const raw = await redis.get(key);
  const n = raw === null ? Number.NaN : Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}
