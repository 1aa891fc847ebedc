/**
 * The types of the ingest stage (pipeline/ingest/ingest.ts): its dependencies, options, progress
 * reports and counts, plus two small helpers shared by its files.
 * @module
 */
import type { Registry } from "prom-client";
import type { ChainState } from "../../lib/chain/state.js";
import type { CrashPoint } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import type { RecordProducer } from "../kafka/bus.js";
import type { ChainSource } from "./rpc.js";
import type { BlockBundle } from "./transform.js";

/** Where a reorg forks off the blocks the follower produced (see {@link findForkPoint}). */
export interface ForkPoint {
  /** Height of the common ancestor: the highest height whose produced hash the node still has. */
  ancestor: number;
  /** The orphaned heights (ancestor+1 … the height the search started at) with the node's hash there now (null: none). */
  orphaned: Array<{ number: number; hash: string; replacedBy: string | null }>;
  /** True when the walk ran out of the window before finding a shared block: the real fork point is lower. */
  beyondWindow: boolean;
}

/** Counts of what was ingested. */
export interface IngestStats {
  blocks: number;
  transactions: number;
  logs: number;
  /** Blocks the node did not have (null answer). */
  missing: number;
  /** Blocks whose data was malformed and went to the dead-letter topic. */
  deadLettered: number;
  /** Chain reorganisations detected while following the head (each re-ingests the new branch). */
  reorgs: number;
  /** Blocks announced as orphaned on the `reorgs` topic. */
  orphaned: number;
  /** Reorgs deeper than the window of produced hashes (logged as errors; the window is re-ingested). */
  deepReorgs: number;
  /** Blocks a backfill skipped because an earlier run of the same range produced them already. */
  resumedPast: number;
  /**
   * Blocks of a backfill's range above the node's finalized block (or above head minus
   * `backfillSafetyDepth` when the node has no `finalized` tag): not produced by the backfill, left
   * to the follower, which produces them with reorg protection (docs/reorgs.md).
   */
  deferred: number;
  /** Blocks produced without call traces because the node failed to trace them. */
  tracesMissing: number;
}

/** Dependencies of {@link createIngester} (its Parameters). */
export interface IngesterDeps {
  /**
   * Where blocks, receipts, hashes and the head come from, e.g. `createRpcSource({ rpcUrl })`
   * (pipeline/ingest/rpc.ts). Not closed by the ingester (the caller calls its `destroy()`).
   */
  source: ChainSource;
  /**
   * Producer of the chain's bus (`createRecordProducer(bus)`): blocks, transactions, logs, traces,
   * reorgs and dead letters go through it. Not disconnected by the ingester.
   */
  producer: RecordProducer;
  /** Receives retries (warn), dead-lettered blocks and deep reorgs (error), resumes (info); tagged `stage: "ingest"`. */
  logger: Logger;
  /** Blocks fetched concurrently in a backfill. Default 4. */
  concurrency?: number;
  /**
   * Also fetch call traces (`debug_traceBlockByNumber` with the callTracer) for the Trace, Call and
   * Contract-from-trace alerting targets. Nodes without a debug API are detected and skipped.
   * A block whose trace the node answers with an error 3 times is produced without traces (counted in `tracesMissing`); transport failures (timeout, 429, 5xx, connection) are asked again until answered.
   * Default false.
   */
  traces?: boolean;
  /** First retry delay after a transient failure; doubles up to 30 s. Default 500 ms. */
  retryInitialMs?: number;
  /** Give up a block after this many transient failures (the error is thrown). Default: never give up (Infinity). */
  maxAttempts?: number;
  /**
   * Longest retry delay, in ms, after a node fault (a failed JSON-RPC call, a block the node does
   * not have yet, a reorg it did not confirm): short, so the follower keeps up with a 1 s chain
   * after a fault. Kafka and Redis failures keep the long backoff (up to 30 s). Default 2000 ms.
   */
  nodeRetryMaxMs?: number;
  /**
   * A backfill produces only blocks at or below the node's `finalized` block; on a node without the
   * tag, at or below its head minus this many blocks. The rest of its range is left to the follower
   * (docs/reorgs.md, "Backfills"). Default 128 (blocks; the default reorg window).
   */
  backfillSafetyDepth?: number;
  /**
   * TEST ONLY: called at each crash point ({@link CrashPoint} of lib/config/index.ts); the runtime passes
   * pipeline/ingest/crash.ts's hook when `CHAINSIFT_TEST_CRASH_POINT` is set, which SIGKILLs the
   * process there. Default none.
   */
  crashHook?: (point: CrashPoint) => void;
  /**
   * Durable position, canonical map and sequence numbers (lib/chain/state.ts). Default: in
   * memory (nothing survives the process; tests and one-off tools only).
   */
  state?: ChainState;
  /**
   * Registry of the `chainsift_ingest_*` metrics (pipeline/ingest/metrics.ts: head and position,
   * reorgs, retries), e.g. the process's. Default: a private registry (not exported).
   */
  registry?: Registry;
}

