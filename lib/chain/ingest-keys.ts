/**
 * What lib/chain/state.ts (the follower's state) and lib/chain/finality.ts (the finalized block)
 * share: the key prefix of a chain's ingest state in Redis and the node-redis commands they use.
 * Both import it from here, so neither imports the other's module for it.
 * @module
 */
import type { ChainId } from "../config/index.js";

/** The node-redis v5 commands the ingest state uses (lib/chain/state.ts; a `createClient()` client fits). */
export interface ChainStateRedis {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  hSet(key: string, values: Record<string, string>): Promise<number>;
  hDel(key: string, fields: string[]): Promise<number>;
  hGetAll(key: string): Promise<Record<string, string>>;
  hmGet(key: string, fields: string[]): Promise<Array<string | null>>;
  hKeys(key: string): Promise<string[]>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  del(keys: string[]): Promise<number>;
  keys(pattern: string): Promise<string[]>;
}

/** The key prefix of a chain's ingest state: `<keyPrefix>ingest:<technology>/<blockchain>/<network>:`. */
export function ingestKeyPrefix(keyPrefix: string, chain: ChainId): string {
  return `${keyPrefix}ingest:${chain.technology}/${chain.blockchain}/${chain.network}:`;
}
