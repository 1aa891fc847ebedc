/**
 * Unit tests of the window arithmetic (lib/match/windows.ts): example tests per aggregate, groupBy
 * and its cap, the reset band, seconds windows, absence by blocks and by seconds, reorgs; and a
 * property test (fast-check, seed printed on failure) replaying random streams of blocks, late
 * records, reorgs and orphanings against a brute-force recount of the same canonical records,
 * with the state serialised to JSON and back at every step.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  absenceDeadline,
  absenceWindow,
  addRecords,
  applyBlock,
  checkWindowConfig,
  createWindowState,
  decString,
  firingKey,
  orphanBlocks,
  resetLevel,
  type WindowBlock,
  type WindowConfig,
  type WindowEvent,
  type WindowRecord,
  type WindowState,
} from "../../../../lib/match/windows.js";

// ---- a small driver for the example tests ----

/** Applies blocks `from, from+1, …` with the given records (`[]`: none), timestamps 12 s apart unless given; returns every event. */
function run(config: WindowConfig, from: number, blocks: (WindowRecord[] | { records: WindowRecord[]; timestamp: number })[]) {
  let state = createWindowState(from);
  const events: WindowEvent[] = [];
  blocks.forEach((b, i) => {
    const n = from + i;
    const block = Array.isArray(b) ? { records: b, timestamp: 1_000 + 12 * i } : b;
    const step = applyBlock(config, state, { number: n, hash: `0x${n}`, ...block });
    state = step.state;
    events.push(...step.events);
  });
  return { state, events };
}

let nextId = 0;
/** `k` records (fresh ids) with the given fields. */
const recs = (k: number, fields: Partial<WindowRecord> = {}): WindowRecord[] =>
  Array.from({ length: k }, () => ({ id: `r${String(nextId++).padStart(6, "0")}`, ...fields }));

const fired = (events: WindowEvent[]) => events.filter((e) => e.type === "fired").map((e) => e.firing);

describe("count over blocks", () => {
  const config: WindowConfig = { span: { blocks: 3 }, aggregate: "count", operator: "Greater or Equal", threshold: "4" };

  it("fires once when the threshold is crossed, not again while it holds, and again after the reset band", () => {
    // per block: 1, 1, 2 (window 4: fires at block 12), 3 (6), 3 (8), 0 (6), 0 (3), 0 (0: re-arms, ≤ 2), 4 (4: fires again)
    const { events } = run(config, 10, [recs(1), recs(1), recs(2), recs(3), recs(3), [], [], [], recs(4)]);
    expect(events.map((e) => [e.type, e.firing.end.number, e.firing.aggregate])).toEqual([
      ["fired", 12, "4"],
      ["fired", 18, "4"],
    ]);
    const first = fired(events)[0];
    expect(first?.window).toEqual({ fromBlock: 10, toBlock: 12, fromTimestamp: 1_000, toTimestamp: 1_024 });
    expect(first?.recordCount).toBe(4);
    expect(first?.group).toBeNull();
  });

  it("does not re-arm while the aggregate stays inside the band", () => {
    // windows end 3: 4 → fires; 4: 3 and 5: 3 (below the threshold, above the reset level 2); 6: 5 → still fired, no second firing
    const { events } = run(config, 1, [recs(2), recs(2), [], recs(1), recs(2), recs(2)]);
    expect(fired(events).map((f) => [f.end.number, f.aggregate])).toEqual([[3, "4"]]);
  });

  it("does not re-arm at the reset level while the condition still holds (reset equal to the threshold)", () => {
    // reset "4" = threshold: the window stays at 4 (condition true), so the firing is not repeated
    const { events } = run({ ...config, reset: "4" }, 1, [recs(2), recs(1), recs(1), recs(2), recs(1), recs(3)]);
    expect(fired(events).map((f) => [f.end.number, f.aggregate])).toEqual([[3, "4"]]);
  });

  it("evaluates only complete windows (none before fromBlock + blocks − 1)", () => {
    const { events } = run(config, 5, [recs(5), recs(0)]);
    expect(events).toEqual([]);
    const { events: later } = run(config, 5, [recs(5), [], []]);
    expect(fired(later).map((f) => f.end.number)).toEqual([7]);
  });

  it("names the first sampleSize record ids in block order, then id order", () => {
    const a = [{ id: "b" }, { id: "a" }];
    const b = [{ id: "c" }];
    const { events } = run({ ...config, threshold: "3", sampleSize: 2 }, 1, [[], a, b]);
    expect(fired(events)[0]?.recordIds).toEqual(["a", "b"]);
    expect(fired(events)[0]?.recordCount).toBe(3);
  });
});

