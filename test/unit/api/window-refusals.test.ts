import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../api/backtest/request.js";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import { MAINNET_CHAIN, ruleBody, searchBody } from "../../support/rules.js";

const chain = MAINNET_CHAIN;
const window = { blocks: 10, aggregate: { fn: "count" }, operator: "Greater", threshold: "5" };
const rule = ruleBody();
const search = searchBody();

describe("window and absence: accepted on saved searches and in backtests, with the rules' codes", () => {
  it("a saved search carries window or absence beside its query; a malformed one is refused with the rules' codes at top-level paths", () => {
    for (const extension of [{ window }, { absence: { blocks: 5 } }, { window: null }]) {
      const checked = validateSearchInput({ ...search, ...extension }, "create", [chain]);
      expect(checked.ok ? checked.value : checked.errors).toMatchObject(extension);
    }
    const codes = (body: Record<string, unknown>) => {
      const checked = validateSearchInput({ ...search, ...body }, "create", [chain]);
      return checked.ok ? [] : checked.errors.map((e) => [e.code, e.path]);
    };
    expect(codes({ window: { ...window, blocks: 10_001 } })).toEqual([["CS_RULE_WINDOW_TOO_LARGE", "window.blocks"]]);
    expect(codes({ window: { ...window, aggregate: { fn: "sum", field: "from" } } })).toEqual([
      ["CS_RULE_AGGREGATE_NOT_NUMERIC", "window.aggregate.field"],
    ]);
    expect(codes({ window: { ...window, groupBy: "from", maxGroups: 1001 } })).toEqual([
      ["CS_RULE_GROUPBY_CARDINALITY", "window.maxGroups"],
    ]);
    expect(codes({ absence: { blocks: 3, seconds: 3 } })).toEqual([["CS_RULE_INVALID", "absence"]]);
    expect(codes({ window, absence: { blocks: 3 } })).toEqual([["CS_RULE_INVALID", "absence"]]);
  });
  it("an update (PUT) may add a window to a stored search", () => {
    const created = validateSearchInput(search, "create", [chain]);
    if (!created.ok) throw new Error("fixture refused");
    const stored = { ...created.value, id: "s1", accountId: "a", version: 1 } as never;
    const patch = validateSearchInput({ window }, "update", [chain], stored);
    expect(patch.ok ? patch.value : patch.errors).toEqual({ window });
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
