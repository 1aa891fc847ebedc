/**
 * The follower's catch-up window (docs/reorgs.md "Faults"): when it is more than one block behind
 * the head, the follower (./follow.ts) fetches the next heights at once, up to a window whose size
 * adapts to the endpoint's answers, and releases them strictly in height order, so parent hashes
 * are checked and blocks produced exactly as one at a time. A height whose fetch hangs delays only
 * itself: the heights behind it are fetched meanwhile and follow at once when it arrives.
 * @module
 */
import { ChainsiftError } from "../../lib/errors.js";

/** What happened to a height the window released, for {@link nextWindowSize}. */
export type WindowOutcome =
  /** Fetched and produced without a retry of a JSON-RPC read. */
  | "clean"
  /** Fetched, but a JSON-RPC read was retried meanwhile (a failed request after the transport's own tries: the endpoint is struggling or rate limited). */
  | "retried"
  /** The follower stopped the catch-up (a null block at or below the head, a suspected reorg): the window restarts. */
  | "fault";

/**
 * The next window size (pure), additive increase / multiplicative decrease like TCP's congestion
 * window (RFC 5681): a clean height grows it by one up to `max`, a retried one halves it, a fault
 * brings it back to the start (`min(4, max)`). Never below 1 nor above `max`.
 * @param size - the current size (heights).
 * @param outcome - what happened to the height just released.
 * @param max - the largest window (config `ingest.followWindow`, `CHAINSIFT_FOLLOW_WINDOW`); 1 disables the window.
 * @returns the new size, 1 … max.
 */
export function nextWindowSize(size: number, outcome: WindowOutcome, max: number): number {
  const cap = Math.max(1, Math.floor(max));
  if (outcome === "clean") return Math.min(cap, Math.max(1, size) + 1);
  if (outcome === "retried") return Math.max(1, Math.min(cap, Math.floor(size / 2)));
  return Math.min(cap, WINDOW_START);
}

/** The window's size at the start and after a fault (heights), capped by the configured maximum. */
export const WINDOW_START = 4;

/** A height taken from an {@link AheadWindow}: its result and whether it was fetched ahead (before the heights below it were produced). */
export interface Taken<T> {
  value: T;
  /** Fetched while lower heights were still unproduced: a block of a branch the node may have left meanwhile; re-fetch before believing a reorg. */
  ahead: boolean;
}

/** A window of fetches ahead of the follower (see {@link createAheadWindow}). */
export interface AheadWindow<T> {
  /**
   * The result of height `n`, fetching `n` and the heights above it up to `last` (at most `size`
   * fetches in flight, `n` included) if they are not under way. Entries below `n` are dropped.
   */
  take(n: number, last: number, size: number): Promise<Taken<T>>;
  /** Drops (and aborts) every fetch under way: after a fault or a reorg, heights are fetched anew. */
  clear(): void;
  /** Heights under way (tests). */
  pending(): number[];
}

/**
 * How far apart (ms) the window starts its fetches ahead: more than the JSON-RPC client's batching
 * window (`batchStallTimeMs`, 2 ms), so each height goes out as its own HTTP request (its block,
 * receipts and traces batched together) instead of all of them in one batch, which one hang or one
 * slow trace would hold up whole.
 */
export const WINDOW_SPACING_MS = 5;

/** A fetch dropped by the window before it started. */
class DroppedError extends ChainsiftError {
  readonly code = "CS_WINDOW_DROPPED";
  constructor() {
    super("dropped by the catch-up window");
    this.name = "DroppedError";
  }
}

/**
 * Fetches heights ahead of the one asked and hands them out in order (pure apart from `fetch`).
 * Each fetch gets its own abort signal, aborted when the window drops it ({@link AheadWindow.clear},
 * or a height passed by); a dropped fetch's result and error are ignored.
 * @param fetch - fetches one height; must honour its signal by ending soon after it aborts.
 * @param spacingMs - the i-th height started ahead by one `take` starts i × this many ms later
 *   (the follower passes {@link WINDOW_SPACING_MS}). Default 0: all at once.
 */
export function createAheadWindow<T>(fetch: (n: number, signal: AbortSignal) => Promise<T>, spacingMs = 0): AheadWindow<T> {
  const inflight = new Map<number, { promise: Promise<T>; abort: AbortController; ahead: boolean }>();
  const drop = (n: number) => {
    const e = inflight.get(n);
    if (!e) return;
    e.abort.abort();
    inflight.delete(n);
  };
  const start = (n: number, ahead: boolean, delayMs = 0) => {
    const abort = new AbortController();
    const promise =
      delayMs <= 0
        ? fetch(n, abort.signal)
        : new Promise<void>((resolve) => setTimeout(resolve, delayMs)).then(() => {
            if (abort.signal.aborted) throw new DroppedError();
            return fetch(n, abort.signal);
          });
    promise.catch(() => {}); // taken (and awaited) later, or dropped
    inflight.set(n, { promise, abort, ahead });
  };
  return {
    async take(n, last, size) {
      for (const h of [...inflight.keys()]) if (h < n) drop(h);
      if (!inflight.has(n)) start(n, false);
      const top = Math.min(last, n + Math.max(1, size) - 1);
      let started = 0;
      for (let h = n + 1; h <= top; h++) if (!inflight.has(h)) start(h, true, ++started * spacingMs);
      const e = inflight.get(n) as { promise: Promise<T>; ahead: boolean };
      inflight.delete(n);
      return { value: await e.promise, ahead: e.ahead };
    },
    clear() {
      for (const h of [...inflight.keys()]) drop(h);
    },
    pending: () => [...inflight.keys()].sort((a, b) => a - b),
  };
}
