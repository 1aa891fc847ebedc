/**
 * The follower's catch-up window (pipeline/ingest/window.ts): its size (AIMD on the endpoint's
 * answers) and the in-order release of heights fetched ahead.
 */
import { describe, expect, it } from "vitest";
import { createAheadWindow, nextWindowSize, WINDOW_SPACING_MS, WINDOW_START } from "../../../../pipeline/ingest/window.js";

/** A fetch whose heights are answered when the test says so. */
function controlledFetch() {
  const waiting = new Map<number, { resolve: (v: string) => void; signal: AbortSignal }>();
  const asked: number[] = [];
  const fetch = (n: number, signal: AbortSignal) =>
    new Promise<string>((resolve) => {
      asked.push(n);
      waiting.set(n, { resolve, signal });
    });
  const answer = (n: number) => waiting.get(n)?.resolve(`block ${n}`);
  return { fetch, answer, asked, waiting };
}

describe("window size", () => {
  it("grows by one per clean height up to the maximum, halves after a retry, restarts after a fault", () => {
    let size = WINDOW_START;
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) {
      size = nextWindowSize(size, "clean", 8);
      seen.push(size);
    }
    expect(seen).toEqual([5, 6, 7, 8, 8, 8]);
    expect(nextWindowSize(8, "retried", 8)).toBe(4);
    expect(nextWindowSize(1, "retried", 8)).toBe(1);
    expect(nextWindowSize(8, "fault", 8)).toBe(WINDOW_START);
  });

  it("never leaves 1 … max (max 1 disables the window)", () => {
    for (const outcome of ["clean", "retried", "fault"] as const) {
      expect(nextWindowSize(4, outcome, 1)).toBe(1);
      expect(nextWindowSize(0, outcome, 3)).toBeGreaterThanOrEqual(1);
      expect(nextWindowSize(100, outcome, 3)).toBeLessThanOrEqual(3);
    }
  });
});

describe("ahead window", () => {
  it("fetches the heights ahead at once and releases them in order, a slow one delaying only itself", async () => {
    const f = controlledFetch();
    const w = createAheadWindow(f.fetch);
    const first = w.take(10, 20, 4);
    expect(f.asked).toEqual([10, 11, 12, 13]);
    // The heights behind the slow 10 answer first; 10 is still what is released first.
    f.answer(11);
    f.answer(12);
    f.answer(13);
    let released = false;
    void first.then(() => {
      released = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(released).toBe(false);
    f.answer(10);
    expect(await first).toEqual({ value: "block 10", ahead: false });
    // 11 was fetched before 10 was released: marked as fetched ahead; taking it tops the window up.
    expect(await w.take(11, 20, 4)).toEqual({ value: "block 11", ahead: true });
    expect(f.asked).toEqual([10, 11, 12, 13, 14]);
    expect(w.pending()).toEqual([12, 13, 14]);
  });

  it("never fetches past the last height and drops heights passed by", async () => {
    const f = controlledFetch();
    const w = createAheadWindow(f.fetch);
    const p = w.take(5, 6, 16);
    expect(f.asked).toEqual([5, 6]);
    f.answer(5);
    await p;
    const q = w.take(8, 9, 2); // 6 and 7 passed by (a reorg moved the position): 6 is dropped, aborted
    expect(f.waiting.get(6)?.signal.aborted).toBe(true);
    expect(w.pending()).toEqual([9]);
    f.answer(8);
    expect((await q).value).toBe("block 8");
  });

  it("with spacing, the heights ahead start one after another, in order (each its own JSON-RPC batch); dropped before its start, never fetched", async () => {
    const f = controlledFetch();
    const w = createAheadWindow(f.fetch, WINDOW_SPACING_MS);
    void w.take(1, 4, 4);
    expect(f.asked).toEqual([1]); // the height asked at once, the others later
    for (let i = 0; i < 100 && f.asked.length < 4; i++) await new Promise((r) => setTimeout(r, WINDOW_SPACING_MS));
    expect(f.asked).toEqual([1, 2, 3, 4]);

    const g = controlledFetch();
    const v = createAheadWindow(g.fetch, WINDOW_SPACING_MS);
    void v.take(1, 4, 4);
    v.clear(); // 2, 3 and 4 dropped before they started
    await new Promise((r) => setTimeout(r, 5 * WINDOW_SPACING_MS));
    expect(g.asked).toEqual([1]);
  });

  it("clear aborts every fetch ahead (the height taken is the caller's); they are fetched anew on the next take", async () => {
    const f = controlledFetch();
    const w = createAheadWindow(f.fetch);
    void w.take(1, 3, 3).catch(() => {});
    const signals = [1, 2, 3].map((n) => f.waiting.get(n)?.signal);
    w.clear();
    expect(signals.map((s) => s?.aborted)).toEqual([false, true, true]);
    expect(w.pending()).toEqual([]);
    const again = w.take(2, 3, 2);
    expect(f.asked).toEqual([1, 2, 3, 2, 3]);
    f.answer(2);
    expect(await again).toEqual({ value: "block 2", ahead: false });
  });
});
