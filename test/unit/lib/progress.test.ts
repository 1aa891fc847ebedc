import { describe, expect, it } from "vitest";
import { addSample, estimate, formatDuration, formatRate, type ProgressHistory, startProgress } from "../../../lib/progress.js";

/** Feeds samples `[atMs, done, records]` into a new history of `total` units. */
function run(total: number, samples: Array<[number, number, number]>, windowMs?: number): ProgressHistory {
  const [first, ...rest] = samples.map(([atMs, done, records]) => ({ atMs, done, records }));
  let h = startProgress(total, first as NonNullable<typeof first>, windowMs);
  for (const s of rest) h = addSample(h, s);
  return h;
}

describe("progress estimate", () => {
  it("has no rate and no ETA before time passes", () => {
    expect(estimate(run(100, [[0, 0, 0]]))).toEqual({
      done: 0,
      total: 100,
      fraction: 0,
      unitsPerSec: 0,
      recordsPerSec: 0,
      etaMs: null,
      elapsedMs: 0,
    });
  });

  it("computes blocks/s, records/s and the ETA from the start while the run is younger than the window", () => {
    const e = estimate(
      run(100, [
        [0, 0, 0],
        [1000, 10, 250],
        [2000, 20, 500],
      ]),
    );
    expect(e).toMatchObject({ done: 20, fraction: 0.2, unitsPerSec: 10, recordsPerSec: 250, etaMs: 8000, elapsedMs: 2000 });
  });

  it("follows a speed change: rates over the last window only", () => {
    // 1 block/s for 20 s, then 10 blocks/s for 10 s; window 10 s.
    const samples: Array<[number, number, number]> = [];
    for (let t = 0; t <= 20; t++) samples.push([t * 1000, t, t * 2]);
    for (let t = 21; t <= 30; t++) samples.push([t * 1000, 20 + (t - 20) * 10, 40 + (t - 20) * 100]);
    const h = run(1000, samples, 10_000);
    const e = estimate(h);
    expect(e.done).toBe(120);
    expect(e.unitsPerSec).toBe(10);
    expect(e.recordsPerSec).toBe(100);
    expect(e.etaMs).toBe(88_000);
    expect(e.elapsedMs).toBe(30_000);
    // only the window's base and the samples after it are kept
    expect(h.samples[0]?.atMs).toBe(20_000);
    expect(h.samples).toHaveLength(11);
  });

  it("does not count blocks an earlier run did as speed (a resumed backfill)", () => {
    const e = estimate(
      run(1000, [
        [0, 600, 0],
        [2000, 610, 40],
      ]),
    );
    expect(e).toMatchObject({ done: 600 + 10, fraction: 0.61, unitsPerSec: 5, recordsPerSec: 20, etaMs: 78_000 });
  });

  it("ETA 0 when done, fraction 1 for an empty range, unknown ETA while stalled", () => {
    expect(
      estimate(
        run(50, [
          [0, 0, 0],
          [5000, 50, 900],
        ]),
      ).etaMs,
    ).toBe(0);
    expect(estimate(run(0, [[0, 0, 0]])).fraction).toBe(1);
    const stalled = run(100, [
      [0, 10, 0],
      [20_000, 10, 0],
    ]);
    expect(estimate(stalled)).toMatchObject({ unitsPerSec: 0, etaMs: null });
  });

  it("ignores a sample older than the newest and rejects a bad total or window", () => {
    const h = run(10, [[1000, 1, 1]]);
    expect(addSample(h, { atMs: 500, done: 5, records: 5 })).toBe(h);
    expect(() => startProgress(-1, { atMs: 0, done: 0, records: 0 })).toThrow(RangeError);
    expect(() => startProgress(1, { atMs: 0, done: 0, records: 0 }, 0)).toThrow(RangeError);
  });
});

describe("progress formatting", () => {
  it("formats durations", () => {
    expect(formatDuration(null)).toBe("?");
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(44_600)).toBe("45s");
    expect(formatDuration(185_000)).toBe("3m05s");
    expect(formatDuration(7_620_000)).toBe("2h07m");
    expect(formatDuration(273_600_000)).toBe("3d04h");
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe("?");
  });
  it("formats rates", () => {
    expect(formatRate(0)).toBe("0.0");
    expect(formatRate(12.46)).toBe("12.5");
    expect(formatRate(2408.4)).toBe("2408");
  });
});
