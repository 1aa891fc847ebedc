/**
 * The API's result cache (api/search/result-cache.ts) against the real Elasticsearch and Redis:
 * a size 0 aggregation is answered from the cache the second time (answer header and metric);
 * a document written by the index stage's indexer (pipeline/index/indexer.ts, announcing its
 * writes on Redis as the running stage does, lib/index-writes.ts) is in the aggregation once the
 * refresh window has passed, and no answer after the window misses it; with the subscriber's
 * connection killed, the cache is bypassed until it is back. The fixture records live in
 * block-range partitions under a unique index prefix, deleted afterwards, as the Redis keys.
 */
import { Client } from "@elastic/elasticsearch";
import type { KafkaMessage } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { CACHE_HEADER } from "../../../api/plugins/result-cache.js";
import { indexName } from "../../../es/mappings.js";
import { DEFAULT_PARTITIONING } from "../../../es/partitions.js";
import { loadConfig } from "../../../lib/config/index.js";
import { publishIndexWrites } from "../../../lib/index-writes.js";
import { createLogger } from "../../../lib/logger.js";
import type { EventRecord } from "../../../lib/records.js";
import { type ConnectedRedis, connectRedisClient } from "../../../lib/redis.js";
import { createIndexer } from "../../../pipeline/index/indexer.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { waitFor } from "../../support/harness.js";
import { volumePerDayBody } from "../../support/volume-query.js";
import { deleteRedisKeys, events, indexFixtures, isolatedApi, MAINNET, searchStackUp, USDT } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id: ID, indexPrefix: PREFIX, token: TOKEN, config: isolated } = isolatedApi(base, "rc");
// A shorter margin keeps the test quick; the refresh interval stays Elasticsearch's (1 s).
const config = { ...isolated, api: { ...isolated.api, resultCache: { ...isolated.api.resultCache, marginMs: 300 } } };
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const VOLUME = volumePerDayBody(USDT);

// biome-ignore lint/suspicious/noExplicitAny: Elasticsearch answers, read in tests
type Json = Record<string, any>;

/** The summed USDT volume over every day of an answer. */
const volumeOf = (body: Json): number =>
  (body.aggregations.per_day.buckets as Json[]).reduce((s, b) => s + (b.args.value.sum.value as number), 0);