describe("sum", () => {
  it("adds raw uint256 amounts and scaled decimals exactly", () => {
    const config: WindowConfig = { span: { blocks: 2 }, aggregate: "sum", operator: "Greater", threshold: "1e24" };
    const { events } = run(config, 1, [
      [{ id: "a", value: "999999999999999999999999" }],
      [{ id: "b", value: "0.000000000000000001" }, { id: "c", value: "0x1" }, { id: "d" }, { id: "e", value: "not a number" }],
    ]);
    expect(fired(events).map((f) => [f.aggregate, f.recordCount])).toEqual([["1000000000000000000000000.000000000000000001", 5]]);
  });

  it("sums scaled token amounts exactly when given as raw units and decimals (`<raw>e-<decimals>`)", () => {
    // 0.1 + 0.2 USDC (6 decimals) and 1 wei of an 18-decimal token: no double rounding on the way
    const config: WindowConfig = { span: { blocks: 1 }, aggregate: "sum", operator: "Greater or Equal", threshold: "0.3" };
    const { events } = run(config, 1, [
      [
        { id: "a", value: "100000e-6" },
        { id: "b", value: "200000e-6" },
        { id: "c", value: "1e-18" },
      ],
    ]);
    expect(fired(events).map((f) => f.aggregate)).toEqual(["0.300000000000000001"]);
  });

  it("handles negative sums with Less and its reset above the threshold", () => {
    const config: WindowConfig = { span: { blocks: 1 }, aggregate: "sum", operator: "Less", threshold: "-10" };
    expect(resetLevel(config)).toBe("-5");
    const v = (x: string) => [{ id: `v${x}`, value: x }];
    const { events } = run(config, 1, [v("-11"), v("-7"), v("-12"), v("-5"), v("-10.5")]);
    // -11 fires; -7 is inside the band; -12 holds (still fired); -5 re-arms; -10.5 fires again
    expect(fired(events).map((f) => [f.end.number, f.aggregate])).toEqual([
      [1, "-11"],
      [5, "-10.5"],
    ]);
  });
});

describe("distinct", () => {
  it("counts distinct keys, ignoring records without one", () => {
    const config: WindowConfig = { span: { blocks: 2 }, aggregate: "distinct", operator: "Greater", threshold: "2" };
    const { events } = run(config, 1, [
      [
        { id: "1", key: "0xa" },
        { id: "2", key: "0xa" },
      ],
      [{ id: "3", key: "0xb" }, { id: "4" }],
      [{ id: "5", key: "0xc" }],
      [{ id: "6", key: "0xd" }],
    ]);
    // windows: {a} | {a,b} = 2 | {b,c} = 2 | {c,d} = 2: never above 2
    expect(events).toEqual([]);
    const { events: more } = run(config, 1, [
      [{ id: "1", key: "0xa" }],
      [{ id: "3", key: "0xb" }],
      [
        { id: "5", key: "0xc" },
        { id: "7", key: "0xd" },
      ],
    ]);
    // window ending at 3: {b, c, d}
    expect(fired(more).map((f) => [f.end.number, f.aggregate, f.recordCount])).toEqual([[3, "3", 3]]);
  });
});

