/**
 * Grafana's Elasticsearch data source against the API's Elasticsearch-compatible routes
 * (api/routes/es/), over HTTP on 127.0.0.1 with the real Elasticsearch and Redis: the requests
 * Grafana sends, as written in test/integration/api/grafana/requests.json after the Grafana sources
 * each one names (the backend's health check and `_msearch` batches with their header line and
 * query parameter; a time series, a terms breakdown, raw data, logs with highlighting; the
 * frontend's field discovery through `_mapping` and its annotation query). The data source URL is
 * `<api>/ethereum/ethereum/mainnet-fixtures/es` over the real mainnet fixture blocks
 * (test/support/mainnet-records.ts, in block-range partitions), the time field `timestamp`, the
 * time range the year 2023; every expected answer is computed from the fixture records.
 * Skips when Elasticsearch or Redis is down, or when ../shared/data/mainnet is absent.
 */
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { loadConfig } from "../../../lib/config/index.js";
import { hasMainnetFixtures, SKIP_NO_FIXTURES } from "../../support/fixtures.js";
import { MAINNET_FIXTURES, MAINNET_FIXTURES_PARTITIONING, mainnetRecords } from "../../support/mainnet-records.js";
import { deleteRedisKeys, indexFixtures, isolatedApi, type RecordsByKind, searchStackUp } from "./fixtures.js";
import GRAFANA from "./grafana/requests.json" with { type: "json" };

const base = loadConfig();
const up = await searchStackUp(base);
const haveData = hasMainnetFixtures();
if (!haveData) console.warn(SKIP_NO_FIXTURES);

const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "gf");
const CHAIN = `${MAINNET_FIXTURES.technology}-${MAINNET_FIXTURES.blockchain}-${MAINNET_FIXTURES.network}`;
/** The time range of every query: the year 2023 (UTC), in epoch ms, both ends included as Grafana sends them. */
const FROM = Date.UTC(2023, 0, 1);
const TO = Date.UTC(2024, 0, 1) - 1;
const DAY_MS = 86_400_000;
/** The 4-byte selector of ERC-20 `transfer(address,uint256)`. */
const TRANSFER = "0xa9059cbb";

/** A record `timestamp` (ISO 8601 without zone, UTC) in epoch ms. */
const ms = (timestamp: string): number => Date.parse(`${timestamp}Z`);
/** The value with the placeholders of requests.json filled in: "$index", "$from", "$to", "$query". */
function fill(value: unknown, vars: { index: string; query?: string }): unknown {
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)]));
  if (value === "$from") return FROM;
  if (value === "$to") return TO;
  if (value === "$index") return vars.index;
  if (value === "$query") return vars.query ?? "";
  return value;
}
/** The day buckets Grafana's date_histogram asks for (fixed_interval 1d over extended_bounds FROM..TO): key → count. */
function dayBuckets<T>(items: readonly T[], timeOf: (t: T) => number): Map<number, number> {
  const out = new Map<number, number>();
  for (let day = Math.floor(FROM / DAY_MS) * DAY_MS; day <= TO; day += DAY_MS) out.set(day, 0);
  for (const t of items) {
    const day = Math.floor(timeOf(t) / DAY_MS) * DAY_MS;
    out.set(day, (out.get(day) ?? 0) + 1);
  }
  return out;
}

interface Bucket {
  key: number | string;
  key_as_string?: string;
  doc_count: number;
  [sub: string]: unknown;
}
interface Hit {
  _id: string;
  _source: Record<string, unknown> & { timestamp: string };
  fields?: Record<string, unknown[]>;
  highlight?: Record<string, string[]>;
  sort?: unknown[];
}
interface MsearchItem {
  status: number;
  hits: { total: { value: number; relation: string }; hits: Hit[] };
  aggregations?: Record<string, { buckets: Bucket[] }>;
  error?: unknown;
}