describe.skipIf(!up)("result cache (real Elasticsearch and Redis)", () => {
  let es: Client;
  let app: Awaited<ReturnType<typeof buildApi>>;
  let redis: ConnectedRedis;

  const search = async () => {
    const res = await app.inject({ method: "POST", url: `${PATH}/event/search/`, headers: AUTH, payload: VOLUME });
    expect(res.statusCode, res.body).toBe(200);
    return { outcome: res.headers[CACHE_HEADER], body: res.json<Json>() };
  };
  const metric = async (outcome: string): Promise<number> => {
    const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
    const m = new RegExp(`^chainsift_search_cache_requests_total\\{outcome="${outcome}"\\} (\\d+)`, "m").exec(text);
    return Number(m?.[1] ?? 0);
  };
  /** Waits until the subscriber is confirmed and the window after it has passed (a miss, then a hit). */
  const warm = async () => {
    await waitFor(async () => app.resultCache?.isConnected, 10_000, 50);
    await waitFor(async () => (await search()).outcome !== "bypass", 10_000, 100);
  };

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    redis = await connectRedisClient(base.redisUrl);
    await indexFixtures(es, MAINNET, PREFIX, DEFAULT_PARTITIONING);
    app = await buildApi({ config, es, logger: false });
    await warm();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.close();
    if (es) {
      await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("answers a repeated aggregation from the cache, the same answer on both routes' second call", async () => {
    const hitsBefore = await metric("hit");
    const first = await search();
    const second = await search();
    expect(["miss", "hit"]).toContain(first.outcome);
    expect(second.outcome).toBe("hit");
    expect(second.body).toEqual(first.body);
    expect(await metric("hit")).toBeGreaterThan(hitsBefore);
    // The Elasticsearch-compatible route: its own request (Elasticsearch's shape), cached on its own.
    const es1 = await app.inject({ method: "POST", url: `${PATH}/event/_search`, headers: AUTH, payload: VOLUME });
    const es2 = await app.inject({ method: "POST", url: `${PATH}/event/_search`, headers: AUTH, payload: VOLUME });
    expect(es1.statusCode, es1.body).toBe(200);
    expect(es2.headers[CACHE_HEADER]).toBe("hit");
    expect(es2.json()).toEqual(es1.json());
    expect(es2.json<Json>().hits.total).toEqual({ value: first.body.hits.total, relation: "eq" });
    // request_cache=false keeps a search out of it, as Elasticsearch's own cache.
    const off = await app.inject({ method: "POST", url: `${PATH}/event/_search?request_cache=false`, headers: AUTH, payload: VOLUME });
    expect(off.headers[CACHE_HEADER]).toBe("bypass");
    expect(off.json<Json>().aggregations).toEqual(es1.json<Json>().aggregations);
    // _msearch: the same request is the same key (a hit); its header's request_cache false is a bypass.
    const [hits, bypasses] = [await metric("hit"), await metric("bypass")];
    const ndjson = `{}\n${JSON.stringify(VOLUME)}\n{"request_cache":false}\n${JSON.stringify(VOLUME)}\n`;
    const multi = await app.inject({
      method: "POST",
      url: `${PATH}/event/_msearch`,
      headers: { ...AUTH, "content-type": "application/x-ndjson" },
      payload: ndjson,
    });
    expect(multi.statusCode, multi.body).toBe(200);
    const [m1, m2] = multi.json<Json>().responses as Json[];
    expect(m1?.aggregations).toEqual(es1.json<Json>().aggregations);
    expect(m2?.aggregations).toEqual(es1.json<Json>().aggregations);
    expect([await metric("hit"), await metric("bypass")]).toEqual([hits + 1, bypasses + 1]);
  });

  it("shows a document the index stage wrote once the refresh window has passed, and never misses it after", async () => {
    const before = await search();
    expect((await search()).outcome).toBe("hit");
    const template = events.find((e) => e.address === USDT && e.event === "Transfer") as EventRecord;
    const added: EventRecord = {
      ...template,
      logIndex: { num: 900, raw: "0x384" },
      args: template.args.map((a) => (a.name === "value" ? { ...a, value: { ...a.value, num: 7_000_000, scaled: 7 } } : a)),
    };
    // The index stage's indexer, announcing its writes as pipeline/runtime.ts wires it (no refresh: Elasticsearch's 1 s).
    const indexer = createIndexer({
      es,
      chain: MAINNET,
      indexPrefix: PREFIX,
      logger: createLogger("error", `test-${ID}`),
      decode: { chainId: 1 },
      onWrite: (aliases) => publishIndexWrites(redis.client, config.redisKeyPrefix, aliases),
    });
    const message = { key: null, value: null, offset: "0", timestamp: "0", attributes: 0, headers: {} } as unknown as KafkaMessage;
    const input = { topicKind: "events", topic: "events", partition: 0, offset: "0", key: null, record: added, message } as InputRecord;
    expect(await indexer.indexBatch([input])).toEqual([]);
    const written = Date.now();
    const windowMs = app.resultCache?.windowMs ?? 0;
    // Until the window has passed: never a cached answer (bypass), each straight from Elasticsearch.
    const during = await waitFor(async () => (await search()).outcome === "bypass" || undefined, 5_000, 20);
    expect(during).toBe(true);
    while (Date.now() - written < windowMs + 100) await new Promise((r) => setTimeout(r, 100));
    // After it: every answer has the document (the first from Elasticsearch, then from the cache).
    const after = [await search(), await search(), await search()];
    expect(after.map((a) => a.outcome)).toEqual(["miss", "hit", "hit"]);
    for (const a of after) expect(volumeOf(a.body)).toBe(volumeOf(before.body) + 7);
    expect(after[2]?.body.hits.total).toBe(before.body.hits.total + 1);
    await es.indices.refresh({ index: indexName(MAINNET, "event", PREFIX) });
  });

  it("bypasses the cache while its subscriber is disconnected, and caches again once it is back", async () => {
    expect((await search()).outcome).toBe("hit");
    const id = app.resultCacheSubscriberId();
    expect(id).toBeTypeOf("number");
    expect(app.resultCache?.stats().entries).toBeGreaterThan(0);
    expect(await redis.client.clientKill({ filter: "ID", id: id as number })).toBe(1);
    // The subscriber notices, drops everything, reconnects at once and confirms its subscription with a
    // probe; it bypasses the cache meanwhile and for the refresh window after (writes may have been missed).
    await waitFor(async () => app.resultCache?.stats().entries === 0, 5_000, 5);
    expect((await search()).outcome).toBe("bypass");
    expect((await search()).outcome).toBe("bypass");
    await warm();
    expect((await search()).outcome).toBe("hit");
  });
});
