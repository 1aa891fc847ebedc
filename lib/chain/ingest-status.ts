/**
 * What ingest last saw of its chain, in Redis, for readers in other processes (`GET /chains/` of the
 * API, `chainsift status`): the node's head as ingest last read it, and the block ingest last
 * produced (the follower's `tip`, lib/chain/state.ts) with its timestamp.
 *
 * Keys, under `<keyPrefix>ingest:<technology>/<blockchain>/<network>:` (lib/chain/state.ts
 * `ingestKeyPrefix`):
 *
 * | key | type | content |
 * |---|---|---|
 * | `tip` | string | `<number>:<hash>` of the last block the follower produced (written by lib/chain/state.ts) |
 * | `status` | hash | `head` (the node's head, `eth_blockNumber`), `headAtMs` (when ingest last read a head or produced a block, ms since the epoch), `last` and `lastTimestampMs` (the newest block produced and its header timestamp, ms), `updatedAtMs`; written by {@link startIngestStatusWriter} at most once per `intervalMs` (default 1000) and only when a value changed |
 *
 * The writer reads the ingester's position gauges (pipeline/ingest/metrics.ts `IngestPosition`), so
 * the hot path of ingest gains no Redis round trip.
 * @module
 */
import type { ChainId } from "../config/index.js";
import type { Logger } from "../logger.js";
import { type BlockRef, ingestKeyPrefix, parseTip } from "./state.js";

/** Default interval of {@link startIngestStatusWriter}, in ms. */
export const INGEST_STATUS_INTERVAL_MS = 1000;

/** The ingest position a writer publishes (the shape of pipeline/ingest/metrics.ts `IngestPosition`). */
export interface IngestPositionView {
  /** Highest block number the node announced, null until known. */
  head: number | null;
  /** When the node's head was last read or a block last produced, ms since the epoch; null until then. */
  activeAtMs: number | null;
  /** Highest block number produced to Kafka, null until then. */
  last: number | null;
  /** Timestamp of block `last` (from its header), ms since the epoch; null until then. */
  lastTimestampMs: number | null;
}

/** What {@link readIngestStatus} found for one chain; every field null when ingest never ran (or its state was reset). */
export interface IngestStatus {
  /** The last block the follower produced (its durable `tip`), null when none. */
  ingested: BlockRef | null;
  /** The node's head as ingest last read it, null when no status was written. */
  head: number | null;
  /** When ingest last read a head or produced a block (ms since the epoch), null when unknown. */
  headAtMs: number | null;
  /** Timestamp of the newest block ingest produced (its header), ms since the epoch; null when unknown. */
  lastTimestampMs: number | null;
}

/** The Redis commands the reader and the writer use (a node-redis v5 client fits). */
export interface IngestStatusRedis {
  get(key: string): Promise<string | null>;
  hGetAll(key: string): Promise<Record<string, string>>;
  hSet(key: string, values: Record<string, string>): Promise<number>;
}

/** The key of a chain's ingest status hash: `<ingestKeyPrefix>status`. */
export function ingestStatusKey(keyPrefix: string, chain: ChainId): string {
  return `${ingestKeyPrefix(keyPrefix, chain)}status`;
}

const num = (raw: string | undefined): number | null => {
  if (raw === undefined || raw === "") return null;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : null;
};

/**
 * Reads a chain's ingest status (two Redis reads: `tip` and `status`).
 * @throws Redis errors (the caller answers them, e.g. 503 on the API).
 */
export async function readIngestStatus(
  redis: Pick<IngestStatusRedis, "get" | "hGetAll">,
  keyPrefix: string,
  chain: ChainId,
): Promise<IngestStatus> {
  const [tip, status] = await Promise.all([
    redis.get(`${ingestKeyPrefix(keyPrefix, chain)}tip`),
    redis.hGetAll(ingestStatusKey(keyPrefix, chain)),
  ]);
  return { ingested: parseTip(tip), head: num(status.head), headAtMs: num(status.headAtMs), lastTimestampMs: num(status.lastTimestampMs) };
}

/** Options of {@link startIngestStatusWriter}. */
export interface IngestStatusWriterOptions {
  redis: Pick<IngestStatusRedis, "hSet">;
  /** config `redisKeyPrefix`. */
  keyPrefix: string;
  chain: ChainId;
  /** The ingester's position, read on every tick (kept current in place by the ingester). */
  position: IngestPositionView;
  /** How often the position is looked at, in ms. Default {@link INGEST_STATUS_INTERVAL_MS}. */
  intervalMs?: number;
  /** Receives a failed write (warn; the next tick tries again). */
  logger?: Pick<Logger, "warn">;
}

/**
 * Publishes an ingester's position to the chain's `status` hash every `intervalMs` when it changed
 * (module doc). A failed write is logged and retried on the next tick; it never stops ingest.
 * @returns `stop()`: clears the timer and waits for a write in flight.
 */
export function startIngestStatusWriter(opts: IngestStatusWriterOptions): { stop(): Promise<void> } {
  const key = ingestStatusKey(opts.keyPrefix, opts.chain);
  let written = "";
  let inflight: Promise<unknown> = Promise.resolve();
  const tick = () => {
    const p = opts.position;
    const values: Record<string, string> = {};
    for (const f of ["head", "last", "lastTimestampMs"] as const) if (p[f] !== null) values[f] = String(p[f]);
    if (p.activeAtMs !== null) values.headAtMs = String(p.activeAtMs);
    const seen = JSON.stringify([p.head, p.last, p.lastTimestampMs]);
    if (seen === written || Object.keys(values).length === 0) return;
    written = seen;
    values.updatedAtMs = String(Date.now());
    inflight = opts.redis.hSet(key, values).catch((err: unknown) => {
      written = "";
      opts.logger?.warn({ err, key }, "could not write the ingest status");
    });
  };
  const timer = setInterval(tick, opts.intervalMs ?? INGEST_STATUS_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      tick();
      await inflight;
    },
  };
}
