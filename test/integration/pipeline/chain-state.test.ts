import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChainState,
  type ChainStateRedis,
  createRedisChainState,
  ingestKeyPrefix,
  ORPHANED_RETENTION_MS,
} from "../../../lib/chain/state.js";
import { createLogger } from "../../../lib/logger.js";
import { type ConnectedRedis, connectRedisClient } from "../../../lib/redis.js";
import { createIngester } from "../../../pipeline/ingest/ingest.js";
import { createHarness, type Harness, probeStack } from "../../support/harness.js";
import { blockNumbers, followUntil, h as hashOf, recordingProducer, scriptedChain, seqOf } from "../../support/scripted-chain.js";

const up = await probeStack();

describe.skipIf(!up.ok)("ingest's durable state in Redis", () => {
  let h: Harness;
  let redis: ConnectedRedis;
  let state: ChainState;
  beforeAll(async () => {
    h = createHarness();
    redis = await connectRedisClient(h.config.redisUrl);
    state = createRedisChainState(redis.client, h.config.redisKeyPrefix, h.config.chain);
  });
  afterAll(async () => {
    await state?.reset();
    await redis?.close();
    await h?.cleanup();
  });

  it("hands out strictly growing sequence numbers, never below the clock (a lost state cannot go back)", async () => {
    const before = Date.now() * 1000;
    const a = await state.reserveSeq(3);
    const b = await state.reserveSeq(1);
    expect(a).toBeGreaterThan(before);
    expect(b).toBeGreaterThanOrEqual(a + 3);
    await state.reset();
    expect(await state.reserveSeq(1)).toBeGreaterThan(b);
  });

  it("keeps the follower position: tip, window (ignoring entries above the tip), canonical map, pruning", async () => {
    for (let n = 1; n <= 5; n++) {
      await state.expect([{ number: n, hash: `0x${n}` }]);
      await state.markProduced({ number: n, hash: `0x${n}` });
    }
    await state.announce([
      { number: 5, hash: "0x5", replacedBy: "0xb5" },
      { number: 6, hash: "0x6", replacedBy: null },
    ]);
    await state.unwind({ number: 3, hash: "0x3" }, []); // a crash before the window entries were dropped
    const pos = await state.loadFollower();
    expect(pos.tip).toEqual({ number: 3, hash: "0x3" });
    expect([...pos.produced.entries()].sort()).toEqual([
      [1, "0x1"],
      [2, "0x2"],
      [3, "0x3"],
    ]);
    expect([...(await state.hashesAt([4, 5, 6, 7])).values()]).toEqual(["0x4", "0xb5", "", undefined]);
    await state.prune(3, 2);
    expect([...(await state.loadFollower()).produced.keys()].sort()).toEqual([3]);
    expect((await state.hashesAt([1, 2])).get(1)).toBeUndefined();
    // Pruning the map leaves the orphaned set alone.
    await state.prune(10, 10);
    expect([...(await state.orphanedSince(["0x5", "0x6", "0x4"])).keys()].sort()).toEqual(["0x5", "0x6"]);
    await state.setBackfillProgress(10, 20, 14);
    expect(await state.backfillProgress(10, 20)).toBe(14);
    expect(await state.backfillProgress(10, 21)).toBeNull();
  });

  it("remembers orphaned blocks with the sequence number that voids their records, for ORPHANED_RETENTION_MS", async () => {
    const key = `${ingestKeyPrefix(h.config.redisKeyPrefix, h.config.chain)}orphaned`;
    expect(ORPHANED_RETENTION_MS).toBe(14 * 24 * 3600 * 1000); // 7 days of topic retention + Kafka's default segment.ms
    // A member older than the retention (score = sequence number ≈ µs since 1970) is dropped by the next orphaning.
    const old = (Date.now() - ORPHANED_RETENTION_MS - 60_000) * 1000;
    await redis.client.zAdd(key, { score: old, value: "0xold" });
    const before = await state.reserveSeq(5);
    await state.announce([{ number: 7, hash: "0xAB7", replacedBy: "0xb7" }]);
    const after = await state.reserveSeq(1);
    const since = await state.orphanedSince(["0xab7", "0xold", "0xnever"]);
    expect([...since.keys()]).toEqual(["0xab7"]);
    // Every number reserved before the announcement is below it, every later one at or above.
    expect(since.get("0xab7")).toBeGreaterThan(before + 4);
    expect(since.get("0xab7")).toBeLessThanOrEqual(after);
    const ttl = await redis.client.pTTL(key);
    expect(ttl).toBeGreaterThan(ORPHANED_RETENTION_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(ORPHANED_RETENTION_MS);
  });
  it("records blocks as canonical in the same round trip as their sequence numbers (reserveSeq with expect)", async () => {
    const first = await state.reserveSeq(2, [
      { number: 40, hash: "0x40" },
      { number: 41, hash: "0x41" },
    ]);
    const next = await state.reserveSeq(1, []);
    expect(next).toBeGreaterThanOrEqual(first + 2); // both numbers reserved (the clock floor may move it further)
    expect([...(await state.hashesAt([40, 41])).values()]).toEqual(["0x40", "0x41"]);
  });

  it("the follower's catch-up costs two Redis round trips per block (canon + seq in one, produced + tip in one)", async () => {
    const commands: string[] = [];
    // Every command the state sends, by name (node-redis: one call, one round trip).
    const counting = new Proxy(redis.client as unknown as ChainStateRedis, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          commands.push(String(name));
          return value.apply(target, args);
        };
      },
    });
    const counted = createRedisChainState(counting, `${h.config.redisKeyPrefix}trips:`, h.config.chain);
    const chain = scriptedChain();
    const blocks = 40;
    chain.mine(blocks);
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source: chain.source, producer, logger: createLogger("silent"), state: counted });
    await followUntil(ingester, () => sent.some((m) => m.key === hashOf("a", blocks - 1)), 0);
    const trips = commands.length;
    expect(blockNumbers(sent)).toEqual(Array.from({ length: blocks }, (_, i) => i));
    // Sequence numbers still grow block by block, and canon names every produced block.
    const seqs = sent.filter((m) => m.kind === "blocks").map(seqOf);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(blocks);
    const canon = await counted.hashesAt(Array.from({ length: blocks }, (_, i) => i));
    expect([...canon.values()]).toEqual(Array.from({ length: blocks }, (_, i) => hashOf("a", i)));
    expect((await counted.loadFollower()).tip).toEqual({ number: blocks - 1, hash: hashOf("a", blocks - 1) });
    // Before: expect (HSET), reserveSeq (EVAL), markProduced (HSET + SET) = 4 per block (166 here).
    // Besides the per-block ones: loading the position (GET + HGETALL) and the prune at height 0
    // (HKEYS twice, HDEL at most twice).
    expect(trips).toBeLessThanOrEqual(2 * blocks + 6);
    await counted.reset();
  });
});