describe("groupBy", () => {
  const config: WindowConfig = { span: { blocks: 2 }, aggregate: "count", operator: "Greater or Equal", threshold: "2", grouped: true };

  it("runs one machine per group", () => {
    const { events } = run(config, 1, [
      recs(1, { group: "alice" }),
      [...recs(1, { group: "alice" }), ...recs(1, { group: "bob" })],
      recs(1, { group: "bob" }),
    ]);
    expect(fired(events).map((f) => [f.group, f.end.number])).toEqual([
      ["alice", 2],
      ["bob", 3],
    ]);
  });

  it("evaluates at most maxGroups groups, fired ones first, then by first record", () => {
    const capped = { ...config, maxGroups: 1 };
    const block = [
      { id: "x1", group: "z" },
      { id: "x2", group: "z" },
      { id: "a1", group: "a" },
      { id: "a2", group: "a" },
    ];
    // both groups reach 2 in block 1; ids sort a1 < a2 < x1 < x2, so "a" appears first and takes the only slot
    const { events, state } = run(capped, 1, [block, []]);
    expect(fired(events).map((f) => f.group)).toEqual(["a"]);
    expect(state.firedAtBase).toEqual([]);
  });

  it('puts records without the field in the group ""', () => {
    const { events } = run(config, 1, [recs(2), []]);
    expect(fired(events).map((f) => f.group)).toEqual([""]);
  });
});

describe("seconds", () => {
  it("takes the blocks whose timestamp is in (t − S, t] and waits for a complete window", () => {
    const config: WindowConfig = { span: { seconds: 30 }, aggregate: "count", operator: "Greater or Equal", threshold: "3" };
    const at = (timestamp: number, k: number) => ({ timestamp, records: recs(k) });
    // t: 100 (2) 110 (0) 125 (1) 131 (1) 140 (1). The first complete window ends at 131 (131 − 30 ≥ 100):
    // (101, 131] holds 110, 125, 131 → 2; (110, 140] holds 125, 131, 140 → 3: fires at block 5.
    const { events } = run(config, 1, [at(100, 2), at(110, 0), at(125, 1), at(131, 1), at(140, 1)]);
    expect(fired(events).map((f) => [f.end.number, f.window])).toEqual([
      [5, { fromBlock: 3, toBlock: 5, fromTimestamp: 125, toTimestamp: 140 }],
    ]);
  });

  it("keeps, below the final height, exactly the blocks a later window can still reach", () => {
    const config: WindowConfig = { span: { seconds: 10 }, aggregate: "count", operator: "Greater", threshold: "5", reorgDepth: 2 };
    const at = (timestamp: number) => ({ timestamp, records: recs(1) });
    // head 6 → final height 4 (t 30): a window ending above it reaches back to t > 20, i.e. blocks 3 (t 21) on
    const { state } = run(config, 1, [at(0), at(20), at(21), at(30), at(30), at(35)]);
    expect(state.base).toBe(4);
    expect(state.blocks.map((b) => b.number)).toEqual([3, 4, 5, 6]);
  });

  it("takes a block older than its parent at its parent's timestamp", () => {
    const config: WindowConfig = { span: { seconds: 10 }, aggregate: "count", operator: "Greater", threshold: "0" };
    const { state } = run(config, 1, [
      { timestamp: 50, records: [] },
      { timestamp: 40, records: [] },
    ]);
    expect(state.blocks.map((b) => b.timestamp)).toEqual([50, 50]);
  });
});

