import type { estypes } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import {
  aliasesOf,
  bypassReason,
  type CacheUse,
  cacheKey,
  keepableAnswer,
  ResultCache,
  type ResultCacheOptions,
  usesNow,
} from "../../../../api/search/result-cache.js";

const ALIAS = "t-ethereum-ethereum-mainnet-event";
const OTHER = "t-ethereum-ethereum-mainnet-tx";

/** A size 0 aggregation request as api/search/search.ts builds it. */
const volume = (index: string[] = [ALIAS], extra: Partial<estypes.SearchRequest> = {}): estypes.SearchRequest => ({
  index,
  ignore_unavailable: true,
  allow_no_indices: true,
  size: 0,
  track_total_hits: true,
  timeout: "30000ms",
  aggs: { per_day: { date_histogram: { field: "timestamp", calendar_interval: "day" } } },
  ...extra,
});

const answer = (failed = 0, timedOut = false, total = 7) =>
  Buffer.from(
    `{"took":2,"timed_out":${timedOut},"_shards":{"total":1,"successful":${1 - failed},"skipped":0,"failed":${failed}},"hits":{"total":{"value":${total},"relation":"eq"},"max_score":null,"hits":[]},"aggregations":{}}`,
  );

/** A cache on a hand-driven clock, connected and past its startup window. */
function connectedCache(overrides: Partial<ResultCacheOptions> = {}) {
  const clock = { t: 1_000_000 };
  const outcomes: string[] = [];
  const cache = new ResultCache({
    maxBytes: 1 << 20,
    maxEntryBytes: 4096,
    maxAgeMs: 60_000,
    refreshIntervalMs: 1000,
    marginMs: 500,
    now: () => clock.t,
    onOutcome: (o) => outcomes.push(o),
    ...overrides,
  });
  cache.setConnected(true);
  clock.t += cache.windowMs;
  return { cache, clock, outcomes };
}

/** Runs a search through the cache with a fake Elasticsearch that answers `bytes` and counts its calls. */
function searcher(cache: ResultCache) {
  const sent = { n: 0 };
  let reply: Buffer = answer();
  const run = async (req: estypes.SearchRequest) => {
    const trace: CacheUse = { cache };
    const text = await cache.withBytes(
      req,
      async (use) => {
        sent.n++;
        return use(reply);
      },
      (bytes) => bytes.toString(),
      trace,
    );
    return { text, outcome: trace.outcome };
  };
  return {
    run,
    sent,
    answer: (b: Buffer) => {
      reply = b;
    },
  };
}

describe("usesNow", () => {
  it("finds now date math anywhere in a request", () => {
    expect(usesNow({ query: { range: { timestamp: { gte: "now-1d/d" } } } })).toBe(true);
    expect(usesNow({ aggs: { d: { date_histogram: { extended_bounds: { max: "now" } } } } })).toBe(true);
    expect(usesNow([{ a: ["x", "now+1h"] }])).toBe(true);
    expect(usesNow({ query: { range: { timestamp: { gte: "2024-01-01||+1d" } } } })).toBe(false);
    expect(usesNow({ query: { term: { name: "nowhere" } } })).toBe(false);
    expect(usesNow({ a: 1, b: null, c: true })).toBe(false);
  });
});

describe("bypassReason", () => {
  it("takes size 0 requests only, without scroll, pit, profile, request_cache false or now", () => {
    expect(bypassReason(volume())).toBeUndefined();
    expect(bypassReason(volume([ALIAS], { size: 10 }))).toBe("size");
    expect(bypassReason({ index: [ALIAS] })).toBe("size");
    expect(bypassReason(volume([ALIAS], { scroll: "1m" }))).toBe("scroll");
    expect(bypassReason({ size: 0, pit: { id: "x" } })).toBe("pit");
    expect(bypassReason(volume([ALIAS], { profile: true }))).toBe("profile");
    expect(bypassReason(volume([ALIAS], { request_cache: false }))).toBe("request_cache");
    expect(bypassReason(volume([ALIAS], { query: { range: { timestamp: { lt: "now/d" } } } }))).toBe("now");
  });
});

describe("cacheKey and aliasesOf", () => {
  it("keys by the whole request: indices, body and options", () => {
    expect(cacheKey(volume())).toBe(cacheKey(volume()));
    expect(cacheKey(volume([OTHER]))).not.toBe(cacheKey(volume()));
    expect(cacheKey(volume([ALIAS], { typed_keys: true }))).not.toBe(cacheKey(volume()));
    expect(cacheKey(volume([ALIAS], { query: { term: { address: "0xa" } } }))).not.toBe(cacheKey(volume()));
  });

  it("maps backing indices to their alias", () => {
    expect(aliasesOf(volume([`${ALIAS}-p000001`, `${ALIAS}-p000002`, OTHER]))).toEqual([ALIAS, OTHER]);
    expect(aliasesOf({ index: `${ALIAS},${OTHER}` })).toEqual([ALIAS, OTHER]);
    expect(aliasesOf({})).toEqual([]);
  });
});

describe("keepableAnswer", () => {
  it("keeps answers that did not time out and have no failed shard", () => {
    expect(keepableAnswer(answer())).toBe(true);
    expect(keepableAnswer(answer(1))).toBe(false);
    expect(keepableAnswer(answer(0, true))).toBe(false);
    expect(keepableAnswer(Buffer.from('{"error":{}}'))).toBe(false);
  });
});

