/**
 * The ingest stage: reads blocks and receipts from a {@link ChainSource} and writes block,
 * transaction and log records to Kafka, one idempotent batch per block (keys: block hash,
 * transaction hash, `<txhash>_l_<logIndex>`), so a replayed range overwrites instead of duplicating.
 *
 * Canonical chain (docs/reorgs.md): every message carries the ingest sequence number
 * (`chainsift-seq` header, topics/index.ts) of its block bundle. When the follower finds that the
 * node no longer has a block it produced, it walks back to the common ancestor
 * ({@link findForkPoint}), records the new canonical hashes in its durable state, publishes one
 * `reorgs` record per orphaned block and only then produces the new branch. Its position (tip and
 * the window of produced hashes) lives in a {@link ChainState} (Redis in every process), so a
 * restart resumes after the last produced block and still finds a reorg that happened while it was
 * down. Backfills record their progress there too and resume when run again.
 * @module
 */
import { Registry } from "prom-client";
import { MalformedRpcDataError } from "../../lib/chain/rpc-values.js";
import { type BlockRef, type ChainState, createMemoryChainState } from "../../lib/chain/state.js";
import type { CrashPoint } from "../../lib/config.js";
import { isRetryable } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { logId, type ReorgRecord } from "../../lib/records.js";
import { type OutgoingRecord, type RecordProducer, seqHeaders } from "../kafka/bus.js";
import { ingestMetricsOf } from "./metrics.js";
import type { ChainSource, FetchedBlock } from "./rpc.js";
import { type BlockBundle, type RawRpcObject, toBlockBundle, tracesMismatch } from "./transform.js";

/** Fetches of a block with its call traces before traces that never match it are given up (the block is then produced without them). */
export const TRACE_MATCH_ATTEMPTS = 3;

/**
 * The records of one block as Kafka messages (pure); with `seq`, every message carries it in the
 * `chainsift-seq` header.
 */
export function bundleToMessages(bundle: BlockBundle, seq?: number): OutgoingRecord[] {
  const headers = seqHeaders(seq);
  const msg = (m: OutgoingRecord): OutgoingRecord => (headers ? { ...m, headers } : m);
  return [
    msg({ kind: "blocks", key: bundle.block.hash, record: bundle.block }),
    ...bundle.transactions.map((t) => msg({ kind: "transactions", key: t.hash, record: t })),
    ...bundle.logs.map((l) => msg({ kind: "logs", key: logId(l), record: l })),
    ...bundle.traces.map((t) => msg({ kind: "traces", key: `${t.transactionHash}_t`, record: t })),
  ];
}

/** Where a reorg forks off the blocks the follower produced (see {@link findForkPoint}). */
export interface ForkPoint {
  /** Height of the common ancestor: the highest height whose produced hash the node still has. */
  ancestor: number;
  /** The orphaned heights (ancestor+1 … the height the search started at) with the node's hash there now (null: none). */
  orphaned: Array<{ number: number; hash: string; replacedBy: string | null }>;
  /** True when the walk ran out of the window before finding a shared block: the real fork point is lower. */
  beyondWindow: boolean;
}

/**
 * Walks back from height `from` while the node's block differs from the produced one and returns
 * the common ancestor and the orphaned blocks (pure apart from the `nodeHash` calls). Heights are
 * asked one at a time, newest first, so a reorg of depth d costs d + 1 calls.
 * @param produced height → hash of the blocks produced (the window).
 * @param nodeHash the node's canonical hash at a height, or null when it has no block there.
 */