describe("reorgs", () => {
  const config: WindowConfig = { span: { blocks: 2 }, aggregate: "count", operator: "Greater or Equal", threshold: "3", reorgDepth: 4 };

  it("retracts a firing whose closing block leaves the chain, and fires on the new branch only if it still crosses", () => {
    const { state, events } = run(config, 1, [recs(1), recs(2)]);
    expect(fired(events).map((f) => f.end.hash)).toEqual(["0x2"]);
    const orphaned = orphanBlocks(config, state, 2);
    expect(orphaned.events.map((e) => [e.type, e.firing.end.hash])).toEqual([["retracted", "0x2"]]);
    const weaker = applyBlock(config, orphaned.state, { number: 2, hash: "0x2b", timestamp: 1_012, records: recs(1) });
    expect(weaker.events).toEqual([]);
    const replaced = applyBlock(config, state, { number: 2, hash: "0x2c", timestamp: 1_012, records: recs(3) });
    expect(replaced.events.map((e) => [e.type, e.firing.end.hash, e.firing.aggregate])).toEqual([
      ["retracted", "0x2", "3"],
      ["fired", "0x2c", "4"],
    ]);
  });

  it("re-fires at a later block when a reorg moves the crossing", () => {
    const { state } = run(config, 1, [recs(1), recs(2), recs(1)]);
    const step = applyBlock(config, state, { number: 2, hash: "0x2b", timestamp: 1_012, records: recs(1) });
    const step3 = applyBlock(config, step.state, { number: 3, hash: "0x3b", timestamp: 1_024, records: recs(2) });
    expect([...step.events, ...step3.events].map((e) => [e.type, e.firing.end.number])).toEqual([
      ["retracted", 2],
      ["fired", 3],
    ]);
  });

  it("rewinds a re-arm that a reorg undoes", () => {
    const c: WindowConfig = { span: { blocks: 1 }, aggregate: "count", operator: "Greater or Equal", threshold: "2" };
    // fires at 1 (2 records), re-arms at 2 (0 records)
    const { state } = run(c, 1, [recs(2), []]);
    expect(state.rearms).toEqual([{ group: "", end: 2 }]);
    // block 2 replaced by one with 3 records: the group never re-armed, so 2 records at 3 are no new firing
    const replaced = applyBlock(c, state, { number: 2, hash: "0x2b", timestamp: 1_012, records: recs(3) });
    expect(replaced.events).toEqual([]);
    expect(replaced.state.rearms).toEqual([]);
    const next = applyBlock(c, replaced.state, { number: 3, hash: "0x3", timestamp: 1_024, records: recs(2) });
    expect(next.events).toEqual([]);
  });

  it("counts late records of a held block once, and ignores unknown hashes and replays", () => {
    const { state } = run(config, 1, [recs(1), recs(1)]);
    const late = [{ id: "late" }];
    const step = addRecords(config, state, "0x2", late);
    expect(fired(step.events).map((f) => f.aggregate)).toEqual(["3"]);
    expect(addRecords(config, step.state, "0x2", late).events).toEqual([]);
    expect(addRecords(config, step.state, "0xgone", recs(5)).state).toBe(step.state);
    const replay = applyBlock(config, step.state, { number: 2, hash: "0x2", timestamp: 1_012, records: late });
    expect(replay.events).toEqual([]);
    expect(replay.state.blocks.at(-1)?.records).toHaveLength(2);
  });

  it("ignores changes at or below the final height and keeps only what the windows above it need", () => {
    const { state } = run(
      config,
      1,
      Array.from({ length: 10 }, () => recs(1)),
    );
    expect(state.base).toBe(6);
    expect(state.blocks.map((b) => b.number)).toEqual([6, 7, 8, 9, 10]);
    expect(orphanBlocks(config, state, 6).state).toBe(state);
    expect(applyBlock(config, state, { number: 5, hash: "0x5b", timestamp: 0, records: [] }).state).toBe(state);
    expect(() => applyBlock(config, state, { number: 12, hash: "0x12", timestamp: 0, records: [] })).toThrow(RangeError);
  });
});

describe("absence", () => {
  it("fires when the head passes the deadline by blocks, once per silence, and a reorg bringing the record retracts it", () => {
    const absence = { blocks: 3 };
    const config = absenceWindow(absence, { reorgDepth: 10 });
    const { state, events } = run(config, 1, [recs(1), [], [], [], [], recs(1), [], [], []]);
    // last record at 1 → deadline 4; silence again after 6 → deadline 9
    expect(absenceDeadline(absence, { number: 1, timestamp: 0 })).toEqual({ block: 4 });
    expect(fired(events).map((f) => [f.end.number, f.window.fromBlock, f.window.toBlock, f.aggregate, f.recordIds])).toEqual([
      [4, 2, 4, "0", []],
      [9, 7, 9, "0", []],
    ]);
    const reorg = applyBlock(config, state, { number: 8, hash: "0x8b", timestamp: 1_084, records: recs(1) });
    expect(reorg.events.map((e) => [e.type, e.firing.end.number])).toEqual([["retracted", 9]]);
  });

  it("counts a silence without any record from fromBlock", () => {
    const { events } = run(absenceWindow({ blocks: 2 }), 7, [[], [], []]);
    expect(absenceDeadline({ blocks: 2 }, { number: 6, timestamp: 0 })).toEqual({ block: 8 });
    expect(fired(events).map((f) => f.end.number)).toEqual([8]);
  });

  it("fires by seconds at the first head at or past last.timestamp + seconds", () => {
    const absence = { seconds: 60 };
    const at = (timestamp: number, k: number) => ({ timestamp, records: recs(k) });
    const { events } = run(absenceWindow(absence), 1, [at(0, 1), at(20, 1), at(50, 0), at(79, 0), at(80, 0), at(95, 0)]);
    expect(absenceDeadline(absence, { number: 2, timestamp: 20 })).toEqual({ timestamp: 80 });
    expect(fired(events).map((f) => [f.end.number, f.end.timestamp])).toEqual([[5, 80]]);
  });
});

