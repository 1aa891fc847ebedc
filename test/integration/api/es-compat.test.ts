/**
 * What the official Java and Go Elasticsearch clients need of the Elasticsearch-compatible routes
 * (api/routes/es/), over raw HTTP against the real Elasticsearch and Redis (issue 20): `typed_keys`
 * on `_search` and `_msearch` (aggregation results keyed `<type>#<name>` at every level), error
 * bodies in Elasticsearch's own shape, the cluster-info fields, the `_msearch` media types (and
 * the media-type check before the parser), the `compatible-with` majors served, and
 * `track_total_hits` (true, N, false). Indices and Redis keys live under unique prefixes, deleted afterwards.
 *
 * The type names expected with `typed_keys` are Elasticsearch's own (`getWriteableName()` of each
 * internal aggregation class, joined to the name by `Aggregation.TYPED_KEYS_DELIMITER` "#", in
 * github.com/elastic/elasticsearch server/src/main/java/org/elasticsearch/search/aggregations/):
 * `StringTerms.NAME` "sterms" (keyword fields), `LongTerms.NAME` "lterms" (long, date, boolean),
 * `DoubleTerms.NAME` "dterms" (double), `InternalHistogram` "histogram", `InternalDateHistogram`
 * "date_histogram", `Sum` "sum", `Avg` "avg", `Min` "min", `Max` "max", `InternalCardinality`
 * "cardinality".
 */
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import { blocks, deleteRedisKeys, type FixtureApi, isolatedApi, searchStackUp, startFixtureApi, txs } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id: ID, token: TOKEN, config } = isolatedApi(base, "c");

const COMPAT8 = "application/vnd.elasticsearch+json; compatible-with=8";