export async function findForkPoint(
  produced: ReadonlyMap<number, string>,
  from: number,
  nodeHash: (n: number) => Promise<string | null>,
): Promise<ForkPoint> {
  const orphaned: ForkPoint["orphaned"] = [];
  let k = from;
  for (;;) {
    const mine = produced.get(k);
    if (mine === undefined) break;
    const theirs = await nodeHash(k);
    if (theirs === mine) break;
    orphaned.push({ number: k, hash: mine, replacedBy: theirs });
    k--;
  }
  orphaned.reverse();
  return { ancestor: k, orphaned, beyondWindow: !produced.has(k) && orphaned.length > 0 };
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
   * A block whose trace fails 3 times is produced without traces (counted in `tracesMissing`).
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
   * TEST ONLY: called at each crash point ({@link CrashPoint} of lib/config.ts); the runtime passes
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

/** Resolves after `ms`, or at once when `signal` aborts; the abort listener is removed either way. */
const sleep = (ms: number, signal?: AbortSignal) =>
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

/**
 * Creates the ingest stage (nothing runs until a method is called; nothing is connected here).
 *
 * Transient failures (a `RetryableError` of lib/errors.ts from the source, a Redis or Kafka
 * error: anything but a `NonRetryableError`) are retried with backoff, `retryInitialMs` (default
 * 500 ms) doubling up to 30 s, at most `maxAttempts` times per step (default: forever), each retry
 * counted in `chainsift_ingest_retries_total{target}`. Malformed node data
 * (`MalformedRpcDataError` of lib/chain/rpc-values.ts, raised while shaping a block) is not an
 * error of the run: the block goes whole to the dead-letter topic (`CS_MALFORMED_RPC_DATA`) and is
 * counted in `deadLettered`.
 * @param deps - the chain source, the producer, the logger and the optional settings
 *   ({@link IngesterDeps}: `concurrency` 4, `traces` false, `retryInitialMs` 500 ms, `maxAttempts`
 *   Infinity, `state` in memory, `registry` private).
 * @returns an {@link Ingester}: `ingestBlock(n)` produces one block (its bundle, or null when the
 *   node does not have it); `ingestBlocks(numbers, signal?)` and `backfill(from, to, opts?)`
 *   produce ranges in order, `concurrency` fetches at a time, the backfill resuming after what an
 *   earlier run of the same range produced and reporting to `opts.onProgress`; `follow(opts?)` follows the head until `opts.signal`
 *   aborts, unwinding reorgs. Every run resolves to its {@link IngestStats}.
 * @throws nothing itself. Its methods reject: `backfill` with a `RangeError` for a range that is
 *   not `0 <= from <= to` (integers); any method with a `NonRetryableError` at once (e.g.
 *   `CS_AVRO_ENCODE` when a record does not fit its topic's schema), and with the last
 *   `RetryableError` (or other transient error) once a step failed `maxAttempts` times, or as soon
 *   as the run's signal aborts while a step is being retried (except `follow`'s head poll, which
 *   then ends the loop and resolves).
 */
export function createIngester(deps: IngesterDeps): Ingester {
  const { source, producer } = deps;
  const log = deps.logger.child({ stage: "ingest" });
  const concurrency = deps.concurrency ?? 4;
  const maxAttempts = deps.maxAttempts ?? Number.POSITIVE_INFINITY;
  const nodeRetryMaxMs = deps.nodeRetryMaxMs ?? 2000;
  const state = deps.state ?? createMemoryChainState();
  const metrics = ingestMetricsOf(deps.registry ?? new Registry());
  const seen = metrics.position;

  /**
   * Runs `fn`, retrying transient failures with a doubling delay (up to 30 s), each retry counted
   * in `chainsift_ingest_retries_total{target}` (`target`: what `fn` talks to).
   */
  async function withRetry<T>(
    what: string,
    fn: () => Promise<T>,
    signal?: AbortSignal,
    target: "rpc" | "kafka" | "redis" = "redis",
  ): Promise<T> {
    let delay = deps.retryInitialMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isRetryable(err) || err instanceof MalformedRpcDataError || attempt >= maxAttempts || signal?.aborted) throw err;
        metrics.retries.inc({ target });
        log.warn({ err, attempt, retryInMs: delay }, `${what} failed; retrying`);
        await sleep(delay, signal);
        delay = Math.min(delay * 2, target === "rpc" ? nodeRetryMaxMs : 30_000);
      }
    }
  }

  type Fetched = { number: number; bundle: BlockBundle | null; raw?: RawRpcObject; error?: MalformedRpcDataError; tracesMissing?: boolean };

  async function fetchTraces(number: number): Promise<{ frames: RawRpcObject[] | null; failed: boolean }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return { frames: await source.fetchTraces(number), failed: false };
      } catch (err) {
        if (attempt >= 3) {
          log.warn({ block: number, reason: (err as Error).message.slice(0, 200) }, "call traces unavailable; block produced without them");
          return { frames: null, failed: true };
        }
        await sleep(200 * attempt);
      }
    }
  }

  /**
   * The block and, with `traces`, its call traces. Both are fetched at once by separate calls, which
   * a load balancer may answer from backends on different branches: traces that do not belong to
   * the block's transactions ({@link tracesMismatch}) are fetched again with the block, up to
   * {@link TRACE_MATCH_ATTEMPTS} times, then the block is produced without them (`tracesMissing`);
   * they are never attached to the wrong transactions nor dead-lettered as malformed.
   */
  async function fetchOne(number: number, signal?: AbortSignal): Promise<Fetched> {
    for (let attempt = 1; ; attempt++) {
      const tracesP = deps.traces ? fetchTraces(number) : undefined;
      const fetched = await withRetry(`fetch block ${number}`, () => source.fetchBlock(number), signal, "rpc");
      let traces = await tracesP;
      if (!fetched) return { number, bundle: null };
      const mismatch = traces?.frames ? tracesMismatch(traces.frames, fetched.block.transactions) : null;
      if (mismatch !== null) {
        metrics.tracesMismatched.inc();
        if (attempt < TRACE_MATCH_ATTEMPTS && !signal?.aborted) {
          log.warn({ block: number, attempt, reason: mismatch }, "call traces of another branch than the block; fetching both again");
          await sleep(200 * attempt, signal);
          continue;
        }
        log.warn({ block: number, reason: mismatch }, "call traces never matched the block; block produced without them");
        traces = { frames: null, failed: true };
      }
      return shapeFetched(number, fetched, traces);
    }
  }

  function shapeFetched(
    number: number,
    fetched: FetchedBlock,
    traces: { frames: RawRpcObject[] | null; failed: boolean } | undefined,
  ): Fetched {
    try {
      const bundle = toBlockBundle(fetched.block, fetched.receipts, traces?.frames);
      return { number, bundle, tracesMissing: traces?.failed === true };
    } catch (err) {
      if (err instanceof MalformedRpcDataError)
        return { number, bundle: null, raw: { block: fetched.block, receipts: fetched.receipts }, error: err };
      throw err;
    }
  }

  async function deadLetterBlock(f: Fetched, stats: IngestStats, signal?: AbortSignal): Promise<void> {
    // Malformed node data: keep it whole in the dead-letter topic, never drop it silently.
    log.error({ block: f.number, path: f.error?.path }, `malformed block data dead-lettered: ${f.error?.message}`);
    await withRetry(
      "dead-letter",
      () =>
        producer.send([
          {
            kind: "dead-letter",
            key: `block:${f.number}`,
            record: {
              sourceTopic: "rpc:eth_getBlockByNumber",
              partition: -1,
              offset: String(f.number),
              key: null,
              value: Buffer.from(JSON.stringify(f.raw)),
              stage: "ingest",
              errorCode: "CS_MALFORMED_RPC_DATA",
              errorMessage: f.error?.message ?? "",
              failedAt: new Date().toISOString(),
            },
          },
        ]),
      signal,
      "kafka",
    );
    stats.deadLettered++;
  }

  /**
   * Produces the records of several fetched blocks, in block order, in as few requests as fit,
   * each block's messages with its own sequence number. With `expect`, the blocks are first
   * recorded as canonical in the state (the follower does; backfills do not).
   * @returns the number of records (messages) produced, dead letters not counted.
   */
  async function produceChunk(fetched: Fetched[], stats: IngestStats, signal?: AbortSignal, expect = false): Promise<number> {
    const messages: OutgoingRecord[] = [];
    const produced: BlockBundle[] = [];
    for (const f of fetched) {
      if (f.tracesMissing) stats.tracesMissing++;
      if (f.error) await deadLetterBlock(f, stats, signal);
      else if (!f.bundle) stats.missing++;
      else produced.push(f.bundle);
    }
    if (produced.length > 0) {
      const refs = produced.map((b) => ({ number: b.block.number.num, hash: b.block.hash }));
      // canon first: the index stage treats a record as orphaned only once canon says so (lib/chain/state.ts).
      if (expect) await withRetry("record canonical hashes", () => state.expect(refs), signal);
      const first = await withRetry("reserve sequence numbers", () => state.reserveSeq(produced.length), signal);
      for (const [i, b] of produced.entries()) messages.push(...bundleToMessages(b, first + i));
      await withRetry(`produce ${produced.length} blocks`, () => producer.send(messages), signal, "kafka");
    }
    for (const bundle of produced) {
      if (seen.last === null || bundle.block.number.num >= seen.last) {
        seen.last = bundle.block.number.num;
        seen.lastTimestampMs = Date.parse(`${bundle.block.timestamp}Z`);
      }
      seen.activeAtMs = Date.now();
      stats.blocks++;
      stats.transactions += bundle.transactions.length;
      stats.logs += bundle.logs.length;
    }
    return messages.length;
  }

  const emptyStats = (): IngestStats => ({
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

  /**
   * Announces a reorg: canon first (state.announce), then one `reorgs` record per orphaned block,
   * all with one new sequence number, larger than every record of the orphaned blocks.
   */
  async function announceReorg(fork: ForkPoint, ancestorHash: string | null, signal?: AbortSignal): Promise<void> {
    const detectedAt = new Date().toISOString();
    await withRetry("record the reorg", () => state.announce(fork.orphaned), signal);
    const seq = await withRetry("reserve a sequence number", () => state.reserveSeq(1), signal);
    const headers = seqHeaders(seq);
    const records = fork.orphaned.map(
      (o): OutgoingRecord => ({
        kind: "reorgs",
        key: o.hash,
        headers,
        record: {
          number: o.number,
          orphanedHash: o.hash,
          replacedBy: o.replacedBy,
          ancestorNumber: fork.ancestor,
          ancestorHash,
          depth: fork.orphaned.length,
          detectedAt,
        } satisfies ReorgRecord,
      }),
    );
    await withRetry(`announce ${records.length} orphaned blocks`, () => producer.send(records), signal, "kafka");
  }

  /**
   * The highest height a backfill produces: the node's `finalized` block, or its head minus
   * `backfillSafetyDepth` (default 128) when it has no such tag.
   */
  async function safeHeight(): Promise<number> {
    const finalized = (await source.finalizedNumber?.()) ?? null;
    if (finalized !== null) return finalized;
    return (await source.headNumber()) - (deps.backfillSafetyDepth ?? 128);
  }

  const ingester: Ingester = {
    async ingestBlock(number) {
      const stats = emptyStats();
      const f = await fetchOne(number);
      await produceChunk([f], stats);
      return f.bundle;
    },
    async ingestBlocks(numbers, signal) {
      return ingestNumbers(numbers, signal);
    },
    async backfill(from, to, opts) {
      if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from) {
        throw new RangeError(`invalid backfill range ${from}..${to}`);
      }
      const o: BackfillOptions = opts instanceof AbortSignal ? { signal: opts } : (opts ?? {});
      let start = from;
      if (o.resume !== false) {
        const done = await withRetry("read backfill progress", () => state.backfillProgress(from, to), o.signal);
        if (done !== null && done >= from) {
          start = Math.min(done + 1, to + 1);
          log.info({ from, to, resumeAt: start }, start > to ? "backfill already complete" : "resuming an interrupted backfill");
        }
      }
      // Only final blocks: a backfill keeps no reorg window, so blocks that may still be reorganised are the follower's.
      const safe = await withRetry("the node's finalized block", () => safeHeight(), o.signal, "rpc");
      const end = Math.min(to, safe);
      const deferred = to - Math.max(end, start - 1);
      if (deferred > 0) {
        log.warn(
          { from, to, safe, deferredFrom: Math.max(end + 1, start), deferred },
          "backfill range reaches above the node's finalized block: those blocks are left to the follower (docs/reorgs.md)",
        );
      }
      const numbers = Array.from({ length: Math.max(0, end - start + 1) }, (_, i) => start + i);
      const onProgress = o.onProgress;
      const total = Math.max(0, end - from + 1);
      const report =
        onProgress &&
        ((done: number, records: number) => onProgress({ from, to: end, total, done: Math.min(total, start - from) + done, records }));
      const stats = await ingestNumbers(numbers, o.signal, (last) => state.setBackfillProgress(from, to, last), report);
      stats.resumedPast = start - from;
      stats.deferred = deferred;
      return stats;
    },
    async follow(opts = {}) {
      const stats = emptyStats();
      const signal = opts.signal;
      const window = opts.reorgWindow ?? 128;
      const finalizedEvery = opts.finalizedEveryPolls ?? 30;
      const pollMs = opts.pollIntervalMs ?? 1000;
      const position = await withRetry("load the follower position", () => state.loadFollower(), signal);
      /** Hashes of the blocks produced recently, by number: the branch downstream stages know. */
      const produced = position.produced;
      let finalized: number | null = null;
      let polls = 0;
      const nodeHash = (n: number) => withRetry(`hash of block ${n}`, () => source.blockHash(n), signal, "rpc");
      const header = (id: number | string) =>
        withRetry(`header of block ${id}`, async () => (source.blockHeader ? source.blockHeader(id) : null), signal, "rpc");

      /**
       * Whether the node may no longer have our tip (`tip` at height `n`), given its head `head`. At or above
       * the tip: the node's hash there differs (or is missing). Below it, the node is either behind (a lagging
       * endpoint, or anvil between unwinding and re-mining in `anvil_reorg`) or on a shorter branch; only the
       * second counts: the node's block at its own head differs from the one produced there. A suspicion only:
       * {@link confirmFork} decides.
       */
      const tipOrphaned = async (n: number, tip: string, head: number): Promise<boolean> => {
        if (head >= n) return (await nodeHash(n)) !== tip;
        const mine = produced.get(head);
        return mine !== undefined && (await nodeHash(head)) !== mine;
      };

      /**
       * Confirms a suspected reorg of our blocks up to height `n` (the node's head: `head`) and finds its fork
       * point, or returns null when the node does not confirm it. The node's block at `min(n, head)` must
       * differ from ours (a null is never a reorg by itself: a lagging backend), the new branch must chain by
       * parent hashes (`blockHeader` by hash) down to a block we produced, and the node must name the same
       * block at that height when asked again (a stale backend answers once). Sources without `blockHeader`
       * are walked by number ({@link findForkPoint}) between the two reads.
       */
      const confirmFork = async (n: number, head: number): Promise<ForkPoint | null> => {
        const top = Math.min(n, head);
        const mine = produced.get(top);
        if (mine === undefined) return null;
        if (!source.blockHeader) {
          const first = await nodeHash(top);
          if (first === null || first === mine) return null;
          const fork = await findForkPoint(produced, n, async (k) => (k > head ? null : nodeHash(k)));
          return fork.orphaned.length > 0 && (await nodeHash(top)) === first ? fork : null;
        }
        const first = await header(top);
        if (first === null || first.hash === mine || first.number !== top) return null;
        const branch = new Map<number, string>([[top, first.hash]]);
        let cur = first;
        while (produced.has(cur.number - 1) && produced.get(cur.number - 1) !== cur.parentHash) {
          const parent = await header(cur.parentHash);
          if (parent === null || parent.hash !== cur.parentHash || parent.number !== cur.number - 1) return null;
          branch.set(parent.number, parent.hash);
          cur = parent;
        }
        if ((await nodeHash(top)) !== first.hash) return null;
        const ancestor = cur.number - 1;
        const orphaned: ForkPoint["orphaned"] = [];
        for (let k = ancestor + 1; k <= n; k++) {
          const hash = produced.get(k);
          if (hash !== undefined) orphaned.push({ number: k, hash, replacedBy: branch.get(k) ?? null });
        }
        return { ancestor, orphaned, beyondWindow: !produced.has(ancestor) && orphaned.length > 0 };
      };

      /**
       * Handles a suspected reorg of our blocks up to height `n`: when the node confirms it, announce, unwind,
       * and return the first height to re-ingest; null when it did not (counted; nothing announced).
       */
      const reorg = async (n: number, head: number): Promise<number | null> => {
        const fork = await confirmFork(n, head);
        if (fork === null || fork.orphaned.length === 0) {
          metrics.unconfirmedReorgs.inc();
          log.warn({ height: n, head }, "the node's block differs from the one produced but it did not confirm a reorg; asking again");
          return null;
        }
        stats.reorgs++;
        stats.orphaned += fork.orphaned.length;
        metrics.orphaned.inc(fork.orphaned.length);
        metrics.reorgDepth.observe(fork.orphaned.length);
        const range = { from: fork.ancestor + 1, to: n, depth: fork.orphaned.length };
        if (fork.beyondWindow) {
          stats.deepReorgs++;
          metrics.reorgs.inc({ depth: "beyond_window" });
          log.error(
            { ...range, window, finalized },
            "reorg deeper than the window of produced hashes: the window is re-ingested; orphaned blocks below it are not known and stay indexed",
          );
        } else {
          metrics.reorgs.inc({ depth: "window" });
          if (finalized !== null && fork.ancestor < finalized) log.error({ ...range, finalized }, "reorg below the node's finalized block");
          log.warn(range, "chain reorganised: orphaned blocks announced, re-ingesting the new branch");
        }
        const ancestorHash = produced.get(fork.ancestor) ?? null;
        await announceReorg(fork, ancestorHash, signal);
        deps.crashHook?.("announce-unwind");
        const heights = fork.orphaned.map((o) => o.number);
        await withRetry(
          "unwind the position",
          // Beyond the window the ancestor's hash is unknown: "" resumes after it without a check.
          () => state.unwind({ number: fork.ancestor, hash: ancestorHash ?? "" }, heights),
          signal,
        );
        for (const h of heights) {
          produced.delete(h);
          disputed.delete(h);
        }
        return fork.ancestor + 1;
      };

      /**
       * Heights whose produced block the canonical map names another block for: a reorg was announced
       * (canon changed first) but the process died before unwinding. Each is either confirmed as a reorg
       * by the tip check (and unwound), or, while the node still has our block there, produced again:
       * canon back to it and its records with a new sequence number, so the index and the match stage
       * take it as canonical again (docs/reorgs.md, "Restarts").
       */
      const disputed = new Set<number>();
      /** Adds the heights where canon and produced disagree (at and below `upTo`) to {@link disputed}. */
      const findDisputed = async (upTo: number) => {
        const heights = [...produced.keys()].filter((h) => h <= upTo);
        const canon = await withRetry("read the canonical map", () => state.hashesAt(heights), signal);
        for (const h of heights) {
          const c = canon.get(h);
          if (c !== undefined && c !== produced.get(h)) disputed.add(h);
        }
      };

      let next: number;
      if (opts.from !== undefined) {
        // An explicit start wins over the durable position. Blocks produced above it may have been
        // orphaned meanwhile: announce those first; what is known below it still guards reorgs.
        if (position.tip && position.tip.number >= opts.from) {
          const head = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc");
          if (await tipOrphaned(position.tip.number, position.tip.hash, head)) await reorg(position.tip.number, head);
        }
        next = opts.from;
        for (const h of [...produced.keys()]) if (h >= next) produced.delete(h);
        await findDisputed(next - 1);
      } else if (position.tip) {
        next = position.tip.number + 1;
        await findDisputed(position.tip.number);
        // A crash after `canon` named the next block and before the tip moved: that block may have been
        // produced (in part). Taken as produced until checked: re-produced if the node still has it,
        // announced as orphaned if the node confirms another block there.
        const pending = (await withRetry("read the canonical map", () => state.hashesAt([next]), signal)).get(next);
        if (pending) {
          produced.set(next, pending);
          disputed.add(next);
          next++;
        }
        log.info({ tip: position.tip, disputed: [...disputed] }, "resuming after the last produced block");
      } else {
        next = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc");
      }

      /** Delay before asking again after a node fault: from the poll interval (≤ 250 ms), doubling up to nodeRetryMaxMs. */
      const faultStartMs = Math.min(pollMs, 250, nodeRetryMaxMs);
      let faultDelayMs = faultStartMs;
      const afterFault = async () => {
        await sleep(faultDelayMs, signal);
        faultDelayMs = Math.min(faultDelayMs * 2, nodeRetryMaxMs);
      };

      /** Produces a fetched block as canonical at its height and moves the position there. */
      const produceAt = async (f: Fetched, bundle: BlockBundle) => {
        await produceChunk([f], stats, signal, true);
        deps.crashHook?.("produce-tip");
        const ref: BlockRef = { number: f.number, hash: bundle.block.hash };
        await withRetry("record the position", () => state.markProduced(ref), signal);
        produced.set(f.number, ref.hash);
      };

      log.info({ from: next }, "following the head");
      while (!signal?.aborted) {
        const head = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc").catch((err) => {
          if (signal?.aborted) return -1;
          throw err;
        });
        if (head >= 0) {
          seen.head = head;
          seen.activeAtMs = Date.now();
        }
        if (finalizedEvery > 0 && polls++ % finalizedEvery === 0) {
          finalized = (await source.finalizedNumber?.().catch(() => null)) ?? null;
          await state.recordFinalized?.(finalized).catch((err) => log.warn({ err }, "finalized block not published"));
        }
        // A reorg that replaced the tip without growing the chain (or while we were down) shows up only here;
        // so does one onto a branch with fewer blocks (the head dropped below our tip and the node's block at
        // its head is not ours). A node that is merely behind still has our block at its head: no reorg.
        const tip = produced.get(next - 1);
        if (tip !== undefined && head >= 0 && (await tipOrphaned(next - 1, tip, head))) {
          const resumeAt = await reorg(next - 1, head);
          if (resumeAt === null) {
            await afterFault();
            continue;
          }
          next = resumeAt;
        }
        let faulted = false;
        // Before anything new: produce again what an unfinished reorg announcement left disputed.
        for (const h of [...disputed].sort((a, b) => a - b)) {
          if (signal?.aborted || head < h) break;
          const f = await fetchOne(h, signal);
          const mine = produced.get(h);
          if (!f.bundle || f.bundle.block.hash !== mine) {
            faulted = true; // a lagging backend, or a reorg the tip check confirms at the next poll
            break;
          }
          await produceAt(f, f.bundle);
          disputed.delete(h);
          metrics.reproduced.inc();
          log.warn({ block: h, hash: mine }, "produced again: a reorg announced before a crash is not on the node's chain");
        }
        while (!faulted && disputed.size === 0 && next <= head && !signal?.aborted) {
          const f = await fetchOne(next, signal);
          if (!f.bundle && !f.error) {
            // At or below the head the node reported and yet null: a lagging backend. Never skipped.
            metrics.blockUnavailable.inc();
            log.warn({ block: next, head }, "the node has no block at a height at or below its head; asking again");
            faulted = true;
            break;
          }
          const parent = produced.get(next - 1);
          if (f.bundle && parent !== undefined && f.bundle.block.parentHash !== parent) {
            const resumeAt = await reorg(next - 1, head);
            if (resumeAt === null) {
              faulted = true;
              break;
            }
            next = resumeAt;
            continue;
          }
          if (f.bundle) {
            await produceAt(f, f.bundle);
            // Keep `window` blocks, and every block the node does not call final yet.
            const keepFrom = Math.min(next - window + 1, finalized === null ? Number.POSITIVE_INFINITY : finalized + 1);
            for (const h of [...produced.keys()]) if (h < keepFrom) produced.delete(h);
            if (next % 64 === 0) {
              await withRetry("prune the position", () => state.prune(keepFrom, keepFrom - 16 * window), signal);
            }
            opts.onBlock?.(f.bundle);
          } else {
            await produceChunk([f], stats, signal, true); // malformed: dead-lettered whole, never dropped
          }
          faultDelayMs = faultStartMs;
          next++;
        }
        if (faulted) await afterFault();
        else await sleep(pollMs, signal);
      }
      return stats;
    },
  };

  /**
   * Ingests the given heights in order, `concurrency` fetches at a time; `onProduced` after each
   * chunk, then `onProgress` with the heights done and the records produced so far (also once
   * before the first chunk).
   */
  async function ingestNumbers(
    numbers: number[],
    signal?: AbortSignal,
    onProduced?: (last: number) => Promise<void>,
    onProgress?: (done: number, records: number) => void,
  ): Promise<IngestStats> {
    const stats = emptyStats();
    // The head once, for the lag gauges (a backfill does not poll it); best effort.
    await source
      .headNumber()
      .then((head) => {
        seen.head = head;
        seen.activeAtMs = Date.now();
      })
      .catch(() => {});
    let done = 0;
    let records = 0;
    onProgress?.(done, records);
    const fetchChunk = (i: number) => Promise.all(numbers.slice(i, i + concurrency).map((n) => fetchOne(n, signal)));
    // The next chunk is fetched while the current one is produced (one request per chunk).
    let next: Promise<Fetched[]> | undefined = numbers.length > 0 ? fetchChunk(0) : undefined;
    for (let i = 0; next && !signal?.aborted; i += concurrency) {
      const fetched = await next;
      next = i + concurrency < numbers.length ? fetchChunk(i + concurrency) : undefined;
      next?.catch(() => {}); // surfaced when awaited
      records += await produceChunk(fetched, stats, signal);
      if (onProduced) deps.crashHook?.("backfill-chunk");
      const last = fetched.at(-1)?.number;
      if (onProduced && last !== undefined) await withRetry("record backfill progress", () => onProduced(last), signal);
      done += fetched.length;
      onProgress?.(done, records);
    }
    log.info(stats, "backfill done");
    return stats;
  }

  return ingester;
}