describe.skipIf(!up || !haveData)("Grafana's Elasticsearch data source against the API", () => {
  let es: Client;
  let app: FastifyInstance;
  let url: string;
  let records: RecordsByKind;
  const headers = { authorization: `Bearer ${TOKEN}` };

  /** The tx records of 2023. */
  const txs2023 = () => records.tx.filter((t) => ms(t.timestamp) >= FROM && ms(t.timestamp) <= TO);

  /** Sends searches as Grafana's backend does (one `_msearch`, requests.json `msearch`); returns the answers after checking each is 200. */
  async function msearch(...searches: Array<{ name: keyof typeof GRAFANA; kind: string; query?: string }>): Promise<MsearchItem[]> {
    const lines = searches.flatMap(({ name, kind, query }) => {
      const vars = { index: `${CHAIN}-${kind}`, query };
      const shape = GRAFANA[name] as { header?: unknown; body: unknown };
      return [JSON.stringify(fill(shape.header ?? GRAFANA.msearch.header, vars)), JSON.stringify(fill(shape.body, vars))];
    });
    const res = await fetch(`${url}/${GRAFANA.msearch.path}`, {
      method: "POST",
      headers: { ...headers, "content-type": GRAFANA.msearch.contentType },
      body: `${lines.join("\n")}\n`,
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const items = (JSON.parse(text) as { responses: MsearchItem[] }).responses;
    expect(items).toHaveLength(searches.length);
    for (const item of items) expect(item.status, JSON.stringify(item.error)).toBe(200);
    return items;
  }

  beforeAll(async () => {
    es = new Client({ node: config.elasticsearch.url });
    records = mainnetRecords();
    await indexFixtures(es, MAINNET_FIXTURES, PREFIX, MAINNET_FIXTURES_PARTITIONING, records);
    app = await buildApi({ config, es, logger: false, chains: [MAINNET_FIXTURES] });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as AddressInfo;
    url = `http://127.0.0.1:${port}/${MAINNET_FIXTURES.technology}/${MAINNET_FIXTURES.blockchain}/${MAINNET_FIXTURES.network}/es`;
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(config.redisUrl, `${ID}:`);
  });

  it("passes the backend's health check (no 408, a JSON body whose status is not red)", async () => {
    const res = await fetch(`${url}/${GRAFANA.healthCheck.path}`, { headers });
    expect(res.status).not.toBe(408);
    const body = (await res.json()) as { status?: unknown; cluster_name?: unknown; active_primary_shards?: number };
    expect(body.status).not.toBe("red");
    // Elasticsearch's own health of the chain's indices (their partitions), with chainsift's cluster name.
    expect(res.status).toBe(200);
    const own = await es.cluster.health({ index: `${PREFIX}${CHAIN}-*` });
    expect(body).toMatchObject({
      cluster_name: `chainsift ${MAINNET_FIXTURES.technology}/${MAINNET_FIXTURES.blockchain}/${MAINNET_FIXTURES.network}`,
    });
    expect(body.status).toBe(own.status);
    expect(body.active_primary_shards).toBe(own.active_primary_shards);
    expect(own.active_primary_shards).toBeGreaterThan(0);
    const tx = await fetch(`${url}/_cluster/health/${CHAIN}-tx?level=cluster`, { headers });
    expect(tx.status).toBe(200);
    expect(((await tx.json()) as { active_primary_shards: number }).active_primary_shards).toBeLessThan(own.active_primary_shards);
    expect((await fetch(`${url}/_cluster/health/nope`, { headers })).status).toBe(404);
    expect((await fetch(`${url}/_cluster/health?q=x`, { headers })).status).toBe(400);
  });

  it("finds the fields of an index through GET <index>/_mapping, the time field a date", async () => {
    const res = await fetch(`${url}/${GRAFANA.fieldDiscovery.path.replace("$index", `${CHAIN}-tx`)}`, { headers });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    // As the frontend walks the answer: every index's mappings.properties, leaves with their type.
    const fields = new Map<string, string>();
    const walk = (props: Record<string, { type?: string; properties?: Record<string, never> }>, prefix: string) => {
      for (const [name, def] of Object.entries(props)) {
        if (def.properties) walk(def.properties, `${prefix}${name}.`);
        else if (def.type) fields.set(`${prefix}${name}`, def.type);
      }
    };
    const answer = JSON.parse(text) as Record<string, { mappings: { properties: Record<string, never> } }>;
    expect(Object.keys(answer).length).toBeGreaterThan(0);
    for (const index of Object.values(answer)) walk(index.mappings.properties, "");
    expect(fields.get("timestamp")).toBe("date");
    expect(fields.get("gasUsed.num")).toBe("long");
    expect(fields.get("methodId")).toBe("keyword");
    const roots = new Set([...fields.keys()].map((f) => f.split(".")[0]));
    for (const key of new Set(records.tx.flatMap((t) => Object.keys(t)))) expect(roots, key).toContain(key);
  });

  it("answers a time series: a sum per day over the whole range, empty days included", async () => {
    const [res] = await msearch({ name: "timeSeries", kind: "tx" });
    const expectedCounts = dayBuckets(txs2023(), (t) => ms(t.timestamp));
    const expectedGas = new Map<number, number>();
    for (const t of txs2023()) {
      const day = Math.floor(ms(t.timestamp) / DAY_MS) * DAY_MS;
      expectedGas.set(day, (expectedGas.get(day) ?? 0) + (t.gasUsed?.num ?? 0));
    }
    const buckets = res?.aggregations?.["2"]?.buckets ?? [];
    expect(buckets.map((b) => [b.key, b.doc_count])).toEqual([...expectedCounts]);
    expect(buckets.every((b) => b.key_as_string === String(b.key))).toBe(true); // format epoch_millis
    for (const b of buckets) expect((b["1"] as { value: number }).value).toBe(expectedGas.get(b.key as number) ?? 0);
    expect(res?.hits.total.value).toBe(txs2023().length);
  });

  it("answers a terms breakdown: the 10 greatest method ids, each with its day buckets", async () => {
    const [res] = await msearch({ name: "termsBreakdown", kind: "tx" });
    const byMethod = new Map<string, Array<(typeof records.tx)[number]>>();
    for (const t of txs2023()) if (t.methodId) byMethod.set(t.methodId, [...(byMethod.get(t.methodId) ?? []), t]);
    const top = [...byMethod.keys()].sort().reverse().slice(0, 10);
    const buckets = res?.aggregations?.["3"]?.buckets ?? [];
    expect(buckets.map((b) => [b.key, b.doc_count])).toEqual(top.map((m) => [m, byMethod.get(m)?.length]));
    for (const b of buckets) {
      const days = (b["2"] as { buckets: Bucket[] }).buckets;
      expect(days.map((d) => [d.key, d.doc_count])).toEqual([...dayBuckets(byMethod.get(b.key as string) ?? [], (t) => ms(t.timestamp))]);
    }
  });

  it("answers raw data: documents newest first, the time field in fields as Grafana formats it", async () => {
    const [res] = await msearch({ name: "rawData", kind: "tx" });
    const expected = txs2023();
    const hits = res?.hits.hits ?? [];
    expect(res?.hits.total.value).toBe(expected.length);
    expect(hits).toHaveLength(Math.min(500, expected.length));
    expect(hits.map((h) => h._id).sort()).toEqual(expected.map((t) => t.hash).sort());
    const times = hits.map((h) => ms(h._source.timestamp));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    for (const h of hits) {
      expect(h.fields?.timestamp).toEqual([`${h._source.timestamp}.000Z`]); // strict_date_optional_time_nanos
      expect(h.sort?.[0]).toBe(ms(h._source.timestamp));
    }
  });

  it("answers logs: a Lucene query beside the range, the matches highlighted with Grafana's tags", async () => {
    const [res] = await msearch({ name: "logs", kind: "tx", query: `methodId:"${TRANSFER}"` });
    const expected = txs2023().filter((t) => t.methodId === TRANSFER);
    const hits = res?.hits.hits ?? [];
    expect(hits.map((h) => h._id).sort()).toEqual(expected.map((t) => t.hash).sort());
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) expect(h.highlight?.methodId).toEqual([`@HIGHLIGHT@${TRANSFER}@/HIGHLIGHT@`]);
  });

  it("answers fields and highlight on every answer path: a search, each page of a scroll, a point in time", async () => {
    const body = {
      size: 40,
      query: { term: { methodId: TRANSFER } },
      fields: [{ field: "timestamp", format: "epoch_millis" }, "blockNumber.*"],
      highlight: { fields: { methodId: {} }, pre_tags: ["<"], post_tags: [">"] },
    };
    const post = async (path: string, b: unknown) => {
      const res = await fetch(`${url}/${path}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(b),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      return JSON.parse(text) as { hits: { hits: Hit[] }; _scroll_id?: string; pit_id?: string; id?: string };
    };
    const byHash = new Map(records.tx.map((t) => [t.hash, t]));
    const check = (hits: Hit[]) => {
      for (const h of hits) {
        const t = byHash.get(h._id);
        expect(h.fields).toEqual({
          timestamp: [String(ms(t?.timestamp ?? ""))],
          "blockNumber.num": [t?.blockNumber.num],
          "blockNumber.raw": [t?.blockNumber.raw],
        });
        expect(h.highlight).toEqual({ methodId: [`<${TRANSFER}>`] });
      }
      return hits.map((h) => h._id);
    };
    const expected = records.tx.filter((t) => t.methodId === TRANSFER).map((t) => t.hash);
    expect(expected.length).toBeGreaterThan(40);
    const first = await post(`${CHAIN}-tx/_search?scroll=1m`, body);
    const seen = check(first.hits.hits);
    for (let page = await post("_search/scroll", { scroll_id: first._scroll_id, scroll: "1m" }); page.hits.hits.length > 0; ) {
      seen.push(...check(page.hits.hits));
      page = await post("_search/scroll", { scroll_id: first._scroll_id, scroll: "1m" });
    }
    expect(seen.sort()).toEqual([...expected].sort());
    await fetch(`${url}/_search/scroll`, {
      method: "DELETE",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ scroll_id: first._scroll_id }),
    });
    const pit = await post(`${CHAIN}-tx/_pit?keep_alive=1m`, undefined);
    const onPit = await post("_search", { ...body, size: 1000, pit: { id: pit.id }, sort: [{ _doc: "asc" }], track_total_hits: false });
    expect(check(onPit.hits.hits).sort()).toEqual([...expected].sort());
    await fetch(`${url}/_pit`, {
      method: "DELETE",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ id: pit.id }),
    });
  });

  it("answers an annotation query (range from/to, a Lucene range, the index list in the header) and several searches in one batch", async () => {
    const query = "number.num:[17000000 TO 17999999]";
    const [annotations, series] = await msearch({ name: "annotations", kind: "block", query }, { name: "timeSeries", kind: "block" });
    const expected = records.block.filter(
      (b) => ms(b.timestamp) >= FROM && ms(b.timestamp) <= TO && b.number.num >= 17_000_000 && b.number.num <= 17_999_999,
    );
    expect(annotations?.hits.hits.map((h) => h._id).sort()).toEqual(expected.map((b) => b.hash).sort());
    expect(expected.length).toBeGreaterThan(1);
    const blocks2023 = records.block.filter((b) => ms(b.timestamp) >= FROM && ms(b.timestamp) <= TO);
    expect(series?.aggregations?.["2"]?.buckets.map((b) => [b.key, b.doc_count])).toEqual([
      ...dayBuckets(blocks2023, (b) => ms(b.timestamp)),
    ]);
  });
});
