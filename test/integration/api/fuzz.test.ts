/**
 * Schema-driven fuzzing of the search route with fast-check against real Elasticsearch indices:
 * ≥ 1,000 generated requests mixing valid and invalid bodies (random JSON, query trees built from
 * the allowlist and from outside it, random sizes, sorts, _source, search_after and aggregations,
 * unknown kinds, malformed JSON text). Every answer must be < 500 with our error body, and the
 * server must still answer /healthz and a normal search afterwards.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { ALLOWED_AGGS } from "../../../api/dsl/aggs.js";
import { fieldCatalog } from "../../../api/dsl/fields.js";
import { ALLOWED_CLAUSES } from "../../../api/dsl/validate.js";
import { loadConfig } from "../../../lib/config/index.js";
import { RECORD_KINDS } from "../../../lib/records.js";
import { deleteRedisKeys, indexFixtures, mainnetApiConfig, searchStackUp } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const TOKEN = `fuzz-${ID}`;
const config = mainnetApiConfig(base, {
  indexPrefix: `${ID}-`,
  redisKeyPrefix: `${ID}:`,
  api: { tokens: [TOKEN], rateLimitMax: 1_000_000, maxSize: 10_000 },
});
const RUNS = 1200;

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

const allFields = [...new Set(RECORD_KINDS.flatMap((k) => [...fieldCatalog([k]).fields.keys()]))];
const field = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...allFields, "_id", "args", "blockNumber") },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);
const scalar = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: false }),
  fc.string({ maxLength: 20 }),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045", "Transfer", "2023-04-13T08:39:11", "now-1d", "17034870"),
);
const OUTSIDE = [
  "script",
  "wildcard",
  "regexp",
  "prefix",
  "fuzzy",
  "query_string",
  "function_score",
  "more_like_this",
  "percolate",
  "wrapper",
];

const { query } = fc.letrec<{ query: unknown; leaf: unknown }>((tie) => ({
  leaf: fc.oneof(
    fc.record({ term: fc.dictionary(field, fc.oneof(scalar, fc.record({ value: scalar })), { minKeys: 1, maxKeys: 2 }) }),
    fc.record({ terms: fc.dictionary(field, fc.array(scalar, { maxLength: 5 }), { minKeys: 1, maxKeys: 1 }) }),
    fc.record({
      range: fc.dictionary(field, fc.dictionary(fc.constantFrom("gte", "gt", "lte", "lt", "format", "boost"), scalar, { maxKeys: 3 }), {
        minKeys: 1,
        maxKeys: 1,
      }),
    }),
    fc.record({ ids: fc.record({ values: fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 4 }) }) }),
    fc.record({ exists: fc.record({ field }) }),
    fc.record({ match_all: fc.oneof(fc.constant({}), fc.record({ boost: fc.double() })) }),
    fc.record({
      match: fc.dictionary(field, fc.oneof(fc.string(), fc.record({ query: fc.string(), operator: fc.constantFrom("and", "or", "xor") })), {
        minKeys: 1,
        maxKeys: 1,
      }),
    }),
    fc.dictionary(fc.constantFrom(...ALLOWED_CLAUSES, ...OUTSIDE), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 1 }),
    fc.jsonValue({ maxDepth: 2 }),
  ),
  query: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    tie("leaf"),
    fc.record({
      bool: fc.record(
        {
          filter: fc.oneof(tie("query"), fc.array(tie("query"), { maxLength: 3 })),
          must: fc.array(tie("query"), { maxLength: 3 }),
          must_not: tie("query"),
          should: fc.array(tie("query"), { maxLength: 3 }),
          minimum_should_match: fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom("1", "50%", "x")),
        },
        { requiredKeys: [] },
      ),
    }),
    fc.record({
      nested: fc.record(
        { path: fc.constantFrom("args", "topics", "x"), query: tie("query"), score_mode: fc.constantFrom("avg", "max", "bad") },
        { requiredKeys: ["path"] },
      ),
    }),
  ),
}));

const order = fc.oneof(fc.constantFrom("asc", "desc", "ASC", "up"), fc.record({ order: fc.constantFrom("asc", "desc", 1) }), scalar);
const sortMap = fc.dictionary(fc.oneof(field, fc.constantFrom("_score", "_script")), order, { minKeys: 1, maxKeys: 2 });
const sort = fc.oneof(sortMap, fc.array(fc.oneof(sortMap, field), { maxLength: 3 }), scalar);

const aggSpec = fc.record(
  {
    field,
    size: fc.oneof(fc.integer({ min: -1, max: 2000 }), scalar),
    interval: fc.oneof(fc.double({ min: 0, max: 1e7 }), scalar),
    calendar_interval: fc.constantFrom("day", "1M", "2d", "hour"),
    fixed_interval: fc.constantFrom("30s", "1h", "0m", "x"),
    min_doc_count: fc.constantFrom(0, 1, -1),
    hard_bounds: fc.record({ min: scalar, max: scalar }),
    order: fc.oneof(fc.record({ _count: fc.constantFrom("asc", "desc") }), fc.jsonValue({ maxDepth: 1 })),
    script: fc.string(),
  },
  { requiredKeys: [] },
);
const { aggs } = fc.letrec<{ aggs: unknown; agg: unknown }>((tie) => ({
  agg: fc.oneof(
    { depthSize: "small" },
    fc.dictionary(fc.constantFrom(...ALLOWED_AGGS, "scripted_metric", "top_hits", "composite"), aggSpec, { minKeys: 1, maxKeys: 1 }),
    fc.record({ terms: aggSpec, aggs: tie("aggs") }),
    fc.jsonValue({ maxDepth: 2 }),
  ),
  aggs: fc.dictionary(fc.oneof(fc.constantFrom("a", "b", "by_x"), fc.string({ maxLength: 8 })), tie("agg"), { maxKeys: 3 }),
}));

const structured = fc.record(
  {
    query,
    sort,
    size: fc.oneof(fc.integer({ min: -2, max: 30 }), fc.constantFrom(-1, 10_000, 10_001, 1.5, "10"), scalar),
    _source: fc.oneof(fc.array(fc.oneof(field, fc.constant("*"), fc.integer()), { maxLength: 4 }), scalar),
    search_after: fc.oneof(fc.array(scalar, { maxLength: 3 }), scalar),
    aggs,
    from: fc.integer(),
    highlight: fc.jsonValue({ maxDepth: 1 }),
    runtime_mappings: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);

/** Mostly valid tx bodies: allowlisted clauses on tx fields with values of the right type. */
const tx = fieldCatalog(["tx"]);
const txFields = [...tx.fields.values()].filter((f) => f.searchable);
const keywordField = fc.constantFrom(...txFields.filter((f) => f.type === "keyword").map((f) => f.path));
const numericField = fc.constantFrom(
  ...txFields.filter((f) => f.type === "long" || f.type === "double" || f.type === "integer").map((f) => f.path),
);
const sortable = fc.constantFrom(...txFields.filter((f) => f.sortable).map((f) => f.path));
const validLeaf = fc.oneof(
  fc.record({
    term: fc.dictionary(keywordField, fc.constantFrom("0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045", "0xa9059cbb", "x"), {
      minKeys: 1,
      maxKeys: 1,
    }),
  }),
  fc.record({
    range: fc.dictionary(
      numericField,
      fc.record({ gte: fc.integer({ min: 0, max: 2e7 }), lt: fc.integer({ min: 0, max: 3e7 }) }, { requiredKeys: [] }),
      { minKeys: 1, maxKeys: 1 },
    ),
  }),
  fc.record({ exists: fc.record({ field: fc.constantFrom(...txFields.map((f) => f.path)) }) }),
  fc.constant({ match_all: {} }),
);
const validBody = fc.record(
  {
    query: fc.oneof(
      validLeaf,
      fc.record({ bool: fc.record({ filter: fc.array(validLeaf, { maxLength: 3 }), must_not: validLeaf }, { requiredKeys: [] }) }),
    ),
    sort: fc.array(fc.dictionary(sortable, fc.constantFrom("asc", "desc"), { minKeys: 1, maxKeys: 1 }), { minLength: 1, maxLength: 2 }),
    size: fc.integer({ min: -1, max: 20 }),
    _source: fc.array(fc.constantFrom(...tx.sourcePaths), { maxLength: 3 }),
    aggs: fc.dictionary(
      fc.constantFrom("a", "b"),
      fc.oneof(
        sortable.map((f) => ({ terms: { field: f, size: 5 } })),
        numericField.map((f) => ({ max: { field: f } })),
        fc.integer({ min: 1, max: 1e6 }).map((interval) => ({ histogram: { field: "blockNumber.num", interval } })),
      ),
      { maxKeys: 2 },
    ),
  },
  { requiredKeys: [] },
);