describe("configuration and decimals", () => {
  it("derives the default reset band as half the threshold's magnitude", () => {
    expect(resetLevel({ operator: "Greater", threshold: "20" })).toBe("10");
    expect(resetLevel({ operator: "Greater or Equal", threshold: "1" })).toBe("0.5");
    expect(resetLevel({ operator: "Less", threshold: "4" })).toBe("6");
    expect(resetLevel({ operator: "Less or Equal", threshold: "0" })).toBe("0");
    expect(resetLevel({ operator: "Greater", threshold: "20", reset: "15" })).toBe("15");
  });

  it("refuses bad configurations with the field named", () => {
    const ok: WindowConfig = { span: { blocks: 1 }, aggregate: "count", operator: "Greater", threshold: "1" };
    expect(() => checkWindowConfig(ok)).not.toThrow();
    expect(() => checkWindowConfig({ ...ok, span: { blocks: 0 } })).toThrow(/span.blocks/);
    expect(() => checkWindowConfig({ ...ok, span: { seconds: 1.5 } })).toThrow(/span.seconds/);
    expect(() => checkWindowConfig({ ...ok, threshold: "ten" })).toThrow(/threshold/);
    expect(() => checkWindowConfig({ ...ok, reset: "2" })).toThrow(/firing side/);
    expect(() => checkWindowConfig({ ...ok, maxGroups: 0 })).toThrow(/maxGroups/);
  });

  it("renders exact decimals without exponent", () => {
    expect(decString({ m: 12n, e: 3 })).toBe("12000");
    expect(decString({ m: -25n, e: -2 })).toBe("-0.25");
    expect(decString({ m: 1500n, e: -2 })).toBe("15");
    expect(decString({ m: 1n, e: -18 })).toBe("0.000000000000000001");
  });
});

// ---- the property test against a brute-force recount ----

/** Fixed-point scale of the brute force: every generated decimal has at most 4 fraction digits. */
const SCALE = 10n ** 8n;

/** A decimal string as an integer of 10^-8 units (brute force's own parser; generated strings are plain decimals). */
function scaled(s: string): bigint {
  const neg = s.startsWith("-");
  const [int = "0", frac = ""] = (neg ? s.slice(1) : s).split(".");
  const v = BigInt(int || "0") * SCALE + BigInt(`${frac}00000000`.slice(0, 8));
  return neg ? -v : v;
}

