/**
 * Unit tests of rule evaluation (lib/match/evaluate.ts): every operator, exact uint256
 * comparison in decimal and hex, case handling, Equals any, Inspect on objects and arrays
 * (one element must satisfy all nested definitions together), useScaledValue, dotted paths.
 */
import { describe, expect, it } from "vitest";
import { type EventEntity, eventEntity } from "../../../../lib/match/entities.js";
import { type AnyDefinition, compileDefinitions, evaluate, RuleCompileError } from "../../../../lib/match/evaluate.js";
import type { EventRecord, Quantity } from "../../../../lib/records.js";
import type { TargetDefinition } from "../../../../lib/rules/model.js";
import { transferAbove } from "../../../support/rules.js";

const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const FROM = "0x28c6c06298d514db089934071355e5743bf21d60";
const TO = "0x1111111254fb6c44bac0bed2854e76f90643097d";

const q = (n: bigint): Quantity => ({ num: Number(n), raw: `0x${n.toString(16)}` });

/** A USDT Transfer of 1500.5 USDT (6 decimals), with `scaled` known. */
function usdtTransfer(amount = 1_500_500_000n, scaled: number | null = 1500.5): EventEntity {
  const ev: EventRecord = {
    event: "Transfer",
    signature: "Transfer(address,address,uint256)",
    standard: "erc20",
    source: "standard",
    args: [
      { name: "from", pos: 0, value: { hex: FROM, num: null, scaled: null, type: "address" } },
      { name: "to", pos: 1, value: { hex: TO, num: null, scaled: null, type: "address" } },
      { name: "value", pos: 2, value: { hex: `0x${amount.toString(16)}`, num: Number(amount), scaled, type: "uint256" } },
    ],
    logIndex: q(7n),
    transactionIndex: q(3n),
    transactionHash: `0x${"ab".repeat(32)}`,
    address: USDT,
    blockHash: `0x${"cd".repeat(32)}`,
    blockNumber: q(17_053_184n),
    error: null,
    str: "Transfer(…)",
    timestamp: "2023-04-15T15:07:23",
  };
  return eventEntity(ev);
}

const d = (
  name: string,
  operator: AnyDefinition["operator"],
  value?: string | string[],
  extra: Partial<AnyDefinition> = {},
): AnyDefinition => ({
  name,
  operator,
  value: value ?? null,
  ...extra,
});
const inspect = (name: string, nested: AnyDefinition[]): AnyDefinition => ({ name, operator: "Inspect", operatorParameters: nested });
const ev = (defs: AnyDefinition[], entity: unknown = usdtTransfer()) => evaluate(defs, entity);

