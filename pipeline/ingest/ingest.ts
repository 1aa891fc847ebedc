/**
 * The ingest stage: reads blocks and receipts from a {@link ChainSource} and writes block,
 * transaction and log records to Kafka, one idempotent batch per block (keys: block hash,
 * transaction hash, `<txhash>_l_<logIndex>`), so a replayed range overwrites instead of duplicating.
 * @module
 */
import type { Logger } from "../../lib/logger.js";
import { logId } from "../../lib/records.js";
import { isRetryable } from "../errors.js";
import type { OutgoingRecord, RecordProducer } from "../kafka/bus.js";
import type { ChainSource } from "./rpc.js";
import { type BlockBundle, MalformedRpcDataError, type RawRpcObject, toBlockBundle } from "./transform.js";

/** The records of one block as Kafka messages (pure). */
export function bundleToMessages(bundle: BlockBundle): OutgoingRecord[] {
  return [
    { kind: "blocks", key: bundle.block.hash, record: bundle.block },
    ...bundle.transactions.map((t): OutgoingRecord => ({ kind: "transactions", key: t.hash, record: t })),
    ...bundle.logs.map((l): OutgoingRecord => ({ kind: "logs", key: logId(l), record: l })),
    ...bundle.traces.map((t): OutgoingRecord => ({ kind: "traces", key: `${t.transactionHash}_t`, record: t })),
  ];
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
  /** Blocks produced without call traces because the node failed to trace them. */
  tracesMissing: number;
}

/** Dependencies of {@link createIngester}. */
export interface IngesterDeps {
  source: ChainSource;
  producer: RecordProducer;
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
}

/** Options of a follow-the-head run. */
export interface FollowOptions {
  /** First block to ingest; default the current head. */
  from?: number;
  /** Head polling interval. Default 1000 ms. */
  pollIntervalMs?: number;
  /** Stops the loop. */
  signal?: AbortSignal;
  /** Called after every block (tests and the CLI use it for progress). */
  onBlock?: (bundle: BlockBundle) => void;
  /** How many recent blocks are remembered to detect and unwind reorgs. Default 128. */
  reorgWindow?: number;
}

/** The ingest stage. */
export interface Ingester {
  /** Fetches and produces one block; returns null when the node does not have it. */
  ingestBlock(number: number): Promise<BlockBundle | null>;
  /** Ingests the given block numbers (a backfill), `concurrency` fetches at a time, produced in order. */
  ingestBlocks(numbers: number[], signal?: AbortSignal): Promise<IngestStats>;
  /** Ingests `from..to` inclusive. */
  backfill(from: number, to: number, signal?: AbortSignal): Promise<IngestStats>;
  /** Follows the head until the signal aborts; on a reorg it walks back to the common ancestor and re-ingests the new branch. */
  follow(opts?: FollowOptions): Promise<IngestStats>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** Creates the ingest stage. */
export function createIngester(deps: IngesterDeps): Ingester {
  const { source, producer } = deps;
  const log = deps.logger.child({ stage: "ingest" });
  const concurrency = deps.concurrency ?? 4;
  const maxAttempts = deps.maxAttempts ?? Number.POSITIVE_INFINITY;

  async function withRetry<T>(what: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    let delay = deps.retryInitialMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isRetryable(err) || err instanceof MalformedRpcDataError || attempt >= maxAttempts || signal?.aborted) throw err;
        log.warn({ err, attempt, retryInMs: delay }, `${what} failed; retrying`);
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 30_000);
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

