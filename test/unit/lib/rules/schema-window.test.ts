import { describe, expect, it } from "vitest";
import { absenceConfigOf, WINDOW_CAPS, windowConfigOf, windowErrors } from "../../../../lib/rules/schema-window.js";
import { validateRuleInput } from "../../../../lib/rules/validate.js";

const count = { blocks: 10, aggregate: { fn: "count" }, operator: "Greater", threshold: "20" };
const codes = (w: unknown) => windowErrors({ window: w }).map((e) => [e.code, e.path]);
const chains = [{ technology: "ethereum", blockchain: "ethereum", network: "mainnet" }];
const rule = (window: unknown) => ({
  name: "r",
  maxConfirmationCount: 0,
  technology: "ethereum",
  blockchain: "ethereum",
  network: "mainnet",
  config: {
    targetType: "Event",
    targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }],
    alerts: [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }],
  },
  window,
});

describe("window validation", () => {
  it("accepts count, sum and distinct windows by blocks or seconds, with or without groupBy; null or absent is no window", () => {
    expect(codes(count)).toEqual([]);
    expect(
      codes({
        seconds: 3600,
        aggregate: { fn: "sum", field: "args.value", useScaledValue: true },
        operator: "Greater",
        threshold: "1000000",
        reset: "500000",
      }),
    ).toEqual([]);
    expect(
      codes({
        blocks: 100,
        aggregate: { fn: "distinct", field: "args.from" },
        operator: "Greater or Equal",
        threshold: "50",
        groupBy: "address",
        maxGroups: 1000,
      }),
    ).toEqual([]);
    expect(windowErrors({})).toEqual([]);
    expect(windowErrors({ window: null })).toEqual([]);
    const checked = validateRuleInput(rule(count), "create", chains);
    expect(checked.ok).toBe(true);
  });
  it("refuses a window above its cap with CS_RULE_WINDOW_TOO_LARGE naming the cap", () => {
    const e = windowErrors({ window: { ...count, blocks: WINDOW_CAPS.blocks + 1 } });
    expect(e.map((x) => [x.code, x.path])).toEqual([["CS_RULE_WINDOW_TOO_LARGE", "window.blocks"]]);
    expect(e[0]?.message).toContain(String(WINDOW_CAPS.blocks));
    expect(codes({ ...count, blocks: undefined, seconds: WINDOW_CAPS.seconds + 1 })).toEqual([
      ["CS_RULE_WINDOW_TOO_LARGE", "window.seconds"],
    ]);
    expect(codes({ ...count, blocks: WINDOW_CAPS.blocks })).toEqual([]);
  });
  it("refuses a sum over an attribute that is never a number", () => {
    expect(codes({ ...count, aggregate: { fn: "sum", field: "address" } })).toEqual([
      ["CS_RULE_AGGREGATE_NOT_NUMERIC", "window.aggregate.field"],
    ]);
    expect(codes({ ...count, aggregate: { fn: "sum", field: "transactionHash" } })).toEqual([
      ["CS_RULE_AGGREGATE_NOT_NUMERIC", "window.aggregate.field"],
    ]);
    // distinct over an address is what distinct is for.
    expect(codes({ ...count, aggregate: { fn: "distinct", field: "address" } })).toEqual([]);
  });
  it("refuses maxGroups above the cap with CS_RULE_GROUPBY_CARDINALITY", () => {
    expect(codes({ ...count, groupBy: "address", maxGroups: WINDOW_CAPS.maxGroups + 1 })).toEqual([
      ["CS_RULE_GROUPBY_CARDINALITY", "window.maxGroups"],
    ]);
  });
  it("refuses malformed windows with CS_RULE_INVALID at the member", () => {
    expect(codes({ ...count, seconds: 5 })).toEqual([["CS_RULE_INVALID", "window"]]);
    expect(codes({ ...count, blocks: undefined })).toEqual([["CS_RULE_INVALID", "window"]]);
    expect(codes({ ...count, blocks: 0 })).toEqual([["CS_RULE_INVALID", "window.blocks"]]);
    expect(codes({ ...count, threshold: "lots" })).toEqual([["CS_RULE_INVALID", "window.threshold"]]);
    expect(codes({ ...count, operator: "Equals" })).toEqual([["CS_RULE_INVALID", "window.operator"]]);
    expect(codes({ ...count, aggregate: { fn: "median" } })[0]?.[1]).toMatch(/^window\.aggregate/);
    expect(codes({ ...count, extra: 1 })).toEqual([["CS_RULE_INVALID", "window.extra"]]);
    // A reset on the firing side of Greater 20.
    expect(codes({ ...count, reset: "30" })).toEqual([["CS_RULE_INVALID", "window.reset"]]);
    const refused = validateRuleInput(rule({ ...count, blocks: 0 }), "create", chains);
    expect(refused.ok ? [] : refused.errors.map((e) => e.path)).toEqual(["window.blocks"]);
  });
  it("maps to the arithmetic's configuration", () => {
    expect(windowConfigOf({ ...count, groupBy: "from", maxGroups: 5 } as never, 64)).toEqual({
      span: { blocks: 10 },
      aggregate: "count",
      operator: "Greater",
      threshold: "20",
      grouped: true,
      maxGroups: 5,
      reorgDepth: 64,
    });
    expect(windowConfigOf({ ...count, blocks: undefined, seconds: 60 } as never).span).toEqual({ seconds: 60 });
  });
  it("absence: exactly one of blocks or seconds within the caps, not together with window", () => {
    const abs = (a: unknown, w?: unknown) => windowErrors({ absence: a, ...(w ? { window: w } : {}) }).map((e) => [e.code, e.path]);
    expect(abs({ blocks: 300 })).toEqual([]);
    expect(abs({ seconds: 3600 })).toEqual([]);
    expect(abs({ blocks: 300, seconds: 1 })).toEqual([["CS_RULE_INVALID", "absence"]]);
    expect(abs({ blocks: WINDOW_CAPS.blocks + 1 })).toEqual([["CS_RULE_WINDOW_TOO_LARGE", "absence.blocks"]]);
    expect(abs({ blocks: 0 })).toEqual([["CS_RULE_INVALID", "absence.blocks"]]);
    expect(abs({ blocks: 5, x: 1 })).toEqual([["CS_RULE_INVALID", "absence.x"]]);
    expect(abs({ blocks: 5 }, count)).toEqual([["CS_RULE_INVALID", "absence"]]);
    expect(validateRuleInput({ ...rule(undefined), absence: { blocks: 300 } }, "create", chains).ok).toBe(true);
    expect(absenceConfigOf({ blocks: 300 }, 64)).toMatchObject({
      span: { blocks: 300 },
      aggregate: "count",
      operator: "Less",
      threshold: "1",
      reorgDepth: 64,
    });
  });
});
