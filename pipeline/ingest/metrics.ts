/**
 * The ingest stage's metric families (docs/metrics.md). What ingest produces is counted by the
 * Kafka shell's `chainsift_records_produced_total{stage="ingest",topic}` (pipeline/kafka/metrics.ts);
 * here: the chain head and ingest's position, reorgs, JSON-RPC requests and retries. One ingester
 * per registry is assumed for the position gauges (a second one would overwrite them).
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { memoPerRegistry } from "../../lib/metrics.js";
import type { EndpointHealth } from "../../lib/rpc/client.js";

/** Where ingest is, as the gauges show it (null until known). */
export interface IngestPosition {
  /** Highest block number the node announced (`eth_blockNumber`). */
  head: number | null;
  /** When the node's head was last read or a block last produced, ms since the epoch (readiness of ingest). */
  activeAtMs: number | null;
  /** Highest block number produced to Kafka. */
  last: number | null;
  /** Timestamp of block `last`, ms since the epoch (from the block header). */
  lastTimestampMs: number | null;
}

/** One JSON-RPC endpoint as the endpoint gauges show it (lib/rpc/client.ts keeps it current). */
export type { EndpointHealth } from "../../lib/rpc/client.js";

/** The ingest stage's families in one registry. */
export interface IngestMetrics {
  /** Feeds the head and position gauges; update it in place. */
  position: IngestPosition;
  /** `chainsift_ingest_reorgs_total{depth}`: reorgs found; depth=window or beyond_window. */
  reorgs: Counter<"depth">;
  /** `chainsift_ingest_orphaned_blocks_total`: produced blocks announced as orphaned. */
  orphaned: Counter;
  /** `chainsift_ingest_reorg_depth_blocks`: depth of each reorg found (orphaned blocks). */
  reorgDepth: Histogram;
  /** `chainsift_ingest_rpc_requests_total{method,outcome}`: JSON-RPC calls by method and outcome (ok, error, unsupported). */
  rpcRequests: Counter<"method" | "outcome">;
  /** `chainsift_ingest_rpc_duration_seconds{method}`: one JSON-RPC call, from the call to its answer (batching included). */
  rpcSeconds: Histogram<"method">;
  /**
   * `chainsift_ingest_rpc_inconsistent_total{reason}`: node answers for a block that were not
   * produced because they contradict themselves (receipt_block_hash, log_block_hash, receipt_count,
   * receipt_order, gas_used; pipeline/ingest/rpc.ts `blockInconsistency`).
   */
  rpcInconsistent: Counter<"reason">;
  /**
   * The JSON-RPC endpoints whose health `chainsift_rpc_endpoint_up{endpoint}` and
   * `chainsift_rpc_endpoint_head_block{endpoint}` show, by endpoint label (the last source that
   * registered a label wins; a destroyed source removes its own).
   */
  endpoints: Map<string, () => EndpointHealth>;
  /**
   * `chainsift_rpc_endpoint_errors_total{endpoint,kind}`: failed requests to an endpoint by kind:
   * http_429, http_5xx, http_other (another non-2xx status), timeout, connection (refused, reset),
   * malformed (a body that is not JSON), inconsistent (a block answer contradicting itself),
   * rpc_error (a JSON-RPC error answer to a block read).
   */
  endpointErrors: Counter<"endpoint" | "kind">;
  /**
   * `chainsift_rpc_failovers_total{endpoint,reason}`: calls moved from `endpoint` to another one,
   * by reason (an error kind as above; null_block: it had no block where another endpoint's head is;
   * slow: no answer to a block read within the hedge delay, the next endpoint asked too).
   */
  failovers: Counter<"endpoint" | "reason">;
  /** `chainsift_ingest_retries_total{target}`: retries after transient failures, by what failed (rpc, kafka, redis). */
  retries: Counter<"target">;
  /**
   * `chainsift_ingest_block_unavailable_total`: a block at or below the head the node reported was
   * answered with null (a lagging backend behind a load balancer); the follower waits and asks again.
   */
  blockUnavailable: Counter;
  /**
   * `chainsift_ingest_traces_mismatched_total`: call-trace answers that did not belong to the block
   * fetched with them (another count of frames, or a frame naming another transaction: a backend on
   * another branch); the block and its traces are fetched again (docs/reorgs.md "The follower").
   */
  tracesMismatched: Counter;
  /**
   * `chainsift_ingest_unconfirmed_reorgs_total`: a suspected reorg (a differing or missing block, a
   * parent hash that does not match) that the node did not confirm when asked again (a stale backend,
   * a head that went backwards, headers that do not chain): nothing announced, the follower asks again.
   */
  unconfirmedReorgs: Counter;
  /**
   * `chainsift_ingest_reproduced_blocks_total`: blocks produced again at a restart because a reorg
   * announced before a crash was not finished and the node still has them (docs/reorgs.md).
   */
  reproduced: Counter;
  /** `chainsift_ingest_trace_source{source}`: 1 for the trace method in use (debug_traceBlockByNumber, trace_block, none, off). */
  traceSource: Gauge<"source">;
  /** `chainsift_rpc_requests_in_flight`: HTTP requests to the JSON-RPC endpoints sent and not yet answered or given up. */
  inFlight: Gauge;
  /** `chainsift_rpc_timeouts_total{kind}`: tries without an answer within `CHAINSIFT_RPC_TIMEOUT_MS`, by call kind (head, block, traces, call, other). */
  timeouts: Counter<"kind">;
  /** `chainsift_rpc_resends_total{kind}`: requests re-sent to a lone endpoint after the adaptive hedge delay, by call kind. */
  resends: Counter<"kind">;
  /** `chainsift_ingest_follow_lag_blocks`: the follower's head lag (node head − last block produced), observed at every head poll. */
  followLagBlocks: Histogram;
  /** `chainsift_ingest_follow_lag_seconds`: now − the header timestamp of the last block produced, observed at every head poll. */
  followLagSeconds: Histogram;
  /** `chainsift_ingest_follow_window_blocks`: heights the follower fetches at once while catching up (pipeline/ingest/window.ts). */
  followWindow: Gauge;
}

