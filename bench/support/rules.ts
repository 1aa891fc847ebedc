/**
 * Rules of the match benchmarks (bench/match.ts, bench/match-windows.ts): enabled, on Ethereum
 * mainnet, 12 confirmations, one webhook that is never called (the benchmarks stop at the tracker).
 * @module
 */
import type { Rule, TargetDefinition, TargetType } from "../../lib/rules/model.js";
import { MAINNET_CHAIN, storedRule } from "../../test/support/rules.js";

/** Ethereum mainnet, the chain of the benchmarks' rules and entities. */
export const BENCH_CHAIN = MAINNET_CHAIN;

/** A benchmark rule with `targetMap` on `targetType`, plus `extra` members (e.g. `window`). */
export function benchRule(id: string, targetType: TargetType, targetMap: TargetDefinition[], extra: Partial<Rule> = {}): Rule {
  return storedRule({
    id,
    accountId: "bench",
    sendPendingAlerts: false,
    maxConfirmationCount: 12,
    config: { targetType, targetMap, alerts: [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1/hook" } }] },
    ...extra,
  });
}