describe("ordering operators", () => {
  it("Greater / Greater or Equal / Less / Less or Equal on a quantity, decimal and hex", () => {
    const n = "17053184";
    expect(ev([d("blockNumber", "Greater", "17053183")])).toBe(true);
    expect(ev([d("blockNumber", "Greater", n)])).toBe(false);
    expect(ev([d("blockNumber", "Greater or Equal", n)])).toBe(true);
    expect(ev([d("blockNumber", "Greater or Equal", "17053185")])).toBe(false);
    expect(ev([d("blockNumber", "Less", "17053185")])).toBe(true);
    expect(ev([d("blockNumber", "Less", n)])).toBe(false);
    expect(ev([d("blockNumber", "Less or Equal", n)])).toBe(true);
    expect(ev([d("blockNumber", "Less or Equal", "17053183")])).toBe(false);
    expect(ev([d("blockNumber", "Greater", "0x10435ff")])).toBe(true);
    expect(ev([d("blockNumber", "Greater", "0x1043600")])).toBe(false);
    expect(ev([d("blockNumber", "Less", "0X1043601")])).toBe(true);
    expect(ev([d("blockNumber", "Greater", "17053183.99")])).toBe(true);
    expect(ev([d("blockNumber", "Less", "1.7053185e7")])).toBe(true);
  });

  it("uint256 beyond 2^64 compares exactly, decimal and hex, where doubles cannot tell values apart", () => {
    const big = (1n << 200n) + 1n;
    const tx = { value: q(big), entityId: "x", blockHash: "0x", blockNumber: q(1n) };
    expect(Number(big)).toBe(Number(big - 1n)); // the double is useless here
    expect(evaluate([d("value", "Greater", (big - 1n).toString())], tx)).toBe(true);
    expect(evaluate([d("value", "Greater", big.toString())], tx)).toBe(false);
    expect(evaluate([d("value", "Greater or Equal", big.toString())], tx)).toBe(true);
    expect(evaluate([d("value", "Less", (big + 1n).toString())], tx)).toBe(true);
    expect(evaluate([d("value", "Less", big.toString())], tx)).toBe(false);
    expect(evaluate([d("value", "Equals", big.toString())], tx)).toBe(true);
    expect(evaluate([d("value", "Equals", (big - 1n).toString())], tx)).toBe(false);
    expect(evaluate([d("value", "Equals", `0x${big.toString(16).toUpperCase()}`)], tx)).toBe(true);
    expect(evaluate([d("value", "Greater", `0x${(big - 1n).toString(16)}`)], tx)).toBe(true);
    expect(evaluate([d("value", "Less or Equal", `0x${(big - 1n).toString(16)}`)], tx)).toBe(false);
    // max uint256
    const max = (1n << 256n) - 1n;
    const maxTx = { value: q(max) };
    expect(evaluate([d("value", "Equals", max.toString())], maxTx)).toBe(true);
    expect(evaluate([d("value", "Greater", (max - 1n).toString())], maxTx)).toBe(true);
  });

  it("event arg values compare exactly through their hex (value.num is only the nearest double)", () => {
    const amount = (1n << 70n) + 3n;
    const e = usdtTransfer(amount, null);
    const arg = (op: AnyDefinition["operator"], v: string) => [inspect("args", [d("name", "Equals", "value"), d("value", op, v)])];
    expect(ev(arg("Greater", (amount - 1n).toString()), e)).toBe(true);
    expect(ev(arg("Greater", amount.toString()), e)).toBe(false);
    expect(ev(arg("Equals", amount.toString()), e)).toBe(true);
    expect(ev(arg("Equals", (amount + 1n).toString()), e)).toBe(false);
    expect(ev(arg("Less", `0x${(amount + 1n).toString(16)}`), e)).toBe(true);
    // value.num is a double: exact comparison there is impossible, and it is documented as such
    expect(ev([inspect("args", [d("name", "Equals", "value"), d("value.num", "Greater", (amount - 1n).toString())])], e)).toBe(false);
  });

  it("negative int arguments (-0x… hex) compare as negative numbers", () => {
    const e = { args: [{ name: "amount0", pos: 0, value: { hex: "-0x64", num: -100, scaled: null, type: "int256" } }] };
    expect(evaluate([inspect("args", [d("value", "Less", "0")])], e)).toBe(true);
    expect(evaluate([inspect("args", [d("value", "Equals", "-100")])], e)).toBe(true);
    expect(evaluate([inspect("args", [d("value", "Greater", "-101")])], e)).toBe(true);
    expect(evaluate([inspect("args", [d("value", "Greater", "-0x63")])], e)).toBe(false);
  });

  it("is false on non-numbers, either side", () => {
    expect(ev([d("event", "Greater", "A")])).toBe(false);
    expect(ev([d("event", "Less", "Z")])).toBe(false);
    expect(ev([d("blockNumber", "Greater", "abc")])).toBe(false);
    expect(ev([d("timestamp", "Greater or Equal", "2020-01-01T00:00:00")])).toBe(false);
  });
});

