import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../api/backtest/request.js";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const window = { blocks: 10, aggregate: { fn: "count" }, operator: "Greater", threshold: "5" };
const alerts = [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
const rule = {
  name: "r",
  maxConfirmationCount: 0,
  ...chain,
  config: { targetType: "Event", targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }], alerts },
};
const search = { name: "s", maxConfirmationCount: 0, ...chain, kind: "event", query: { match_all: {} }, alerts };

describe("window: refused where it is not evaluated, accepted by rule backtests", () => {
  it("a saved search with a window is refused with CS_RULE_NOT_SUPPORTED; without one it is accepted", () => {
    const refused = validateSearchInput({ ...search, window }, "create", [chain]);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_NOT_SUPPORTED", "window"]]);
    expect(validateSearchInput(search, "create", [chain]).ok).toBe(true);
    expect(validateSearchInput({ ...search, window: null }, "create", [chain]).ok).toBe(true);
  });
  it("a rule backtest of a windowed or absence rule is accepted (its windows are replayed); a malformed window is still refused", () => {
    for (const extension of [{ window }, { absence: { blocks: 5 } }]) {
      const parsed = parseBacktestRequest({ rule: { ...rule, ...extension }, last: 10 }, [chain], 1000);
      expect(parsed.ok ? parsed.value.rule : parsed.errors).toMatchObject(extension);
    }
    const bad = parseBacktestRequest({ rule: { ...rule, window: { ...window, blocks: 10_001 } }, last: 10 }, [chain], 1000);
    expect(bad.ok ? [] : bad.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_WINDOW_TOO_LARGE", "rule.window.blocks"]]);
  });
});
