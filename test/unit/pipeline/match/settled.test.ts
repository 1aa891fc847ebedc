import { describe, expect, it } from "vitest";
import { advanceSettled, type OffsetsReading, passed, type QueuedBlock } from "../../../../pipeline/match/settled.js";

const block = (number: number): QueuedBlock => ({ number, hash: `0x${number.toString(16)}`, timestamp: 1_000 + number });
/** A reading where every record topic has one partition: decode's and match's commits and the ends. */
const reading = (
  decodeLogs: number,
  match: { logs: number; events: number; transactions?: number },
  ends: { logs: number; events: number; transactions?: number },
): OffsetsReading => ({
  decodeLogs: { 0: String(decodeLogs) },
  match: { logs: { 0: String(match.logs) }, events: { 0: String(match.events) }, transactions: { 0: String(match.transactions ?? 0) } },
  ends: { logs: { 0: String(ends.logs) }, events: { 0: String(ends.events) }, transactions: { 0: String(ends.transactions ?? 0) } },
});

describe("passed", () => {
  it("needs every required partition reached; a partition required at 0 or without records holds nothing", () => {
    expect(passed({ 0: "5", 1: "3" }, { 0: "5", 1: "3" })).toBe(true);
    expect(passed({ 0: "5", 1: "2" }, { 0: "5", 1: "3" })).toBe(false);
    expect(passed({ 0: "-1" }, { 0: "1" })).toBe(false);
    expect(passed({}, { 0: "0" })).toBe(true);
    expect(passed(undefined, { 0: "1" })).toBe(false);
    expect(passed({ 0: "9007199254740993" }, { 0: "9007199254740992" })).toBe(true);
  });
});

describe("advanceSettled", () => {
  it("takes a snapshot, then a target once decode passed it, then settles once match passed the target", () => {
    // Block 1 consumed; the logs topic holds 4 records, decode committed 2, no events yet.
    let step = advanceSettled([block(1)], 1, reading(2, { logs: 4, events: 0 }, { logs: 4, events: 0 }));
    expect(step.settled).toEqual([]);
    expect(step.queue[0]?.snapshot?.logs).toEqual({ 0: "4" });
    // Decode still behind: no target.
    step = advanceSettled(step.queue, 0, reading(3, { logs: 4, events: 0 }, { logs: 4, events: 2 }));
    expect(step.queue[0]?.target).toBeUndefined();
    // Decode passed the snapshot: the target is the ends read after that (3 events).
    step = advanceSettled(step.queue, 0, reading(4, { logs: 4, events: 1 }, { logs: 4, events: 3 }));
    expect(step.settled).toEqual([]);
    expect(step.queue[0]?.target?.events).toEqual({ 0: "3" });
    // Match has not consumed the third event: not settled.
    step = advanceSettled(step.queue, 0, reading(4, { logs: 4, events: 2 }, { logs: 4, events: 3 }));
    expect(step.settled).toEqual([]);
    step = advanceSettled(step.queue, 0, reading(4, { logs: 4, events: 3 }, { logs: 4, events: 3 }));
    expect(step.settled.map((b) => b.number)).toEqual([1]);
    expect(step.queue).toEqual([]);
  });

  it("takes one step per reading: a target never settles on the reading that set it", () => {
    const first = advanceSettled([block(1)], 1, reading(0, { logs: 0, events: 0 }, { logs: 0, events: 0 }));
    const second = advanceSettled(first.queue, 0, reading(9, { logs: 9, events: 9 }, { logs: 0, events: 0 }));
    expect(second.settled).toEqual([]);
    expect(second.queue[0]?.target).toBeDefined();
    expect(advanceSettled(second.queue, 0, reading(9, { logs: 9, events: 9 }, { logs: 0, events: 0 })).settled).toHaveLength(1);
  });

  it("gives a snapshot only to the blocks consumed before the reading", () => {
    const step = advanceSettled([block(1), block(2)], 1, reading(0, { logs: 0, events: 0 }, { logs: 1, events: 0 }));
    expect(step.queue[0]?.snapshot).toBeDefined();
    expect(step.queue[1]?.snapshot).toBeUndefined();
  });

  it("releases only a settled prefix, in order", () => {
    const ready = { ...block(1), snapshot: {}, target: { events: { 0: "2" } } };
    const waiting = { ...block(2), snapshot: {}, target: { events: { 0: "5" } } };
    const after = { ...block(3), snapshot: {}, target: { events: { 0: "1" } } };
    const step = advanceSettled([ready, waiting, after], 0, reading(0, { logs: 0, events: 3 }, { logs: 0, events: 9 }));
    expect(step.settled.map((b) => b.number)).toEqual([1]);
    expect(step.queue.map((b) => b.number)).toEqual([2, 3]);
  });

  it("waits for every record topic of the target, not only events", () => {
    const b = { ...block(1), snapshot: {}, target: { events: { 0: "1" }, transactions: { 0: "4" } } };
    expect(advanceSettled([b], 0, reading(0, { logs: 0, events: 1, transactions: 3 }, { logs: 0, events: 1 })).settled).toEqual([]);
    expect(advanceSettled([b], 0, reading(0, { logs: 0, events: 1, transactions: 4 }, { logs: 0, events: 1 })).settled).toHaveLength(1);
  });
});