/** The ingest stage's families of a registry, created on the first call. */
export const ingestMetricsOf = memoPerRegistry((registry: Registry): IngestMetrics => {
  const registers = [registry];
  const position: IngestPosition = { head: null, activeAtMs: null, last: null, lastTimestampMs: null };
  /** A gauge computed on scrape; NaN (unknown) while `value()` is null, e.g. the head during a backfill before its first read. */
  const computed = (name: string, help: string, value: () => number | null) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(value() ?? Number.NaN);
      },
    });
  computed("chainsift_ingest_head_block", "Highest block number the node announced (eth_blockNumber)", () => position.head);
  computed("chainsift_ingest_last_block", "Highest block number ingest produced to Kafka", () => position.last);
  computed("chainsift_ingest_head_lag_blocks", "Head block - last block produced", () =>
    position.head === null || position.last === null ? null : Math.max(0, position.head - position.last),
  );
  computed(
    "chainsift_ingest_head_lag_seconds",
    "Age of the last block produced: now - its header timestamp (at the head it moves between 0 and the block time)",
    () => (position.lastTimestampMs === null ? null : Math.max(0, (Date.now() - position.lastTimestampMs) / 1000)),
  );
  const endpoints = new Map<string, () => EndpointHealth>();
  const perEndpoint = (name: string, help: string, value: (h: EndpointHealth) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ["endpoint"] as const,
      registers,
      collect() {
        this.reset();
        for (const health of endpoints.values()) {
          const h = health();
          this.set({ endpoint: h.endpoint }, value(h) ?? Number.NaN);
        }
      },
    });
  perEndpoint(
    "chainsift_rpc_endpoint_up",
    "1 while the JSON-RPC endpoint's last request succeeded and it is not cooling down after an error",
    (h) => (h.up ? 1 : 0),
  );
  perEndpoint("chainsift_rpc_endpoint_head_block", "The JSON-RPC endpoint's last eth_blockNumber answer", (h) => h.head);
  return {
    position,
    endpoints,
    endpointErrors: new Counter({
      name: "chainsift_rpc_endpoint_errors_total",
      help: "Failed requests to a JSON-RPC endpoint by kind (http_429, http_5xx, http_other, timeout, connection, malformed, inconsistent, rpc_error)",
      labelNames: ["endpoint", "kind"] as const,
      registers,
    }),
    failovers: new Counter({
      name: "chainsift_rpc_failovers_total",
      help: "Calls moved from a JSON-RPC endpoint to another, by reason (an error kind, null_block, or slow: hedged)",
      labelNames: ["endpoint", "reason"] as const,
      registers,
    }),
    reorgs: new Counter({
      name: "chainsift_ingest_reorgs_total",
      help: "Chain reorganisations the follower found; depth=beyond_window when deeper than its window of produced hashes",
      labelNames: ["depth"] as const,
      registers,
    }),
    orphaned: new Counter({
      name: "chainsift_ingest_orphaned_blocks_total",
      help: "Produced blocks announced as orphaned on the reorgs topic",
      registers,
    }),
    reorgDepth: new Histogram({
      name: "chainsift_ingest_reorg_depth_blocks",
      help: "Depth of each reorg found, in orphaned blocks",
      buckets: [1, 2, 3, 4, 6, 8, 16, 32, 64, 128],
      registers,
    }),
    rpcRequests: new Counter({
      name: "chainsift_ingest_rpc_requests_total",
      help: "JSON-RPC calls by method and outcome (ok, error, unsupported: method not found)",
      labelNames: ["method", "outcome"] as const,
      registers,
    }),
    rpcSeconds: new Histogram({
      name: "chainsift_ingest_rpc_duration_seconds",
      help: "Duration of one JSON-RPC call, from the call to its answer (calls are batched over HTTP)",
      labelNames: ["method"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rpcInconsistent: new Counter({
      name: "chainsift_ingest_rpc_inconsistent_total",
      help: "Block answers not produced because they contradict themselves (a load balancer mixing backends), by reason",
      labelNames: ["reason"] as const,
      registers,
    }),
    retries: new Counter({
      name: "chainsift_ingest_retries_total",
      help: "Retries after a transient failure, by what failed (rpc, kafka, redis)",
      labelNames: ["target"] as const,
      registers,
    }),
    tracesMismatched: new Counter({
      name: "chainsift_ingest_traces_mismatched_total",
      help: "Call-trace answers that did not belong to the block fetched with them (fetched again; after 3 tries the block is produced without traces)",
      registers,
    }),
    blockUnavailable: new Counter({
      name: "chainsift_ingest_block_unavailable_total",
      help: "Blocks at or below the node's reported head that it answered null for (retried, never skipped)",
      registers,
    }),
    unconfirmedReorgs: new Counter({
      name: "chainsift_ingest_unconfirmed_reorgs_total",
      help: "Suspected reorgs the node did not confirm when asked again (stale backend, head going backwards); nothing announced",
      registers,
    }),
    reproduced: new Counter({
      name: "chainsift_ingest_reproduced_blocks_total",
      help: "Blocks produced again at a restart: a reorg announced before a crash that the node did not confirm",
      registers,
    }),
    traceSource: new Gauge({
      name: "chainsift_ingest_trace_source",
      help: "1 for the node's trace method in use: debug_traceBlockByNumber, trace_block, none (the node has neither), off (CHAINSIFT_INGEST_TRACES=false)",
      labelNames: ["source"] as const,
      registers,
    }),
    inFlight: new Gauge({
      name: "chainsift_rpc_requests_in_flight",
      help: "HTTP requests to the JSON-RPC endpoints sent and not yet answered or given up (every copy of a re-sent one)",
      registers,
    }),
    timeouts: new Counter({
      name: "chainsift_rpc_timeouts_total",
      help: "Tries of a JSON-RPC HTTP request without an answer within the timeout, by call kind (head, block, traces, call, other)",
      labelNames: ["kind"] as const,
      registers,
    }),
    resends: new Counter({
      name: "chainsift_rpc_resends_total",
      help: "JSON-RPC HTTP requests re-sent to a lone endpoint after the adaptive hedge delay, by call kind (head, block, traces, call, other)",
      labelNames: ["kind"] as const,
      registers,
    }),
    followLagBlocks: new Histogram({
      name: "chainsift_ingest_follow_lag_blocks",
      help: "The follower's head lag in blocks (node head - last block produced), observed at every head poll",
      buckets: [0, 1, 2, 3, 4, 5, 8, 12, 16, 32, 64, 128],
      registers,
    }),
    followLagSeconds: new Histogram({
      name: "chainsift_ingest_follow_lag_seconds",
      help: "Age of the last block produced (now - its header timestamp), observed at every head poll",
      buckets: [0.25, 0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120],
      registers,
    }),
    followWindow: new Gauge({
      name: "chainsift_ingest_follow_window_blocks",
      help: "Heights the follower fetches at once while catching up (adapts to the endpoint's answers, at most CHAINSIFT_FOLLOW_WINDOW)",
      registers,
    }),
  };
});