/** The specification, recounted from scratch on the whole canonical chain (no state, no pruning). */
function bruteForce(config: WindowConfig, fromBlock: number, chain: readonly WindowBlock[]): Map<string, bigint> {
  const t = scaled(config.threshold);
  const isUp = config.operator === "Greater" || config.operator === "Greater or Equal";
  const r = config.reset !== undefined ? scaled(config.reset) : isUp ? t - (t < 0n ? -t : t) / 2n : t + (t < 0n ? -t : t) / 2n;
  const test = (a: bigint) =>
    config.operator === "Greater" ? a > t : config.operator === "Greater or Equal" ? a >= t : config.operator === "Less" ? a < t : a <= t;
  const firedGroups = new Set<string>();
  const out = new Map<string, bigint>();
  const origin = chain.find((b) => b.number === fromBlock);
  for (const end of chain) {
    const span = config.span;
    const inWindow = chain.filter((b) =>
      "blocks" in span
        ? b.number <= end.number && b.number > end.number - span.blocks
        : b.number <= end.number && b.timestamp > end.timestamp - span.seconds,
    );
    const complete =
      "blocks" in span
        ? end.number - span.blocks + 1 >= fromBlock
        : origin !== undefined && end.timestamp - span.seconds >= origin.timestamp;
    if (!complete) continue;
    const records = inWindow.flatMap((b) => [...b.records].sort((x, y) => (x.id < y.id ? -1 : 1)));
    const groupOf = (rec: WindowRecord) => (config.grouped ? (rec.group ?? "") : "");
    const appearing = [...new Set(records.map(groupOf))];
    const evaluated = config.grouped
      ? [
          ...firedGroups,
          ...appearing.filter((g) => !firedGroups.has(g)).slice(0, Math.max(0, (config.maxGroups ?? 100) - firedGroups.size)),
        ]
      : [""];
    for (const g of evaluated) {
      const mine = records.filter((rec) => groupOf(rec) === g);
      const a =
        config.aggregate === "count"
          ? BigInt(mine.length) * SCALE
          : config.aggregate === "distinct"
            ? BigInt(new Set(mine.flatMap((rec) => (rec.key === undefined ? [] : [rec.key]))).size) * SCALE
            : mine.reduce((sum, rec) => sum + (rec.value === undefined ? 0n : scaled(rec.value)), 0n);
      if (firedGroups.has(g)) {
        if (!test(a) && (isUp ? a <= r : a >= r)) firedGroups.delete(g);
      } else if (test(a)) {
        firedGroups.add(g);
        out.set(firingKey({ group: config.grouped ? g : null, end }), a);
      }
    }
  }
  return out;
}

const decimalArb = fc
  .tuple(
    fc.boolean(),
    fc.oneof(fc.bigInt({ min: 0n, max: 20n }), fc.bigInt({ min: 0n, max: 10n ** 30n })),
    fc.integer({ min: 0, max: 9999 }),
    fc.boolean(),
  )
  .map(
    ([neg, int, frac, hasFrac]) =>
      `${neg && (int > 0n || (hasFrac && frac > 0)) ? "-" : ""}${int}${hasFrac ? `.${String(frac).padStart(4, "0")}` : ""}`,
  );

const smallDecimalArb = fc
  .tuple(fc.integer({ min: -6, max: 12 }), fc.constantFrom("", ".5", ".25"))
  .map(([int, frac]) => (int < 0 ? `-${-int}${frac}` : `${int}${frac}`));

const recordArb = fc.record(
  {
    group: fc.constantFrom("a", "b", "c", "d"),
    value: fc.oneof(smallDecimalArb, decimalArb),
    key: fc.constantFrom("k1", "k2", "k3", "k4", "k5"),
  },
  { requiredKeys: [] },
);

const spanArb = fc.oneof(
  fc.integer({ min: 1, max: 6 }).map((blocks) => ({ blocks })),
  fc.integer({ min: 1, max: 12 }).map((seconds) => ({ seconds })),
);

const windowConfigArb: fc.Arbitrary<WindowConfig> = fc
  .record({
    span: spanArb,
    aggregate: fc.constantFrom("count", "sum", "distinct"),
    operator: fc.constantFrom("Greater", "Greater or Equal", "Less", "Less or Equal"),
    threshold: smallDecimalArb,
    resetOffset: fc.option(fc.constantFrom("0", "1", "2.5", "7"), { nil: undefined }),
    grouped: fc.boolean(),
    maxGroups: fc.integer({ min: 1, max: 3 }),
    reorgDepth: fc.integer({ min: 1, max: 6 }),
  })
  .map(({ resetOffset, ...c }) => {
    if (resetOffset === undefined) return c as WindowConfig;
    const up = c.operator === "Greater" || c.operator === "Greater or Equal";
    const r = scaled(c.threshold) + (up ? -scaled(resetOffset) : scaled(resetOffset));
    const abs = r < 0n ? -r : r;
    const text = `${r < 0n ? "-" : ""}${abs / SCALE}.${String(abs % SCALE).padStart(8, "0")}`;
    return { ...c, reset: text } as WindowConfig;
  });