describe.skipIf(!up)("the Elasticsearch-compatible routes as the Java and Go clients use them", () => {
  let fixture: FixtureApi | undefined;
  let esUrl: string;

  // biome-ignore lint/suspicious/noExplicitAny: the answers are walked as plain JSON; each test asserts their shape.
  type Json = any;
  /** A request to `<api>/ethereum/ethereum/mainnet/es<path>` with the token; the body as JSON (or text) and the status. */
  async function call(
    path: string,
    init: { method?: string; body?: unknown; type?: string; accept?: string } = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
    if (init.body !== undefined) headers["content-type"] = init.type ?? "application/json";
    if (init.accept) headers.accept = init.accept;
    const res = await fetch(`${esUrl}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      ...(init.body !== undefined ? { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers };
  }

  beforeAll(async () => {
    fixture = await startFixtureApi(config);
    await fixture.app.listen({ host: "127.0.0.1", port: 0 });
    esUrl = `http://127.0.0.1:${(fixture.app.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
  });

  afterAll(async () => {
    await fixture?.close();
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  const AGGS = {
    by_to: { terms: { field: "to", size: 50 } },
    by_block: { terms: { field: "blockNumber.num" }, aggs: { gas: { sum: { field: "gasUsed.num" } } } },
    by_value: { terms: { field: "value.num", size: 50 } },
    per_block: {
      histogram: { field: "blockNumber.num", interval: 1 },
      aggs: {
        senders: { terms: { field: "from" }, aggs: { top: { max: { field: "gasUsed.num" } }, n: { cardinality: { field: "to" } } } },
        avg_gas: { avg: { field: "gasUsed.num" } },
      },
    },
    lowest: { min: { field: "blockNumber.num" } },
  };

  /** Strips the `<type>#` prefixes of every aggregation key, recursively (what a typed client does). */
  function untyped(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(untyped);
    if (v === null || typeof v !== "object") return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.includes("#") ? k.slice(k.indexOf("#") + 1) : k, untyped(x)]));
  }

  it("typed_keys=true on _search: every aggregation, at every level, keyed <type>#<name> with Elasticsearch's type names", async () => {
    const plain = await call("/tx/_search", { body: { size: 0, aggs: AGGS } });
    expect(plain.status).toBe(200);
    const typed = await call("/tx/_search?typed_keys=true", { body: { size: 0, aggs: AGGS }, type: COMPAT8 });
    expect(typed.status).toBe(200);
    const a = typed.body.aggregations;
    expect(Object.keys(a).sort()).toEqual(["dterms#by_value", "histogram#per_block", "lterms#by_block", "min#lowest", "sterms#by_to"]);
    expect(Object.keys(a["lterms#by_block"].buckets[0])).toContain("sum#gas");
    const bucket = a["histogram#per_block"].buckets[0];
    expect(Object.keys(bucket)).toEqual(expect.arrayContaining(["sterms#senders", "avg#avg_gas"]));
    expect(Object.keys(bucket["sterms#senders"].buckets[0])).toEqual(expect.arrayContaining(["max#top", "cardinality#n"]));
    // Same values as without typed_keys.
    expect(untyped(a)).toEqual(plain.body.aggregations);
    expect(plain.body.aggregations.by_block.buckets.map((b: { key: number }) => b.key).sort()).toEqual(
      blocks.map((b) => b.number.num).sort(),
    );
    // typed_keys=false (and no typed_keys) leaves the names alone.
    const off = await call("/tx/_search?typed_keys=false", { body: { size: 0, aggs: { lowest: AGGS.lowest } } });
    expect(Object.keys(off.body.aggregations)).toEqual(["lowest"]);
  });

  it("typed_keys on a date_histogram, and on _msearch (each search's aggregations typed)", async () => {
    const dh = await call("/block/_search?typed_keys", {
      body: { size: 0, aggs: { per_day: { date_histogram: { field: "timestamp", calendar_interval: "day" } } } },
    });
    expect(dh.status).toBe(200);
    expect(Object.keys(dh.body.aggregations)).toEqual(["date_histogram#per_day"]);
    const ndjson = `${[{ index: "tx" }, { size: 0, aggs: { by_to: AGGS.by_to } }, {}, { size: 0, aggs: { lowest: AGGS.lowest } }]
      .map((l) => JSON.stringify(l))
      .join("\n")}\n`;
    const m = await call("/_msearch?typed_keys=true", { body: ndjson, type: "application/x-ndjson" });
    expect(m.status).toBe(200);
    expect(m.body.responses.map((r: { status: number }) => r.status)).toEqual([200, 200]);
    expect(Object.keys(m.body.responses[0].aggregations)).toEqual(["sterms#by_to"]);
    expect(Object.keys(m.body.responses[1].aggregations)).toEqual(["min#lowest"]);
  });

  it("error bodies in Elasticsearch's shape: {error: {root_cause, type: <CS_ code>, reason, …}, status}, no top-level errors", async () => {
    const bad = await call("/tx/_search", { body: { query: { script: { script: "1" } } } });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body).sort()).toEqual(["error", "status"]);
    expect(bad.body.status).toBe(400);
    expect(bad.body.error).toMatchObject({
      type: "CS_QUERY_UNSUPPORTED_CLAUSE",
      code: "CS_QUERY_UNSUPPORTED_CLAUSE",
      path: "query.script",
    });
    expect(typeof bad.body.error.reason).toBe("string");
    expect(bad.body.error.root_cause).toEqual([
      expect.objectContaining({ type: "CS_QUERY_UNSUPPORTED_CLAUSE", reason: bad.body.error.reason }),
    ]);
    // _count, unknown index, authentication: the same shape.
    const count = await call("/tx/_count", { body: { query: { wildcard: { from: "0x*" } } } });
    expect(count.body).toMatchObject({ status: 400, error: { type: "CS_QUERY_UNSUPPORTED_CLAUSE" } });
    expect(count.body.errors).toBeUndefined();
    const res = await fetch(`${esUrl}/tx/_count`, { headers: { authorization: "Bearer wrong" } });
    const auth = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(401);
    expect(Object.keys(auth).sort()).toEqual(["error", "status"]);
    expect(auth).toMatchObject({ status: 401, error: { type: "CS_AUTH_REQUIRED", root_cause: [{ type: "CS_AUTH_REQUIRED" }] } });
    // Endpoints not served (what other client calls reach): 404 in the same shape, so clients decode it.
    for (const path of ["/tx/_settings", "/_cat/shards", "/_msearch/template", "/ethereum-ethereum-mainnet-tx/_update/1"]) {
      const missing = await call(path);
      expect(missing.status, path).toBe(404);
      expect(missing.body, path).toMatchObject({
        status: 404,
        error: { type: "CS_ROUTE_NOT_FOUND", root_cause: [{ type: "CS_ROUTE_NOT_FOUND" }] },
      });
    }
    // The contract's own routes keep the contract's error format.
    const contract = await call("/tx/search/", { body: { query: { script: { script: "1" } } } });
    expect(contract.status).toBe(400);
    expect(Object.keys(contract.body).sort()).toEqual(["error", "errors"]);
    expect(contract.body.error.type).toBeUndefined();
    // An _msearch item's error: the same shape, with its status.
    const m = await call("/_msearch", { body: '{}\n{"query":{"script":{"script":"1"}}}\n', type: "application/x-ndjson" });
    expect(Object.keys(m.body.responses[0]).sort()).toEqual(["error", "status"]);
    expect(m.body.responses[0]).toMatchObject({ status: 400, error: { type: "CS_QUERY_UNSUPPORTED_CLAUSE", root_cause: [{}] } });
  });

  it("GET / answers every field of Elasticsearch's cluster info, with the values of the version claimed", async () => {
    const info = await call("/");
    expect(info.status).toBe(200);
    const v = info.body.version;
    for (const key of [
      "number",
      "build_flavor",
      "build_type",
      "build_hash",
      "build_date",
      "build_snapshot",
      "lucene_version",
      "minimum_wire_compatibility_version",
      "minimum_index_compatibility_version",
    ])
      expect(v, key).toHaveProperty(key);
    expect(v.number).toMatch(/^8\.\d+\.\d+$/);
    expect(v.build_snapshot).toBe(false);
    expect(v.build_hash).toMatch(/^[0-9a-f]{40}$/);
    expect(Number.isNaN(Date.parse(v.build_date))).toBe(false);
    expect(v.lucene_version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(info.body).toMatchObject({ name: "chainsift", cluster_name: "chainsift ethereum/ethereum/mainnet" });
  });

  it("_msearch takes application/json, x-ndjson and the compatible-with media types (8 and 9); an unsupported media type is 415", async () => {
    const body = '{"index":"block"}\n{"size":0}\n';
    for (const type of [
      "application/json",
      "application/x-ndjson",
      "application/vnd.elasticsearch+x-ndjson; compatible-with=8",
      COMPAT8,
      "application/vnd.elasticsearch+json; compatible-with=9",
      "application/vnd.elasticsearch+x-ndjson; compatible-with=9",
    ]) {
      const r = await call("/_msearch", { body, type });
      expect(r.status, type).toBe(200);
      expect(r.body.responses[0].hits.total, type).toEqual({ value: blocks.length, relation: "eq" });
    }
    const text = await call("/_msearch", { body, type: "text/plain" });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ status: 415, error: { type: "CS_UNSUPPORTED_MEDIA_TYPE" } });
    // A body that is not NDJSON of objects, with a supported type: 400, not 415.
    const broken = await call("/_msearch", { body: "not json\n{}\n", type: "application/json" });
    expect(broken.status).toBe(400);
    expect(broken.body.error.type).toBe("CS_BODY_INVALID");
  });

  it("compatible-with: majors 8 and 9 are served on every route; another major is 415 in the same shape", async () => {
    const nine = await call("/tx/_search", { body: { size: 1 }, type: "application/vnd.elasticsearch+json; compatible-with=9" });
    expect(nine.status).toBe(200);
    expect(nine.body.hits.total).toEqual({ value: txs.length, relation: "eq" });
    const seven = await call("/tx/_search", { body: { size: 1 }, type: "application/vnd.elasticsearch+json; compatible-with=7" });
    expect(seven.status).toBe(415);
    expect(seven.body).toMatchObject({ status: 415, error: { type: "CS_UNSUPPORTED_MEDIA_TYPE" } });
    const acceptSeven = await call("/tx/_count", { accept: "application/vnd.elasticsearch+json; compatible-with=7" });
    expect(acceptSeven.status).toBe(415);
  });

  it("track_total_hits (body, query string, _msearch): true exact, N capped with relation gte, false none; answer-changing parameters are refused with their code as type", async () => {
    const t = await call("/tx/_search", { body: { size: 0, track_total_hits: true } });
    expect(t.status).toBe(200);
    expect(t.body.hits.total).toEqual({ value: txs.length, relation: "eq" });
    const q = await call("/tx/_search?track_total_hits=true", { body: { size: 0 } });
    expect(q.status).toBe(200);
    const m = await call("/_msearch", { body: '{"index":"tx"}\n{"size":0,"track_total_hits":5}\n', type: "application/x-ndjson" });
    expect(m.body.responses[0]).toMatchObject({ status: 200, hits: { total: { value: 5, relation: "gte" } } });
    const partial = await call("/tx/_search", { body: { size: 0, track_total_hits: 5 } });
    expect(partial.body.hits.total).toEqual({ value: 5, relation: "gte" });
    const qFalse = await call("/tx/_search?track_total_hits=false", { body: { size: 0 } });
    expect(qFalse.status).toBe(200);
    expect(qFalse.body.hits).not.toHaveProperty("total");
    const bad = await call("/tx/_search", { body: { size: 0, track_total_hits: "many" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: "CS_BODY_INVALID", path: "track_total_hits" });
    const routing = await call("/tx/_search?routing=0xab", { body: { size: 0 } });
    expect(routing.status).toBe(400);
    expect(routing.body.error.type).toBe("CS_BAD_REQUEST");
    const ignored = await call(
      "/tx/_search?search_type=query_then_fetch&preference=_local&request_cache=true&ccs_minimize_roundtrips=false&batched_reduce_size=512&ignore_unavailable=true",
      { body: { size: 0 } },
    );
    expect(ignored.status).toBe(200);
  });
});
