/**
 * Unit tests of the exact address set (lib/watchlists/address-set.ts) against a JS `Set` of the
 * lowercased addresses, over seeded random adds, removes and asks (the seed is printed): the same
 * answers in any letter case, through growth and removed slots; values that are not addresses are
 * never members.
 */
import { describe, expect, it } from "vitest";
import { prng } from "../../../../bench/support/prng.js";
import { AddressSet } from "../../../../lib/watchlists/address-set.js";

const hex = (rnd: () => number, n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join("");

describe("AddressSet", () => {
  it("answers as a Set of the lowercased addresses through adds, removes and growth", () => {
    const seed = 3401;
    console.log(`address-set seed ${seed}`);
    const rnd = prng(seed);
    // Few distinct tails, so that probes collide on the slot word and must compare the rest.
    const tails = Array.from({ length: 50 }, () => hex(rnd, 8));
    const pool = Array.from({ length: 6_000 }, (_, i) => `0x${hex(rnd, 32)}${i % 3 === 0 ? tails[i % 50] : hex(rnd, 8)}`);
    const set = new AddressSet();
    const model = new Set<string>();
    const cased = (a: string) => `0x${[...a.slice(2)].map((c) => (rnd() < 0.5 ? c.toUpperCase() : c)).join("")}`;
    for (let step = 0; step < 40_000; step++) {
      const a = pool[Math.floor(rnd() * pool.length)] as string;
      const r = rnd();
      if (r < 0.45) {
        expect(set.add(cased(a))).toBe(!model.has(a));
        model.add(a);
      } else if (r < 0.65) expect(set.delete(cased(a))).toBe(model.delete(a));
      else expect(set.has(cased(a))).toBe(model.has(a));
      expect(set.size).toBe(model.size);
    }
    for (const a of pool) expect(set.has(a)).toBe(model.has(a));
    // Grew from its 1,024 slots, and keeps at most half of them used.
    expect(set.bytes).toBeGreaterThanOrEqual(2 * model.size * 24);
  });

  it("never holds a value that is not 0x + 40 hex digits; trims like the store", () => {
    const set = new AddressSet(4);
    const a = `0x${"ab".repeat(20)}`;
    expect(set.add(a)).toBe(true);
    expect(set.has(` ${a.toUpperCase().replace("0X", "0x")}\t`)).toBe(true);
    // Digits that would parse to a member's words if letters past 'f' were taken as digits (a·16 + g = 0xb0).
    const b0 = `0x${"ab".repeat(19)}b0`;
    const ag = `0x${"ab".repeat(19)}ag`;
    const inner = `0x${"ab".repeat(10)}ag${"ab".repeat(9)}`;
    expect(set.add(b0)).toBe(true);
    expect(set.add(`0x${"ab".repeat(10)}b0${"ab".repeat(9)}`)).toBe(true);
    expect(set.has(ag)).toBe(false);
    expect(set.has(inner)).toBe(false);
    expect(set.add(ag)).toBe(false);
    expect(set.delete(b0)).toBe(true);
    for (const v of ["", "0x", a.slice(0, 41), `${a}0`, `1x${a.slice(2)}`, `0x${"zz".repeat(20)}`]) {
      expect(set.add(v)).toBe(false);
      expect(set.has(v)).toBe(false);
    }
    expect(set.size).toBe(2);
    expect(set.delete(a.toUpperCase().replace("0X", "0x"))).toBe(true);
    expect(set.has(a)).toBe(false);
    expect(set.size).toBe(1);
  });

  it("sizes its table for the members expected (24 bytes a slot, at most half used)", () => {
    expect(new AddressSet(0).bytes).toBe(1_024 * 24);
    expect(new AddressSet(1_000_000).bytes).toBe(2 ** 21 * 24);
  });
});
