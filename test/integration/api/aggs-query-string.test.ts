/**
 * The aggregations and query-string clauses of issue 30 against the real Elasticsearch and Redis:
 * through the contract path (`…/es/<kinds>/search/`) and the Elasticsearch-compatible `_search`
 * with the official `@elastic/elasticsearch` client over HTTP. Expected values are computed from
 * the fixture records themselves (test/integration/api/fixtures.ts), and `typed_keys` names are
 * compared with Elasticsearch's own answer for the same body. Indices and Redis keys live under
 * unique prefixes and are deleted afterwards.
 */
import type { AddressInfo } from "node:net";
import { Client, errors } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import type { HitsEnvelope } from "../../../api/search/envelope.js";
import { indexName } from "../../../es/mappings.js";
import { loadConfig } from "../../../lib/config/index.js";
import { volumePerDayBody } from "../../support/volume-query.js";
import {
  deleteRedisKeys,
  events,
  FIRST_BLOCK,
  indexFixtures,
  isolatedApi,
  MAINNET,
  searchStackUp,
  TX_PER_BLOCK,
  txs,
  USDT,
  VITALIK,
} from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
/**
 * Whether this Elasticsearch has its `aggregations` module (`derivative`, `bucket_sort`): the
 * distribution of `npm run stack` (the integ-test zip) ships without it; the Docker image has it.
 */
const aggsModule =
  up &&
  (
    await fetch(`${base.elasticsearch.url}/chainsift-probe-none*/_search?allow_no_indices=true`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        size: 0,
        aggs: { h: { histogram: { field: "x", interval: 1 }, aggs: { d: { derivative: { buckets_path: "_count" } } } } },
      }),
    })
  ).ok;
if (up && !aggsModule)
  console.warn("derivative and bucket_sort skipped: this Elasticsearch has no aggregations module (integ-test distribution)");
const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "t");
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };

// biome-ignore lint/suspicious/noExplicitAny: Elasticsearch answers, read in tests
type Json = Record<string, any>;

/** The volume-per-day search of issue 30 for USDT: date_histogram → nested(args) → filter(args.name = value) → sum(args.value.scaled). */
const VOLUME_QUERY = volumePerDayBody(USDT);

/** The USDT Transfer events of the fixtures and their `value` argument's scaled amount. */
const transfers = events.filter((e) => e.address === USDT && e.event === "Transfer");
const scaled = (e: (typeof events)[number]): number => e.args.find((a) => a.name === "value")?.value.scaled ?? 0;

