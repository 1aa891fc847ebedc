import type { estypes } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import { excludeSource, filterOnlyScores, filterSource, shapeEnvelope, shapeHit } from "../../../../api/search/envelope.js";
import { BLOCK_HASH, block, TX_HASH, tx } from "./records.js";

const event = {
  event: "Transfer",
  transactionHash: TX_HASH,
  args: [
    { name: "from", pos: 0, value: { hex: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", num: null, scaled: null, type: "address" } },
    { name: "value", pos: 2, value: { hex: "0x3b9aca00", num: 1e9, scaled: 1000, type: "uint256" } },
  ],
};

function hit(index: string, id: string, source: object, score: number | null = 0): estypes.SearchHit<unknown> {
  return { _index: index, _id: id, _score: score, _source: source };
}

function response(hits: estypes.SearchHit<unknown>[], maxScore: number | null, total = hits.length): estypes.SearchResponse<unknown> {
  return {
    took: 3,
    timed_out: false,
    _shards: { total: 2, successful: 2, skipped: 0, failed: 0 },
    hits: { total: { value: total, relation: "eq" }, max_score: maxScore, hits },
  };
}

describe("shapeHit", () => {
  it("derives _type from the index name; no _routing/_parent for a block", () => {
    const h = shapeHit(hit("t-ethereum-ethereum-mainnet-block", BLOCK_HASH, block, 1));
    expect(h).toEqual({ _index: "t-ethereum-ethereum-mainnet-block", _type: "block", _id: BLOCK_HASH, _score: 1, _source: block });
    expect("_routing" in h).toBe(false);
    expect("_parent" in h).toBe(false);
  });

  it("_routing/_parent is the block hash of a tx and the tx hash of an event, keys in contract order", () => {
    const t = shapeHit(hit("ethereum-ethereum-mainnet-tx", TX_HASH, tx));
    expect(t._type).toBe("tx");
    expect(t._routing).toBe(BLOCK_HASH);
    expect(t._parent).toBe(BLOCK_HASH);
    expect(Object.keys(t)).toEqual(["_index", "_type", "_id", "_score", "_routing", "_parent", "_source"]);
    const e = shapeHit(hit("ethereum-ethereum-mainnet-event", `${TX_HASH}_e_3`, event));
    expect(e._type).toBe("event");
    expect(e._parent).toBe(TX_HASH);
    const l = shapeHit(hit("ethereum-ethereum-mainnet-log", `${TX_HASH}_l_3`, { transactionHash: TX_HASH, address: tx.to }));
    expect([l._type, l._routing]).toEqual(["log", TX_HASH]);
  });

  it("restricts _source but still derives the parent from the full record", () => {
    const t = shapeHit(hit("ethereum-ethereum-mainnet-tx", TX_HASH, tx), { source: ["hash", "blockNumber.num"] });
    expect(t._source).toEqual({ hash: TX_HASH, blockNumber: { num: 17000000 } });
    expect(t._parent).toBe(BLOCK_HASH);
  });

  it("unitScores reports 1", () => {
    expect(shapeHit(hit("x-tx", TX_HASH, tx, null), { unitScores: true })._score).toBe(1);
  });

  it("throws for an index that is not a record index", () => {
    expect(() => shapeHit(hit("foo", "1", {}))).toThrow(/not a record index/);
  });
});

describe("filterSource", () => {
  it("keeps whole objects, leaves, and leaves inside arrays", () => {
    expect(filterSource(tx, ["blockNumber"])).toEqual({ blockNumber: tx.blockNumber });
    expect(filterSource(tx, ["blockNumber.raw", "from"])).toEqual({ blockNumber: { raw: "0x1036640" }, from: tx.from });
    expect(filterSource(event, ["args.name", "args.value.num"])).toEqual({
      args: [
        { name: "from", value: { num: null } },
        { name: "value", value: { num: 1e9 } },
      ],
    });
  });

  it("returns the record unchanged without paths, and {} when nothing matches", () => {
    expect(filterSource(tx)).toBe(tx);
    expect(filterSource(tx, [])).toBe(tx);
    expect(filterSource(tx, ["number"])).toEqual({});
  });
});

describe("shapeEnvelope", () => {
  it("filter-only results (max_score 0 or null with hits) report max_score 1 and _score 1", () => {
    for (const max of [0, null]) {
      const env = shapeEnvelope(response([hit("ethereum-ethereum-mainnet-tx", TX_HASH, tx, max)], max));
      expect(env.hits.max_score).toBe(1);
      expect(env.hits.hits[0]?._score).toBe(1);
    }
  });

  it("passes real scores through", () => {
    const env = shapeEnvelope(
      response(
        [
          hit("ethereum-ethereum-mainnet-event", `${TX_HASH}_e_1`, event, 2.5),
          hit("ethereum-ethereum-mainnet-event", `${TX_HASH}_e_2`, event, 1.25),
        ],
        2.5,
      ),
    );
    expect(env.hits.max_score).toBe(2.5);
    expect(env.hits.hits.map((h) => h._score)).toEqual([2.5, 1.25]);
  });

  it("no hits: max_score null; total is the exact integer; meta passed through without failure details", () => {
    const env = shapeEnvelope(response([], null, 42));
    expect(env).toEqual({
      took: 3,
      timed_out: false,
      _shards: { total: 2, successful: 2, skipped: 0, failed: 0 },
      hits: { total: 42, max_score: null, hits: [] },
    });
  });

  it("mixes kinds (block,tx) and restricts _source", () => {
    const env = shapeEnvelope(
      response([hit("ethereum-ethereum-mainnet-block", BLOCK_HASH, block), hit("ethereum-ethereum-mainnet-tx", TX_HASH, tx)], 0),
      { source: ["hash"] },
    );
    expect(env.hits.hits.map((h) => [h._type, h._source, h._parent])).toEqual([
      ["block", { hash: BLOCK_HASH }, undefined],
      ["tx", { hash: TX_HASH }, BLOCK_HASH],
    ]);
  });

  it("filterOnlyScores", () => {
    expect(filterOnlyScores(0, 1)).toBe(true);
    expect(filterOnlyScores(null, 1)).toBe(true);
    expect(filterOnlyScores(null, 0)).toBe(false);
    expect(filterOnlyScores(1.2, 1)).toBe(false);
  });
});

describe("extensions in the envelope", () => {
  const res = (sorted: boolean): estypes.SearchResponse<unknown> => ({
    took: 1,
    timed_out: false,
    _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
    hits: {
      total: { value: 1, relation: "eq" },
      max_score: null,
      hits: [
        {
          _index: "ethereum-ethereum-mainnet-block",
          _id: "0x01",
          _score: null,
          _source: { hash: "0x01" },
          ...(sorted ? { sort: [17, "0x01"] } : {}),
        },
      ],
    },
    aggregations: { n: { value: 3 } },
  });

  it("adds each hit's sort values after _source when asked, and aggregations after hits", () => {
    const env = shapeEnvelope(res(true), { sortValues: true });
    expect(Object.keys(env)).toEqual(["took", "timed_out", "_shards", "hits", "aggregations"]);
    expect(env.aggregations).toEqual({ n: { value: 3 } });
    const hit = env.hits.hits[0];
    expect(hit && Object.keys(hit)).toEqual(["_index", "_type", "_id", "_score", "_source", "sort"]);
    expect(hit?.sort).toEqual([17, "0x01"]);
    expect(shapeEnvelope(res(true)).hits.hits[0]).not.toHaveProperty("sort");
  });
});

describe("excludeSource", () => {
  it("drops leaf and object paths, inside arrays too; empty objects left by it are dropped; the record is not changed", () => {
    const before = JSON.stringify(event);
    expect(excludeSource(event, ["args.value"])).toEqual({
      event: "Transfer",
      transactionHash: TX_HASH,
      args: [
        { name: "from", pos: 0 },
        { name: "value", pos: 2 },
      ],
    });
    expect(excludeSource(event, ["args"])).toEqual({ event: "Transfer", transactionHash: TX_HASH });
    expect(excludeSource({ a: { b: 1 }, c: 2 }, ["a.b"])).toEqual({ c: 2 });
    expect(excludeSource(event, [])).toBe(event);
    expect(JSON.stringify(event)).toBe(before);
  });
});
