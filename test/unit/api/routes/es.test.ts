/**
 * Pure parts of the Elasticsearch-compatible routes: index expressions, the _msearch NDJSON
 * parser, and the conversions into Elasticsearch 8's answer and error shapes.
 */
import { describe, expect, it } from "vitest";
import { ApiError, errorBody } from "../../../../api/errors.js";
import { healthAnswer } from "../../../../api/routes/es/health.js";
import { MSEARCH_IGNORED_HEADER_KEYS, MSEARCH_MAX_SEARCHES, parseMsearch } from "../../../../api/routes/es/index.js";
import { kindsOfIndexExpression } from "../../../../api/routes/es/indices.js";
import type { HitsEnvelope } from "../../../../api/search/envelope.js";
import { esTotal, toEsErrorBody, toEsSearchResponse } from "../../../../api/search/es-shape.js";
import type { ChainId } from "../../../../lib/config/index.js";
import { RECORD_KINDS } from "../../../../lib/records.js";

const MAINNET: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof ApiError ? err.code : "not an ApiError";
  }
  return undefined;
};

describe("kindsOfIndexExpression", () => {
  it("kinds, index-style names (with or without the deployment prefix), comma lists, all-kinds forms", () => {
    expect(kindsOfIndexExpression(MAINNET, "p-", "tx")).toEqual(["tx"]);
    expect(kindsOfIndexExpression(MAINNET, "p-", "Ethereum-Ethereum-Mainnet-TX,block,tx")).toEqual(["tx", "block"]);
    expect(kindsOfIndexExpression(MAINNET, "p-", "p-ethereum-ethereum-mainnet-event")).toEqual(["event"]);
    for (const all of [undefined, "", "*", "_all", "ethereum-ethereum-mainnet-*"])
      expect(kindsOfIndexExpression(MAINNET, "p-", all)).toEqual([...RECORD_KINDS]);
  });

  it("another chain's names and unknown kinds are CS_UNKNOWN_KIND", () => {
    for (const bad of ["ethereum-ethereum-sepolia-tx", "transactions", "tx,nope", "ethereum-ethereum-mainnet-"])
      expect(
        code(() => kindsOfIndexExpression(MAINNET, "p-", bad)),
        bad,
      ).toBe("CS_UNKNOWN_KIND");
  });
});

describe("parseMsearch", () => {
  it("pairs of header and body lines; the header's index (string or array)", () => {
    const text = '{}\n{"size":0}\n{"index":"block"}\n{"query":{"match_all":{}}}\n{"index":["tx","log"]}\n{}\n';
    expect(parseMsearch(text)).toEqual([
      { body: { size: 0 } },
      { index: "block", body: { query: { match_all: {} } } },
      { index: "tx,log", body: {} },
    ]);
  });

  it("accepts and drops the harmless header keys Grafana and the clients send; names the offending key otherwise", () => {
    const header = { search_type: "query_then_fetch", ignore_unavailable: true, preference: "p", index: ["tx"], request_cache: false };
    // request_cache false is the one header key kept: it keeps the search out of the caches.
    expect(parseMsearch(`${JSON.stringify(header)}\n{"size":0}\n`)).toEqual([{ index: "tx", body: { size: 0 }, requestCache: false }]);
    expect(parseMsearch(`${JSON.stringify({ ...header, request_cache: true })}\n{"size":0}\n`)).toEqual([
      { index: "tx", body: { size: 0 } },
    ]);
    for (const key of MSEARCH_IGNORED_HEADER_KEYS) expect(parseMsearch(`{"${key}":true}\n{}\n`)).toEqual([{ body: {} }]);
    try {
      parseMsearch('{}\n{}\n{"index":"tx","routing":"0xb"}\n{}\n');
      expect.unreachable();
    } catch (err) {
      expect(err instanceof ApiError && err.details[0]?.path).toBe("line 3.routing");
      expect((err as ApiError).message).toContain("routing");
    }
  });

  it("refuses odd line counts, non-objects, other header keys, bad JSON and too many searches", () => {
    for (const bad of [
      "",
      "{}\n",
      "{}\n[]\n",
      '{"routing":"x"}\n{}\n',
      '{"q":"x"}\n{}\n',
      "{}\n{nope\n",
      '{"index":5}\n{}\n',
      '{"index":[5]}\n{}\n',
    ])
      expect(
        code(() => parseMsearch(bad)),
        JSON.stringify(bad),
      ).toBe("CS_BODY_INVALID");
    expect(code(() => parseMsearch("{}\n{}\n".repeat(MSEARCH_MAX_SEARCHES)))).toBeUndefined();
    expect(code(() => parseMsearch("{}\n{}\n".repeat(MSEARCH_MAX_SEARCHES + 1)))).toBe("CS_BODY_INVALID");
  });
});

