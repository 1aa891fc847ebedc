/**
 * The index stage's metric families (docs/metrics.md): bulk calls and their latency, documents by
 * outcome, and documents Elasticsearch rejected, by reason.
 * @module
 */
import { Counter, Histogram, type Registry } from "prom-client";
import { memoPerRegistry } from "../../lib/metrics.js";

/** The index stage's families in one registry. */
export interface IndexMetrics {
  /** `chainsift_index_bulk_requests_total{outcome}`: bulk calls (ok, or failed: retried as a whole). */
  bulkRequests: Counter<"outcome">;
  /** `chainsift_index_bulk_duration_seconds`: one bulk call, 429 retries of its items included. */
  bulkSeconds: Histogram;
  /** `chainsift_index_documents_total{kind,result}`: documents by record kind and result (written, superseded, skipped_orphaned, deleted_orphaned). */
  documents: Counter<"kind" | "result">;
  /** `chainsift_index_rejections_total{reason}`: documents Elasticsearch refused, by its error type (e.g. `mapper_parsing_exception`, `throttled` for 429). */
  rejections: Counter<"reason">;
}

/** The index stage's families of a registry, created on the first call. */
export const indexMetricsOf = memoPerRegistry(
  (registry: Registry): IndexMetrics => ({
    bulkRequests: new Counter({
      name: "chainsift_index_bulk_requests_total",
      help: "Bulk calls to Elasticsearch (one per batch unless it exceeds the flush size), by outcome",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    bulkSeconds: new Histogram({
      name: "chainsift_index_bulk_duration_seconds",
      help: "Duration of one bulk call, retries of 429-rejected items included",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    documents: new Counter({
      name: "chainsift_index_documents_total",
      help: "Documents by index kind and result: written, superseded (ES holds a newer version), skipped_orphaned, deleted_orphaned",
      labelNames: ["kind", "result"] as const,
      registers: [registry],
    }),
    rejections: new Counter({
      name: "chainsift_index_rejections_total",
      help: "Documents Elasticsearch refused, by error type (throttled: still 429 after the retries)",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
  }),
);

/**
 * Adds documents of one result to `chainsift_index_documents_total`, one `inc` per record kind
 * (prom-client hashes the labels on every call: per document it was 5 % of the stage's CPU).
 * @param documents - the family ({@link IndexMetrics.documents}).
 * @param result - the `result` label, e.g. `written`.
 * @param docIndices - the index of each document (undefined: unknown).
 * @param kindOfIndex - index name (an alias or a backing partition) → record kind (`kind` label);
 *   undefined counts as `unknown`.
 */
export function countByKind(
  documents: Counter<"kind" | "result">,
  result: string,
  docIndices: Iterable<string | undefined>,
  kindOfIndex: (index: string) => string | undefined,
): void {
  const perKind = new Map<string, number>();
  for (const index of docIndices) {
    const kind = (index === undefined ? undefined : kindOfIndex(index)) ?? "unknown";
    perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
  }
  for (const [kind, n] of perKind) documents.inc({ kind, result }, n);
}
