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
import { createIngestCore, type Fetched } from "./core.js";
import { followHead } from "./follow.js";
import { type BackfillOptions, emptyStats, type Ingester, type IngesterDeps, type IngestStats } from "./types.js";

export { bundleToMessages, TRACE_MATCH_ATTEMPTS } from "./core.js";
export { findForkPoint } from "./follow.js";
export type { BackfillOptions, BackfillProgress, FollowOptions, ForkPoint, Ingester, IngesterDeps, IngestStats } from "./types.js";

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
  const core = createIngestCore(deps);
  const { source, log, concurrency, state, seen, withRetry, fetchOne, produceChunk, safeHeight } = core;

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
    follow(opts = {}) {
      return followHead(core, opts);
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