describe.skipIf(!up)("aggregations and query_string of issue 30 (real Elasticsearch)", () => {
  let es: Client;
  let app: FastifyInstance;
  let client: Client;

  async function post(url: string, body: unknown) {
    return app.inject({ method: "POST", url, headers: AUTH, payload: body as object });
  }
  async function search(kinds: string, body: unknown): Promise<HitsEnvelope & { aggregations: Json }> {
    const res = await post(`${PATH}/${kinds}/search/`, body);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }
  async function refused(kinds: string, body: unknown): Promise<{ status: number; error: ErrorBody["error"] }> {
    const res = await post(`${PATH}/${kinds}/search/`, body);
    return { status: res.statusCode, error: res.json<ErrorBody>().error };
  }
  /** The same body straight to Elasticsearch (the fixture index of `kind`). */
  async function direct(kind: "tx" | "event", body: Json, typedKeys = false): Promise<Json> {
    return (await es.search({ index: indexName(MAINNET, kind, PREFIX), typed_keys: typedKeys, ...body })) as Json;
  }

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    await indexFixtures(es, MAINNET, PREFIX);
    app = await buildApi({ config, es, logger: false });
    await app.listen({ host: "127.0.0.1", port: 0 });
    client = new Client({ node: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}${PATH}`, auth: { bearer: TOKEN } });
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("volume per day (date_histogram → nested → filter → sum) equals the sum of the fixture transfers, per day", async () => {
    expect(transfers.length).toBeGreaterThan(1);
    const expected = new Map<string, number>();
    for (const e of transfers) {
      const day = `${e.timestamp.slice(0, 10)}T00:00:00.000Z`;
      expected.set(day, (expected.get(day) ?? 0) + scaled(e));
    }
    const env = await search("event", VOLUME_QUERY);
    expect(env.hits.total).toBe(transfers.length);
    const buckets = env.aggregations.per_day.buckets as Json[];
    expect(new Map(buckets.map((b) => [b.key_as_string, b.args.value.sum.value]))).toEqual(expected);
    expect(buckets.map((b) => b.args.value.doc_count)).toEqual(
      [...expected.keys()].map((d) => transfers.filter((e) => d.startsWith(e.timestamp.slice(0, 10))).length),
    );
    // The same through the Elasticsearch-compatible route with the official client, typed keys as Elasticsearch names them.
    const typed = (await client.search({ index: "event", typed_keys: true, ...VOLUME_QUERY } as never)) as Json;
    const own = await direct("event", VOLUME_QUERY, true);
    expect(typed.aggregations).toEqual(own.aggregations);
    const day = typed.aggregations["date_histogram#per_day"].buckets[0];
    expect(day["nested#args"]["filter#value"]["sum#sum"].value).toBe(expected.values().next().value);
  });

  it("Grafana's shape: range with format epoch_millis, query_string *, fixed_interval with min_doc_count 0 and extended_bounds", async () => {
    const times = transfers.map((e) => Date.parse(`${e.timestamp}Z`));
    const from = Math.min(...times) - 60_000;
    const to = Math.max(...times) + 60_000;
    const body = {
      size: 0,
      query: {
        bool: {
          filter: [
            { range: { timestamp: { gte: from, lte: to, format: "epoch_millis" } } },
            { query_string: { analyze_wildcard: true, query: `event.raw:Transfer AND address:"${USDT}"` } },
          ],
        },
      },
      aggs: {
        "2": {
          date_histogram: {
            field: "timestamp",
            fixed_interval: "12s",
            min_doc_count: 0,
            extended_bounds: { min: from, max: to },
            format: "epoch_millis",
          },
          aggs: {
            "3": {
              nested: { path: "args" },
              aggs: { v: { filter: { term: { "args.name": "value" } }, aggs: { s: { sum: { field: "args.value.scaled" } } } } },
            },
          },
        },
      },
    };
    const env = await search("event", body);
    const buckets = env.aggregations["2"].buckets as Json[];
    // Empty buckets from the extended bounds (min_doc_count 0): every 12 s step between them.
    expect(buckets.length).toBe(Math.floor(to / 12_000) - Math.floor(from / 12_000) + 1);
    const bucketOf = (t: number) => String(Math.floor(t / 12_000) * 12_000);
    const expected = new Map<string, number>();
    for (const [i, e] of transfers.entries())
      expected.set(bucketOf(times[i] as number), (expected.get(bucketOf(times[i] as number)) ?? 0) + scaled(e));
    const got = new Map(buckets.filter((b) => b.doc_count > 0).map((b) => [b.key_as_string, b["3"].v.s.value]));
    expect(got).toEqual(expected);
  });

  it("composite: paging with after through every (from, block) pair, each once", async () => {
    const expected = new Map<string, number>();
    for (const t of txs) {
      const k = `${t.from.toLowerCase()}|${t.blockNumber.num}`;
      expected.set(k, (expected.get(k) ?? 0) + 1);
    }
    const seen = new Map<string, number>();
    let after: Json | undefined;
    let pages = 0;
    for (; pages < 20; pages++) {
      const composite: Json = {
        size: 2,
        sources: [{ from: { terms: { field: "from" } } }, { block: { histogram: { field: "blockNumber.num", interval: 1 } } }],
      };
      if (after) composite.after = after;
      const env = await search("tx", { size: 0, aggs: { pairs: { composite } } });
      const agg = env.aggregations.pairs as Json;
      if (agg.buckets.length === 0) break;
      for (const b of agg.buckets as Json[]) {
        const k = `${b.key.from}|${b.key.block}`;
        expect(seen.has(k), k).toBe(false);
        seen.set(k, b.doc_count);
      }
      after = agg.after_key;
    }
    expect(pages).toBe(Math.ceil(expected.size / 2));
    expect(seen).toEqual(expected);
    // The same walk with the official client on …/es/_search, typed keys on: the same pairs, each once.
    const viaClient = new Map<string, number>();
    let next: Json | undefined;
    for (let i = 0; i < 20; i++) {
      const composite: Json = {
        size: 3,
        sources: [{ from: { terms: { field: "from" } } }, { block: { histogram: { field: "blockNumber.num", interval: 1 } } }],
        ...(next ? { after: next } : {}),
      };
      const res = (await client.search({ index: "tx", size: 0, typed_keys: true, aggs: { pairs: { composite } } } as never)) as Json;
      const agg = res.aggregations["composite#pairs"];
      if (agg.buckets.length === 0) break;
      for (const b of agg.buckets as Json[])
        viaClient.set(`${b.key.from}|${b.key.block}`, (viaClient.get(`${b.key.from}|${b.key.block}`) ?? 0) + b.doc_count);
      next = agg.after_key;
    }
    expect(viaClient).toEqual(expected);
  });

  it("top_hits (sorted, _source includes), percentiles, stats and value_count under terms", async () => {
    const env = await search("tx", {
      size: 0,
      aggs: {
        by_from: {
          terms: { field: "from", size: 10 },
          aggs: {
            latest: {
              top_hits: {
                size: 1,
                sort: [{ "blockNumber.num": "desc" }, { hash: "asc" }],
                _source: { includes: ["hash", "blockNumber.num"] },
              },
            },
            gas: { stats: { field: "cumulativeGasUsed.num" } },
            p: { percentiles: { field: "cumulativeGasUsed.num", percents: [0, 100] } },
            n: { value_count: { field: "hash" } },
          },
        },
      },
    });
    const buckets = env.aggregations.by_from.buckets as Json[];
    const senders = [...new Set(txs.map((t) => t.from.toLowerCase()))];
    expect(buckets.map((b) => b.key).sort()).toEqual(senders.sort());
    for (const b of buckets) {
      const mine = txs.filter((t) => t.from.toLowerCase() === b.key);
      const latest = [...mine].sort((x, y) => y.blockNumber.num - x.blockNumber.num || (x.hash < y.hash ? -1 : 1))[0];
      const hit = b.latest.hits.hits[0];
      expect(hit._source).toEqual({ hash: latest?.hash, blockNumber: { num: latest?.blockNumber.num } });
      const gas = mine.map((t) => t.cumulativeGasUsed?.num ?? 0);
      expect(b.gas).toMatchObject({
        count: mine.length,
        min: Math.min(...gas),
        max: Math.max(...gas),
        sum: gas.reduce((s, g) => s + g, 0),
      });
      expect(b.p.values).toEqual({ "0.0": Math.min(...gas), "100.0": Math.max(...gas) });
      expect(b.n.value).toBe(mine.length);
    }
  });

  it("pipeline: cumulative_sum of a per-block count equals the running total of the fixture blocks", async () => {
    const env = await search("tx", {
      size: 0,
      aggs: {
        per_block: {
          histogram: { field: "blockNumber.num", interval: 1, min_doc_count: 0, hard_bounds: { min: FIRST_BLOCK, max: FIRST_BLOCK + 2 } },
          aggs: { n: { value_count: { field: "hash" } }, running: { cumulative_sum: { buckets_path: "n" } } },
        },
      },
    });
    const per = env.aggregations.per_block.buckets as Json[];
    expect(per.map((b) => b.key)).toEqual(TX_PER_BLOCK.map((_, i) => FIRST_BLOCK + i));
    let run = 0;
    expect(per.map((b) => b.running.value)).toEqual(TX_PER_BLOCK.map((n) => (run += n)));
  });

  it.skipIf(!aggsModule)("pipelines of the aggregations module: derivative of a per-block count, bucket_sort by a metric", async () => {
    const env = await search("tx", {
      size: 0,
      aggs: {
        per_block: {
          histogram: { field: "blockNumber.num", interval: 1, min_doc_count: 0, hard_bounds: { min: FIRST_BLOCK, max: FIRST_BLOCK + 2 } },
          aggs: { change: { derivative: { buckets_path: "_count" } } },
        },
        top_to: {
          terms: { field: "to", size: 10 },
          aggs: { moved: { sum: { field: "gasUsed.num" } }, best: { bucket_sort: { sort: [{ moved: { order: "desc" } }], size: 2 } } },
        },
      },
    });
    const per = env.aggregations.per_block.buckets as Json[];
    expect(per.slice(1).map((b) => b.change.value)).toEqual(TX_PER_BLOCK.slice(1).map((n, i) => n - (TX_PER_BLOCK[i] as number)));
    const gasByTo = new Map<string, number>();
    for (const t of txs) {
      const to = t.to?.toLowerCase() ?? "";
      gasByTo.set(to, (gasByTo.get(to) ?? 0) + (t.gasUsed?.num ?? 0));
    }
    const top2 = [...gasByTo.values()].sort((a, b) => b - a).slice(0, 2);
    expect((env.aggregations.top_to.buckets as Json[]).map((b) => b.moved.value)).toEqual(top2);
  });

  it("typed_keys names of the new aggregations are Elasticsearch's own (compared with a direct search)", async () => {
    const body = {
      size: 0,
      aggs: {
        pairs: { composite: { sources: [{ f: { terms: { field: "from" } } }] } },
        p: { percentiles: { field: "gasUsed.num" } },
        pr: { percentile_ranks: { field: "gasUsed.num", values: [46109] } },
        s: { stats: { field: "gasUsed.num" } },
        es: { extended_stats: { field: "gasUsed.num" } },
        vc: { value_count: { field: "hash" } },
        f: { filter: { term: { from: VITALIK } } },
        fs: { filters: { filters: { mine: { term: { from: VITALIK } } }, other_bucket: true } },
        r: { range: { field: "value.num", ranges: [{ to: 1 }, { from: 1 }] } },
        dr: { date_range: { field: "timestamp", ranges: [{ to: "now" }] } },
        m: { missing: { field: "methodId" } },
        th: { top_hits: { size: 1 } },
        st: { significant_terms: { field: "to" } },
        h: {
          histogram: { field: "blockNumber.num", interval: 1, min_doc_count: 0, hard_bounds: { min: FIRST_BLOCK, max: FIRST_BLOCK + 2 } },
          aggs: { c: { cumulative_sum: { buckets_path: "_count" } } },
        },
      },
    };
    const typed = (await client.search({ index: "tx", typed_keys: true, ...body } as never)) as Json;
    const own = await direct("tx", body, true);
    const keys = Object.keys(typed.aggregations).sort();
    expect(keys).toEqual(Object.keys(own.aggregations).sort());
    for (const k of [
      "composite#pairs",
      "tdigest_percentiles#p",
      "tdigest_percentile_ranks#pr",
      "stats#s",
      "extended_stats#es",
      "value_count#vc",
      "filter#f",
      "filters#fs",
      "range#r",
      "date_range#dr",
      "missing#m",
      "top_hits#th",
      "sigsterms#st",
    ])
      expect(keys).toContain(k);
    expect(Object.keys(typed.aggregations["histogram#h"].buckets[1])).toContain("simple_value#c");
    const nested = (await client.search({
      index: "event",
      typed_keys: true,
      size: 0,
      aggs: { a: { nested: { path: "args" }, aggs: { back: { reverse_nested: {} } } } },
    } as never)) as Json;
    expect(Object.keys(nested.aggregations["nested#a"])).toContain("reverse_nested#back");
  });

  it("query_string * and field:value AND … return the same hits as the equivalent bool query", async () => {
    const ids = (env: HitsEnvelope) => env.hits.hits.map((h) => h._id).sort();
    const all = await search("tx", { size: 100, query: { query_string: { query: "*" } } });
    expect(all.hits.total).toBe(txs.length);
    const pairs: Array<[Json, Json]> = [
      [
        { query_string: { query: `from:${VITALIK} AND blockNumber.num:[${FIRST_BLOCK} TO ${FIRST_BLOCK + 1}]` } },
        { bool: { filter: [{ term: { from: VITALIK } }, { range: { "blockNumber.num": { gte: FIRST_BLOCK, lte: FIRST_BLOCK + 1 } } }] } },
      ],
      [
        { query_string: { query: `(to:"${USDT}" OR to:${VITALIK}) AND NOT status:0`, analyze_wildcard: true } },
        { bool: { filter: { terms: { to: [USDT, VITALIK] } }, must_not: { term: { status: 0 } } } },
      ],
      [{ simple_query_string: { query: `${USDT.toLowerCase()}`, fields: ["to"] } }, { term: { to: USDT } }],
    ];
    for (const [qs, bool] of pairs) {
      const a = await search("tx", { size: 100, query: qs });
      const b = await search("tx", { size: 100, query: bool });
      expect(b.hits.total, JSON.stringify(qs)).toBeGreaterThan(0);
      expect(ids(a), JSON.stringify(qs)).toEqual(ids(b));
    }
    const ev = await search("event", {
      size: 100,
      query: { nested: { path: "args", query: { query_string: { query: "args.name:value AND args.value.scaled:[1000 TO *]" } } } },
    });
    expect(ev.hits.total).toBe(events.filter((e) => e.args.some((a) => a.name === "value" && (a.value.scaled ?? 0) >= 1000)).length);
  });

  it("refusals with their codes and paths, on the contract path and through the client", async () => {
    const cases: Array<[string, Json, string, string]> = [
      ["tx", { query: { query_string: { query: "from:*abc" } } }, "CS_QUERY_LEADING_WILDCARD", "query.query_string.query"],
      ["tx", { query: { query_string: { query: "hash:/0x.*/" } } }, "CS_QUERY_REGEXP", "query.query_string.query"],
      ["tx", { query: { query_string: { query: "nosuch:1" } } }, "CS_QUERY_UNKNOWN_FIELD", "query.query_string.query"],
      [
        "tx",
        { query: { query_string: { query: "*", fields: ["from", "bogus"] } } },
        "CS_QUERY_UNKNOWN_FIELD",
        "query.query_string.fields[1]",
      ],
      ["event", { query: { query_string: { query: "args.name:value" } } }, "CS_QUERY_NESTED_FIELD", "query.query_string.query"],
      ["event", { aggs: { s: { sum: { field: "args.value.scaled" } } } }, "CS_AGG_INVALID", "aggs.s.sum.field"],
      [
        "tx",
        { aggs: { c: { composite: { size: 5000, sources: [{ f: { terms: { field: "from" } } }] } } } },
        "CS_AGG_SIZE_TOO_LARGE",
        "aggs.c.composite.size",
      ],
      ["tx", { aggs: { t: { top_hits: { size: 1000 } } } }, "CS_AGG_SIZE_TOO_LARGE", "aggs.t.top_hits.size"],
      [
        "tx",
        { aggs: { h: { histogram: { field: "gas.num", interval: 1 }, aggs: { c: { cumulative_sum: { buckets_path: "nope" } } } } } },
        "CS_AGG_BUCKETS_PATH",
        "aggs.h.aggs.c.cumulative_sum.buckets_path",
      ],
    ];
    for (const [kinds, body, code, path] of cases) {
      const r = await refused(kinds, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect({ code: r.error.code, path: r.error.path }, JSON.stringify(body)).toEqual({ code, path });
    }
    const err = await client.search({ index: "tx", query: { query_string: { query: "from:*abc" } } } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(errors.ResponseError);
    expect((err as InstanceType<typeof errors.ResponseError>).body).toMatchObject({
      error: { type: "CS_QUERY_LEADING_WILDCARD" },
      status: 400,
    });
  });
});