describe("Elasticsearch 8 shapes", () => {
  const env: HitsEnvelope = {
    took: 3,
    timed_out: false,
    _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
    hits: {
      total: 2,
      max_score: 1,
      hits: [
        { _index: "x-tx", _type: "tx", _id: "0x1", _score: 1, _routing: "0xb", _parent: "0xb", _source: { hash: "0x1" }, sort: [5, "0x1"] },
        { _index: "x-block", _type: "block", _id: "0xb", _score: 1, _source: { hash: "0xb" } },
      ],
    },
    aggregations: { n: { value: 2 } },
  };

  it("search: total as {value, relation}, no _type nor _parent, _routing and sort kept in ES's key order", () => {
    const res = toEsSearchResponse(env);
    expect(res.hits.total).toEqual({ value: 2, relation: "eq" });
    expect(Object.keys(res.hits.hits[0] ?? {})).toEqual(["_index", "_id", "_score", "_routing", "_source", "sort"]);
    expect(Object.keys(res.hits.hits[1] ?? {})).toEqual(["_index", "_id", "_score", "_source"]);
    expect(res.aggregations).toEqual({ n: { value: 2 } });
    expect(toEsSearchResponse(env, true).hits.total).toBe(2);
  });

  it("errors: Elasticsearch's shape, type = code, reason = message, every problem a root cause, and status", () => {
    const body = errorBody([
      { code: "CS_QUERY_TOO_DEEP", message: "too deep", path: "query" },
      { code: "CS_SIZE_INVALID", message: "bad size", path: "size" },
    ]);
    expect(toEsErrorBody(body, 400)).toEqual({
      error: {
        root_cause: [
          { type: "CS_QUERY_TOO_DEEP", reason: "too deep", path: "query" },
          { type: "CS_SIZE_INVALID", reason: "bad size", path: "size" },
        ],
        type: "CS_QUERY_TOO_DEEP",
        reason: "too deep",
        path: "query",
        code: "CS_QUERY_TOO_DEEP",
        message: "too deep",
      },
      status: 400,
    });
  });
});

describe("track_total_hits and the answer options", () => {
  it("esTotal: exact, capped at N with relation gte, absent for false; integers with rest_total_hits_as_int", () => {
    expect(esTotal(12)).toEqual({ value: 12, relation: "eq" });
    expect(esTotal(12, 100)).toEqual({ value: 12, relation: "eq" });
    expect(esTotal(12, 12)).toEqual({ value: 12, relation: "eq" });
    expect(esTotal(12, 5)).toEqual({ value: 5, relation: "gte" });
    expect(esTotal(12, 0)).toEqual({ value: 0, relation: "gte" });
    expect(esTotal(12, false)).toBeUndefined();
    expect(esTotal(12, 5, true)).toBe(5);
    expect(esTotal(12, false, true)).toBe(-1);
  });

  it("toEsSearchResponse: ids first, _source dropped or metadata only, fields kept", () => {
    const env: HitsEnvelope = {
      took: 1,
      timed_out: false,
      _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
      hits: {
        total: 3,
        max_score: 1,
        hits: [
          { _index: "x-tx", _type: "tx", _id: "0xa", _score: 1, _routing: "0xb", _source: { hash: "0xa" }, fields: { f: [1] }, sort: [1] },
        ],
      },
    };
    const scrolled = toEsSearchResponse(env, { scrollId: "css_1", trackTotalHits: 2 });
    expect(Object.keys(scrolled)[0]).toBe("_scroll_id");
    expect(scrolled.hits.total).toEqual({ value: 2, relation: "gte" });
    expect(scrolled.hits.hits[0]).toEqual({
      _index: "x-tx",
      _id: "0xa",
      _score: 1,
      _routing: "0xb",
      _source: { hash: "0xa" },
      fields: { f: [1] },
      sort: [1],
    });
    expect(Object.keys(toEsSearchResponse(env, { pitId: "csp_1" }))[0]).toBe("pit_id");
    expect(toEsSearchResponse(env, { noSource: true }).hits.hits[0]).not.toHaveProperty("_source");
    expect(toEsSearchResponse(env, { metadataOnly: true }).hits.hits[0]).toEqual({ _index: "x-tx", _id: "0xa", _score: 1, sort: [1] });
    expect(toEsSearchResponse(env, { trackTotalHits: false }).hits).not.toHaveProperty("total");
  });
});

describe("healthAnswer", () => {
  it("Elasticsearch's health with chainsift's cluster name, without per-index sections", () => {
    const es = { cluster_name: "internal", status: "yellow", timed_out: false, active_shards: 3, indices: { "x-tx-p000000": {} } };
    expect(healthAnswer(es, MAINNET)).toEqual({
      cluster_name: "chainsift ethereum/ethereum/mainnet",
      status: "yellow",
      timed_out: false,
      active_shards: 3,
    });
  });
});
