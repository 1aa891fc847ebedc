/**
 * Progress arithmetic of a run with a known amount of work (a backfill of `total` blocks): rates
 * over a sliding window and the time left. Pure: the caller passes the clock readings, so the
 * terminal bar and the log lines (cli/progress.ts) show the same figures and tests need no clock.
 * @module
 */

/** One reading of a run's counters. */
export interface ProgressSample {
  /** When it was read, in ms (any monotonic origin, e.g. `performance.now()`). */
  atMs: number;
  /** Units done so far (blocks), those an earlier run did included. */
  done: number;
  /** Records produced so far by this run (blocks, transactions, logs and traces). */
  records: number;
}

/** What to show about a run at one moment. */
export interface ProgressEstimate {
  done: number;
  total: number;
  /** `done / total` in [0, 1]; 1 for an empty run. */
  fraction: number;
  /** Units per second over the window; 0 before two samples span any time. */
  unitsPerSec: number;
  /** Records per second over the window; 0 before two samples span any time. */
  recordsPerSec: number;
  /** Time left at `unitsPerSec`, in ms; 0 when done; null while the rate is 0 (unknown). */
  etaMs: number | null;
  /** Time since the first sample, in ms. */
  elapsedMs: number;
}

/** A run's recent samples, enough to compute rates over the window. */
export interface ProgressHistory {
  readonly total: number;
  readonly windowMs: number;
  /** When the run started (the first sample), in ms. */
  readonly startedAtMs: number;
  /**
   * Oldest first: the newest sample at or before `windowMs` ago (the window's base; the start
   * while the run is younger than the window), then every later one.
   */
  readonly samples: readonly ProgressSample[];
}

/** Default width of the rate window, in ms: rates follow a changing speed within ~10 s. */
export const DEFAULT_PROGRESS_WINDOW_MS = 10_000;

/**
 * Starts a history.
 * @param total - units the run has in all (>= 0).
 * @param start - the first sample (`done` = units done before this run, e.g. a resumed backfill's).
 * @param windowMs - width of the rate window, in ms; default {@link DEFAULT_PROGRESS_WINDOW_MS}.
 * @returns a history holding `start`.
 * @throws {RangeError} when `total` is negative or `windowMs` not positive (or either not finite).
 */
export function startProgress(total: number, start: ProgressSample, windowMs = DEFAULT_PROGRESS_WINDOW_MS): ProgressHistory {
  if (!(Number.isFinite(total) && total >= 0)) throw new RangeError(`total: expected a number >= 0, got ${total}`);
  if (!(Number.isFinite(windowMs) && windowMs > 0)) throw new RangeError(`windowMs: expected a number > 0, got ${windowMs}`);
  return { total, windowMs, startedAtMs: start.atMs, samples: [start] };
}

/**
 * Adds a sample and drops those the window no longer needs (all older than its base).
 * @param history - the history so far (not modified).
 * @param sample - the new reading; one older than the newest is ignored.
 * @returns the new history.
 */
export function addSample(history: ProgressHistory, sample: ProgressSample): ProgressHistory {
  const last = history.samples[history.samples.length - 1];
  if (last && sample.atMs < last.atMs) return history;
  const samples = [...history.samples, sample];
  const cutoff = sample.atMs - history.windowMs;
  let base = 0;
  while (base + 1 < samples.length && (samples[base + 1] as ProgressSample).atMs <= cutoff) base++;
  return { ...history, samples: samples.slice(base) };
}

/**
 * The figures to show now: done / total, and rates between the window's base and the newest
 * sample (units an earlier run did are in every sample, so they do not count as speed).
 * @param history - at least the start sample.
 * @returns the estimate at the newest sample.
 */
export function estimate(history: ProgressHistory): ProgressEstimate {
  const { samples, total } = history;
  const base = samples[0] as ProgressSample;
  const last = samples[samples.length - 1] as ProgressSample;
  const seconds = (last.atMs - base.atMs) / 1000;
  const unitsPerSec = seconds > 0 ? Math.max(0, last.done - base.done) / seconds : 0;
  const recordsPerSec = seconds > 0 ? Math.max(0, last.records - base.records) / seconds : 0;
  const left = Math.max(0, total - last.done);
  return {
    done: last.done,
    total,
    fraction: total === 0 ? 1 : Math.min(1, last.done / total),
    unitsPerSec,
    recordsPerSec,
    etaMs: left === 0 ? 0 : unitsPerSec > 0 ? (left / unitsPerSec) * 1000 : null,
    elapsedMs: last.atMs - history.startedAtMs,
  };
}

/**
 * A duration for people: `45s`, `3m05s`, `2h07m`, `3d04h`; `?` for an unknown one.
 * @param ms - milliseconds (rounded to whole seconds), or null.
 * @returns the text.
 */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return "?";
  const s = Math.max(0, Math.round(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/**
 * A rate for people: one decimal below 100, whole above (`12.5`, `2408`).
 * @param perSec - a rate per second.
 * @returns the text.
 */
export function formatRate(perSec: number): string {
  return perSec < 100 ? perSec.toFixed(1) : String(Math.round(perSec));
}
