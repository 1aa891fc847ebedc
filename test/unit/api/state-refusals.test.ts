import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../api/backtest/request.js";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import { validateRuleInput } from "../../../lib/rules/validate.js";
import { MAINNET_CHAIN, ruleBody, searchBody } from "../../support/rules.js";

const chain = MAINNET_CHAIN;
const stateCondition = {
  subject: { type: "balance", address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
  decimals: 18,
  comparison: { operator: "Less", threshold: "5", reset: "6" },
};
const rule = ruleBody();
const search = searchBody();

describe("state conditions: rules and backtests take them, saved searches refuse them", () => {
  it("a rule with a well-formed stateCondition validates and keeps it", () => {
    const checked = validateRuleInput({ ...rule, stateCondition }, "create", [chain]);
    expect(checked.ok ? (checked.value as Record<string, unknown>).stateCondition : checked.errors).toEqual(stateCondition);
  });
  it("a rule backtest with a stateCondition is accepted (it is read on the node, api/backtest/state-scan.ts)", () => {
    const parsed = parseBacktestRequest({ rule: { ...rule, stateCondition }, last: 10 }, [chain], 1000);
    expect(parsed.ok ? (parsed.value.rule as Record<string, unknown>).stateCondition : parsed.errors).toEqual(stateCondition);
  });
  it("a saved search with a stateCondition is refused with CS_RULE_NOT_SUPPORTED", () => {
    const refused = validateSearchInput({ ...search, stateCondition }, "create", [chain]);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([["CS_RULE_NOT_SUPPORTED", "stateCondition"]]);
  });
});
