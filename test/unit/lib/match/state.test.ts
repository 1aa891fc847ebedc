import { describe, expect, it } from "vitest";
import {
  applyBlockReading,
  applyReading,
  emptyLedger,
  initialMemory,
  memoryBase,
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

describe("any change", () => {
  it("fires on every reading that differs from the previous one, including from and to zero, never on the first", () => {
    const impl = (n: number) => BigInt(`0x${n.toString(16).padStart(40, "0")}`);
    expect(run({ changed: true }, [0n, 0n, impl(1), impl(1), impl(2), 0n], 0)).toEqual([false, false, true, false, true, true]);
  });
  it("tells apart values a relative change would call equal", () => {
    const big = 2n ** 159n;
    expect(run({ changed: true }, [big, big + 1n], 0)).toEqual([false, true]);
    expect(run({ percent: "0.000001" }, [big, big + 1n], 0)).toEqual([false, false]);
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
    expect(Object.keys(l.numbers ?? {})).toEqual([]);
  });
});

describe("memoryBase: which reading a block continues", () => {
  const h = (n: number, branch = "") => `0x${n.toString(16)}${branch}`;
  /** The canonical chain of the window: heights ≥ `from` known, hashes `h(n)`, except `fork` heights on branch b. */
  const canonicalOf =
    (from: number, fork = Number.POSITIVE_INFINITY) =>
    (n: number) =>
      n < from ? undefined : n >= fork ? h(n, "b") : h(n);
  const below5: ThresholdComparison = { operator: "Less", threshold: "5" };
  const readAt = (l: ReturnType<typeof emptyLedger>, n: number, v: bigint, branch = "") =>
    applyBlockReading(below5, l, { hash: h(n, branch), parentHash: h(n - 1, branch), number: n }, v, 0).ledger;

  it("the parent, then the nearest canonical reading in the window", () => {
    let l = readAt(emptyLedger(), 100, 9n);
    expect(memoryBase(l, { number: 101, parentHash: h(100) }, canonicalOf(0), 128)).toBe(h(100));
    expect(memoryBase(l, { number: 110, parentHash: h(109) }, canonicalOf(0), 128)).toBe(h(100));
    l = readAt(l, 110, 9n, "a"); // an orphaned reading in the window is skipped
    expect(memoryBase(l, { number: 120, parentHash: h(119) }, canonicalOf(0), 128)).toBe(h(100));
  });
  it("a rule read less often than the window continues its newest final reading, not an orphan nor a fresh memory", () => {
    let l = readAt(emptyLedger(), 200, 4n); // fired at 200 (4 < 5): disarmed
    l = readAt(l, 400, 4n, "a"); // then read on a branch that was orphaned
    const base = memoryBase(l, { number: 400, parentHash: h(399, "b") }, canonicalOf(272, 400), 128);
    expect(base).toBe(h(200));
    // Continuing 200's memory, 400 on branch b (still below 5) does not fire again; a fresh memory would.
    expect(applyBlockReading(below5, l, { hash: h(400, "b"), parentHash: base, number: 400 }, 4n, 0).fired).toBe(false);
    expect(applyBlockReading(below5, l, { hash: h(400, "b"), parentHash: h(399, "b"), number: 400 }, 4n, 0).fired).toBe(true);
  });
  it("without block numbers (a ledger saved before they were kept) or any reading, the parent", () => {
    const l = applyBlockReading(below5, emptyLedger(), { hash: h(1), parentHash: h(0) }, 9n, 0).ledger;
    expect(memoryBase(l, { number: 500, parentHash: h(499) }, canonicalOf(372), 128)).toBe(h(499));
  });
});