describe("Equals family", () => {
  it("Equals is numeric when both sides are numeric, else case-sensitive", () => {
    expect(evaluate([d("x", "Equals", "16")], { x: "0x10" })).toBe(true);
    expect(evaluate([d("x", "Equals", "0x10")], { x: 16 })).toBe(true);
    expect(evaluate([d("x", "Equals", "1.50")], { x: 1.5 })).toBe(true);
    expect(evaluate([d("x", "Equals", "0x0010")], { x: "16" })).toBe(true);
    expect(evaluate([d("x", "Equals", "17")], { x: "0x10" })).toBe(false);
    expect(ev([d("event", "Equals", "Transfer")])).toBe(true);
    expect(ev([d("event", "Equals", "transfer")])).toBe(false);
    expect(ev([d("event", "Equals (ignore case)", "transfer")])).toBe(true);
    expect(ev([d("event", "Equals (ignore case)", "TRANSFER")])).toBe(true);
    expect(ev([d("event", "Equals (ignore case)", "Approval")])).toBe(false);
  });

  it("Equals on a 0x address ignores letter case (hex is numeric): checksummed equals lower-case", () => {
    expect(ev([d("address", "Equals", USDT.toLowerCase())])).toBe(true);
    expect(ev([d("address", "Equals", USDT.toUpperCase().replace("0X", "0x"))])).toBe(true);
    expect(ev([d("address", "Equals (ignore case)", USDT.toLowerCase())])).toBe(true);
    expect(ev([d("address", "Equals", "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")])).toBe(false);
    // event arg addresses are lower-case hex; checksummed rule values match them
    expect(ev([inspect("args", [d("name", "Equals", "to"), d("value", "Equals", "0x1111111254FB6C44bAC0beD2854e76F90643097d")])])).toBe(
      true,
    );
  });

  it("Equals any / Equals any (ignore case)", () => {
    expect(ev([d("event", "Equals any", ["Approval", "Transfer"])])).toBe(true);
    expect(ev([d("event", "Equals any", ["Approval", "transfer"])])).toBe(false);
    expect(ev([d("event", "Equals any (ignore case)", ["approval", "transfer"])])).toBe(true);
    expect(ev([d("event", "Equals any (ignore case)", ["approval", "swap"])])).toBe(false);
    expect(ev([d("blockNumber", "Equals any", ["1", "0x1043600"])])).toBe(true);
    expect(ev([d("blockNumber", "Equals any", ["1", "2"])])).toBe(false);
    expect(ev([d("address", "Equals any", ["0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2", USDT.toLowerCase()])])).toBe(true);
  });

  it("bool values equal true/false and 1/0", () => {
    const e = { args: [{ name: "approved", pos: 1, value: { hex: "0x1", num: 1, scaled: null, type: "bool" } }], removed: false };
    expect(evaluate([inspect("args", [d("value", "Equals", "true")])], e)).toBe(true);
    expect(evaluate([inspect("args", [d("value", "Equals", "1")])], e)).toBe(true);
    expect(evaluate([inspect("args", [d("value", "Equals", "false")])], e)).toBe(false);
    expect(evaluate([d("removed", "Equals", "false")], e)).toBe(true);
  });

  it("a multi-valued attribute matches when one value does (arrays, dotted paths through arrays)", () => {
    const log = { topics: ["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef", `0x${"0".repeat(24)}${FROM.slice(2)}`] };
    expect(evaluate([d("topics", "Equals", "0xDDF252AD1BE2C89B69C2B068FC378DAA952BA7F163C4A11628F55A4DF523B3EF")], log)).toBe(true);
    expect(evaluate([d("topics", "Equals", "0x01")], log)).toBe(false);
    expect(ev([d("args.name", "Equals", "to")])).toBe(true);
    expect(ev([d("args.name", "Equals", "spender")])).toBe(false);
    expect(ev([d("args.value.scaled", "Greater", "1500")])).toBe(true);
  });

  it("missing or null attributes match no operator", () => {
    const tx = { to: null, from: FROM };
    for (const op of ["Greater", "Less", "Equals", "Equals (ignore case)"] as const) {
      expect(evaluate([d("to", op, "0")], tx)).toBe(false);
      expect(evaluate([d("nope", op, "0")], tx)).toBe(false);
      expect(evaluate([d("to", op, "null")], tx)).toBe(false);
    }
    expect(evaluate([d("to", "Equals any", ["null", ""])], tx)).toBe(false);
    expect(evaluate([d("constructor", "Equals any", ["function Object() { [native code] }"])], tx)).toBe(false);
  });
});

