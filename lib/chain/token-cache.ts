/**
 * The on-chain token metadata of the decode stage, cached: {@link createTokenMetadataCache} answers
 * a whole batch of contracts with one in-memory pass, one Redis `MGET` for the rest, one JSON-RPC
 * batch (`token-metadata.ts` {@link readTokenMetadata}) for what Redis does not hold either, and one
 * `MULTI` writing what was read.
 *
 * Redis: `<keyPrefix>tokens:<technology>/<blockchain>/<network>:<address lower-case>`
 * ({@link tokenCacheKeyPrefix}), a string holding `{"decimals","symbol","name","blockNumber"}`
 * (JSON; `blockNumber` the block the calls were made at). An entry with known decimals has no TTL
 * (decimals never change in practice); an entry without (the contract reverted on `decimals()` or
 * returned garbage) is a **negative entry** kept for {@link TokenCacheDeps.negativeTtlMs} (default one
 * day), so such a contract costs one batch of calls per day instead of one per batch of logs. What a
 * node without `eth_call` answers is kept in the process's memory only (as a negative entry), never
 * in Redis: another node may know better.
 * @module
 */
import type { ChainId } from "../config/index.js";
import type { RedisClient } from "../redis.js";
import { readTokenMetadata, type TokenMetadata, type TokenMetadataRead, type TokenMetadataRequest } from "./token-metadata.js";

/** Reads metadata of many contracts (default {@link readTokenMetadata} on the node); the test seam. */
export type TokenMetadataReader = (requests: readonly TokenMetadataRequest[]) => Promise<TokenMetadataRead[]>;

/** The batch interface of on-chain token metadata, as the decode stage uses it. */
export interface TokenMetadataCache {
  /**
   * The metadata of every requested contract that has any.
   * @param requests - the contracts, each with the block it was first seen at (the calls are made
   *   there when not cached); duplicates are fine.
   * @returns lower-case address → metadata, for every requested address (fields null when unknown;
   *   `decimals` null for negative entries).
   * @throws {RetryableError} when the node fails (lib/errors.ts); Redis errors as node-redis throws
   *   them (any error but a NonRetryableError is retried by the stages).
   */
  resolve(requests: readonly TokenMetadataRequest[]): Promise<Map<string, TokenMetadata>>;
}

/** Dependencies of {@link createTokenMetadataCache}. */
export interface TokenCacheDeps {
  /** The process's Redis client (lib/common.ts `redis`), asked for on the first batch with a cache miss. */
  redis: () => Promise<RedisClient>;
  /** Config `redisKeyPrefix`, e.g. `cs:`. */
  keyPrefix: string;
  /** The chain served (part of every key). */
  chain: ChainId;
  /** Reads what no cache holds: e.g. `(r) => readTokenMetadata(rpcUrl, r)`. */
  read: TokenMetadataReader;
  /** How long a negative entry (decimals unknown) lives, in Redis and in memory, ms. Default 86400000 (one day). */
  negativeTtlMs?: number;
  /** Entries kept in memory (the memory is cleared when full); default 100000. */
  memoryEntries?: number;
  /** Clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
}

/** `<keyPrefix>tokens:<technology>/<blockchain>/<network>:` (the module notes). */
export function tokenCacheKeyPrefix(keyPrefix: string, chain: ChainId): string {
  return `${keyPrefix}tokens:${chain.technology}/${chain.blockchain}/${chain.network}:`;
}

/** What a Redis entry holds. */
interface Entry extends TokenMetadata {
  blockNumber: number;
}

function parse(json: string | null): TokenMetadata | undefined {
  if (json === null) return undefined;
  try {
    const e = JSON.parse(json) as Partial<Entry>;
    const decimals =
      Number.isInteger(e.decimals) && (e.decimals as number) >= 0 && (e.decimals as number) <= 255 ? (e.decimals as number) : null;
    return { decimals, symbol: typeof e.symbol === "string" ? e.symbol : null, name: typeof e.name === "string" ? e.name : null };
  } catch {
    return undefined; // unreadable entry: read the chain again (and overwrite it)
  }
}

/** Creates a {@link TokenMetadataCache} (module notes). */
export function createTokenMetadataCache(deps: TokenCacheDeps): TokenMetadataCache {
  const prefix = tokenCacheKeyPrefix(deps.keyPrefix, deps.chain);
  const negativeTtlMs = deps.negativeTtlMs ?? 86_400_000;
  const memoryEntries = deps.memoryEntries ?? 100_000;
  const now = deps.now ?? Date.now;
  const memory = new Map<string, { meta: TokenMetadata; expiresAtMs: number }>();
  const remember = (address: string, meta: TokenMetadata, ttlMs: number) => {
    if (memory.size >= memoryEntries) memory.clear();
    memory.set(address, { meta, expiresAtMs: meta.decimals === null ? now() + ttlMs : Number.POSITIVE_INFINITY });
  };
  return {
    async resolve(requests) {
      const out = new Map<string, TokenMetadata>();
      const missing = new Map<string, TokenMetadataRequest>();
      for (const r of requests) {
        const address = r.address.toLowerCase();
        const m = memory.get(address);
        if (m && m.expiresAtMs > now()) out.set(address, m.meta);
        else if (!missing.has(address)) missing.set(address, { address, blockNumber: r.blockNumber });
      }
      if (missing.size === 0) return out;
      const redis = await deps.redis();
      const addresses = [...missing.keys()];
      const cached = await redis.mGet(addresses.map((a) => prefix + a));
      const toRead: TokenMetadataRequest[] = [];
      addresses.forEach((a, i) => {
        const meta = parse(cached[i] ?? null);
        if (meta) {
          out.set(a, meta);
          // A negative entry's remaining TTL is unknown here: keep it in memory for at most the full TTL.
          remember(a, meta, negativeTtlMs);
        } else toRead.push(missing.get(a) as TokenMetadataRequest);
      });
      if (toRead.length === 0) return out;
      const read = await deps.read(toRead);
      const write = redis.multi();
      let writes = 0;
      for (const r of read) {
        const meta: TokenMetadata = { decimals: r.decimals, symbol: r.symbol, name: r.name };
        out.set(r.address, meta);
        remember(r.address, meta, negativeTtlMs);
        if (r.unavailable) continue; // the node cannot tell: nothing learned, nothing in Redis (memory only: not asked again per batch)
        const value = JSON.stringify({ ...meta, blockNumber: missing.get(r.address)?.blockNumber ?? null });
        if (meta.decimals === null) write.set(prefix + r.address, value, { expiration: { type: "PX", value: negativeTtlMs } });
        else write.set(prefix + r.address, value);
        writes++;
      }
      if (writes > 0) await write.exec();
      return out;
    },
  };
}
