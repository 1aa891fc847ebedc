/**
 * Unit tests of the sequence arithmetic (lib/match/sequences.ts): examples (pairing by correlate
 * value, span by blocks and by seconds, expiry, the most recent first record, the pending cap, a
 * record selected by both conditions, reorgs and late records), and a property test (fast-check,
 * seed printed on failure) replaying random streams of blocks, late records, reorgs and orphanings
 * against a brute-force pairing over the final canonical records, the state serialised to JSON and
 * back at every step.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  addSequenceRecords,
  applySequenceBlock,
  checkSequenceConfig,
  compareSequenceRecords,
  createSequenceState,
  orphanSequenceBlocks,
  type SequenceBlock,
  type SequenceConfig,
  type SequenceEvent,
  type SequenceRecord,
  type SequenceSpan,
  type SequenceState,
  sequenceFiringKey,
  withinSpan,
} from "../../../../lib/match/sequences.js";

const first = (id: string, key: string, pos: [number, number] = [0, 0]): SequenceRecord => ({ id, role: "first", key, pos });
const next = (id: string, key: string, pos: [number, number] = [0, 0]): SequenceRecord => ({ id, role: "followedBy", key, pos });

/** Applies blocks `from, from+1, …` (hash `0x<n>`, timestamps 12 s apart); returns the state and every event. */
function run(config: SequenceConfig, from: number, blocks: SequenceRecord[][], state = createSequenceState(from)) {
  const events: SequenceEvent[] = [];
  blocks.forEach((records, i) => {
    const n = from + i;
    const step = applySequenceBlock(config, state, { number: n, hash: `0x${n}`, timestamp: 1_000 + 12 * (n - from), records });
    state = step.state;
    events.push(...step.events);
  });
  return { state, events };
}

const pairs = (events: SequenceEvent[]) => events.map((e) => [e.type, e.firing.key, e.firing.first.id, e.firing.followedBy.id]);

