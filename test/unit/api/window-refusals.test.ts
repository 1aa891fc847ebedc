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

describe("window where it is not evaluated yet", () => {
  it("a saved search with a window is refused with CS_RULE_NOT_SUPPORTED; without one it is accepted", () => {
    const refused = validateSearchInput({ ...search, window }, "create", [chain]);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_NOT_SUPPORTED", "window"]]);
    expect(validateSearchInput(search, "create", [chain]).ok).toBe(true);
    expect(validateSearchInput({ ...search, window: null }, "create", [chain]).ok).toBe(true);
  });
  it("a rule backtest of a windowed rule is refused with CS_RULE_NOT_SUPPORTED at rule.window", () => {
    const refused = parseBacktestRequest({ rule: { ...rule, window }, last: 10 }, [chain], 1000);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_NOT_SUPPORTED", "rule.window"]]);
    expect(parseBacktestRequest({ rule, last: 10 }, [chain], 1000).ok).toBe(true);
  });
});
