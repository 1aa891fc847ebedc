/**
 * Search API against a real Elasticsearch (config.elasticsearch.url, default http://127.0.0.1:9200):
 * creates its own indices under a unique prefix, indexes hand-written records shaped like
 * lib/records.ts, and calls the API with `app.inject`. Skipped when ES is not reachable.
 */
import { randomBytes } from "node:crypto";
import { Client, type estypes } from "@elastic/elasticsearch";
import { getAddress, id as keccakText } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import type { HitsEnvelope } from "../../../api/search/envelope.js";
import { streamSearch } from "../../../api/search/stream.js";
import { type Config, loadConfig } from "../../../lib/config.js";
import {
  type BlockRecord,
  type EventRecord,
  type LogRecord,
  type Quantity,
  RECORD_KINDS,
  type RecordByKind,
  type RecordKind,
  recordId,
  type TransactionRecord,
} from "../../../lib/records.js";
import { INDEX_SETTINGS, indexName, MAPPINGS } from "../../../pipeline/index/mappings.js";

const base = loadConfig();
const ES_URL = base.elasticsearch.url;

async function reachable(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/_cluster/health`, { signal: AbortSignal.timeout(3000) });
    return res.ok;
  } catch {
    return false;
  }
}

const esUp = await reachable(ES_URL);
if (!esUp) console.warn(`skipped: Elasticsearch is not reachable at ${ES_URL} (start it, or set ELASTICSEARCH_URL)`);

// ---------------------------------------------------------------------------------------------
// Hand-written records (realistic mainnet-like values; addresses EIP-55, hashes lower-case).
// ---------------------------------------------------------------------------------------------

const q = (n: number): Quantity => ({ num: n, raw: `0x${n.toString(16)}` });
const hash = (label: string): string => keccakText(label);
const pad32 = (addr: string): string => `0x${addr.slice(2).toLowerCase().padStart(64, "0")}`;

const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const WETH = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";
const VITALIK = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
const ROUTER = "0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D";
const BUILDER = "0x95222290DD7278Aa3Ddd389Cc1E1d165CC4BAfe5";
const BINANCE = "0x28C6c06298d514Db089934071355E5743bf21d60";
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const APPROVAL_TOPIC = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925";

const FIRST_BLOCK = 17_034_870;
const TX_PER_BLOCK = [5, 4, 3];

const blocks: BlockRecord[] = TX_PER_BLOCK.map((count, i) => ({
  hash: hash(`block-${FIRST_BLOCK + i}`),
  parentHash: hash(`block-${FIRST_BLOCK + i - 1}`),
  number: q(FIRST_BLOCK + i),
  timestamp: new Date(Date.UTC(2023, 3, 13, 8, 39, 11 + 12 * i)).toISOString().slice(0, 19),
  miner: BUILDER,
  gasUsed: q(14_934_214 + i),
  gasLimit: q(30_000_000),
  baseFeePerGas: q(27_014_286_327 + i),
  difficulty: q(0),
  size: q(71_211 + i),
  extraData: "0x6265617665726275696c642e6f7267",
  nonce: "0x0000000000000000",
  stateRoot: hash(`state-${i}`),
  transactionsRoot: hash(`txroot-${i}`),
  receiptsRoot: hash(`receipts-${i}`),
  transactionCount: count,
  uncles: [],
  withdrawalsCount: null,
}));

const SENDERS = [VITALIK, BINANCE, VITALIK, BUILDER];
const RECEIVERS = [USDT, WETH, ROUTER, VITALIK];

const txs: TransactionRecord[] = blocks.flatMap((b, bi) =>
  Array.from({ length: TX_PER_BLOCK[bi] as number }, (_, ti) => {
    const n = bi * 10 + ti;
    const to = RECEIVERS[n % RECEIVERS.length] as string;
    return {
      hash: hash(`tx-${b.number.num}-${ti}`),
      blockHash: b.hash,
      blockNumber: b.number,
      transactionIndex: q(ti),
      timestamp: b.timestamp,
      from: SENDERS[n % SENDERS.length] as string,
      to,
      value: q(to === WETH ? 1_500_000_000_000_000_000 : 0),
      gas: q(100_000),
      gasPrice: q(28_000_000_000),
      maxFeePerGas: q(40_000_000_000),
      maxPriorityFeePerGas: q(1_000_000_000),
      nonce: q(900 + n),
      type: q(2),
      input: to === USDT ? `0xa9059cbb${pad32(BINANCE).slice(2)}${"0".repeat(56)}3b9aca00` : "0x",
      methodId: to === USDT ? "0xa9059cbb" : null,
      status: 1,
      gasUsed: q(46_109),
      cumulativeGasUsed: q(46_109 * (ti + 1)),
      effectiveGasPrice: q(28_000_000_000),
      contractAddress: null,
      logCount: to === USDT ? 1 : 0,
    };
  }),
);

/** USDT transfers (one log and one event each) plus one Approval on the first USDT tx. */
const usdtTxs = txs.filter((t) => t.to === USDT);
const logs: LogRecord[] = [];
const events: EventRecord[] = [];
for (const t of usdtTxs) {
  const amount = 1_000_000_000; // 1000 USDT (6 decimals)
  const log: LogRecord = {
    address: USDT,
    topics: [TRANSFER_TOPIC, pad32(t.from), pad32(BINANCE)],
    data: `0x${amount.toString(16).padStart(64, "0")}`,
    blockHash: t.blockHash,
    blockNumber: t.blockNumber,
    transactionHash: t.hash,
    transactionIndex: t.transactionIndex,
    logIndex: q(t.transactionIndex.num * 3),
    removed: false,
    timestamp: t.timestamp,
  };
  logs.push(log);
  events.push({
    event: "Transfer",
    signature: "Transfer(address,address,uint256)",
    standard: "erc20",
    args: [
      { name: "from", pos: 0, value: { hex: t.from.toLowerCase(), num: null, scaled: null, type: "address" } },
      { name: "to", pos: 1, value: { hex: BINANCE.toLowerCase(), num: null, scaled: null, type: "address" } },
      { name: "value", pos: 2, value: { hex: `0x${amount.toString(16)}`, num: amount, scaled: 1000, type: "uint256" } },
    ],
    logIndex: log.logIndex,
    transactionIndex: log.transactionIndex,
    transactionHash: log.transactionHash,
    address: USDT,
    blockHash: log.blockHash,
    blockNumber: log.blockNumber,
    error: null,
    str: `Transfer(from=${t.from}, to=${BINANCE}, value=1000 USDT)`,
    timestamp: log.timestamp,
  });
}
const approvalTx = usdtTxs[0] as TransactionRecord;
logs.push({
  address: WETH,
  topics: [APPROVAL_TOPIC, pad32(approvalTx.from), pad32(ROUTER)],
  data: `0x${"f".repeat(64)}`,
  blockHash: approvalTx.blockHash,
  blockNumber: approvalTx.blockNumber,
  transactionHash: approvalTx.hash,
  transactionIndex: approvalTx.transactionIndex,
  logIndex: q(approvalTx.transactionIndex.num * 3 + 1),
  removed: false,
  timestamp: approvalTx.timestamp,
});
events.push({
  event: "Approval",
  signature: "Approval(address,address,uint256)",
  standard: "weth",
  args: [
    { name: "src", pos: 0, value: { hex: approvalTx.from.toLowerCase(), num: null, scaled: null, type: "address" } },
    { name: "guy", pos: 1, value: { hex: ROUTER.toLowerCase(), num: null, scaled: null, type: "address" } },
    { name: "wad", pos: 2, value: { hex: `0x${"f".repeat(64)}`, num: 2 ** 256 - 1, scaled: null, type: "uint256" } },
  ],
  logIndex: q(approvalTx.transactionIndex.num * 3 + 1),
  transactionIndex: approvalTx.transactionIndex,
  transactionHash: approvalTx.hash,
  address: WETH,
  blockHash: approvalTx.blockHash,
  blockNumber: approvalTx.blockNumber,
  error: null,
  str: `Approval(src=${approvalTx.from}, guy=${ROUTER}, wad=unlimited WETH)`,
  timestamp: approvalTx.timestamp,
});

const RECORDS: { [K in RecordKind]: RecordByKind[K][] } = { block: blocks, tx: txs, log: logs, event: events };

// ---------------------------------------------------------------------------------------------

const TOKEN = `test-${randomBytes(8).toString("hex")}`;
const PREFIX = `t-${randomBytes(4).toString("hex")}-`;
const config: Config = {
  ...base,
  chain: { technology: "ethereum", blockchain: "ethereum", network: "mainnet" },
  elasticsearch: { ...base.elasticsearch, indexPrefix: PREFIX },
  api: { ...base.api, tokens: [TOKEN], maxSize: 10_000 },
};
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe.skipIf(!esUp)(`search API against Elasticsearch at ${ES_URL}${esUp ? "" : " (skipped: not reachable)"}`, () => {
  let es: Client;
  let app: FastifyInstance;
  const indices = RECORD_KINDS.map((k) => indexName(config.chain, k, PREFIX));

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
    for (const kind of RECORD_KINDS) {
      await es.indices.create({
        index: indexName(config.chain, kind, PREFIX),
        settings: INDEX_SETTINGS as unknown as estypes.IndicesIndexSettings,
        mappings: MAPPINGS[kind],
      });
    }
    const operations: object[] = [];
    for (const kind of RECORD_KINDS) {
      for (const record of RECORDS[kind]) {
        operations.push({ index: { _index: indexName(config.chain, kind, PREFIX), _id: recordId(kind, record) } }, record);
      }
    }
    const bulk = await es.bulk({ operations, refresh: true });
    expect(bulk.errors, JSON.stringify(bulk.items.find((i) => i.index?.error))).toBe(false);
    app = await buildApi({ config, es, logger: false });
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: indices, ignore_unavailable: true });
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
      [{ from: 10 }, "CS_BODY_INVALID", "from"],
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
