/**
 * The decode stage's token-metadata cache (lib/chain/token-cache.ts) against the real Redis, under a
 * unique key prefix deleted afterwards, with a counting reader in place of the node: one read per
 * contract across batches and processes (memory, then Redis), negative entries with their TTL, and
 * nothing in Redis from a node without eth_call (memory only) or from a failed read.
 */
import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTokenMetadataCache, type TokenMetadataReader, tokenCacheKeyPrefix } from "../../../lib/chain/token-cache.js";
import type { TokenMetadataRead, TokenMetadataRequest } from "../../../lib/chain/token-metadata.js";
import { type ChainId, loadConfig } from "../../../lib/config/index.js";
import { RetryableError } from "../../../lib/errors.js";
import type { RedisClient } from "../../../lib/redis.js";
import { deletePrefix, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = loadConfig().redisUrl;
const PREFIX = `cs-test-tokcache-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));

const EIGHT = "0x00000000000000000000000000000000000000e8";
const REVERTS = "0x00000000000000000000000000000000000000ee";
const NO_CALL = "0x00000000000000000000000000000000000000ec";

/** A reader standing in for the node: 8 decimals, a revert, or a node without eth_call; records what it was asked. */
function countingReader(): { read: TokenMetadataReader; asked: TokenMetadataRequest[][]; fail: boolean } {
  const state = {
    asked: [] as TokenMetadataRequest[][],
    fail: false,
    read: async (requests: readonly TokenMetadataRequest[]): Promise<TokenMetadataRead[]> => {
      state.asked.push([...requests]);
      if (state.fail) throw new RetryableError("node down");
      return requests.map(({ address }) => ({
        address,
        decimals: address === EIGHT ? 8 : null,
        symbol: address === EIGHT ? "EIGHT" : null,
        name: null,
        unavailable: address === NO_CALL,
      }));
    },
  };
  return state;
}

describe.skipIf(!up)("token metadata cache on Redis", () => {
  let redis: RedisClient;
  beforeAll(async () => {
    redis = createClient({ url: REDIS_URL });
    redis.on("error", () => {});
    await redis.connect();
  });
  afterAll(async () => {
    await deletePrefix(REDIS_URL, PREFIX);
    await redis?.close();
  });

  it("reads each contract once: later batches from memory, another process from Redis; negative entries expire", async () => {
    const reader = countingReader();
    const deps = { redis: async () => redis, keyPrefix: PREFIX, chain: CHAIN, negativeTtlMs: 60_000 };
    const cache = createTokenMetadataCache({ ...deps, read: reader.read });
    const batch = [
      { address: EIGHT.toUpperCase().replace("0X", "0x"), blockNumber: 12 },
      { address: REVERTS, blockNumber: 12 },
      { address: NO_CALL, blockNumber: 12 },
      { address: EIGHT, blockNumber: 11 },
    ];
    const first = await cache.resolve(batch);
    expect(first.get(EIGHT)).toEqual({ decimals: 8, symbol: "EIGHT", name: null });
    expect(first.get(REVERTS)).toEqual({ decimals: null, symbol: null, name: null });
    expect(reader.asked).toEqual([
      [
        { address: EIGHT, blockNumber: 12 },
        { address: REVERTS, blockNumber: 12 },
        { address: NO_CALL, blockNumber: 12 },
      ],
    ]);
    const key = (a: string) => tokenCacheKeyPrefix(PREFIX, CHAIN) + a;
    expect(JSON.parse((await redis.get(key(EIGHT))) as string)).toEqual({ decimals: 8, symbol: "EIGHT", name: null, blockNumber: 12 });
    expect(await redis.pTTL(key(EIGHT))).toBe(-1);
    const ttl = await redis.pTTL(key(REVERTS));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await redis.exists(key(NO_CALL))).toBe(0); // nothing learned, nothing in Redis

    // The same process: from memory, the contract the node could not tell about too.
    await cache.resolve(batch);
    expect(reader.asked).toHaveLength(1);

    // Another process (empty memory): from Redis.
    const other = countingReader();
    const second = createTokenMetadataCache({ ...deps, read: other.read });
    const again = await second.resolve([
      { address: EIGHT, blockNumber: 99 },
      { address: REVERTS, blockNumber: 99 },
    ]);
    expect(again.get(EIGHT)?.decimals).toBe(8);
    expect(again.get(REVERTS)?.decimals).toBeNull();
    expect(other.asked).toEqual([]);

    // A negative entry gone from Redis (its TTL passed) and from memory (clock moved on): asked again.
    let now = Date.now();
    const clocked = countingReader();
    const third = createTokenMetadataCache({ ...deps, read: clocked.read, now: () => now });
    await third.resolve([{ address: REVERTS, blockNumber: 99 }]);
    expect(clocked.asked).toEqual([]);
    await redis.del(key(REVERTS));
    now += 60_001;
    await third.resolve([{ address: REVERTS, blockNumber: 100 }]);
    expect(clocked.asked).toEqual([[{ address: REVERTS, blockNumber: 100 }]]);
  });

  it("a failed read rejects (the stage retries the batch) and caches nothing", async () => {
    const reader = countingReader();
    reader.fail = true;
    const cache = createTokenMetadataCache({ redis: async () => redis, keyPrefix: `${PREFIX}f:`, chain: CHAIN, read: reader.read });
    await expect(cache.resolve([{ address: EIGHT, blockNumber: 1 }])).rejects.toBeInstanceOf(RetryableError);
    expect(await redis.exists(tokenCacheKeyPrefix(`${PREFIX}f:`, CHAIN) + EIGHT)).toBe(0);
    reader.fail = false;
    expect((await cache.resolve([{ address: EIGHT, blockNumber: 1 }])).get(EIGHT)?.decimals).toBe(8);
  });
});
