/**
 * Extensions beyond the query contract (search_after, aggregations), refused features, several
 * served chains, the OpenAPI document and the metrics, against real Elasticsearch and Redis.
 * Indices and Redis keys live under unique prefixes and are deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import type { HitsEnvelope } from "../../../api/search/envelope.js";
import { indexName } from "../../../es/mappings.js";
import { type ChainId, type Config, loadConfig } from "../../../lib/config/index.js";
import type { Quantity } from "../../../lib/records.js";
import { blocks, deleteRedisKeys, FIRST_BLOCK, indexFixtures, searchStackUp, TX_PER_BLOCK, txs } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const PREFIX = `${ID}-`;
const TOKEN = `test-${ID}`;
const MAINNET: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const SEPOLIA: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "sepolia" };
const config: Config = {
  ...base,
  chain: MAINNET,
  elasticsearch: { ...base.elasticsearch, indexPrefix: PREFIX },
  redisKeyPrefix: `${ID}:`,
  api: { ...base.api, tokens: [TOKEN], adminToken: `admin-${ID}`, rateLimitMax: 100_000 },
};
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe.skipIf(!up)("search extensions, refused features, chains, OpenAPI and metrics", () => {
  let es: Client;
  let app: FastifyInstance;

  async function post(url: string, body: unknown) {
    return app.inject({ method: "POST", url, headers: AUTH, payload: body as object });
  }
  async function search(kinds: string, body: unknown, chainPath = PATH): Promise<HitsEnvelope> {
    const res = await post(`${chainPath}/${kinds}/search/`, body);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<HitsEnvelope>();
  }
  async function refused(kinds: string, body: unknown): Promise<{ status: number; error: ErrorBody["error"] }> {
    const res = await post(`${PATH}/${kinds}/search/`, body);
    return { status: res.statusCode, error: res.json<ErrorBody>().error };
  }

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    await indexFixtures(es, MAINNET, PREFIX);
    await indexFixtures(es, SEPOLIA, PREFIX);
    app = await buildApi({ config, es, chains: [MAINNET, SEPOLIA], logger: false });
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  describe("search_after (extension)", () => {
    it("sorted hits carry their sort values; consecutive pages are disjoint and cover every match in order", async () => {
      const sort = [{ "blockNumber.num": "desc" }, { hash: "asc" }];
      const seen: string[] = [];
      const pages: string[][] = [];
      let after: unknown[] | undefined;
      for (let i = 0; i < 10; i++) {
        const env = await search("tx", { sort, size: 5, ...(after ? { search_after: after } : {}) });
        expect(env.hits.total).toBe(txs.length);
        if (env.hits.hits.length === 0) break;
        const ids = env.hits.hits.map((h) => h._id);
        pages.push(ids);
        seen.push(...ids);
        for (const h of env.hits.hits) expect(h.sort).toEqual([(h._source.blockNumber as Quantity).num, h._source.hash]);
        after = env.hits.hits.at(-1)?.sort;
      }
      expect(pages.map((p) => p.length)).toEqual([5, 5, 2]);
      expect(new Set(seen).size).toBe(txs.length);
      for (let i = 1; i < pages.length; i++) expect(pages[i]?.some((id) => pages[i - 1]?.includes(id))).toBe(false);
      const expected = [...txs]
        .sort((a, b) => b.blockNumber.num - a.blockNumber.num || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
        .map((t) => t.hash);
      expect(seen).toEqual(expected);
    });

    it("refuses search_after without sort, with the wrong length, or with size -1", async () => {
      for (const body of [
        { search_after: [1] },
        { sort: { hash: "asc" }, search_after: [1, 2] },
        { sort: { hash: "asc" }, search_after: ["0x"], size: -1 },
        { sort: { hash: "asc" }, search_after: "0x" },
      ]) {
        const r = await refused("tx", body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.error.code).toBe("CS_SEARCH_AFTER_INVALID");
      }
    });
  });

  describe("aggregations (extension)", () => {
    it("terms on a keyword, histogram on blockNumber.num, sum on a numeric field, cardinality, date_histogram", async () => {
      const env = await search("tx", {
        size: 0,
        aggs: {
          by_from: { terms: { field: "from", size: 10 } },
          per_block: { histogram: { field: "blockNumber.num", interval: 1 }, aggs: { gas: { sum: { field: "gasUsed.num" } } } },
          value: { sum: { field: "value.num" } },
          senders: { cardinality: { field: "from" } },
          per_day: { date_histogram: { field: "timestamp", calendar_interval: "day" } },
        },
      });
      expect(Object.keys(env)).toEqual(["took", "timed_out", "_shards", "hits", "aggregations"]);
      expect(env.hits.hits).toEqual([]);
      const aggs = env.aggregations as Record<string, { buckets?: Array<Record<string, unknown>>; value?: number }>;
      const fromCounts = new Map<string, number>();
      for (const t of txs) fromCounts.set(t.from.toLowerCase(), (fromCounts.get(t.from.toLowerCase()) ?? 0) + 1);
      expect(new Map(aggs.by_from?.buckets?.map((b) => [b.key as string, b.doc_count as number]))).toEqual(fromCounts);
      expect(aggs.per_block?.buckets?.map((b) => [b.key, b.doc_count])).toEqual(TX_PER_BLOCK.map((n, i) => [FIRST_BLOCK + i, n]));
      expect((aggs.per_block?.buckets?.[0]?.gas as { value: number } | undefined)?.value).toBe(46_109 * (TX_PER_BLOCK[0] as number));
      expect(aggs.value?.value).toBe(txs.reduce((s, t) => s + t.value.num, 0));
      expect(aggs.senders?.value).toBe(fromCounts.size);
      expect(aggs.per_day?.buckets?.length).toBe(1);
    });

    it("with hits and with size -1 (streamed), under the aggregations key", async () => {
      const withHits = await search("block", { size: 2, aggregations: { n: { max: { field: "number.num" } } } });
      expect(withHits.hits.hits.length).toBe(2);
      expect(withHits.aggregations).toEqual({ n: { value: FIRST_BLOCK + blocks.length - 1 } });
      const streamed = await search("block", { size: -1, aggs: { n: { min: { field: "number.num" } } } });
      expect(streamed.hits.hits.length).toBe(blocks.length);
      expect(streamed.aggregations).toEqual({ n: { value: FIRST_BLOCK } });
    });

    it("refused aggregations: 400 with code and path", async () => {
      const cases: Array<[string, unknown, string, string]> = [
        ["tx", { aggs: { s: { scripted_metric: { map_script: "state.x = 1" } } } }, "CS_AGG_UNSUPPORTED", "aggs.s.scripted_metric"],
        ["event", { aggs: { names: { terms: { field: "event" } } } }, "CS_AGG_INVALID", "aggs.names.terms.field"],
        ["event", { aggs: { a: { terms: { field: "args.name" } } } }, "CS_AGG_INVALID", "aggs.a.terms.field"],
        ["tx", { aggs: { big: { terms: { field: "from", size: 5000 } } } }, "CS_AGG_TOO_MANY_BUCKETS", "aggs.big.terms.size"],
        [
          "tx",
          { aggs: { a: { terms: { field: "from", size: 200 }, aggs: { b: { terms: { field: "to", size: 200 } } } } } },
          "CS_AGG_TOO_MANY_BUCKETS",
          "aggs.a",
        ],
        [
          "tx",
          { aggs: { h: { histogram: { field: "gas.num", interval: 1, min_doc_count: 0 } } } },
          "CS_AGG_TOO_MANY_BUCKETS",
          "aggs.h.histogram.min_doc_count",
        ],
        ["tx", { aggs: { x: { sum: { field: "gas.num", script: "1" } } } }, "CS_AGG_INVALID", "aggs.x.sum.script"],
        ["tx", { aggs: [] }, "CS_AGG_INVALID", "aggs"],
      ];
      for (const [kinds, body, code, path] of cases) {
        const r = await refused(kinds, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.error, JSON.stringify(body)).toMatchObject({ code, path });
      }
    });
  });

  it("every refused Elasticsearch feature (issue §2) is 400 with its code", async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ runtime_mappings: { x: { type: "long", script: { source: "emit(1)" } } } }, "CS_BODY_INVALID", "runtime_mappings"],
      [{ script_fields: { x: { script: { source: "1" } } } }, "CS_BODY_INVALID", "script_fields"],
      [{ sort: { _script: { type: "number", script: { source: "1" }, order: "asc" } } }, "CS_SORT_INVALID", "sort._script"],
      [{ highlight: { fields: { hash: {} } } }, "CS_BODY_INVALID", "highlight"],
      [{ suggest: { s: { text: "x", term: { field: "hash" } } } }, "CS_BODY_INVALID", "suggest"],
      [{ rescore: { window_size: 10, query: { rescore_query: { match_all: {} } } } }, "CS_BODY_INVALID", "rescore"],
      [{ profile: true }, "CS_BODY_INVALID", "profile"],
      [{ explain: true }, "CS_BODY_INVALID", "explain"],
      [{ stored_fields: ["hash"] }, "CS_BODY_INVALID", "stored_fields"],
      [{ docvalue_fields: ["hash"] }, "CS_BODY_INVALID", "docvalue_fields"],
      [{ query: { script: { script: { source: "true" } } } }, "CS_QUERY_UNSUPPORTED_CLAUSE", "query.script"],
      [{ query: { function_score: { query: { match_all: {} } } } }, "CS_QUERY_UNSUPPORTED_CLAUSE", "query.function_score"],
    ];
    for (const [body, code, path] of cases) {
      const r = await refused("tx", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.error, JSON.stringify(body)).toMatchObject({ code, path });
    }
  });

  it("serves several chains from one deployment, resolving indices per request", async () => {
    const main = await search("block", { size: 1 });
    const sepolia = await search("block", { size: 1 }, "/ethereum/ethereum/sepolia/es");
    expect(main.hits.total).toBe(blocks.length);
    expect(sepolia.hits.total).toBe(blocks.length);
    expect(main.hits.hits[0]?._index).toBe(indexName(MAINNET, "block", PREFIX));
    expect(sepolia.hits.hits[0]?._index).toBe(indexName(SEPOLIA, "block", PREFIX));
    const unknown = await post("/ethereum/ethereum/holesky/es/block/search/", {});
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe("CS_UNKNOWN_CHAIN");
    const kind = await post(`${PATH}/receipt/search/`, {});
    expect([kind.statusCode, kind.json().error.code]).toEqual([404, "CS_UNKNOWN_KIND"]);
  });

  it("/docs/json is an OpenAPI 3 document of the search and admin routes; /docs serves Swagger UI", async () => {
    const res = await app.inject({ method: "GET", url: "/docs/json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{
      openapi: string;
      info: { title: string; version: string };
      paths: Record<
        string,
        Record<
          string,
          {
            responses?: Record<string, unknown>;
            parameters?: Array<{ name: string; in: string }>;
            security?: unknown;
            operationId?: string;
            requestBody?: { content: Record<string, { schema: { $ref?: string; properties?: Record<string, unknown> } }> };
          }
        >
      >;
      components: {
        securitySchemes: Record<string, { type: string; scheme: string }>;
        schemas: Record<string, { properties?: Record<string, unknown> }>;
      };
    }>();
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    expect(doc.components.securitySchemes.adminAuth).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    const expected: Array<[string, string]> = [
      ["/{technology}/{blockchain}/{network}/es/{kinds}/search/", "post"],
      ["/{technology}/{blockchain}/{network}/es/block/{hash}/", "get"],
      ["/admin/accounts/", "post"],
      ["/admin/accounts/", "get"],
      ["/admin/accounts/{id}/disable", "post"],
      ["/admin/accounts/{id}/tokens/", "post"],
      ["/admin/accounts/{id}/tokens/", "get"],
      ["/admin/tokens/{tokenId}", "delete"],
      ["/healthz", "get"],
      ["/metrics", "get"],
    ];
    for (const [path, method] of expected) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(Object.keys(doc.paths).some((p) => p.startsWith("/docs"))).toBe(false);
    // Structural validity: every operation has responses; every {param} is declared in the path.
    for (const [path, ops] of Object.entries(doc.paths)) {
      expect(path.startsWith("/")).toBe(true);
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(ops)) {
        expect(["get", "post", "put", "delete", "patch", "head", "options"]).toContain(method);
        expect(Object.keys(op.responses ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
        const declared = (op.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
        expect(declared.sort(), `${method} ${path}`).toEqual([...params].sort());
      }
    }
    // Every operation has an operationId, each a different one (what client generators name methods after).
    const ids = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => [`${method} ${path}`, op.operationId]),
    );
    expect(ids.filter(([, id]) => typeof id !== "string").map(([op]) => op)).toEqual([]);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
    // Every $ref resolves inside the document.
    const text = res.body;
    for (const m of text.matchAll(/"\$ref":"#\/([^"]+)"/g)) {
      const target = (m[1] as string).split("/").reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], doc);
      expect(target, m[1]).toBeDefined();
    }
    // Generated from the request schemas: the search body lists the accepted keys, the admin routes use adminAuth.
    // The body is the shared SearchBody schema (components/schemas, api/plugins/openapi.ts hoistComponents).
    const ref =
      doc.paths["/{technology}/{blockchain}/{network}/es/{kinds}/search/"]?.post?.requestBody?.content["application/json"]?.schema;
    expect(ref).toEqual({ $ref: "#/components/schemas/SearchBody" });
    const body = doc.components.schemas.SearchBody;
    expect(Object.keys(body?.properties ?? {}).sort()).toEqual([
      "_source",
      "aggregations",
      "aggs",
      "from",
      "query",
      "search_after",
      "size",
      "sort",
    ]);
    expect(doc.paths["/admin/accounts/"]?.post?.security).toEqual([{ adminAuth: [] }]);
    expect(doc.paths["/healthz"]?.get?.security).toEqual([]);
    const ui = await app.inject({ method: "GET", url: "/docs/" });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers["content-type"]).toMatch(/text\/html/);
  });

  it("/metrics exposes the request histogram and the search hits counter after a request", async () => {
    const answers = async (): Promise<{ bytes: number; parsed: number; stream: number }> => {
      const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
      const count = (path: string): number =>
        Number(new RegExp(`chainsift_search_answers_total\\{path="${path}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
      return { bytes: count("bytes"), parsed: count("parsed"), stream: count("stream") };
    };
    const before = await answers();
    await search("tx", { size: 3 });
    await search("tx", { size: 0, aggs: { n: { cardinality: { field: "from" } } } });
    await search("tx", { size: -1, query: { ids: { values: ["0x00"] } } });
    // The plain search was written from ES's bytes; aggregations take the parse path; size -1 streams.
    expect(await answers()).toEqual({ bytes: before.bytes + 1, parsed: before.parsed + 1, stream: before.stream + 1 });
    const res = await app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    const route = "/:technology/:blockchain/:network/es/:kinds/search/";
    expect(res.body).toContain("# TYPE http_request_duration_seconds histogram");
    expect(res.body).toMatch(
      new RegExp(
        `http_request_duration_seconds_bucket\\{le="[^"]+",route="${route.replace(/\//g, "\\/")}",method="POST",status_code="200"\\}`,
      ),
    );
    expect(res.body).toMatch(/chainsift_search_hits_total\{chain="ethereum\/ethereum\/mainnet",kinds="tx"\} \d+/);
    expect(res.body).toContain("nodejs_eventloop_lag_seconds");
  });
});