const configArb = fc.oneof(
  { arbitrary: windowConfigArb, weight: 4 },
  {
    arbitrary: fc.tuple(spanArb, fc.integer({ min: 1, max: 6 })).map(([span, reorgDepth]) => absenceWindow(span, { reorgDepth })),
    weight: 1,
  },
);

type Op =
  | { kind: "next"; dt: number; records: Partial<WindowRecord>[] }
  | { kind: "reorg"; depth: number; dt: number; records: Partial<WindowRecord>[] }
  | { kind: "orphan"; depth: number }
  | { kind: "late"; pick: number; records: Partial<WindowRecord>[]; replay: boolean };

const recordsArb = fc.array(recordArb, { maxLength: 4 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("next" as const), dt: fc.integer({ min: 0, max: 5 }), records: recordsArb }), weight: 6 },
  {
    arbitrary: fc.record({
      kind: fc.constant("reorg" as const),
      depth: fc.nat(10),
      dt: fc.integer({ min: 0, max: 5 }),
      records: recordsArb,
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant("orphan" as const), depth: fc.nat(10) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("late" as const), pick: fc.nat(20), records: recordsArb, replay: fc.boolean() }), weight: 2 },
);

describe("property: the state equals a brute-force recount after every step", () => {
  it("for random streams of blocks, late records, reorgs and orphanings (state serialised at every step)", () => {
    fc.assert(
      fc.property(configArb, fc.integer({ min: 0, max: 3 }), fc.array(opArb, { minLength: 1, maxLength: 40 }), (config, fromBlock, ops) => {
        const depth = config.reorgDepth ?? 128;
        let state: WindowState = createWindowState(fromBlock);
        let chain: WindowBlock[] = [];
        let maxHead = fromBlock - 1;
        let serial = 0;
        const live = new Map<string, bigint>();
        const withIds = (records: Partial<WindowRecord>[]) => records.map((r) => ({ ...r, id: `id${serial++}` }));
        for (const op of ops) {
          const floor = Math.max(fromBlock - 1, maxHead - depth);
          const top = chain.at(-1)?.number ?? fromBlock - 1;
          let step: { state: WindowState; events: WindowEvent[] };
          if (op.kind === "late") {
            const open = chain.filter((b) => b.number > floor);
            const target = open[op.pick % Math.max(1, open.length)];
            if (target === undefined) continue;
            const records = op.replay && target.records.length > 0 ? [target.records[0] as WindowRecord] : withIds(op.records);
            step = addRecords(config, state, target.hash, records);
            const have = new Set(target.records.map((r) => r.id));
            target.records = [...target.records, ...records.filter((r) => !have.has(r.id))];
          } else if (op.kind === "orphan") {
            if (top <= floor) continue;
            const at = top - (op.depth % (top - floor));
            step = orphanBlocks(config, state, at);
            chain = chain.filter((b) => b.number < at);
          } else {
            const at = op.kind === "reorg" && top > floor ? top - (op.depth % (top - floor)) : top + 1;
            const parent = chain.find((b) => b.number === at - 1);
            const block: WindowBlock = {
              number: at,
              hash: `0xh${serial++}`,
              timestamp: (parent?.timestamp ?? 1_000) + op.dt,
              records: withIds(op.records),
            };
            step = applyBlock(config, state, { ...block, records: [...block.records] });
            chain = [...chain.filter((b) => b.number < at), block];
            maxHead = Math.max(maxHead, at);
          }
          const expected = bruteForce(config, fromBlock, chain);
          for (const e of step.events) {
            const key = firingKey(e.firing);
            if (e.type === "fired") {
              expect(live.has(key)).toBe(false);
              live.set(key, scaled(e.firing.aggregate));
              expect(scaled(e.firing.aggregate)).toBe(expected.get(key));
            } else {
              expect(live.delete(key)).toBe(true);
            }
          }
          expect([...live.keys()].sort()).toEqual([...expected.keys()].sort());
          state = JSON.parse(JSON.stringify(step.state)) as WindowState;
        }
      }),
      { numRuns: 1000 },
    );
  });
});
