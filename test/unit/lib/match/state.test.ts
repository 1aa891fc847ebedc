import { describe, expect, it } from "vitest";
import {
  applyBlockReading,
  applyReading,
  emptyLedger,
  initialMemory,
  type StateMemory,
  type ThresholdComparison,
  toRaw,
} from "../../../../lib/match/state.js";

const ETH = 10n ** 18n;

function run(c: Parameters<typeof applyReading>[0], readings: bigint[], decimals: number): boolean[] {
  let m: StateMemory = initialMemory();
  return readings.map((r) => {
    const s = applyReading(c, m, r, decimals);
    m = s.memory;
    return s.fired;
  });
}

describe("toRaw", () => {
  it("scales whole units by decimals", () => {
    expect(toRaw("1.5", 18)).toBe(15n * 10n ** 17n);
    expect(toRaw("-2", 2)).toBe(-200n);
    expect(toRaw("7", 0)).toBe(7n);
  });
  it("refuses too many decimals and non-decimals", () => {
    expect(() => toRaw("1.25", 1)).toThrow(RangeError);
    expect(() => toRaw("0x10", 18)).toThrow(RangeError);
    expect(toRaw("1.50", 1)).toBe(15n);
  });
});

describe("threshold crossing", () => {
  const below5: ThresholdComparison = { operator: "Less", threshold: "5" };
  it("fires once on crossing and stays quiet while the condition holds", () => {
    expect(run(below5, [6n * ETH, 4n * ETH, 3n * ETH, 4n * ETH], 18)).toEqual([false, true, false, false]);
  });
  it("re-arms only past the default reset band (half the threshold away: 7.5)", () => {
    expect(run(below5, [4n * ETH, 6n * ETH, 4n * ETH, 8n * ETH, 4n * ETH], 18)).toEqual([true, false, false, false, true]);
  });
  it("honours an explicit reset level", () => {
    const c: ThresholdComparison = { operator: "Greater", threshold: "100", reset: "90" };
    expect(run(c, [101n, 95n, 101n, 89n, 101n], 0)).toEqual([true, false, false, false, true]);
  });
  it("fires on the first reading when it already satisfies the condition", () => {
    expect(run({ operator: "Greater or Equal", threshold: "0.001", reset: "0" }, [ETH / 1000n], 18)).toEqual([true]);
  });
});

describe("relative change", () => {
  it("fires when the change reaches the percent, never on the first reading", () => {
    expect(run({ percent: "20" }, [100n, 119n, 143n, 114n, 114n], 0)).toEqual([false, false, true, true, false]);
  });
  it("respects the direction", () => {
    expect(run({ percent: "10", direction: "down" }, [100n, 200n, 150n], 0)).toEqual([false, false, true]);
    expect(run({ percent: "10", direction: "up" }, [100n, 50n, 60n], 0)).toEqual([false, false, true]);
  });
  it("does not divide by a zero previous reading", () => {
    expect(run({ percent: "1" }, [0n, 5n], 0)).toEqual([false, false]);
  });
});

describe("readings by block hash (reorgs)", () => {
  const below5: ThresholdComparison = { operator: "Less", threshold: "5" };
  it("judges a new branch from the fork point: re-fires only if the new branch crosses too", () => {
    let l = emptyLedger();
    const read = (hash: string, parentHash: string, v: bigint) => {
      const r = applyBlockReading(below5, l, { hash, parentHash }, v, 0);
      l = r.ledger;
      return r.fired;
    };
    expect(read("0x10", "0x09", 6n)).toBe(false);
    expect(read("0x11a", "0x10", 4n)).toBe(true); // crossing on branch A
    expect(read("0x11b", "0x10", 6n)).toBe(false); // branch B does not cross: nothing to re-fire
    expect(read("0x12b", "0x11b", 3n)).toBe(true); // ...until it does, armed from 0x10's memory
    expect(read("0x11c", "0x10", 4n)).toBe(true); // branch C crosses at once
  });
  it("keeps only the last `keep` blocks", () => {
    let l = emptyLedger();
    for (let i = 0; i < 5; i++) l = applyBlockReading(below5, l, { hash: `0x${i}`, parentHash: `0x${i - 1}` }, 9n, 0, 3).ledger;
    expect(l.order).toEqual(["0x2", "0x3", "0x4"]);
    expect(Object.keys(l.byHash).sort()).toEqual(["0x2", "0x3", "0x4"]);
  });
});
