import { describe, expect, it } from "vitest";
import { stateErrors, stateNotSupported } from "../../../../lib/rules/schema-state.js";

const A = "0x00000000000000000000000000000000000000aa";

describe("state block validation", () => {
  it("ignores an absent or null block", () => {
    expect(stateErrors({})).toEqual([]);
    expect(stateErrors({ stateCondition: null })).toEqual([]);
  });
  it("accepts a well-formed block, every: log on a contract, and a call without abi (the registered one)", () => {
    const ok = { subject: { type: "balance", address: A }, decimals: 18, comparison: { operator: "Less", threshold: "5" } };
    expect(stateErrors({ stateCondition: ok })).toEqual([]);
    expect(stateErrors({ stateCondition: { ...ok, subject: { type: "call", to: A, function: "f" }, every: "log" } })).toEqual([]);
    expect(stateErrors({ stateCondition: { ...ok, subject: { type: "storage", address: A, slot: "0x1" }, every: "log" } })).toEqual([]);
  });
  it("refuses every: log on a native balance, a non-array abi and abiId", () => {
    const ok = { decimals: 18, comparison: { operator: "Less", threshold: "5" } };
    const e = [
      ...stateErrors({ stateCondition: { ...ok, subject: { type: "balance", address: A }, every: "log" } }),
      ...stateErrors({ stateCondition: { ...ok, subject: { type: "call", to: A, function: "f", abi: "function f()", abiId: "x" } } }),
    ];
    expect(e.map((x) => [x.code, x.path])).toEqual([
      ["CS_RULE_INVALID", "stateCondition.every"],
      ["CS_RULE_INVALID", "stateCondition.subject.abi"],
      ["CS_RULE_INVALID", "stateCondition.subject.abiId"],
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
  it("checks a relative change", () => {
    const e = stateErrors({
      stateCondition: { subject: { type: "call", to: A, function: "totalSupply" }, comparison: { percent: "-3", direction: "sideways" } },
    });
    expect(e.map((x) => x.path)).toEqual(["stateCondition.comparison.percent", "stateCondition.comparison.direction"]);
  });
  it("takes {changed: true} alone", () => {
    const subject = { type: "storage", address: A, slot: "0x5" };
    expect(stateErrors({ stateCondition: { subject, comparison: { changed: true } } })).toEqual([]);
    for (const comparison of [{ changed: false }, { changed: true, percent: "1" }, { changed: "yes" }])
      expect(stateErrors({ stateCondition: { subject, comparison } }).map((x) => x.path)).toEqual(["stateCondition.comparison.changed"]);
  });
  it("unknown subject type", () => {
    expect(stateErrors({ stateCondition: { subject: { type: "nonce" }, comparison: { operator: "Less", threshold: "1" } } })[0]?.path).toBe(
      "stateCondition.subject.type",
    );
  });
});