describe("ResultCache", () => {
  it("answers a repeated request from the cache with the same bytes", async () => {
    const { cache, outcomes } = connectedCache();
    const es = searcher(cache);
    const first = await es.run(volume());
    const second = await es.run(volume());
    expect([first.outcome, second.outcome]).toEqual(["miss", "hit"]);
    expect(second.text).toBe(first.text);
    expect(es.sent.n).toBe(1);
    expect(outcomes).toEqual(["miss", "hit"]);
    expect(cache.stats().entries).toBe(1);
    expect(cache.stats().bytes).toBeGreaterThan(answer().length);
  });

  it("bypasses requests it does not cache, and keeps no answer that timed out or failed", async () => {
    const { cache } = connectedCache();
    const es = searcher(cache);
    // Never cacheable (hits): no outcome at all, so `bypass` counts only what the cache could have answered.
    expect((await es.run(volume([ALIAS], { size: 5 }))).outcome).toBeUndefined();
    expect((await es.run(volume([ALIAS], { request_cache: false }))).outcome).toBe("bypass");
    es.answer(answer(1));
    expect((await es.run(volume())).outcome).toBe("miss");
    expect((await es.run(volume())).outcome).toBe("miss");
    es.answer(answer(0, true));
    expect((await es.run(volume())).outcome).toBe("miss");
    expect(cache.stats().entries).toBe(0);
    expect(es.sent.n).toBe(5);
  });

  it("keeps nothing when the answer's use throws (an error answer)", async () => {
    const { cache } = connectedCache();
    await expect(
      cache.withBytes(
        volume(),
        async (use) => use(answer()),
        () => {
          throw new Error("too many buckets");
        },
      ),
    ).rejects.toThrow("too many buckets");
    expect(cache.stats().entries).toBe(0);
  });

  it("drops the entries of a written alias and bypasses it for the refresh window only", async () => {
    const { cache, clock } = connectedCache();
    const es = searcher(cache);
    await es.run(volume());
    await es.run(volume([OTHER]));
    cache.invalidate([`${ALIAS}-p000003`]);
    expect(cache.stats().entries).toBe(1);
    expect((await es.run(volume([OTHER]))).outcome).toBe("hit");
    es.answer(answer(0, false, 8));
    expect((await es.run(volume())).outcome).toBe("bypass");
    clock.t += cache.windowMs - 1;
    expect((await es.run(volume())).outcome).toBe("bypass");
    clock.t += 1;
    const after = await es.run(volume());
    expect(after.outcome).toBe("miss");
    expect(after.text).toContain('"value":8');
    expect((await es.run(volume())).outcome).toBe("hit");
  });

  it("does not keep an answer whose request started before a write of its alias", async () => {
    const { cache, clock } = connectedCache();
    const trace: CacheUse = { cache };
    await cache.withBytes(
      volume(),
      async (use) => {
        cache.invalidate([ALIAS]);
        clock.t += cache.windowMs + 1; // the answer arrives after the window
        return use(answer());
      },
      (b) => b.length,
      trace,
    );
    expect(trace.outcome).toBe("miss");
    expect(cache.stats().entries).toBe(0);
  });

  it("is cleared and bypassed while disconnected, and for the window after reconnecting", async () => {
    const { cache, clock } = connectedCache();
    const es = searcher(cache);
    await es.run(volume());
    cache.setConnected(false);
    expect(cache.stats().entries).toBe(0);
    expect((await es.run(volume())).outcome).toBe("bypass");
    cache.setConnected(true);
    expect((await es.run(volume())).outcome).toBe("bypass");
    clock.t += cache.windowMs;
    expect((await es.run(volume())).outcome).toBe("miss");
    expect((await es.run(volume())).outcome).toBe("hit");
  });

  it("starts disconnected: bypassed until told otherwise", async () => {
    const cache = new ResultCache({ maxBytes: 1 << 20, maxEntryBytes: 4096, maxAgeMs: 60_000, refreshIntervalMs: 1000, marginMs: 0 });
    expect(cache.isConnected).toBe(false);
    expect((await searcher(cache).run(volume())).outcome).toBe("bypass");
  });

  it("bounds entries by size and age", async () => {
    const { cache, clock } = connectedCache({ maxEntryBytes: 100 });
    const es = searcher(cache);
    await es.run(volume());
    expect(cache.stats().entries).toBe(0); // larger than maxEntryBytes
    const { cache: aged, clock: agedClock } = connectedCache({ maxAgeMs: 1000 });
    const agedEs = searcher(aged);
    await agedEs.run(volume());
    expect((await agedEs.run(volume())).outcome).toBe("hit");
    agedClock.t += 1001;
    expect((await agedEs.run(volume())).outcome).toBe("miss");
    const small = connectedCache({ maxBytes: 2 * (answer().length + cacheKey(volume()).length) + 10 });
    const smallEs = searcher(small.cache);
    await smallEs.run(volume([ALIAS]));
    await smallEs.run(volume([OTHER]));
    await smallEs.run(volume(["third"]));
    expect(small.cache.stats().entries).toBe(2);
    expect((await smallEs.run(volume([ALIAS]))).outcome).toBe("miss"); // least recently used went first
    expect(clock.t).toBeGreaterThan(0);
  });
});
