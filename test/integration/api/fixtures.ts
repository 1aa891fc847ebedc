/**
 * Shared fixtures of the search API integration tests: hand-written records shaped like
 * lib/records.ts (realistic mainnet-like values; addresses EIP-55, hashes lower-case), and helpers
 * to index them under a unique prefix in a real Elasticsearch and to probe the services.
 */
import { randomBytes } from "node:crypto";
import { Client, type estypes } from "@elastic/elasticsearch";
import { id as keccakText } from "ethers";
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { buildApi } from "../../../api/app.js";
import { INDEX_SETTINGS, indexName, MAPPINGS } from "../../../es/mappings.js";
import { createPartitionRouter } from "../../../es/partitions.js";
import type { ChainId, Config } from "../../../lib/config/index.js";
import type { Partitioning } from "../../../lib/partitioning.js";
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
import { connectRedisClient } from "../../../lib/redis.js";
import { ensureIndices } from "../../../pipeline/index/indexer.js";
import { ABSENT_BLOCK_FIELDS, ABSENT_TRANSACTION_FIELDS } from "../../support/records.js";

/** Whether Elasticsearch answers `_cluster/health` at `url` within 3 s. */
export async function esReachable(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/_cluster/health`, { signal: AbortSignal.timeout(3000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** Whether Redis answers PING at `url` within 3 s. */
export async function redisReachable(url: string): Promise<boolean> {
  try {
    const { client, close } = await connectRedisClient(url, { connectTimeoutMs: 3000 });
    try {
      return (await client.ping()) === "PONG";
    } finally {
      await close();
    }
  } catch {
    return false;
  }
}

/**
 * Whether both Elasticsearch and Redis of `config` answer (see {@link esReachable},
 * {@link redisReachable}); when not, warns once with the reason the test file is skipped.
 */
export async function searchStackUp(config: Config): Promise<boolean> {
  const up = (await esReachable(config.elasticsearch.url)) && (await redisReachable(config.redisUrl));
  if (!up)
    console.warn(
      `skipped: Elasticsearch (${config.elasticsearch.url}) or Redis (${config.redisUrl}) is not reachable (npm run stack -- up)`,
    );
  return up;
}

/** The chain of the hand-written records: Ethereum mainnet. */
export const MAINNET: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };

/** What isolates one API test file: its index prefix, its Redis key prefix and its API settings (over `base.api`). */
export interface ApiTestIsolation {
  indexPrefix: string;
  redisKeyPrefix: string;
  api: Partial<Config["api"]>;
}

/** A unique API test setup: its id, index prefix (`<id>-`), static token and {@link mainnetApiConfig}. */
export interface IsolatedApi {
  id: string;
  indexPrefix: string;
  token: string;
  config: Config;
}

/**
 * A {@link mainnetApiConfig} under a fresh random id: index prefix `<id>-`, Redis key prefix
 * `<id>:`, one static token `test-<id>`, admin token `admin-<id>`, and a rate limit no test reaches.
 * @param label - the first letters of the id (e.g. `t`, `py`).
 */
export function isolatedApi(base: Config, label: string): IsolatedApi {
  const id = `${label}${randomBytes(4).toString("hex")}`;
  const token = `test-${id}`;
  const config = mainnetApiConfig(base, {
    indexPrefix: `${id}-`,
    redisKeyPrefix: `${id}:`,
    api: { tokens: [token], adminToken: `admin-${id}`, rateLimitMax: 100_000 },
  });
  return { id, indexPrefix: `${id}-`, token, config };
}

/** `base` serving {@link MAINNET} under the file's own index and Redis key prefixes, with its API settings. */
export function mainnetApiConfig(base: Config, own: ApiTestIsolation): Config {
  return {
    ...base,
    chain: MAINNET,
    elasticsearch: { ...base.elasticsearch, indexPrefix: own.indexPrefix },
    redisKeyPrefix: own.redisKeyPrefix,
    api: { ...base.api, ...own.api },
  };
}

// ---------------------------------------------------------------------------------------------
// Hand-written records (realistic mainnet-like values; addresses EIP-55, hashes lower-case).
// ---------------------------------------------------------------------------------------------

/** A quantity `{num, raw}` of a number. */
export const q = (n: number): Quantity => ({ num: n, raw: `0x${n.toString(16)}` });
/** A deterministic 32-byte hash (keccak256 of a label). */
export const hash = (label: string): string => keccakText(label);
const pad32 = (addr: string): string => `0x${addr.slice(2).toLowerCase().padStart(64, "0")}`;

/** Tether USD token contract (EIP-55). */
export const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
/** Wrapped Ether contract (EIP-55). */
export const WETH = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";
/** A well-known externally owned account (EIP-55). */
export const VITALIK = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
/** Uniswap V2 router (EIP-55). */
export const ROUTER = "0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D";
/** A block builder, the miner of every fixture block (EIP-55). */
export const BUILDER = "0x95222290DD7278Aa3Ddd389Cc1E1d165CC4BAfe5";
/** An exchange hot wallet, the receiver of every USDT transfer (EIP-55). */
export const BINANCE = "0x28C6c06298d514Db089934071355E5743bf21d60";
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const APPROVAL_TOPIC = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925";

/** Number of the first fixture block. */
export const FIRST_BLOCK = 17_034_870;
/** Transactions in each fixture block (3 blocks). */
export const TX_PER_BLOCK = [5, 4, 3];

/** The fixture blocks. */
export const blocks: BlockRecord[] = TX_PER_BLOCK.map((count, i) => ({
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
  ...ABSENT_BLOCK_FIELDS,
}));

const SENDERS = [VITALIK, BINANCE, VITALIK, BUILDER];
const RECEIVERS = [USDT, WETH, ROUTER, VITALIK];

/** The fixture transactions (every receiver in turn: USDT, WETH, ROUTER, VITALIK). */
export const txs: TransactionRecord[] = blocks.flatMap((b, bi) =>
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
      ...ABSENT_TRANSACTION_FIELDS,
    };
  }),
);

/** The fixture transaction hashes sent from one of `senders` (any letter case), sorted. */
export const sentBy = (...senders: string[]): string[] =>
  txs
    .filter((t) => senders.map((s) => s.toLowerCase()).includes(t.from.toLowerCase()))
    .map((t) => t.hash)
    .sort();

/**
 * The hashes of the records a backtest's NDJSON answer (`POST /alerting/rules/test/`,
 * `/alerting/searches/test/`) matched, sorted; fails the test unless it ended complete.
 * @param body - the answer's body.
 */
export function backtestedHashes(body: string): string[] {
  const lines = body
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { type: string; entity?: { hash: string }; complete?: boolean });
  expect(lines.at(-1)).toMatchObject({ type: "end", complete: true });
  return lines
    .filter((l) => l.type === "match")
    .map((l) => l.entity?.hash as string)
    .sort();
}

/** USDT transfers (one log and one event each) plus one Approval on the first USDT tx. */
const usdtTxs = txs.filter((t) => t.to === USDT);
/** The fixture logs: one USDT Transfer per USDT transaction, plus one WETH Approval. */
export const logs: LogRecord[] = [];
/** The decoded events of {@link logs}, same order. */
export const events: EventRecord[] = [];
/** A decoded `address` argument as the decoder writes it (lower-case hex, no number). */
const addressArg = (name: string, pos: number, address: string): EventRecord["args"][number] => ({
  name,
  pos,
  value: { hex: address.toLowerCase(), num: null, scaled: null, type: "address" },
});

/**
 * Adds a log of `tx` at `logIndex` and its decoded event to {@link logs} and {@link events}, with
 * the transaction's block, position and time, in the key order chainsift writes (lib/records.ts).
 */
function addLogAndEvent(
  tx: TransactionRecord,
  logIndex: number,
  log: Pick<LogRecord, "address" | "topics" | "data">,
  event: Pick<EventRecord, "event" | "signature" | "standard" | "args" | "str">,
): void {
  const at = { blockHash: tx.blockHash, blockNumber: tx.blockNumber, transactionHash: tx.hash, transactionIndex: tx.transactionIndex };
  logs.push({ ...log, ...at, logIndex: q(logIndex), removed: false, timestamp: tx.timestamp });
  events.push({
    event: event.event,
    signature: event.signature,
    standard: event.standard,
    source: "standard",
    args: event.args,
    logIndex: q(logIndex),
    transactionIndex: at.transactionIndex,
    transactionHash: at.transactionHash,
    address: log.address,
    blockHash: at.blockHash,
    blockNumber: at.blockNumber,
    error: null,
    str: event.str,
    timestamp: tx.timestamp,
  });
}
for (const t of usdtTxs) {
  const amount = 1_000_000_000; // 1000 USDT (6 decimals)
  addLogAndEvent(
    t,
    t.transactionIndex.num * 3,
    { address: USDT, topics: [TRANSFER_TOPIC, pad32(t.from), pad32(BINANCE)], data: `0x${amount.toString(16).padStart(64, "0")}` },
    {
      event: "Transfer",
      signature: "Transfer(address,address,uint256)",
      standard: "erc20",
      args: [
        addressArg("from", 0, t.from),
        addressArg("to", 1, BINANCE),
        { name: "value", pos: 2, value: { hex: `0x${amount.toString(16)}`, num: amount, scaled: 1000, type: "uint256" } },
      ],
      str: `Transfer(from=${t.from}, to=${BINANCE}, value=1000 USDT)`,
    },
  );
}
/** The transaction that also emits the WETH Approval. */
export const approvalTx = usdtTxs[0] as TransactionRecord;
addLogAndEvent(
  approvalTx,
  approvalTx.transactionIndex.num * 3 + 1,
  { address: WETH, topics: [APPROVAL_TOPIC, pad32(approvalTx.from), pad32(ROUTER)], data: `0x${"f".repeat(64)}` },
  {
    event: "Approval",
    signature: "Approval(address,address,uint256)",
    standard: "weth",
    args: [
      addressArg("src", 0, approvalTx.from),
      addressArg("guy", 1, ROUTER),
      { name: "wad", pos: 2, value: { hex: `0x${"f".repeat(64)}`, num: 2 ** 256 - 1, scaled: null, type: "uint256" } },
    ],
    str: `Approval(src=${approvalTx.from}, guy=${ROUTER}, wad=unlimited WETH)`,
  },
);

/** All fixture records by kind. */
export const RECORDS: RecordsByKind = { block: blocks, tx: txs, log: logs, event: events, call: [] };

/** Records by kind, as {@link RECORDS} holds them. */
export type RecordsByKind = { [K in RecordKind]: RecordByKind[K][] };

/**
 * Creates the record indices of `chain` under `prefix` and indexes `records` (default
 * {@link RECORDS}; refreshed): one concrete index per kind (the layout before partitioning), or with
 * `partitioning` the aliases over block-range partitions, each record routed to its backing index
 * as the index stage does (es/partitions.ts). Returns the index (alias) names.
 */
export async function indexFixtures(
  es: Client,
  chain: ChainId,
  prefix: string,
  partitioning?: Partitioning,
  records: RecordsByKind = RECORDS,
): Promise<string[]> {
  const indices = RECORD_KINDS.map((k) => indexName(chain, k, prefix));
  const router = partitioning ? createPartitionRouter(es, chain, prefix, partitioning) : undefined;
  const heightOf = (kind: RecordKind, r: Record<string, unknown>) => ((kind === "block" ? r.number : r.blockNumber) as { num: number }).num;
  if (partitioning && router) {
    await ensureIndices(es, chain, prefix, partitioning);
    await router.prepare(RECORD_KINDS.flatMap((kind) => records[kind].map((r) => ({ kind, height: heightOf(kind, r as never) }))));
  } else {
    for (const kind of RECORD_KINDS) {
      await es.indices.create({
        index: indexName(chain, kind, prefix),
        settings: INDEX_SETTINGS as unknown as estypes.IndicesIndexSettings,
        mappings: MAPPINGS[kind],
      });
    }
  }
  const operations: object[] = [];
  for (const kind of RECORD_KINDS) {
    for (const record of records[kind]) {
      const index = router ? router.indexOf(kind, heightOf(kind, record as never)) : indexName(chain, kind, prefix);
      operations.push({ index: { _index: index, _id: recordId(kind, record) } }, record);
    }
  }
  const bulk = await es.bulk({ operations, refresh: true });
  if (bulk.errors) throw new Error(`bulk indexing failed: ${JSON.stringify(bulk.items.find((i) => i.index?.error))}`);
  return indices;
}

/** Deletes every Redis key under `prefix` (SCAN + DEL; never a flush). Best effort. */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  let connected: Awaited<ReturnType<typeof connectRedisClient>> | undefined;
  try {
    connected = await connectRedisClient(url);
    let cursor = "0";
    do {
      const reply = await connected.client.scan(cursor, { MATCH: `${prefix}*`, COUNT: 500 });
      cursor = reply.cursor;
      if (reply.keys.length > 0) await connected.client.del(reply.keys);
    } while (cursor !== "0");
  } catch {
    // best effort
  } finally {
    await connected?.close();
  }
}

/** An API (api/app.ts) over the fixture records indexed under `config.elasticsearch.indexPrefix`. */
export interface FixtureApi {
  es: Client;
  app: FastifyInstance;
  /** Closes the app, deletes the fixture indices and closes the ES client. */
  close(): Promise<void>;
}

/**
 * Indexes {@link RECORDS} for `config.chain` under its index prefix (in block-range partitions with
 * `partitioning`, see {@link indexFixtures}) and builds the API over them (no logging).
 */
export async function startFixtureApi(config: Config, partitioning?: Partitioning): Promise<FixtureApi> {
  const es = new Client({ node: config.elasticsearch.url });
  const indices = await indexFixtures(es, config.chain, config.elasticsearch.indexPrefix, partitioning);
  const app = await buildApi({ config, es, logger: false });
  return {
    es,
    app,
    async close() {
      await app.close();
      // The indices, or the aliases' backing indices (<alias>-p<partition>).
      await es.indices.delete({ index: indices.map((i) => `${i}*`), ignore_unavailable: true, allow_no_indices: true });
      await es.close();
    },
  };
}
