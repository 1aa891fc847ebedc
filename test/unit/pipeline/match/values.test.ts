/**
 * Unit tests of the value algebra (lib/match/values.ts): canonical numeric keys, exact
 * decimals, the allocation-free fast paths (hex scan, small numbers, exact doubles) agreeing with
 * the exact bigint path on random inputs (seeded PRNG), scalar expansion of typed values.
 */
import { describe, expect, it } from "vitest";
import { prng } from "../../../../bench/support/prng.js";
import { evaluate } from "../../../../lib/match/evaluate.js";
import {
  attributeKeys,
  compareDec,
  exactDouble,
  forEachScalar,
  hexMatchIndex,
  numericKey,
  parseDecimalString,
  smallNumber,
  toDec,
  valueKey,
} from "../../../../lib/match/values.js";

describe("numeric keys", () => {
  it("equal numbers give equal keys whatever the notation", () => {
    for (const v of ["0x10", "16", 16, "1.6e1", "0x0010", "0X10", "+16", "16.000", 16n]) expect(numericKey(v as never)).toBe("0x10");
    for (const v of ["-0x10", "-16", -16, "-1.6e1"]) expect(numericKey(v as never)).toBe("-0x10");
    for (const v of ["0", "0x0", "-0", "0.0", "0x000", 0, "-0x0"]) expect(numericKey(v as never)).toBe("0x0");
    expect(numericKey("1.5")).toBe(numericKey("1.50"));
    expect(numericKey("1.5")).toBe(numericKey(1.5));
    expect(numericKey("1.5")).not.toBe(numericKey("1.05"));
    const a = "0x1111111254fb6c44bac0bed2854e76f90643097d";
    expect(numericKey(a)).toBe(a); // canonical hex is its own key
    expect(numericKey("0x1111111254FB6C44bAC0beD2854e76F90643097d")).toBe(a);
  });

  it("non-numbers have no numeric key", () => {
    for (const v of [
      "",
      "0x",
      "abc",
      "Transfer",
      "1e999",
      "Infinity",
      "NaN",
      "0xg1",
      "1.2.3",
      "--1",
      "value",
      null,
      Number.NaN,
      Number.POSITIVE_INFINITY,
    ]) {
      expect(numericKey(v as never)).toBeNull();
    }
    expect(valueKey("Transfer")).toBe("s:transfer");
    expect(valueKey("0xABC")).toBe("0xabc");
  });

  it("parses exact decimals", () => {
    expect(parseDecimalString("1.25e2")).toEqual({ m: 125n, e: 0 });
    expect(parseDecimalString("-.5")).toEqual({ m: -5n, e: -1 });
    expect(parseDecimalString(`${(1n << 255n).toString()}`)).toEqual({ m: 1n << 255n, e: 0 });
    expect(compareDec(toDec("0.1") as never, toDec(0.1) as never)).toBe(0);
    expect(compareDec(toDec("0.30000000000000004") as never, toDec(0.1 + 0.2) as never)).toBe(0);
  });
});

