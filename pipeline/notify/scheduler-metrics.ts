/**
 * The metrics of the notify scheduler (`scheduler.ts`): deliveries, attempts, dead letters,
 * destination health, attempts in flight and latencies.
 * @module
 */
import {
  type Counter,
  type Gauge,
  type Histogram,
  Counter as PCounter,
  Gauge as PGauge,
  Histogram as PHistogram,
  type Registry,
} from "prom-client";

/** The notify scheduler's metrics (docs/metrics.md). */
export interface SchedulerMetrics {
  leasesLost: Counter;
  deliveries: Counter<"channel" | "outcome">;
  attempts: Counter<"outcome">;
  deadLetters: Counter<"code">;
  unhealthy: Gauge<"destination">;
  inFlight: Gauge;
  latency: Histogram<"channel">;
  fromBlock: Histogram<"channel" | "status">;
}

/**
 * The scheduler's metrics in `registry` (none: unregistered ones, for tests), reusing those already
 * registered there so several schedulers of one process share them.
 */
export function metricsIn(registry: Registry | undefined): SchedulerMetrics {
  const registers = registry ? [registry] : [];
  const get = <T>(name: string, make: () => T): T => (registry?.getSingleMetric(name) as T | undefined) ?? make();
  return {
    leasesLost: get(
      "chainsift_notify_leases_lost_total",
      () =>
        new PCounter({
          name: "chainsift_notify_leases_lost_total",
          help: "Jobs this process stopped working because its lease of their lane had been taken over (it had stopped renewing it for a whole lease); the new holder finishes them.",
          registers,
        }),
    ),
    deliveries: get(
      "chainsift_notify_deliveries_total",
      () =>
        new PCounter({
          name: "chainsift_notify_deliveries_total",
          help: "Jobs (alert actions) finished, by channel and outcome (delivered, refused, dead_lettered, throttled; digest: a storm-control digest sent; given_up: an alert of a given-up digest that could not be dead-lettered).",
          labelNames: ["channel", "outcome"] as const,
          registers,
        }),
    ),
    attempts: get(
      "chainsift_notify_attempts_total",
      () =>
        new PCounter({
          name: "chainsift_notify_attempts_total",
          help: "Delivery attempts made, by outcome (ok, retryable, final).",
          labelNames: ["outcome"] as const,
          registers,
        }),
    ),
    deadLetters: get(
      "chainsift_notify_dead_letters_total",
      () =>
        new PCounter({
          name: "chainsift_notify_dead_letters_total",
          help: "Alert actions dead-lettered (jobs, and each alert held by a storm-control digest given up), by code.",
          labelNames: ["code"] as const,
          registers,
        }),
    ),
    unhealthy: get(
      "chainsift_notify_destination_unhealthy",
      () =>
        new PGauge({
          name: "chainsift_notify_destination_unhealthy",
          help: "1 while a destination (webhook origin, or smtp) is marked unhealthy, as last seen by this process; 0 once it recovered.",
          labelNames: ["destination"] as const,
          registers,
        }),
    ),
    inFlight: get(
      "chainsift_notify_attempts_in_flight",
      () => new PGauge({ name: "chainsift_notify_attempts_in_flight", help: "Delivery attempts running in this process.", registers }),
    ),
    latency: get(
      "chainsift_notify_delivery_latency_seconds",
      () =>
        new PHistogram({
          name: "chainsift_notify_delivery_latency_seconds",
          help: "Time from enqueueing a job to its successful delivery.",
          labelNames: ["channel"] as const,
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
          registers,
        }),
    ),
    fromBlock: get(
      "chainsift_notify_block_to_delivery_seconds",
      () =>
        new PHistogram({
          name: "chainsift_notify_block_to_delivery_seconds",
          help: "Time from the matched block's header timestamp to the successful delivery, by channel and alert status (confirmed alerts include the wait for their confirmations)",
          labelNames: ["channel", "status"] as const,
          buckets: [1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600],
          registers,
        }),
    ),
  };
}