  async function fetchOne(number: number, signal?: AbortSignal): Promise<Fetched> {
    const tracesP = deps.traces ? fetchTraces(number) : undefined;
    const fetched = await withRetry(`fetch block ${number}`, () => source.fetchBlock(number), signal);
    const traces = await tracesP;
    if (!fetched) return { number, bundle: null };
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
    );
    stats.deadLettered++;
  }

  /** Produces the records of several fetched blocks, in block order, in as few requests as fit. */
  async function produceChunk(fetched: Fetched[], stats: IngestStats, signal?: AbortSignal): Promise<void> {
    const messages: OutgoingRecord[] = [];
    const produced: BlockBundle[] = [];
    for (const f of fetched) {
      if (f.tracesMissing) stats.tracesMissing++;
      if (f.error) await deadLetterBlock(f, stats, signal);
      else if (!f.bundle) stats.missing++;
      else {
        messages.push(...bundleToMessages(f.bundle));
        produced.push(f.bundle);
      }
    }
    if (messages.length > 0) await withRetry(`produce ${produced.length} blocks`, () => producer.send(messages), signal);
    for (const bundle of produced) {
      stats.blocks++;
      stats.transactions += bundle.transactions.length;
      stats.logs += bundle.logs.length;
    }
  }

  const produce = (f: Fetched, stats: IngestStats, signal?: AbortSignal) => produceChunk([f], stats, signal);

  const emptyStats = (): IngestStats => ({ blocks: 0, transactions: 0, logs: 0, missing: 0, deadLettered: 0, reorgs: 0, tracesMissing: 0 });

  const ingester: Ingester = {
    async ingestBlock(number) {
      const stats = emptyStats();
      const f = await fetchOne(number);
      await produce(f, stats);
      return f.bundle;
    },
    async ingestBlocks(numbers, signal) {
      const stats = emptyStats();
      const fetchChunk = (i: number) => Promise.all(numbers.slice(i, i + concurrency).map((n) => fetchOne(n, signal)));
      // The next chunk is fetched while the current one is produced (one request per chunk).
      let next: Promise<Fetched[]> | undefined = numbers.length > 0 ? fetchChunk(0) : undefined;
      for (let i = 0; next && !signal?.aborted; i += concurrency) {
        const fetched = await next;
        next = i + concurrency < numbers.length ? fetchChunk(i + concurrency) : undefined;
        next?.catch(() => {}); // surfaced when awaited
        await produceChunk(fetched, stats, signal);
      }
      log.info(stats, "backfill done");
      return stats;
    },
    async backfill(from, to, signal) {
      if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from) {
        throw new RangeError(`invalid backfill range ${from}..${to}`);
      }
      const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i);
      return ingester.ingestBlocks(numbers, signal);
    },
    async follow(opts = {}) {
      const stats = emptyStats();
      const signal = opts.signal;
      const window = opts.reorgWindow ?? 128;
      let next = opts.from ?? (await withRetry("eth_blockNumber", () => source.headNumber(), signal));
      /** Hashes of the blocks produced recently, by number: the branch downstream stages know. */
      const produced = new Map<number, string>();
      const nodeHash = (n: number) => withRetry(`hash of block ${n}`, () => source.blockHash(n), signal);

      /**
       * Walks back from `n` while the node's block differs from the produced one and returns the
       * first height to re-ingest (the block after the common ancestor).
       */
      const forkPoint = async (n: number): Promise<number> => {
        let k = n;
        while (produced.has(k) && (await nodeHash(k)) !== produced.get(k)) k--;
        if (!produced.has(k) && k < n)
          log.error({ from: k + 1, to: n }, `reorg deeper than the ${window}-block window; re-ingesting what is known`);
        for (const height of [...produced.keys()]) if (height > k) produced.delete(height);
        stats.reorgs++;
        log.warn({ reingestFrom: k + 1, tip: n }, "chain reorganised: re-ingesting the new branch");
        return k + 1;
      };

      log.info({ from: next }, "following the head");
      while (!signal?.aborted) {
        const head = await withRetry("eth_blockNumber", () => source.headNumber(), signal).catch((err) => {
          if (signal?.aborted) return -1;
          throw err;
        });
        // A reorg that replaced the tip without growing the chain shows up only here.
        const tip = produced.get(next - 1);
        if (tip !== undefined && head >= next - 1 && (await nodeHash(next - 1)) !== tip) next = await forkPoint(next - 1);
        while (next <= head && !signal?.aborted) {
          const f = await fetchOne(next, signal);
          const parent = produced.get(next - 1);
          if (f.bundle && parent !== undefined && f.bundle.block.parentHash !== parent) {
            next = await forkPoint(next - 1);
            continue;
          }
          await produce(f, stats, signal);
          if (f.bundle) {
            produced.set(next, f.bundle.block.hash);
            produced.delete(next - window);
            opts.onBlock?.(f.bundle);
          }
          next++;
        }
        await sleep(opts.pollIntervalMs ?? 1000, signal);
      }
      return stats;
    },
  };
  return ingester;
}