const kinds = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("tx", "block", "log", "event", "block,tx", "log,event") },
  { weight: 1, arbitrary: fc.constantFrom("trace", "tx,tx", "", "TX", "block,") },
);

/** One request: the kinds path segment, and a JSON value as body or raw text sent as application/json. */
const request: fc.Arbitrary<{ kinds: string; body: { json: unknown } | { text: string } }> = fc.oneof(
  { weight: 4, arbitrary: validBody.map((b) => ({ kinds: "tx", body: { json: b as unknown } })) },
  { weight: 6, arbitrary: fc.record({ kinds, body: structured.map((b) => ({ json: b as unknown })) }) },
  { weight: 2, arbitrary: fc.record({ kinds, body: fc.jsonValue({ maxDepth: 4 }).map((b) => ({ json: b as unknown })) }) },
  { weight: 1, arbitrary: fc.record({ kinds, body: fc.string({ maxLength: 40 }).map((text) => ({ text })) }) },
);

// ---------------------------------------------------------------------------------------------

describe.skipIf(!up)("fuzzing the search route (fast-check, real Elasticsearch)", () => {
  let es: Client;
  let app: FastifyInstance;

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    await indexFixtures(es, config.chain, `${ID}-`);
    app = await buildApi({ config, es, logger: false });
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${ID}-*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it(`answers ${RUNS} generated requests without a 5xx, always with our error body on errors`, async () => {
    let sent = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async ({ kinds: k, body: p }) => {
        const res = await app.inject({
          method: "POST",
          url: `/ethereum/ethereum/mainnet/es/${k}/search/`,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          payload: "text" in p ? p.text : JSON.stringify(p.json),
        });
        sent += 1;
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode >= 500) throw new Error(`${res.statusCode} for ${k} ${JSON.stringify(p)}: ${res.body}`);
        if (res.statusCode !== 200) {
          const body = res.json<{ error: { code: string; message: string; path: unknown } }>();
          expect(body.error.code).toMatch(/^CS_[A-Z_]+$/);
          expect(typeof body.error.message).toBe("string");
        }
      }),
      { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
    expect(sent).toBeGreaterThanOrEqual(1000);
    console.info(`fuzz: ${sent} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    // Both accepted and refused requests were exercised.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(200);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(200);
    const health = await app.inject({ method: "GET", url: "/healthz" });
    expect(health.statusCode).toBe(200);
    const after = await app.inject({
      method: "POST",
      url: "/ethereum/ethereum/mainnet/es/tx/search/",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { size: 1 },
    });
    expect(after.statusCode).toBe(200);
  });
});
