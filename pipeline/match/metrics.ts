/**
 * The match stage's metric families (docs/metrics.md): rules loaded, entities evaluated, matches,
 * alerts emitted by status, the outbox size and the watchlist copies' bytes. The gauges are read on scrape from the running
 * stages registered with {@link MatchMetrics.watch}.
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { AlertStatus } from "../../lib/alerting/alert.js";
import { memoPerRegistry } from "../../lib/metrics.js";

/** What a running match stage reports to the gauges. */
export interface MatchGaugeSource {
  /** Enabled rules of the served chain held in the rule index. */
  rules(): number;
  /** Alerts in the outbox (emitted, not yet acknowledged as published): Redis `HLEN`. */
  outboxSize(): Promise<number>;
  /** Watchlists copied into the process and the bytes of the copies (lib/match/watchlist-filters.ts `stats`). */
  watchlistCopies?(): { lists: number; bytes: number };
}

/** The match stage's families in one registry. */
export interface MatchMetrics {
  /** `chainsift_match_entities_total{type}`: entities evaluated against the rule index, by target type. */
  entities: Counter<"type">;
  /** `chainsift_match_matches_total{type}`: (rule, entity) matches found, by target type. */
  matches: Counter<"type">;
  /** `chainsift_match_alerts_total{status}`: alerts emitted (pending, confirmed, removed). */
  alerts: Counter<"status">;
  /** `chainsift_match_state_unread_total{kind}`: state-condition readings not applied (`over_budget`, `unavailable`, `error`; state/evaluator.ts). */
  stateUnread: Counter<"kind">;
  /** Adds a stage to `chainsift_match_rules`, `chainsift_match_outbox_alerts` and `chainsift_match_watchlist_copy_bytes`; returns the function removing it. */
  watch(source: MatchGaugeSource): () => void;
}

/** The match stage's families of a registry, created on the first call. */
export const matchMetricsOf = memoPerRegistry((registry: Registry): MatchMetrics => {
  const registers = [registry];
  const sources = new Set<MatchGaugeSource>();
  new Gauge({
    name: "chainsift_match_rules",
    help: "Enabled rules of the served chain loaded in the match stage's rule index",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.rules(), 0));
    },
  });
  new Gauge({
    name: "chainsift_match_outbox_alerts",
    help: "Alerts emitted and not yet acknowledged as published (the Redis outbox; a sweep re-publishes them)",
    registers,
    async collect() {
      const sizes = await Promise.all([...sources].map((s) => s.outboxSize().catch(() => 0)));
      this.set(sizes.reduce((a, b) => a + b, 0));
    },
  });
  new Gauge({
    name: "chainsift_match_watchlist_copy_bytes",
    help: "Bytes of the watchlist copies held in the match process (exact sets of address lists, Bloom filters of the others)",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + (s.watchlistCopies?.().bytes ?? 0), 0));
    },
  });
  return {
    entities: new Counter({
      name: "chainsift_match_entities_total",
      help: "Entities evaluated against the rule index, by target type",
      labelNames: ["type"] as const,
      registers,
    }),
    matches: new Counter({
      name: "chainsift_match_matches_total",
      help: "Rule matches found, by target type",
      labelNames: ["type"] as const,
      registers,
    }),
    alerts: new Counter({
      name: "chainsift_match_alerts_total",
      help: "Alerts emitted by the confirmation tracker, by status (pending, confirmed, removed)",
      labelNames: ["status"] as const,
      registers,
    }),
    stateUnread: new Counter({
      name: "chainsift_match_state_unread_total",
      help: "State-condition readings not applied, by kind: over_budget and unavailable (skipped, logged), error (the block is retried)",
      labelNames: ["kind"] as const,
      registers,
    }),
    watch(source) {
      sources.add(source);
      return () => sources.delete(source);
    },
  };
});

/** Counts emitted alerts by status (pure apart from the counter). */
export function countAlerts(metrics: MatchMetrics, alerts: ReadonlyArray<{ status: AlertStatus }>): void {
  for (const a of alerts) metrics.alerts.inc({ status: a.status });
}
