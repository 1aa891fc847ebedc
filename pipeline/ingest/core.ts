/**
 * The shared machinery of the ingest stage (pipeline/ingest/ingest.ts): retries, fetching and
 * shaping a block, producing chunks of blocks with their sequence numbers, dead letters and reorg
 * announcements. Used by the backfill (ingest.ts) and the follower (follow.ts).
 * @module
 */
import { Registry } from "prom-client";
import { MalformedRpcDataError } from "../../lib/chain/rpc-values.js";
import { createMemoryChainState } from "../../lib/chain/state.js";
import { isRetryable } from "../../lib/errors.js";
import { logId, type ReorgRecord } from "../../lib/records.js";
import { transportErrorOf } from "../../lib/rpc/transport.js";
import { type OutgoingRecord, seqHeaders } from "../kafka/bus.js";
import { ingestMetricsOf } from "./metrics.js";
import type { FetchedBlock } from "./rpc.js";
import { type BlockBundle, type RawRpcObject, toBlockBundle, tracesMismatch } from "./transform.js";
import { type ForkPoint, type IngesterDeps, type IngestStats, sleep } from "./types.js";

/** Tries of a block's call traces the node answers with an error (e.g. pruned state) before they are given up (the block is then produced without them). */
export const TRACE_ANSWER_ATTEMPTS = 3;

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

/** A fetched height: its bundle, or null when the node does not have it, or the raw data and error when it is malformed. */
export type Fetched = {
  number: number;
  bundle: BlockBundle | null;
  raw?: RawRpcObject;
  error?: MalformedRpcDataError;
  tracesMissing?: boolean;
};

/** The machinery {@link createIngestCore} returns (see its functions' TSDoc). */
export type IngestCore = ReturnType<typeof createIngestCore>;

/**
 * The settings, state, metrics and helpers of one ingester (nothing runs or connects here).
 * @param deps - the ingester's dependencies ({@link IngesterDeps}).
 */
export function createIngestCore(deps: IngesterDeps) {
  const { source, producer } = deps;
  const log = deps.logger.child({ stage: "ingest" });
  const concurrency = deps.concurrency ?? 4;
  const maxAttempts = deps.maxAttempts ?? Number.POSITIVE_INFINITY;
  const nodeRetryMaxMs = deps.nodeRetryMaxMs ?? 2000;
  const state = deps.state ?? createMemoryChainState();
  const metrics = ingestMetricsOf(deps.registry ?? new Registry());
  const seen = metrics.position;
  /** Retries of JSON-RPC reads so far ({@link withRetry} with target `rpc`): the follower's window shrinks when it grows. */
  const rpcRetries = { count: 0 };

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
        if (target === "rpc") rpcRetries.count++;
        log.warn({ err, attempt, retryInMs: delay }, `${what} failed; retrying`);
        await sleep(delay, signal);
        delay = Math.min(delay * 2, target === "rpc" ? nodeRetryMaxMs : 30_000);
      }
    }
  }

  /**
   * A block's call traces. A failure without the node's answer (timeout, 429, 5xx, connection,
   * truncated body: lib/rpc/transport.ts) is asked again like a block read (delay doubling up to
   * `nodeRetryMaxMs`, until `signal` aborts), so a faulty transport never costs a block its traces;
   * an error the node answered (e.g. pruned state) is given up after {@link TRACE_ANSWER_ATTEMPTS}
   * tries (`failed`: the block is produced without traces).
   */
  async function fetchTraces(number: number, signal?: AbortSignal): Promise<{ frames: RawRpcObject[] | null; failed: boolean }> {
    let answered = 0;
    let delay = Math.min(200, nodeRetryMaxMs);
    for (;;) {
      try {
        return { frames: await source.fetchTraces(number), failed: false };
      } catch (err) {
        if (transportErrorOf(err) === undefined) answered++;
        if (answered >= TRACE_ANSWER_ATTEMPTS || signal?.aborted) {
          log.warn({ block: number, reason: (err as Error).message.slice(0, 200) }, "call traces unavailable; block produced without them");
          return { frames: null, failed: true };
        }
        metrics.retries.inc({ target: "rpc" });
        rpcRetries.count++;
        await sleep(delay, signal);
        delay = Math.min(delay * 2, nodeRetryMaxMs);
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
      const tracesP = deps.traces ? fetchTraces(number, signal) : undefined;
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
      // One round trip for both (the follower's catch-up pays it per block).
      const first = await withRetry(
        expect ? "record canonical hashes and reserve sequence numbers" : "reserve sequence numbers",
        () => state.reserveSeq(produced.length, expect ? refs : undefined),
        signal,
      );
      for (const [i, b] of produced.entries()) messages.push(...bundleToMessages(b, first + i));
      // Block records last, in a send of their own: a consumer that reads a block record can rely on
      // its transactions, logs and traces being in their topics (the match stage's settled height).
      const records = messages.filter((m) => m.kind !== "blocks");
      if (records.length > 0)
        await withRetry(`produce the records of ${produced.length} blocks`, () => producer.send(records), signal, "kafka");
      const blocks = messages.filter((m) => m.kind === "blocks");
      await withRetry(`produce ${produced.length} blocks`, () => producer.send(blocks), signal, "kafka");
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

  return {
    deps,
    source,
    producer,
    log,
    concurrency,
    nodeRetryMaxMs,
    state,
    metrics,
    seen,
    rpcRetries,
    withRetry,
    fetchOne,
    produceChunk,
    announceReorg,
    safeHeight,
  };
}
