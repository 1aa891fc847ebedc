/**
 * A scripted EVM chain for unit tests of the follower (pure logic): an in-memory {@link ChainSource}
 * whose blocks the test mines, reorganises and shortens, with optional faults of a load-balanced
 * provider (a lagging backend answering null, a stale backend answering another hash once), and a
 * producer that records what it was sent. Hashes are `keccak256("<branch>/<height>")`.
 * @module
 */
import { keccak256, toUtf8Bytes } from "ethers";
import type { createIngester } from "../../pipeline/ingest/ingest.js";
import type { BlockHeader, ChainSource, FetchedBlock } from "../../pipeline/ingest/rpc.js";
import type { OutgoingRecord, RecordProducer } from "../../pipeline/kafka/bus.js";
import { SEQ_HEADER } from "../../topics/index.js";

const ZERO = `0x${"0".repeat(64)}`;
const MINER = "0x0000000000000000000000000000000000000000";

/** The hash of the block of `branch` at height `n`. */
export const h = (branch: string, n: number) => keccak256(toUtf8Bytes(`${branch}/${n}`));

/** Options of {@link scriptedChain}. */
export interface ScriptedChainOptions {
  /** Give the source `blockHeader` (by number and by hash). Default false (reorgs confirmed by number only). */
  headers?: boolean;
  /** Give the source `finalizedNumber`, answering what this returns. Default: no such method (no finality). */
  finalized?: () => number | null;
}

/** What a stale or lagging backend answers for one height: null, or the block of another branch. */
export type StaleAnswer = { kind: "null" } | { kind: "branch"; branch: string };

/** A chain the test rewrites: heights → branch label (each block's hash depends on its branch and height). */
export function scriptedChain(options: ScriptedChainOptions = {}) {
  const branchAt: string[] = [];
  /** Queued faulty answers per height: each read of that height (any method) takes the next one. */
  const faults = new Map<number, StaleAnswer[]>();
  /** Every block the chain ever had, by hash (nodes keep side blocks by hash). */
  const byHash = new Map<string, { branch: string; number: number }>();
  const calls: string[] = [];
  const canonicalHash = (n: number) => {
    const b = branchAt[n];
    return b === undefined ? null : h(b, n);
  };
  /** The branch a read of height `n` answers from (a queued fault first), or null for none. */
  const read = (n: number): string | null => {
    const fault = faults.get(n)?.shift();
    if (fault) return fault.kind === "null" ? null : fault.branch;
    return branchAt[n] ?? null;
  };
  const parentOf = (branch: string, n: number) => {
    if (n === 0) return ZERO;
    const known = byHash.get(h(branch, n - 1));
    return known ? h(branch, n - 1) : (canonicalHash(n - 1) ?? ZERO);
  };
  const raw = (branch: string, n: number) => ({
    hash: h(branch, n),
    parentHash: parentOf(branch, n),
    number: `0x${n.toString(16)}`,
    timestamp: `0x${(1_700_000_000 + n).toString(16)}`,
    miner: MINER,
    gasUsed: "0x0",
    gasLimit: "0x1c9c380",
    difficulty: "0x0",
    extraData: "0x",
    stateRoot: ZERO,
    transactionsRoot: ZERO,
    receiptsRoot: ZERO,
    transactions: [],
    uncles: [],
  });
  const headerOf = (branch: string, n: number): BlockHeader => ({ number: n, hash: h(branch, n), parentHash: parentOf(branch, n) });
  const source: ChainSource = {
    chainId: async () => 31337,
    headNumber: async () => branchAt.length - 1,
    blockHash: async (n) => {
      calls.push(`blockHash:${n}`);
      const b = read(n);
      return b === null ? null : h(b, n);
    },
    fetchBlock: async (n): Promise<FetchedBlock | null> => {
      calls.push(`fetchBlock:${n}`);
      const b = read(n);
      return b === null ? null : { block: raw(b, n), receipts: [] };
    },
    fetchTraces: async () => null,
    destroy: () => {},
  };
  const finalized = options.finalized;
  if (finalized) source.finalizedNumber = async () => finalized();
  if (options.headers) {
    source.blockHeader = async (id) => {
      calls.push(`blockHeader:${id}`);
      if (typeof id === "number") {
        const b = read(id);
        return b === null ? null : headerOf(b, id);
      }
      const known = byHash.get(id);
      return known ? headerOf(known.branch, known.number) : null;
    };
  }
  const remember = (n: number) => {
    const b = branchAt[n];
    if (b !== undefined) byHash.set(h(b, n), { branch: b, number: n });
  };
  return {
    source,
    /** The canonical hash at a height (null: none). */
    hashAt: canonicalHash,
    /** Every call the source answered, as `method:height` (or `blockHeader:<hash>`). */
    calls,
    mine: (count: number, branch = "a") => {
      for (let i = 0; i < count; i++) {
        branchAt.push(branch);
        remember(branchAt.length - 1);
      }
    },
    /** Drops the top `count` blocks (the head goes down). */
    shorten: (count: number) => {
      branchAt.length -= count;
    },
    /** Replaces the top `depth` blocks with blocks of another branch (same height). */
    reorg: (depth: number, branch: string) => {
      for (let n = branchAt.length - depth; n < branchAt.length; n++) {
        branchAt[n] = branch;
        remember(n);
      }
    },
    /** The next reads of height `n` (by any method) answer these instead of the canonical block. */
    fault: (n: number, ...answers: StaleAnswer[]) => {
      faults.set(n, [...(faults.get(n) ?? []), ...answers]);
    },
  };
}

/** A producer that records every message it was sent, in order. */
export function recordingProducer() {
  const sent: OutgoingRecord[] = [];
  const producer: RecordProducer = {
    send: async (records) => {
      sent.push(...records);
    },
    disconnect: async () => {},
    producer: undefined as never,
  };
  return { producer, sent };
}

/** The `chainsift-seq` header of a message. */
export const seqOf = (m: OutgoingRecord) => Number(m.headers?.[SEQ_HEADER]);

/** The heights of the block messages among `sent`, in order. */
export const blockNumbers = (sent: readonly OutgoingRecord[]) =>
  sent.filter((m) => m.kind === "blocks").map((m) => (m.record as { number: { num: number } }).number.num);

/** Runs the follower until `until()` holds (polling every 5 ms, at most 5 s), then stops it. */
export async function followUntil(ingester: ReturnType<typeof createIngester>, until: () => boolean, from?: number) {
  const controller = new AbortController();
  const run = ingester.follow({ from, pollIntervalMs: 5, signal: controller.signal, finalizedEveryPolls: 0 });
  const deadline = Date.now() + 5000;
  while (!until() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  return run;
}
