/**
 * The decode stage's metric family (docs/metrics.md): events produced, by the source that decoded
 * them and whether they decoded cleanly. Records consumed and produced, handler latency and dead
 * letters are the consumer shell's (pipeline/kafka/metrics.ts).
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { memoPerRegistry } from "../../lib/metrics.js";

/** The decode stage's families in one registry. */
export interface DecodeMetrics {
  /**
   * `chainsift_decode_events_total{source,outcome}`: events produced from consumed logs, by
   * decoding source (`standard`, `abi`, `signature`; docs/decoding.md) and outcome (`decoded`, or
   * `error`: topic0 matched but the log did not fit, an event with `error` set).
   */
  events: Counter<"source" | "outcome">;
  /**
   * `chainsift_decode_redecode_failures_total`: failed attempts at re-decoding history after an ABI
   * registration (Elasticsearch or Kafka failing); each is logged at error level with the address
   * and retried after a backoff (docs/decoding.md, "Re-decode").
   */
  redecodeFailures: Counter;
}

/** The decode stage's families of a registry, created on the first call. */
export const decodeMetricsOf = memoPerRegistry(
  (registry: Registry): DecodeMetrics => ({
    events: new Counter({
      name: "chainsift_decode_events_total",
      help: "Events produced from consumed logs, by decoding source (standard, abi, signature) and outcome (decoded, error)",
      labelNames: ["source", "outcome"] as const,
      registers: [registry],
    }),
    redecodeFailures: new Counter({
      name: "chainsift_decode_redecode_failures_total",
      help: "Failed attempts at re-decoding history after an ABI registration; each is logged at error level with the address and retried after a backoff",
      registers: [registry],
    }),
  }),
);

/**
 * Adds a batch's produced events to `chainsift_decode_events_total`: one `inc` per (source,
 * outcome) pair, not per event (prom-client hashes the labels on every call).
 * @param events - the family ({@link DecodeMetrics.events}).
 * @param records - the produced event records.
 */
export function countEvents(events: Counter<"source" | "outcome">, records: Iterable<{ source: string; error: string | null }>): void {
  const perLabel = new Map<string, number>();
  for (const ev of records) {
    const key = `${ev.source}|${ev.error === null ? "decoded" : "error"}`;
    perLabel.set(key, (perLabel.get(key) ?? 0) + 1);
  }
  for (const [key, n] of perLabel) {
    const [source, outcome] = key.split("|") as [string, string];
    events.inc({ source, outcome }, n);
  }
}
