import { describe, expect, it } from "vitest";
import { stateErrors, stateNotSupported } from "../../../../lib/rules/schema-state.js";

const A = "0x00000000000000000000000000000000000000aa";

describe("state block validation", () => {
  it("ignores an absent or null block", () => {
    expect(stateErrors({})).toEqual([]);
    expect(stateErrors({ stateCondition: null })).toEqual([]);
  });
  it("accepts a well-formed block, and refuses what is not evaluated yet (every: log, abiId)", () => {
    const ok = { subject: { type: "balance", address: A }, decimals: 18, comparison: { operator: "Less", threshold: "5" } };
    expect(stateErrors({ stateCondition: ok })).toEqual([]);
    const later = stateErrors({
      stateCondition: { ...ok, subject: { type: "call", to: A, function: "f", abiId: "x" }, every: "log" },
    });
    expect(later.map((x) => [x.code, x.path])).toEqual([
      ["CS_RULE_NOT_SUPPORTED", "stateCondition.every"],
      ["CS_RULE_NOT_SUPPORTED", "stateCondition.subject.abiId"],
    ]);
  });
  it("saved searches refuse a state condition, saying why", () => {
    const [ss] = stateNotSupported({ stateCondition: {} }, "saved searches");
    expect(ss).toMatchObject({ code: "CS_RULE_NOT_SUPPORTED", path: "stateCondition" });
    expect(ss?.message).toMatch(/not state readings/);
    expect(stateNotSupported({ stateCondition: null }, "saved searches")).toEqual([]);
    expect(stateNotSupported({ stateCondition: {} }, "saved searches")[0]?.code).toBe("CS_RULE_NOT_SUPPORTED");
  });
  it("names each malformed field with CS_RULE_INVALID", () => {
    const e = stateErrors({
      stateCondition: {
        subject: { type: "storage", address: "0x1", slot: "zz" },
        decimals: 2,
        every: { blocks: 0 },
        comparison: { operator: "Less", threshold: "1.234" },
      },
    });
    expect(e.map((x) => x.path)).toEqual([
      "stateCondition.subject.address",
      "stateCondition.subject.slot",
      "stateCondition.every",
      "stateCondition.comparison.threshold",
    ]);
    expect(new Set(e.map((x) => x.code))).toEqual(new Set(["CS_RULE_INVALID"]));
  });
  it("checks a view call's abi, and a relative change", () => {
    const e = stateErrors({
      stateCondition: { subject: { type: "call", to: A, function: "totalSupply" }, comparison: { percent: "-3", direction: "sideways" } },
    });
    expect(e.map((x) => x.path)).toEqual([
      "stateCondition.subject.abi",
      "stateCondition.comparison.percent",
      "stateCondition.comparison.direction",
    ]);
  });
  it("unknown subject type", () => {
    expect(stateErrors({ stateCondition: { subject: { type: "nonce" }, comparison: { operator: "Less", threshold: "1" } } })[0]?.path).toBe(
      "stateCondition.subject.type",
    );
  });
});