describe("Inspect", () => {
  it("steps into an object", () => {
    expect(ev([inspect("blockNumber", [d("num", "Equals", "17053184"), d("raw", "Equals", "0x1043600")])])).toBe(true);
    expect(ev([inspect("blockNumber", [d("num", "Equals", "17053184"), d("raw", "Equals", "0x1")])])).toBe(false);
    expect(ev([inspect("event", [d("length", "Equals", "8")])])).toBe(false); // not an object
    expect(ev([inspect("missing", [])])).toBe(false);
  });

  it("on an array, one element must satisfy ALL nested definitions together", () => {
    // name=from and value=TO exist, but on different elements: no match (like an ES nested query)
    expect(ev([inspect("args", [d("name", "Equals", "from"), d("value", "Equals", TO)])])).toBe(false);
    expect(ev([inspect("args", [d("name", "Equals", "to"), d("value", "Equals", TO)])])).toBe(true);
    expect(ev([inspect("args", [d("name", "Equals", "from"), d("value", "Equals", FROM)])])).toBe(true);
    expect(ev([inspect("args", [d("pos", "Equals", "2"), d("value", "Greater", "1500500000")])])).toBe(false);
    expect(ev([inspect("args", [d("pos", "Equals", "2"), d("value", "Greater or Equal", "1500500000")])])).toBe(true);
  });

  it("goes two levels deep (third-level definitions)", () => {
    const deep = [
      inspect("args", [
        d("name", "Equals", "value"),
        inspect("value", [d("type", "Equals", "uint256"), d("hex", "Equals", "0x596fd020")] as never),
      ]),
    ];
    expect(ev(deep as AnyDefinition[])).toBe(true);
    const wrong = [inspect("args", [d("name", "Equals", "value"), inspect("value", [d("type", "Equals", "address")] as never)])];
    expect(ev(wrong as AnyDefinition[])).toBe(false);
  });
});

describe("useScaledValue", () => {
  const scaledRule = (op: AnyDefinition["operator"], v: string) => [
    inspect("args", [d("name", "Equals", "value"), d("value", op, v, { useScaledValue: true })]),
  ];

  it("compares value.scaled (token units) exactly", () => {
    expect(ev(scaledRule("Greater", "1000"))).toBe(true);
    expect(ev(scaledRule("Greater", "1500.5"))).toBe(false);
    expect(ev(scaledRule("Equals", "1500.50"))).toBe(true);
    expect(ev(scaledRule("Greater or Equal", "1500.5"))).toBe(true);
    expect(ev(scaledRule("Less", "1500.51"))).toBe(true);
    expect(ev(scaledRule("Greater", "2000"))).toBe(false);
  });

  it("never matches when decimals are unknown (scaled null), whatever the operator", () => {
    const unknown = usdtTransfer(1_500_500_000n, null);
    for (const [op, v] of [
      ["Greater", "-1"],
      ["Less", "1e100"],
      ["Greater or Equal", "0"],
      ["Equals", "1500500000"],
      ["Equals (ignore case)", "null"],
    ] as const) {
      expect(ev(scaledRule(op, v), unknown)).toBe(false);
    }
    expect(
      ev(
        [inspect("args", [d("name", "Equals", "value"), d("value", "Equals any", ["1500500000", "null"], { useScaledValue: true })])],
        unknown,
      ),
    ).toBe(false);
    // the raw amount still matches without useScaledValue
    expect(ev([inspect("args", [d("name", "Equals", "value"), d("value", "Greater", "1000")])], unknown)).toBe(true);
  });

  it("never matches an attribute without a scaled variant", () => {
    expect(ev([d("blockNumber", "Greater", "0", { useScaledValue: true })])).toBe(false);
  });

  it("the documented 'Transfer of more than 1000 USDT' rule", () => {
    const rule = transferAbove("0xdac17f958d2ee523a2206206994597c13d831ec7", "1000");
    expect(evaluate(rule, usdtTransfer())).toBe(true);
    expect(evaluate(rule, usdtTransfer(999_000_000n, 999))).toBe(false);
    expect(evaluate(rule, usdtTransfer(1_500_500_000n, null))).toBe(false);
  });
});

