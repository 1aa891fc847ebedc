/**
 * Search API against a real Elasticsearch (config.elasticsearch.url, default http://127.0.0.1:9200)
 * and Redis (accounts and rate limits, config.redisUrl): creates its own indices and Redis keys
 * under unique prefixes, indexes the hand-written records of ./fixtures.ts, and calls the API with
 * `app.inject`. Skipped when ES or Redis is not reachable.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import { getAddress } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import type { HitsEnvelope } from "../../../api/search/envelope.js";
import { streamSearch } from "../../../api/search/stream.js";
import { indexName } from "../../../es/mappings.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { BlockRecord, Quantity, RecordKind, TransactionRecord } from "../../../lib/records.js";
import {
  approvalTx,
  BINANCE,
  BUILDER,
  blocks,
  events,
  FIRST_BLOCK,
  hash,
  indexFixtures,
  logs,
  mainnetApiConfig,
  ROUTER,
  searchStackUp,
  TX_PER_BLOCK,
  txs,
  USDT,
  VITALIK,
  WETH,
} from "./fixtures.js";

const base = loadConfig();
const ES_URL = base.elasticsearch.url;
const up = await searchStackUp(base);

// ---------------------------------------------------------------------------------------------

const TOKEN = `test-${randomBytes(8).toString("hex")}`;
const PREFIX = `t-${randomBytes(4).toString("hex")}-`;
const config = mainnetApiConfig(base, {
  indexPrefix: PREFIX,
  redisKeyPrefix: PREFIX.replace(/-$/, ":"),
  api: { tokens: [TOKEN], maxSize: 10_000, rateLimitMax: 100_000 },
});
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe.skipIf(!up)(`search API against Elasticsearch at ${ES_URL}${up ? "" : " (skipped: not reachable)"}`, () => {
  let es: Client;
  let app: FastifyInstance;
  let indices: string[] = [];

  async function search(kinds: string, body?: unknown, url = `${PATH}/${kinds}/search/`): Promise<HitsEnvelope> {
    const res = await app.inject({ method: "POST", url, headers: AUTH, ...(body === undefined ? {} : { payload: body as object }) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<HitsEnvelope>();
  }

  async function searchError(kinds: string, body: unknown): Promise<{ status: number; body: ErrorBody }> {
    const res = await app.inject({ method: "POST", url: `${PATH}/${kinds}/search/`, headers: AUTH, payload: body as object });
    return { status: res.statusCode, body: res.json<ErrorBody>() };
  }

  beforeAll(async () => {
    es = new Client({ node: ES_URL });
    indices = await indexFixtures(es, config.chain, PREFIX);
    app = await buildApi({ config, es, logger: false });
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      if (indices.length > 0) await es.indices.delete({ index: indices, ignore_unavailable: true });
      await es.close();
    }
  });

  it("uses EIP-55 addresses in the fixtures", () => {
    for (const a of [USDT, WETH, VITALIK, ROUTER, BUILDER, BINANCE]) expect(getAddress(a.toLowerCase())).toBe(a);
    expect(txs.length).toBeGreaterThan(10);
  });

  it("401 without a token and with a wrong token, same answer", async () => {
    const none = await app.inject({ method: "POST", url: `${PATH}/tx/search/` });
    const wrong = await app.inject({ method: "POST", url: `${PATH}/tx/search/`, headers: { authorization: "Bearer nope" } });
    const scheme = await app.inject({ method: "POST", url: `${PATH}/tx/search/`, headers: { authorization: `Basic ${TOKEN}` } });
    for (const r of [none, wrong, scheme]) {
      expect(r.statusCode).toBe(401);
      expect(r.json()).toEqual(none.json());
      expect(r.json().error).toMatchObject({ code: "CS_AUTH_REQUIRED", path: null });
    }
    const get = await app.inject({ method: "GET", url: `${PATH}/block/${blocks[0]?.hash}/` });
    expect(get.statusCode).toBe(401);
  });

  it("health routes need no token", async () => {
    expect((await app.inject({ method: "GET", url: "/healthz" })).json()).toEqual({ status: "ok" });
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().status).toBe("ready");
  });

  it("block by number (term number.num)", async () => {
    const b = blocks[1] as BlockRecord;
    const env = await search("block", { query: { term: { "number.num": b.number.num } } });
    expect(env.hits.total).toBe(1);
    expect(env.hits.max_score).toBe(1);
    const hit = env.hits.hits[0];
    expect(hit).toMatchObject({ _index: indexName(config.chain, "block", PREFIX), _type: "block", _id: b.hash, _score: 1, _source: b });
    expect(hit && "_routing" in hit).toBe(false);
    expect(env._shards.failed).toBe(0);
    expect(env.timed_out).toBe(false);
  });

  it("transactions of a block (term blockHash), with _routing/_parent", async () => {
    const b = blocks[0] as BlockRecord;
    const env = await search("tx", { query: { bool: { filter: { term: { blockHash: b.hash } } } } });
    expect(env.hits.total).toBe(b.transactionCount);
    for (const h of env.hits.hits) {
      expect(h._type).toBe("tx");
      expect(h._routing).toBe(b.hash);
      expect(h._parent).toBe(b.hash);
      expect(h._score).toBe(1);
    }
  });

  it("transactions in a block range (range blockNumber.num)", async () => {
    const env = await search("tx", { query: { range: { "blockNumber.num": { gte: FIRST_BLOCK + 1, lte: FIRST_BLOCK + 2 } } }, size: 100 });
    expect(env.hits.total).toBe((TX_PER_BLOCK[1] as number) + (TX_PER_BLOCK[2] as number));
    expect(env.hits.hits.every((h) => (h._source.blockNumber as Quantity).num >= FIRST_BLOCK + 1)).toBe(true);
  });

  it("transactions by sender or receiver (bool should on from/to)", async () => {
    const expected = txs.filter((t) => t.from === VITALIK || t.to === VITALIK).length;
    const env = await search("tx", { query: { bool: { should: [{ term: { from: VITALIK } }, { term: { to: VITALIK } }] } }, size: 100 });
    expect(env.hits.total).toBe(expected);
    expect(env.hits.hits.every((h) => h._source.from === VITALIK || h._source.to === VITALIK)).toBe(true);
  });

  it("transaction by hash (term _id)", async () => {
    const t = txs[7] as TransactionRecord;
    const env = await search("tx", { query: { term: { _id: t.hash } } });
    expect(env.hits.total).toBe(1);
    expect(env.hits.hits[0]).toMatchObject({ _id: t.hash, _type: "tx", _parent: t.blockHash, _source: t });
  });

  it("logs by transaction (term transactionHash)", async () => {
    const env = await search("log", { query: { term: { transactionHash: approvalTx.hash } } });
    expect(env.hits.total).toBe(2);
    for (const h of env.hits.hits) {
      expect(h._type).toBe("log");
      expect(h._parent).toBe(approvalTx.hash);
      expect(h._id).toMatch(/^0x[0-9a-f]{64}_l_\d+$/);
    }
  });

  it("address matches in any letter case; address.raw only in the EIP-55 case", async () => {
    const usdtLogs = logs.filter((l) => l.address === USDT).length;
    for (const value of [USDT, USDT.toLowerCase(), USDT.toUpperCase().replace("0X", "0x")]) {
      expect((await search("log", { query: { term: { address: value } } })).hits.total).toBe(usdtLogs);
    }
    expect((await search("log", { query: { term: { "address.raw": USDT } } })).hits.total).toBe(usdtLogs);
    expect((await search("log", { query: { term: { "address.raw": USDT.toLowerCase() } } })).hits.total).toBe(0);
    expect((await search("event", { query: { term: { address: WETH.toLowerCase() } } })).hits.total).toBe(1);
  });

  it("events by name: event.raw is exact; event matches the name in any case", async () => {
    const transfers = events.filter((e) => e.event === "Transfer").length;
    const exact = await search("event", { query: { term: { "event.raw": "Transfer" } }, size: 100 });
    expect(exact.hits.total).toBe(transfers);
    expect(exact.hits.hits[0]?._id).toMatch(/^0x[0-9a-f]{64}_e_\d+$/);
    expect(exact.hits.hits[0]?._parent).toBe(exact.hits.hits[0]?._source.transactionHash);
    expect((await search("event", { query: { term: { "event.raw": "transfer" } } })).hits.total).toBe(0);
    expect((await search("event", { query: { term: { event: "transfer" } } })).hits.total).toBe(transfers);
    expect((await search("event", { query: { term: { event: "Transfer" } } })).hits.total).toBe(transfers);
    const matched = await search("event", { query: { match: { event: "approval" } } });
    expect(matched.hits.total).toBe(1);
    expect(matched.hits.max_score).toBeGreaterThan(0);
  });

  it("events by decoding source (a keyword): every fixture event is from the standard layouts", async () => {
    expect((await search("event", { query: { term: { source: "standard" } } })).hits.total).toBe(events.length);
    expect((await search("event", { query: { term: { source: "signature" } } })).hits.total).toBe(0);
  });

  it("events by argument (nested args: name and value.hex on the same argument)", async () => {
    const nested = (name: string, hex: string) => ({
      query: {
        bool: {
          filter: [
            { term: { "event.raw": "Transfer" } },
            {
              nested: { path: "args", query: { bool: { filter: [{ term: { "args.name": name } }, { term: { "args.value.hex": hex } }] } } },
            },
          ],
        },
      },
    });
    const fromVitalik = events.filter((e) => e.event === "Transfer" && e.args[0]?.value.hex === VITALIK.toLowerCase()).length;
    expect(fromVitalik).toBeGreaterThan(0);
    expect((await search("event", nested("from", VITALIK))).hits.total).toBe(fromVitalik); // value.hex is case-insensitive
    expect((await search("event", nested("to", VITALIK.toLowerCase()))).hits.total).toBe(0); // same argument, not any argument
  });

  it("block,tx by hash finds the block or the transaction", async () => {
    const b = blocks[2] as BlockRecord;
    const t = txs[3] as TransactionRecord;
    const byBlock = await search("block,tx", { query: { ids: { values: [b.hash] } } });
    expect(byBlock.hits.hits.map((h) => [h._type, h._id])).toEqual([["block", b.hash]]);
    const byTx = await search("block,tx", { query: { term: { _id: t.hash } } });
    expect(byTx.hits.hits.map((h) => [h._type, h._id, h._parent])).toEqual([["tx", t.hash, t.blockHash]]);
    const both = await search("block,tx", { query: { terms: { _id: [b.hash, t.hash] } }, sort: { "number.num": "desc" } });
    expect(both.hits.total).toBe(2);
  });

  it("GET block by hash", async () => {
    const b = blocks[0] as BlockRecord;
    for (const url of [
      `${PATH}/block/${b.hash}/`,
      `${PATH}/block/${b.hash}`,
      `${PATH}/block/${b.hash.toUpperCase().replace("0X", "0x")}/`,
    ]) {
      const res = await app.inject({ method: "GET", url, headers: AUTH });
      expect(res.statusCode, url).toBe(200);
      const env = res.json<HitsEnvelope>();
      expect(env.hits.total).toBe(1);
      expect(env.hits.hits[0]).toMatchObject({ _type: "block", _id: b.hash, _score: 1, _source: b });
    }
    const missing = await app.inject({ method: "GET", url: `${PATH}/block/${hash("no such block")}/`, headers: AUTH });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe("CS_NOT_FOUND");
    const bad = await app.inject({ method: "GET", url: `${PATH}/block/0x1234/`, headers: AUTH });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatchObject({ code: "CS_HASH_INVALID", path: "params.hash" });
  });

  it("sort desc on blockNumber.num puts the highest block first", async () => {
    const env = await search("tx", { sort: { "blockNumber.num": "desc" }, size: 100 });
    const numbers = env.hits.hits.map((h) => (h._source.blockNumber as Quantity).num);
    expect(numbers[0]).toBe(FIRST_BLOCK + 2);
    expect([...numbers].sort((a, b) => b - a)).toEqual(numbers);
    expect(env.hits.max_score).toBe(1);
  });

  it("_source restricts the returned fields (the parent is still reported)", async () => {
    const env = await search("tx", { query: { term: { blockHash: blocks[0]?.hash } }, _source: ["hash", "blockNumber.num"], size: 1 });
    const hit = env.hits.hits[0];
    expect(Object.keys(hit?._source ?? {}).sort()).toEqual(["blockNumber", "hash"]);
    expect(hit?._source.blockNumber).toEqual({ num: FIRST_BLOCK });
    expect(hit?._parent).toBe(blocks[0]?.hash);
  });

  it("no body (or an empty body) returns at most 10 records, with the exact total", async () => {
    const env = await search("tx");
    expect(env.hits.total).toBe(txs.length);
    expect(env.hits.hits.length).toBe(10);
    const empty = await app.inject({
      method: "POST",
      url: `${PATH}/tx/search`,
      headers: { ...AUTH, "content-type": "application/json" },
      payload: "",
    });
    expect(empty.statusCode).toBe(200);
    expect(empty.json().hits.hits.length).toBe(10);
    expect((await search("tx", { size: 0 })).hits).toEqual({ total: txs.length, max_score: null, hits: [] });
  });

  it("trailing slash is optional", async () => {
    expect((await search("block", {}, `${PATH}/block/search`)).hits.total).toBe(blocks.length);
  });

  it("size -1 returns exactly hits.total records (streamed)", async () => {
    const all = await search("tx", { size: -1 });
    expect(all.hits.total).toBe(txs.length);
    expect(all.hits.hits.length).toBe(txs.length);
    expect(new Set(all.hits.hits.map((h) => h._id)).size).toBe(txs.length);
    expect(all.hits.max_score).toBe(1);
    expect(all.hits.hits.every((h) => h._type === "tx" && h._parent === h._source.blockHash && h._score === 1)).toBe(true);

    const ranged = await search("tx", {
      size: -1,
      query: { range: { "blockNumber.num": { gte: FIRST_BLOCK, lte: FIRST_BLOCK + 1 } } },
      sort: { "blockNumber.num": "desc" },
      _source: ["hash", "blockNumber"],
    });
    const expected = (TX_PER_BLOCK[0] as number) + (TX_PER_BLOCK[1] as number);
    expect(ranged.hits.total).toBe(expected);
    expect(ranged.hits.hits.length).toBe(expected);
    expect((ranged.hits.hits[0]?._source.blockNumber as Quantity | undefined)?.num).toBe(FIRST_BLOCK + 1);
    expect(Object.keys(ranged.hits.hits[0]?._source ?? {}).sort()).toEqual(["blockNumber", "hash"]);

    const mixed = await search("block,tx", { size: -1 });
    expect(mixed.hits.total).toBe(blocks.length + txs.length);
    expect(mixed.hits.hits.length).toBe(blocks.length + txs.length);

    const none = await search("tx", { size: -1, query: { term: { blockHash: hash("nothing") } } });
    expect(none.hits).toEqual({ total: 0, max_score: null, hits: [] });
  });

  it("streamSearch pages with search_after across several pages and closes its PIT", async () => {
    const target = {
      kinds: ["block", "tx"] as RecordKind[],
      indices: [indexName(config.chain, "block", PREFIX), indexName(config.chain, "tx", PREFIX)],
    };
    const stream = await streamSearch({
      es,
      plan: { size: -1, sort: [{ timestamp: { order: "asc" } }] },
      target,
      requestTimeoutMs: 10_000,
      pageSize: 4,
    });
    let text = "";
    for await (const chunk of stream.body) text += chunk;
    const env = JSON.parse(text) as HitsEnvelope;
    expect(stream.total).toBe(blocks.length + txs.length);
    expect(env.hits.hits.length).toBe(stream.total);
    expect(new Set(env.hits.hits.map((h) => h._id)).size).toBe(stream.total);
    const times = env.hits.hits.map((h) => String(h._source.timestamp));
    expect([...times].sort()).toEqual(times);
  });

  it("400 with a stable code and path for refused queries", async () => {
    const cases: Array<[unknown, string, string | null]> = [
      [{ query: { script: { script: "true" } } }, "CS_QUERY_UNSUPPORTED_CLAUSE", "query.script"],
      [
        { query: { bool: { filter: [{ term: { from: VITALIK } }, { wildcard: { from: "0x*" } }] } } },
        "CS_QUERY_UNSUPPORTED_CLAUSE",
        "query.bool.filter[1].wildcard",
      ],
      [{ query: { terms: { from: { index: "users", id: "1", path: "a" } } } }, "CS_QUERY_UNSUPPORTED_CLAUSE", "query.terms.from"],
      [{ query: { term: { sender: VITALIK } } }, "CS_QUERY_UNKNOWN_FIELD", "query.term.sender"],
      [{ size: 10_001 }, "CS_SIZE_INVALID", "size"],
      [{ size: 1.5 }, "CS_SIZE_INVALID", "size"],
      [{ sort: { input: "asc" } }, "CS_SORT_INVALID", "sort.input"],
      [{ _source: ["from.raw"] }, "CS_SOURCE_INVALID", "_source[0]"],
      [{ from: 9_995 }, "CS_RESULT_WINDOW_TOO_LARGE", "from"],
      [{ highlight: {} }, "CS_BODY_INVALID", "highlight"],
    ];
    for (const [body, code, path] of cases) {
      const r = await searchError("tx", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toMatchObject({ code, path });
      expect(r.body.errors[0]).toEqual(r.body.error);
      expect(JSON.stringify(r.body)).not.toMatch(/at .*\.ts:\d+/);
    }
  });

  it("ES rejections map to CS_QUERY_REJECTED", async () => {
    const r = await searchError("tx", { query: { range: { timestamp: { gte: "not a date" } } } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("CS_QUERY_REJECTED");
  });

  it("404 for an unknown chain or kind", async () => {
    const chain = await app.inject({ method: "POST", url: "/ethereum/ethereum/sepolia/es/tx/search/", headers: AUTH, payload: { bad: 1 } });
    expect(chain.statusCode).toBe(404);
    expect(chain.json().error.code).toBe("CS_UNKNOWN_CHAIN");
    for (const kinds of ["trace", "tx,tx", "block,", "Block"]) {
      const kind = await app.inject({ method: "POST", url: `${PATH}/${kinds}/search/`, headers: AUTH });
      expect(kind.statusCode, kinds).toBe(404);
      expect(kind.json().error.code).toBe("CS_UNKNOWN_KIND");
    }
  });

  it("503 CS_BACKEND_UNAVAILABLE when Elasticsearch is unreachable", async () => {
    const deadEs = new Client({ node: "http://127.0.0.1:1", maxRetries: 0 });
    const dead = await buildApi({ config, es: deadEs, logger: false });
    try {
      const res = await dead.inject({ method: "POST", url: `${PATH}/tx/search/`, headers: AUTH });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe("CS_BACKEND_UNAVAILABLE");
      const ready = await dead.inject({ method: "GET", url: "/readyz" });
      expect(ready.statusCode).toBe(503);
    } finally {
      await dead.close();
      await deadEs.close();
    }
  });
});