describe("sequence pairing", () => {
  const config: SequenceConfig = { span: { blocks: 3 } };

  it("fires once when a followedBy record follows a first record of the same key within the span", () => {
    const { events } = run(config, 10, [[first("a", "k1"), first("b", "k2")], [], [next("c", "k1"), next("d", "k9")], [next("e", "k1")]]);
    expect(pairs(events)).toEqual([["fired", "k1", "a", "c"]]);
    const f = events[0]?.firing;
    expect(f?.first).toEqual({ id: "a", blockNumber: 10, blockHash: "0x10", timestamp: 1_000 });
    expect(f?.followedBy).toEqual({ id: "c", blockNumber: 12, blockHash: "0x12", timestamp: 1_024 });
  });

  it("drops a step beyond the span (blocks)", () => {
    expect(run(config, 10, [[first("a", "k")], [], [], [next("b", "k")]]).events).toHaveLength(1);
    expect(run(config, 10, [[first("a", "k")], [], [], [], [next("b", "k")]]).events).toEqual([]);
  });

  it("measures a seconds span in block timestamps", () => {
    const c: SequenceConfig = { span: { seconds: 24 } };
    expect(pairs(run(c, 1, [[first("a", "k")], [], [next("b", "k")]]).events)).toEqual([["fired", "k", "a", "b"]]);
    expect(run(c, 1, [[first("a", "k")], [], [], [next("b", "k")]]).events).toEqual([]);
  });

  it("pairs the most recent first record, and a closed step needs a new first record", () => {
    const { events } = run(config, 1, [[first("a", "k")], [first("b", "k")], [next("c", "k")], [next("d", "k")]]);
    expect(pairs(events)).toEqual([["fired", "k", "b", "c"]]);
  });

  it("orders records in a block by position; a record selected by both conditions does not pair with itself", () => {
    const { events } = run(config, 1, [[next("x", "k", [2, 0]), first("y", "k", [1, 5]), first("x", "k", [2, 0])], [next("z", "k")]]);
    expect(pairs(events)).toEqual([
      ["fired", "k", "y", "x"],
      ["fired", "k", "x", "z"],
    ]);
    expect(compareSequenceRecords(next("x", "k"), first("x", "k"))).toBeLessThan(0);
  });

  it("keeps at most maxPending steps, dropping the oldest", () => {
    const c: SequenceConfig = { span: { blocks: 10 }, maxPending: 2 };
    const { events } = run(c, 1, [
      [first("a", "k1")],
      [first("b", "k2")],
      [first("c", "k3")],
      [next("d", "k1"), next("e", "k2"), next("f", "k3")],
    ]);
    expect(pairs(events)).toEqual([
      ["fired", "k2", "b", "e"],
      ["fired", "k3", "c", "f"],
    ]);
  });

  it("retracts a firing whose first record's block is reorged out, and fires the replacement's", () => {
    const { state, events } = run(config, 1, [[first("a", "k")], [next("b", "k")]]);
    expect(pairs(events)).toEqual([["fired", "k", "a", "b"]]);
    const reorg = applySequenceBlock(config, state, { number: 1, hash: "0x1b", timestamp: 1_000, records: [] });
    expect(pairs(reorg.events)).toEqual([["retracted", "k", "a", "b"]]);
    const orphan = orphanSequenceBlocks(config, state, 2);
    expect(pairs(orphan.events)).toEqual([["retracted", "k", "a", "b"]]);
  });

  it("re-pairs when a late first record arrives closer to the followedBy record", () => {
    const { state } = run(config, 1, [[first("a", "k")], [], [next("c", "k", [5, 0])]]);
    const late = addSequenceRecords(config, state, "0x3", [first("b", "k", [1, 0])]);
    expect(pairs(late.events)).toEqual([
      ["retracted", "k", "a", "c"],
      ["fired", "k", "b", "c"],
    ]);
    expect(addSequenceRecords(config, late.state, "0x3", [first("b", "k", [1, 0])]).events).toEqual([]);
  });

  it("keeps steps open across the final height and forgets final firings", () => {
    const c: SequenceConfig = { span: { blocks: 50 }, reorgDepth: 2 };
    const { state, events } = run(c, 1, [[first("a", "k")], [first("x", "j")], [next("y", "j")], [], [], [], [next("b", "k")]]);
    expect(pairs(events)).toEqual([
      ["fired", "j", "x", "y"],
      ["fired", "k", "a", "b"],
    ]);
    expect(state.base).toBe(5);
    expect(state.blocks.map((b) => b.number)).toEqual([6, 7]);
    expect(state.open.map((f) => f.key)).toEqual(["k"]);
  });

  it("checks its configuration", () => {
    expect(() => checkSequenceConfig({ span: { blocks: 0 } })).toThrow(/span.blocks/);
    expect(() => checkSequenceConfig({ span: { seconds: 5 }, maxPending: 0 })).toThrow(/maxPending/);
    expect(withinSpan({ blocks: 2 }, { blockNumber: 1, timestamp: 0 }, { number: 3, timestamp: 0 })).toBe(true);
  });
});

// ---- property: incremental = brute force over the final canonical chain ----

/** The firings of the canonical records, paired the declarative way (module doc), with no cap. */
function bruteForce(span: SequenceSpan, blocks: readonly SequenceBlock[]): string[] {
  const all = blocks.flatMap((b) => [...b.records].sort(compareSequenceRecords).map((r) => ({ r, b })));
  const used = new Set<number>();
  const out: string[] = [];
  all.forEach(({ r, b }, i) => {
    if (r.role !== "followedBy") return;
    let j = i - 1;
    while (j >= 0 && !((all[j] as (typeof all)[number]).r.role === "first" && (all[j] as (typeof all)[number]).r.key === r.key)) j--;
    if (j < 0 || used.has(j)) return;
    const f = all[j] as (typeof all)[number];
    if (!withinSpan(span, { blockNumber: f.b.number, timestamp: f.b.timestamp }, b)) return;
    used.add(j);
    out.push(
      sequenceFiringKey({
        key: r.key,
        first: { id: f.r.id, blockNumber: f.b.number, blockHash: f.b.hash, timestamp: f.b.timestamp },
        followedBy: { id: r.id, blockNumber: b.number, blockHash: b.hash, timestamp: b.timestamp },
      }),
    );
  });
  return out.sort();
}

