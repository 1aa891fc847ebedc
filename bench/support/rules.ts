/**
 * Rules of the match benchmarks (bench/match.ts, bench/match-windows.ts): enabled, on Ethereum
 * mainnet, 12 confirmations, one webhook that is never called (the benchmarks stop at the tracker).
 * @module
 */
import type { Rule, TargetDefinition, TargetType } from "../../lib/rules/model.js";

/** Ethereum mainnet, the chain of the benchmarks' rules and entities. */
export const BENCH_CHAIN = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" } as const;

/** A benchmark rule with `targetMap` on `targetType`, plus `extra` members (e.g. `window`). */
export function benchRule(id: string, targetType: TargetType, targetMap: TargetDefinition[], extra: Partial<Rule> = {}): Rule {
  return {
    id,
    accountId: "bench",
    name: id,
    version: 1,
    state: "enabled",
    sendPendingAlerts: false,
    description: null,
    maxConfirmationCount: 12,
    ...BENCH_CHAIN,
    config: { targetType, targetMap, alerts: [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1/hook" } }] },
    createdAt: "2024-01-01T00:00:00.000Z",
    updatedAt: "2024-01-01T00:00:00.000Z",
    ...extra,
  };
}