describe("fast paths agree with the exact path", () => {
  it("hexMatchIndex", () => {
    expect(hexMatchIndex("0x00AbC", ["0x1", "0xabc"])).toBe(1);
    expect(hexMatchIndex("0xabd", ["0xabc"])).toBe(-1);
    expect(hexMatchIndex("0x000", ["0x1", "0x0"])).toBe(1);
    expect(hexMatchIndex("abc", ["0xabc"])).toBeUndefined();
    expect(hexMatchIndex("0xzz", ["0x0"])).toBeUndefined();
    expect(hexMatchIndex("-0x1", ["-0x1"])).toBeUndefined();
    const rnd = prng(9);
    for (let i = 0; i < 2000; i++) {
      const digits = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => "00aAfF19"[Math.floor(rnd() * 8)]).join("");
      const s = `0x${digits}`;
      const keys = [numericKey(`0x${Math.floor(rnd() * 300).toString(16)}`) as string, numericKey(s.toLowerCase()) as string];
      const idx = hexMatchIndex(s, [keys[0] as string]);
      expect(idx === 0).toBe(numericKey(s) === keys[0]);
      expect(hexMatchIndex(s, keys)).toBeGreaterThanOrEqual(0);
    }
  });

  it("smallNumber and exactDouble", () => {
    expect(smallNumber("0x10")).toBe(16);
    expect(smallNumber("16")).toBe(16);
    expect(smallNumber(`0x${"f".repeat(14)}`)).toBeUndefined();
    expect(smallNumber("1234567890123456")).toBeUndefined();
    expect(smallNumber("1.5")).toBeUndefined();
    expect(smallNumber(1.5)).toBe(1.5);
    expect(smallNumber(Number.NaN)).toBeUndefined();
    expect(exactDouble(toDec("1000") as never)).toBe(1000);
    expect(exactDouble(toDec("1500.5") as never)).toBe(1500.5);
    expect(exactDouble(toDec("0.1") as never)).toBe(0.1);
    expect(exactDouble(toDec("0.1000000000000000055511151231257827") as never)).toBeNull();
    expect(exactDouble(toDec(((1n << 53n) + 1n).toString()) as never)).toBeNull();
  });

  it("ordering operators: doubles and small integers against random rule values (seeded)", () => {
    const rnd = prng(4242);
    const values: (number | string)[] = [];
    for (let i = 0; i < 250; i++) {
      const mag = 10 ** Math.floor(rnd() * 30 - 10);
      const x = (rnd() - 0.3) * mag;
      values.push(x, Math.round(x), String(Math.round(Math.abs(x))), `0x${Math.floor(rnd() * 2 ** 40).toString(16)}`);
    }
    const rules: string[] = ["0", "1000", "0.1", "0.1000000000000000055511151231257827", "1e-7", "1500.5", String(2 ** 53 + 1), "-3.25"];
    for (let i = 0; i < 40; i++) rules.push(String(values[Math.floor(rnd() * values.length)]));
    for (const r of rules) {
      const rd = toDec(r);
      if (rd === null) continue;
      for (const v of values) {
        const vd = toDec(v) as NonNullable<ReturnType<typeof toDec>>;
        const c = compareDec(vd, rd);
        expect(evaluate([{ name: "x", operator: "Greater", value: r }], { x: v }), `${v} > ${r}`).toBe(c > 0);
        expect(evaluate([{ name: "x", operator: "Less or Equal", value: r }], { x: v }), `${v} <= ${r}`).toBe(c <= 0);
        expect(evaluate([{ name: "x", operator: "Equals", value: r }], { x: v }), `${v} == ${r}`).toBe(c === 0);
      }
    }
  });
});

describe("scalars and attribute keys", () => {
  const walk = (v: unknown) => {
    const out: [string, unknown][] = [];
    forEachScalar(v, (s, num) => {
      out.push([String(s), num]);
      return false;
    });
    return out;
  };

  it("expands typed values, quantities, arrays", () => {
    expect(walk({ hex: "0x1", num: 1, scaled: null, type: "bool" })).toEqual([["true", "0x1"]]);
    expect(walk({ hex: "0x6869", num: null, scaled: null, type: "string" })).toEqual([
      ["hi", "hi"],
      ["0x6869", "0x6869"],
    ]);
    expect(walk({ hex: '["0xaa","0xbb"]', num: null, scaled: null, type: "address[]" })).toEqual([
      ["0xaa", "0xaa"],
      ["0xbb", "0xbb"],
    ]);
    expect(walk({ num: 5, raw: "0x5" })).toEqual([["0x5", "0x5"]]);
    expect(walk([1, "a", null, true])).toEqual([
      ["1", 1],
      ["a", "a"],
      ["true", null],
    ]);
    expect(walk({ other: 1 })).toEqual([]);
  });

  it("attribute keys cover every way Equals can hold", () => {
    expect(attributeKeys("0xABC")).toEqual(["0xabc"]);
    expect(attributeKeys("Transfer")).toEqual(["s:transfer"]);
    expect(attributeKeys({ hex: "0x1", num: 1, scaled: null, type: "bool" })).toEqual(["0x1", "s:true"]);
    expect(attributeKeys({ hex: "0x00ab", num: null, scaled: null, type: "address" })).toEqual(["0xab"]);
    expect(attributeKeys(16)).toEqual(["0x10"]);
    expect(attributeKeys(false)).toEqual(["s:false"]);
    expect(attributeKeys(null)).toEqual([]);
  });
});
