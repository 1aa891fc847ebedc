/** Rule backtests take `In watchlist` conditions, except in window and absence rules (not evaluated there yet). */
import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../api/backtest/request.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const alerts = [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
const ruleWith = (targetMap: unknown[], extension: Record<string, unknown> = {}) => ({
  name: "r",
  maxConfirmationCount: 0,
  ...chain,
  config: { targetType: "Transaction", targetMap, alerts },
  ...extension,
});
const listed = { name: "from", operator: "In watchlist", value: "5b0c7a52-4a8f-4d7e-9a36-1f3f0e2a9c11" };

describe("In watchlist in backtests", () => {
  it("is accepted in a per-record rule", () => {
    const parsed = parseBacktestRequest({ rule: ruleWith([listed]), last: 10 }, [chain], 1000);
    expect(parsed.ok ? parsed.value.rule.config.targetMap : parsed.errors).toEqual([listed]);
  });
  it("is refused in a window rule with CS_RULE_NOT_SUPPORTED at rule.config.targetMap", () => {
    const window = { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "2" };
    const refused = parseBacktestRequest({ rule: ruleWith([listed], { window }), last: 10 }, [chain], 1000);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_NOT_SUPPORTED", "rule.config.targetMap"]]);
    const plain = { name: "from", operator: "Equals", value: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" };
    const accepted = parseBacktestRequest({ rule: ruleWith([plain], { window }), last: 10 }, [chain], 1000);
    expect(accepted.ok ? [] : accepted.errors).toEqual([]);
  });
});
