/**
 * The official Elasticsearch JavaScript client (`@elastic/elasticsearch` 8.x) against the API's
 * Elasticsearch-compatible routes (api/routes/es/), over HTTP on 127.0.0.1 with the real
 * Elasticsearch and Redis: the node URL is `<api>/ethereum/ethereum/mainnet/es`, the token a
 * bearer token. Covers info/ping, each query shape of the contract, index-style names, a
 * search_after walk, an aggregation, count, msearch and refused requests whose code the client
 * surfaces. Indices and Redis keys live under unique prefixes and are deleted afterwards.
 */
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { Client, errors } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { CLAIMED_ES_VERSION } from "../../../api/routes/es/index.js";
import { indexName } from "../../../es/mappings.js";
import { loadConfig } from "../../../lib/config/index.js";
import { uniformPartitioning } from "../../../lib/partitioning.js";
import type { Quantity } from "../../../lib/records.js";
import pkg from "../../../package.json" with { type: "json" };
import {
  BINANCE,
  blocks,
  deleteRedisKeys,
  events,
  indexFixtures,
  isolatedApi,
  logs,
  MAINNET,
  searchStackUp,
  txs,
  USDT,
  VITALIK,
} from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "t");

/** The `_id`s of a search answer, sorted. */
const ids = (res: { hits: { hits: Array<{ _id?: string | null }> } }): string[] => res.hits.hits.map((h) => h._id ?? "").sort();
/** The status, first line of the message and error code the client surfaces for a refused request. */
async function refusal(p: Promise<unknown>): Promise<{ status: number | undefined; message: string; code: unknown }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(errors.ResponseError);
  const e = err as InstanceType<typeof errors.ResponseError>;
  // The message is the type (our code), then the root causes ("\tRoot causes:\n\t\t<type>: <reason>"), as for Elasticsearch.
  expect(e.message).toContain(`\tRoot causes:\n\t\t${(e.body as { error: { type: string } }).error.type}: `);
  return { status: e.statusCode, message: e.message.split("\n")[0] ?? "", code: (e.body as { error?: { code?: unknown } }).error?.code };
}