/** Options of a follow-the-head run. */
export interface FollowOptions {
  /**
   * First block to ingest. Default: the block after the durable tip (a restart resumes where the
   * last run stopped, after checking it for a reorg); the node's current head when there is none.
   */
  from?: number;
  /** Head polling interval. Default 1000 ms. */
  pollIntervalMs?: number;
  /** Stops the loop. */
  signal?: AbortSignal;
  /** Called after every block (tests and the CLI use it for progress). */
  onBlock?: (bundle: BlockBundle) => void;
  /**
   * How many recent produced blocks are remembered to detect and unwind reorgs. Blocks above the
   * node's `finalized` block are always kept as well, however many. Default 128.
   */
  reorgWindow?: number;
  /** Ask the node for its `finalized` block every this many polls (0: never). Default 30. */
  finalizedEveryPolls?: number;
  /**
   * Most heights fetched at once while the follower is more than one block behind the head (the
   * catch-up window, pipeline/ingest/window.ts; blocks are still produced one by one in order).
   * The window starts at 4 and adapts to the endpoint's answers up to this. 1: one at a time.
   * Default 16 (config `ingest.followWindow`, `CHAINSIFT_FOLLOW_WINDOW`).
   */
  maxWindow?: number;
  /**
   * The node's WebSocket endpoint (ws/wss) for head discovery by `eth_subscribe("newHeads")`
   * (lib/rpc/heads.ts): a new head wakes the follower at once instead of at its next poll; the poll
   * (`eth_blockNumber` every `pollIntervalMs`) stays, as the fallback and the check that the
   * subscription is alive. Default: none, polling only (config `ingest.rpc.wsUrl`, `CHAINSIFT_RPC_WS_URL`).
   */
  wsUrl?: string;
}

/** How far a backfill is, as reported to {@link BackfillOptions.onProgress}. */
export interface BackfillProgress {
  /** First block of the range. */
  from: number;
  /**
   * Last block the backfill produces (inclusive): the requested end, or the node's finalized block
   * when that is lower (the rest is left to the follower; {@link IngestStats.deferred}).
   */
  to: number;
  /** Blocks in the range: `to - from + 1` (0 when nothing of it is final yet). */
  total: number;
  /**
   * Blocks of the range done: produced, missing on the node or dead-lettered by this run, plus
   * those an earlier run of the range produced (a resumed backfill starts above 0).
   */
  done: number;
  /** Records (Kafka messages: blocks, transactions, logs, traces) this run produced so far. */
  records: number;
}

/** Options of a backfill. */
export interface BackfillOptions {
  signal?: AbortSignal;
  /**
   * Progress reports, for a display (the ingester itself prints nothing): once before the first
   * block is fetched, then after every produced chunk of `concurrency` blocks; the last report has
   * `done === total` unless the signal aborted the run. Must not throw.
   */
  onProgress?: (progress: BackfillProgress) => void;
  /**
   * Resume after the last block an earlier run of the same `from..to` produced (its progress is in
   * the {@link ChainState}). Default true; false re-reads the whole range.
   */
  resume?: boolean;
}

/** The ingest stage. */
export interface Ingester {
  /** Fetches and produces one block; returns null when the node does not have it. */
  ingestBlock(number: number): Promise<BlockBundle | null>;
  /** Ingests the given block numbers (a backfill), `concurrency` fetches at a time, produced in order. */
  ingestBlocks(numbers: number[], signal?: AbortSignal): Promise<IngestStats>;
  /**
   * Ingests `from..to` inclusive, resuming after what an earlier run of the same range produced.
   * Only blocks at or below the node's `finalized` block (or its head minus `backfillSafetyDepth`
   * on a node without the tag) are produced: the rest of the range is left to the follower and
   * counted in `deferred` (docs/reorgs.md, "Backfills"); running the same range again later
   * resumes and produces what became final meanwhile.
   * @throws {RangeError} for an invalid range.
   */
  backfill(from: number, to: number, opts?: AbortSignal | BackfillOptions): Promise<IngestStats>;
  /**
   * Follows the head until the signal aborts; on a reorg it announces the orphaned blocks, walks
   * back to the common ancestor and re-ingests the new branch.
   */
  follow(opts?: FollowOptions): Promise<IngestStats>;
}

/** Zero counts, the start of every run. */
export const emptyStats = (): IngestStats => ({
  blocks: 0,
  transactions: 0,
  logs: 0,
  missing: 0,
  deadLettered: 0,
  reorgs: 0,
  orphaned: 0,
  deepReorgs: 0,
  resumedPast: 0,
  deferred: 0,
  tracesMissing: 0,
});

/** Resolves after `ms`, or at once when `signal` aborts; the abort listener is removed either way. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