describe("equality operators without value (docs/rules.md: a comparison without value)", () => {
  const ops = ["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"] as const;

  it("hold when the attribute is missing or null, not when it has a value (absent and null value alike)", () => {
    for (const operator of ops) {
      for (const def of [
        { name: "to", operator },
        { name: "to", operator, value: null },
      ] as AnyDefinition[]) {
        expect(evaluate([def], { from: FROM }), `${operator} missing`).toBe(true);
        expect(evaluate([def], { from: FROM, to: null }), `${operator} null`).toBe(true);
        expect(evaluate([def], { from: FROM, to: TO }), `${operator} present`).toBe(false);
        expect(evaluate([def], { to: "" }), `${operator} empty string is a value`).toBe(false);
        expect(evaluate([def], { to: 0 }), `${operator} 0 is a value`).toBe(false);
        expect(evaluate([def], { to: false }), `${operator} false is a value`).toBe(false);
        expect(evaluate([def], { to: {} }), `${operator} an object is a value`).toBe(false);
      }
    }
  });

  it("a contract creation: Transaction with to null", () => {
    const creation: TargetDefinition[] = [{ name: "to", operator: "Equals" }];
    expect(evaluate(creation, { hash: "0x1", from: FROM, to: null, contractAddress: USDT })).toBe(true);
    expect(evaluate(creation, { hash: "0x2", from: FROM, to: USDT, contractAddress: null })).toBe(false);
  });

  it("arrays and dotted paths through arrays: no value when no element has one", () => {
    const def: AnyDefinition[] = [{ name: "args.note", operator: "Equals" }];
    expect(ev(def)).toBe(true); // no argument has `note`
    expect(evaluate(def, { args: [{ note: null }, {}] })).toBe(true);
    expect(evaluate(def, { args: [{ note: null }, { note: "x" }] })).toBe(false);
    expect(evaluate([{ name: "topics", operator: "Equals" }], { topics: [] })).toBe(true);
    expect(evaluate([{ name: "topics", operator: "Equals" }], { topics: [null] })).toBe(true);
    expect(evaluate([{ name: "topics", operator: "Equals" }], { topics: ["0x1"] })).toBe(false);
  });

  it("inside Inspect (second level): an element without the attribute", () => {
    const defs: AnyDefinition[] = [inspect("args", [d("name", "Equals", "value"), { name: "value.scaled", operator: "Equals" }])];
    expect(ev(defs, usdtTransfer(1_500_500_000n, null))).toBe(true); // decimals unknown: scaled is null
    expect(ev(defs, usdtTransfer())).toBe(false);
    // with useScaledValue false it is the plain comparison
    const plain: AnyDefinition[] = [inspect("args", [{ name: "missing", operator: "Equals any", useScaledValue: false }])];
    expect(ev(plain)).toBe(true);
  });

  it("combines with other definitions (AND)", () => {
    expect(ev([d("event", "Equals", "Transfer"), { name: "error", operator: "Equals" }])).toBe(true);
    expect(ev([d("event", "Equals", "Approval"), { name: "error", operator: "Equals" }])).toBe(false);
    expect(ev([{ name: "address", operator: "Equals (ignore case)" }])).toBe(false);
  });
});

describe("compilation", () => {
  it("an empty targetMap matches everything; all definitions must hold", () => {
    expect(ev([])).toBe(true);
    expect(ev([d("event", "Equals", "Transfer"), d("blockNumber", "Less", "1")])).toBe(false);
  });

  it("throws RuleCompileError on unknown operators and malformed values", () => {
    expect(() => compileDefinitions([d("event", "Matches", "x")])).toThrow(RuleCompileError);
    expect(() => compileDefinitions([d("event", "Greater", ["1", "2"])])).toThrow(/string value/);
    expect(() => compileDefinitions([d("event", "Greater")])).toThrow(RuleCompileError);
    expect(() => compileDefinitions([d("event", "Less or Equal")])).toThrow(/string value/);
    expect(() => compileDefinitions([d("value", "Equals", undefined, { useScaledValue: true })])).toThrow(/useScaledValue/);
    expect(() => compileDefinitions([{ name: "", operator: "Equals", value: "x" }])).toThrow(/name/);
    // lenient: a one-element array where a string is expected, a string for Equals any
    expect(ev([d("event", "Equals", ["Transfer"])])).toBe(true);
    expect(ev([d("event", "Equals any", "Transfer")])).toBe(true);
  });

  it("memoises per definitions array", () => {
    const defs = [d("event", "Equals", "Transfer")];
    expect(evaluate(defs, usdtTransfer())).toBe(true);
    expect(evaluate(defs, { event: "Approval" })).toBe(false);
  });
});
