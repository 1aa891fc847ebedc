import { describe, expect, it } from "vitest";
import { AGG_LIMITS } from "../../../../api/dsl/aggs.js";
import { ApiError } from "../../../../api/errors.js";
import { checkChain, resolveTarget } from "../../../../api/routes/search/target.js";
import { buildSearchRequest, checkBucketCap, esSearchAfter } from "../../../../api/search/search.js";

const MAINNET = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const SEPOLIA = { technology: "ethereum", blockchain: "ethereum", network: "sepolia" };
const POLYGON = { technology: "ethereum", blockchain: "polygon", network: "mainnet" };

describe("buildSearchRequest", () => {
  const target = { kinds: ["tx" as const], indices: ["ethereum-ethereum-mainnet-tx"] };

  it("carries the timeout on every request, and search_after and aggs when given", () => {
    const req = buildSearchRequest(
      { size: 5, sort: [{ hash: { order: "asc" } }], searchAfter: ["0xab"], aggs: { n: { cardinality: { field: "from" } } } },
      target,
      1500,
    );
    expect(req).toMatchObject({
      index: ["ethereum-ethereum-mainnet-tx"],
      size: 5,
      timeout: "1500ms",
      track_total_hits: true,
      sort: [{ hash: { order: "asc" } }],
      search_after: ["0xab"],
      aggs: { n: { cardinality: { field: "from" } } },
    });
    expect(buildSearchRequest({ size: 10 }, target, 1000)).not.toHaveProperty("search_after");
  });

  it("asks for typed_keys only when told and when there are aggregations", () => {
    const aggs = { n: { cardinality: { field: "from" } } };
    expect(buildSearchRequest({ size: 0, aggs }, target, 1000, { typedKeys: true }).typed_keys).toBe(true);
    expect(buildSearchRequest({ size: 0, aggs }, target, 1000)).not.toHaveProperty("typed_keys");
    expect(buildSearchRequest({ size: 3 }, target, 1000, { typedKeys: true })).not.toHaveProperty("typed_keys");
  });
});

describe("esSearchAfter", () => {
  it("sends values beyond the long range as the nearest long, as a string", () => {
    // What JSON.parse makes of ES's Long.MAX_VALUE / Long.MIN_VALUE sort values: ±2^63.
    expect(esSearchAfter([2 ** 63, -(2 ** 63), 12, "x", null, true])).toEqual([
      "9223372036854775807",
      "-9223372036854775808",
      12,
      "x",
      null,
      true,
    ]);
    expect(esSearchAfter([2 ** 53, 1.5e18])).toEqual([2 ** 53, 1.5e18]);
  });
});

describe("checkBucketCap", () => {
  it("passes small responses and refuses more than the cap", () => {
    expect(() => checkBucketCap(undefined)).not.toThrow();
    expect(() => checkBucketCap({ a: { buckets: [{ key: 1 }] } })).not.toThrow();
    const big = { a: { buckets: Array.from({ length: AGG_LIMITS.maxBuckets + 1 }, (_, i) => ({ key: i, doc_count: 1 })) } };
    try {
      checkBucketCap(big);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe("CS_AGG_TOO_MANY_BUCKETS");
      expect((err as ApiError).statusCode).toBe(400);
    }
  });
});

describe("served chains", () => {
  it("picks the chain the path names (case-insensitively) and resolves its indices per request", () => {
    const chains = [MAINNET, SEPOLIA, POLYGON];
    expect(checkChain(chains, { technology: "Ethereum", blockchain: "ethereum", network: "SEPOLIA" })).toBe(SEPOLIA);
    expect(resolveTarget(chains, "p-", { ...POLYGON, kinds: "block,tx" })).toEqual({
      chain: POLYGON,
      kinds: ["block", "tx"],
      indices: ["p-ethereum-polygon-mainnet-block", "p-ethereum-polygon-mainnet-tx"],
    });
    expect(resolveTarget(MAINNET, "", { ...MAINNET, kinds: "log" }).indices).toEqual(["ethereum-ethereum-mainnet-log"]);
  });

  it("404 CS_UNKNOWN_CHAIN for a chain not served, CS_UNKNOWN_KIND for a bad kind", () => {
    const err = (fn: () => unknown): ApiError => {
      try {
        fn();
      } catch (e) {
        return e as ApiError;
      }
      throw new Error("expected an error");
    };
    const chain = err(() => checkChain([MAINNET, SEPOLIA], { technology: "ethereum", blockchain: "ethereum", network: "holesky" }));
    expect([chain.statusCode, chain.code]).toEqual([404, "CS_UNKNOWN_CHAIN"]);
    expect(chain.message).toContain("ethereum/ethereum/mainnet, ethereum/ethereum/sepolia");
    const kind = err(() => resolveTarget([MAINNET], "", { ...MAINNET, kinds: "trace" }));
    expect([kind.statusCode, kind.code]).toEqual([404, "CS_UNKNOWN_KIND"]);
  });
});