describe.skipIf(!up)("the official @elastic/elasticsearch 8 client against the API", () => {
  let es: Client;
  let app: FastifyInstance;
  let client: Client;
  let apiUrl: string;

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    // Partitions of 1 block (es/partitions.ts): the routes search aliases over several backing indices, pruned by block number.
    await indexFixtures(es, MAINNET, PREFIX, uniformPartitioning(1));
    app = await buildApi({ config, es, logger: false });
    await app.listen({ host: "127.0.0.1", port: 0 });
    apiUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    client = new Client({ node: `${apiUrl}/ethereum/ethereum/mainnet/es`, auth: { bearer: TOKEN } });
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

  it("info() answers chainsift's name and version; ping() is true; a wrong token is refused with the client's 401", async () => {
    const info = await client.info();
    expect(info.name).toBe("chainsift");
    expect(info.version.number).toBe(CLAIMED_ES_VERSION.number);
    expect(info.tagline).toContain(pkg.version);
    expect(info.cluster_name).toBe("chainsift ethereum/ethereum/mainnet");
    expect(await client.ping()).toBe(true);
    const stranger = new Client({ node: `${apiUrl}/ethereum/ethereum/mainnet/es`, auth: { bearer: "wrong" } });
    try {
      const r = await refusal(stranger.search({ index: "tx" }));
      expect(r).toMatchObject({ status: 401, code: "CS_AUTH_REQUIRED", message: "CS_AUTH_REQUIRED" });
    } finally {
      await stranger.close();
    }
  });

  it("each query shape of the contract, in Elasticsearch 8's answer shape", async () => {
    const b1 = blocks[1];
    const tx0 = txs[0];
    if (!b1 || !tx0) throw new Error("fixtures changed");
    const byNumber = await client.search({ index: "block", query: { term: { "number.num": b1.number.num } } });
    expect(ids(byNumber)).toEqual([b1.hash]);
    expect(byNumber.hits.total).toEqual({ value: 1, relation: "eq" });
    expect(Object.keys(byNumber.hits.hits[0] ?? {})).toEqual(["_index", "_id", "_score", "_source"]);

    const ofBlock = await client.search({ index: "tx", query: { term: { blockHash: b1.hash } }, size: 100 });
    expect(ids(ofBlock)).toEqual(
      txs
        .filter((t) => t.blockHash === b1.hash)
        .map((t) => t.hash)
        .sort(),
    );
    expect(ofBlock.hits.hits[0]?._routing).toBe(b1.hash);

    const lo = blocks[0]?.number.num as number;
    const inRange = await client.search({ index: "tx", query: { range: { "blockNumber.num": { gte: lo, lte: lo + 1 } } }, size: 100 });
    expect(ids(inRange)).toEqual(
      txs
        .filter((t) => t.blockNumber.num <= lo + 1)
        .map((t) => t.hash)
        .sort(),
    );

    const bySide = await client.search({
      index: "tx",
      query: { bool: { should: [{ term: { from: VITALIK } }, { term: { to: VITALIK } }] } },
      size: 100,
    });
    expect(ids(bySide)).toEqual(
      txs
        .filter((t) => t.from === VITALIK || t.to === VITALIK)
        .map((t) => t.hash)
        .sort(),
    );

    expect(ids(await client.search({ index: "tx", query: { term: { _id: tx0.hash } } }))).toEqual([tx0.hash]);
    expect(ids(await client.search({ index: "block", query: { ids: { values: [b1.hash] } } }))).toEqual([b1.hash]);

    const log0 = logs[0];
    if (!log0) throw new Error("fixtures changed");
    const logsOfTx = await client.search({ index: "log", query: { term: { transactionHash: log0.transactionHash } } });
    expect(logsOfTx.hits.total).toEqual({ value: logs.filter((l) => l.transactionHash === log0.transactionHash).length, relation: "eq" });
    const logsOfUsdt = await client.search({ index: "log", query: { term: { address: USDT } }, size: 100 });
    expect(logsOfUsdt.hits.hits.length).toBe(logs.filter((l) => l.address === USDT).length);

    const transfers = await client.search({ index: "event", query: { term: { "event.raw": "Transfer" } }, size: 100 });
    expect(transfers.hits.hits.length).toBe(events.filter((e) => e.event === "Transfer").length);
    const byContract = await client.search({ index: "event", query: { term: { "address.raw": USDT } }, size: 100 });
    expect(byContract.hits.hits.length).toBe(events.filter((e) => e.address === USDT).length);
    const byArg = await client.search({
      index: "event",
      query: {
        nested: {
          path: "args",
          query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": BINANCE.toLowerCase() } }] } },
        },
      },
      size: 100,
    });
    const toBinance = events.filter((e) => e.args.some((a) => a.name === "to" && a.value.hex === BINANCE.toLowerCase()));
    expect(byArg.hits.hits.length).toBe(toBinance.length);
    expect(toBinance.length).toBeGreaterThan(0);

    // block,tx: the kind of the entity behind a hash is unknown.
    const mixed = await client.search({ index: "block,tx", query: { ids: { values: [b1.hash, tx0.hash] } } });
    expect(ids(mixed)).toEqual([b1.hash, tx0.hash].sort());
  });

  it("index-style names the clients build: <t>-<b>-<n>-<kind>, comma lists, * and no index at all", async () => {
    const tx0 = txs[0] as (typeof txs)[number];
    const b0 = blocks[0] as (typeof blocks)[number];
    const query = { ids: { values: [tx0.hash, b0.hash] } };
    expect(ids(await client.search({ index: "ethereum-ethereum-mainnet-tx", query }))).toEqual([tx0.hash]);
    expect(ids(await client.search({ index: "ethereum-ethereum-mainnet-tx,ethereum-ethereum-mainnet-block", query }))).toEqual(
      [tx0.hash, b0.hash].sort(),
    );
    expect(ids(await client.search({ index: "ethereum-ethereum-mainnet-*", query }))).toEqual([tx0.hash, b0.hash].sort());
    expect(ids(await client.search({ index: "*", query }))).toEqual([tx0.hash, b0.hash].sort());
    expect(ids(await client.search({ query }))).toEqual([tx0.hash, b0.hash].sort());
    // A hit's _index (the alias, not the block's backing index) can be searched again.
    const hit = (await client.search({ index: "tx", query })).hits.hits[0];
    expect(hit?._index).toBe(indexName(MAINNET, "tx", PREFIX));
    expect(ids(await client.search({ index: indexName(MAINNET, "tx", PREFIX), query }))).toEqual([tx0.hash]);
    const r = await refusal(client.search({ index: "ethereum-ethereum-sepolia-tx", query }));
    expect(r).toMatchObject({ status: 404, code: "CS_UNKNOWN_KIND" });
  });

  it("a search_after walk with the client visits every transaction once, in order", async () => {
    const seen: string[] = [];
    let after: Array<string | number | boolean | null> | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await client.search<{ hash: string; blockNumber: Quantity }>({
        index: "tx",
        size: 5,
        sort: [{ "blockNumber.num": "desc" }, { hash: "asc" }],
        ...(after ? { search_after: after } : {}),
      });
      if (res.hits.hits.length === 0) break;
      seen.push(...res.hits.hits.map((h) => h._source?.hash ?? ""));
      after = res.hits.hits.at(-1)?.sort as typeof after;
    }
    const expected = [...txs]
      .sort((a, b) => b.blockNumber.num - a.blockNumber.num || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
      .map((t) => t.hash);
    expect(seen).toEqual(expected);
  });

  it("an aggregation, count, and msearch", async () => {
    const agg = await client.search({ index: "tx", size: 0, aggs: { by_to: { terms: { field: "to", size: 10 } } } });
    const buckets = (agg.aggregations as Record<string, { buckets: Array<{ key: string; doc_count: number }> }>).by_to?.buckets ?? [];
    const expected = new Map<string, number>();
    for (const t of txs) if (t.to) expected.set(t.to.toLowerCase(), (expected.get(t.to.toLowerCase()) ?? 0) + 1);
    expect(new Map(buckets.map((b) => [b.key.toLowerCase(), b.doc_count]))).toEqual(expected);

    expect((await client.count({ index: "tx" })).count).toBe(txs.length);
    expect((await client.count({ index: "tx", query: { term: { from: VITALIK } } })).count).toBe(
      txs.filter((t) => t.from === VITALIK).length,
    );
    expect((await client.count({ index: "block" })).count).toBe(blocks.length);

    const m = await client.msearch({
      searches: [
        { index: "block" },
        { size: 0 },
        {},
        { query: { script: { script: "1" } } },
        { index: "ethereum-ethereum-mainnet-tx" },
        { size: 1 },
      ],
    });
    expect(m.responses.map((r) => ("status" in r ? r.status : undefined))).toEqual([200, 400, 200]);
    expect((m.responses[0] as { hits: { total: unknown } }).hits.total).toEqual({ value: blocks.length, relation: "eq" });
    expect((m.responses[1] as unknown as { error: { code: string } }).error.code).toBe("CS_QUERY_UNSUPPORTED_CLAUSE");
    expect((m.responses[2] as { hits: { total: unknown } }).hits.total).toEqual({ value: txs.length, relation: "eq" });
  });

  it("refused queries: the client's ResponseError carries our 400 and code (also as its message)", async () => {
    const script = await refusal(client.search({ index: "tx", query: { script: { script: { source: "true" } } } }));
    expect(script).toMatchObject({ status: 400, code: "CS_QUERY_UNSUPPORTED_CLAUSE", message: "CS_QUERY_UNSUPPORTED_CLAUSE" });
    const field = await refusal(client.search({ index: "tx", query: { term: { nope: 1 } } }));
    expect(field).toMatchObject({ status: 400, code: "CS_QUERY_UNKNOWN_FIELD" });
    const from = await refusal(client.search({ index: "tx", from: 9_995, size: 10 }));
    expect(from).toMatchObject({ status: 400, code: "CS_RESULT_WINDOW_TOO_LARGE" });
    const all = await refusal(client.search({ index: "tx", size: -1 }));
    expect(all).toMatchObject({ status: 400, code: "CS_SIZE_INVALID" });
    const countExtra = await refusal(client.count({ index: "tx", query: { wildcard: { from: "0x*" } } }));
    expect(countExtra).toMatchObject({ status: 400, code: "CS_QUERY_UNSUPPORTED_CLAUSE" });
    const param = await refusal(client.search({ index: "tx", q: "from:0x1" }));
    expect(param).toMatchObject({ status: 400, code: "CS_BAD_REQUEST" });
  });

  it("raw HTTP: the product header on every answer, compatible-with JSON bodies, GET bodies refused, block/_search not taken by block/:hash", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const compat = "application/vnd.elasticsearch+json; compatible-with=8";
    const ok = await fetch(`${apiUrl}/ethereum/ethereum/mainnet/es/block/_search`, {
      method: "POST",
      headers: { ...auth, "content-type": compat, accept: compat },
      body: JSON.stringify({ size: 1 }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-elastic-product")).toBe("Elasticsearch");
    expect(((await ok.json()) as { hits: { hits: unknown[] } }).hits.hits).toHaveLength(1);
    const get = await fetch(`${apiUrl}/ethereum/ethereum/mainnet/es/block/_count`, { headers: auth });
    expect(await get.json()).toMatchObject({ count: blocks.length });
    const bad = await fetch(`${apiUrl}/ethereum/ethereum/mainnet/es/tx/_search`, {
      method: "POST",
      headers: { ...auth, "content-type": compat },
      body: JSON.stringify({ highlight: {} }),
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("x-elastic-product")).toBe("Elasticsearch");
    expect(await bad.json()).toMatchObject({ status: 400, error: { code: "CS_BODY_INVALID", type: "CS_BODY_INVALID" } });
    // A GET with a body is refused (Fastify does not read GET bodies: the query would be dropped).
    const getWithBody = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const body = JSON.stringify({ query: { term: { from: VITALIK } } });
      const req = request(`${apiUrl}/ethereum/ethereum/mainnet/es/tx/_search`, {
        method: "GET",
        headers: { ...auth, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on("error", reject);
      req.end(body);
    });
    expect(getWithBody.status).toBe(400);
    expect(JSON.parse(getWithBody.body)).toMatchObject({ error: { code: "CS_BODY_INVALID" } });
    // The contract's path accepts the compatible-with media type too, and keeps its envelope.
    const contract = await fetch(`${apiUrl}/ethereum/ethereum/mainnet/es/tx/search/`, {
      method: "POST",
      headers: { ...auth, "content-type": compat },
      body: JSON.stringify({ size: 1 }),
    });
    const env = (await contract.json()) as { hits: { total: unknown; hits: Array<{ _type: string }> } };
    expect(env.hits.total).toBe(txs.length);
    expect(env.hits.hits[0]?._type).toBe("tx");
  });
});
