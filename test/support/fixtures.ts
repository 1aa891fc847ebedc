/**
 * Loads the real Ethereum mainnet JSON-RPC fixtures from `../shared/data/mainnet/` (see its
 * README) into blocks with their receipts, whatever the source repository's file layout
 * (bare results, `{result}` envelopes, JSON-RPC batches, or erigon `{request, response}` cases).
 *
 * Only used by tests and benchmarks; the data is never copied into this repository.
 * @module
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

/** Raw JSON-RPC objects as the node returned them (hex quantities). */
export type RpcObject = Record<string, unknown>;

/** One fixture block and its receipts. */
export interface FixtureBlock {
  number: number;
  hash: string;
  /** `eth_getBlockByNumber(n, true)` result, with full transaction objects. */
  block: RpcObject;
  /** Receipts in transaction order when every transaction has one; else null. */
  receipts: RpcObject[] | null;
  /** geth callTracer frames, one per transaction in order, where the source has them (coinbase-chainstorage); else null. */
  traces?: RpcObject[] | null;
}

/** Where `../shared/data/mainnet` is, relative to the repository root. */
export const MAINNET_DIR = resolve(import.meta.dirname, "../../../shared/data/mainnet");

/** Whether the mainnet fixtures are present (tests skip with a message when not). */
export function hasMainnetFixtures(dir = MAINNET_DIR): boolean {
  return existsSync(join(dir, "README.md"));
}

/** Message used by tests that skip because the fixtures are absent. */
export const SKIP_NO_FIXTURES = `skipped: ../shared/data/mainnet is absent (looked in ${MAINNET_DIR})`;

const TRACE_FILE = "debug_traceBlock_callTracer_per_tx.results.json";

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (name.endsWith(".json") && name !== "chainstorage_metadata.json" && name !== TRACE_FILE) out.push(p);
  }
  return out;
}

function isBlock(o: RpcObject): boolean {
  return typeof o.hash === "string" && typeof o.number === "string" && Array.isArray(o.transactions);
}

function isReceipt(o: RpcObject): boolean {
  return typeof o.transactionHash === "string" && Array.isArray(o.logs) && "cumulativeGasUsed" in o;
}

/** Collects every block and receipt object found anywhere in a parsed fixture file. */
function collect(value: unknown, blocks: RpcObject[], receipts: RpcObject[]): void {
  if (Array.isArray(value)) {
    for (const v of value) collect(v, blocks, receipts);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const o = value as RpcObject;
  if (isBlock(o)) blocks.push(o);
  else if (isReceipt(o)) receipts.push(o);
  else {
    if ("result" in o) collect(o.result, blocks, receipts);
    if ("response" in o) collect(o.response, blocks, receipts);
  }
}

let cache: FixtureBlock[] | undefined;

/**
 * Every fixture block with full transaction objects, sorted by number, deduplicated by hash.
 * @throws when the fixture directory is missing (check {@link hasMainnetFixtures} first).
 */
export function loadMainnetBlocks(dir = MAINNET_DIR): FixtureBlock[] {
  if (cache && dir === MAINNET_DIR) return cache;
  const blocks: RpcObject[] = [];
  const receipts: RpcObject[] = [];
  const tracesByBlock = new Map<RpcObject, RpcObject[]>();
  for (const f of files(dir)) {
    const before = blocks.length;
    collect(JSON.parse(readFileSync(f, "utf8")), blocks, receipts);
    // coinbase-chainstorage keeps the block's per-transaction call traces beside it.
    const traceFile = join(f, "..", TRACE_FILE);
    if (blocks.length === before + 1 && existsSync(traceFile)) {
      tracesByBlock.set(blocks[before] as RpcObject, JSON.parse(readFileSync(traceFile, "utf8")) as RpcObject[]);
    }
  }
  const receiptByTx = new Map<string, RpcObject>();
  for (const r of receipts) receiptByTx.set(String(r.transactionHash).toLowerCase(), r);
  const byHash = new Map<string, FixtureBlock>();
  for (const b of blocks) {
    const txs = b.transactions as unknown[];
    if (txs.some((t) => typeof t !== "object")) continue; // hashes only: no bodies
    const hash = String(b.hash).toLowerCase();
    if (byHash.has(hash)) continue;
    const rs = (txs as RpcObject[]).map((t) => receiptByTx.get(String(t.hash).toLowerCase()));
    const complete = rs.every((r) => r !== undefined);
    const traces = tracesByBlock.get(b);
    byHash.set(hash, {
      number: Number(b.number),
      hash,
      block: b,
      receipts: complete ? (rs as RpcObject[]) : null,
      traces: traces && traces.length === txs.length ? traces : null,
    });
  }
  const out = [...byHash.values()].sort((a, b) => a.number - b.number);
  if (dir === MAINNET_DIR) cache = out;
  return out;
}

/** Fixture blocks whose receipts are complete (the e2e set). */
export function loadCompleteBlocks(dir = MAINNET_DIR): FixtureBlock[] {
  return loadMainnetBlocks(dir).filter((b) => b.receipts !== null);
}