type Op =
  | { kind: "block"; records: SequenceRecord[]; dt: number }
  | { kind: "reorg"; back: number; records: SequenceRecord[]; dt: number }
  | { kind: "orphan"; back: number }
  | { kind: "late"; back: number; records: SequenceRecord[] };

const recordArb = fc.record({
  id: fc.constantFrom("r1", "r2", "r3", "r4", "r5", "r6"),
  role: fc.constantFrom("first" as const, "followedBy" as const),
  key: fc.constantFrom("a", "b", "c"),
  pos: fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -1, max: 3 })),
});
const recordsArb = fc.array(recordArb, { maxLength: 4 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("block" as const), records: recordsArb, dt: fc.integer({ min: 0, max: 20 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("reorg" as const),
      back: fc.integer({ min: 0, max: 4 }),
      records: recordsArb,
      dt: fc.integer({ min: 0, max: 20 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("orphan" as const), back: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("late" as const), back: fc.integer({ min: 0, max: 4 }), records: recordsArb }) },
);

describe("sequence property", () => {
  it("the announced firings equal a brute-force pairing of the final canonical records", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 1, max: 5 }).map((blocks) => ({ blocks })),
          fc.integer({ min: 1, max: 40 }).map((seconds) => ({ seconds })),
        ),
        fc.integer({ min: 1, max: 5 }),
        fc.array(opArb, { maxLength: 40 }),
        (span: SequenceSpan, reorgDepth, ops) => {
          const config: SequenceConfig = { span, reorgDepth, maxPending: 1_000 };
          let state: SequenceState = createSequenceState(0);
          const chain: SequenceBlock[] = [];
          const live = new Map<string, true>();
          let fork = 0;
          const step = (r: { state: SequenceState; events: SequenceEvent[] }) => {
            state = JSON.parse(JSON.stringify(r.state)) as SequenceState;
            for (const e of r.events) {
              const k = sequenceFiringKey(e.firing);
              if (e.type === "fired") {
                expect(live.has(k)).toBe(false);
                live.set(k, true);
              } else {
                expect(live.delete(k)).toBe(true);
              }
            }
          };
          const stamp = (n: number, dt: number) => (n === 0 ? 1_000 : (chain[n - 1] as SequenceBlock).timestamp + dt);
          for (const op of ops) {
            const h = chain.length - 1;
            const mutable = (n: number) => n > state.base && n >= 0 && n <= h;
            if (op.kind === "block") {
              const b = { number: h + 1, hash: `0x${h + 1}-${fork}`, timestamp: stamp(h + 1, op.dt), records: op.records };
              chain.push({ ...b, records: [...b.records] });
              step(applySequenceBlock(config, state, b));
            } else if (op.kind === "reorg" && mutable(h - op.back)) {
              const n = h - op.back;
              fork++;
              chain.length = n;
              const b = { number: n, hash: `0x${n}-${fork}`, timestamp: stamp(n, op.dt), records: op.records };
              chain.push({ ...b, records: [...b.records] });
              step(applySequenceBlock(config, state, b));
            } else if (op.kind === "orphan" && mutable(h - op.back)) {
              chain.length = h - op.back;
              step(orphanSequenceBlocks(config, state, h - op.back));
            } else if (op.kind === "late" && mutable(h - op.back)) {
              const b = chain[h - op.back] as SequenceBlock;
              const have = new Set(b.records.map((r) => `${r.role}|${r.id}`));
              for (const r of op.records) if (!have.has(`${r.role}|${r.id}`)) b.records.push(r);
              step(addSequenceRecords(config, state, b.hash, op.records));
            }
          }
          // The brute force de-duplicates records the way the state does (first of each role and id per block).
          const canonical = chain.map((b) => {
            const seen = new Set<string>();
            return { ...b, records: b.records.filter((r) => !seen.has(`${r.role}|${r.id}`) && seen.add(`${r.role}|${r.id}`)) };
          });
          expect([...live.keys()].sort()).toEqual(bruteForce(span, canonical));
        },
      ),
      { numRuns: 300 },
    );
  });
});
