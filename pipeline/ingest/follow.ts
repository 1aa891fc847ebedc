/**
 * The follower of the ingest stage (pipeline/ingest/ingest.ts `Ingester.follow`): follows the
 * head, detects reorgs, walks back to the common ancestor, announces the orphaned blocks and
 * re-ingests the new branch (docs/reorgs.md).
 * @module
 */
import type { BlockRef } from "../../lib/chain/state.js";
import { type NewHeads, subscribeNewHeads } from "../../lib/rpc/heads.js";
import type { Fetched, IngestCore } from "./core.js";
import type { BlockBundle } from "./transform.js";
import { emptyStats, type FollowOptions, type ForkPoint, type IngestStats, sleep } from "./types.js";
import { createAheadWindow, nextWindowSize, WINDOW_SPACING_MS, WINDOW_START } from "./window.js";

/**
 * Walks back from height `from` while the node's block differs from the produced one and returns
 * the common ancestor and the orphaned blocks (pure apart from the `nodeHash` calls). Heights are
 * asked one at a time, newest first, so a reorg of depth d costs d + 1 calls.
 * @param produced height → hash of the blocks produced (the window).
 * @param nodeHash the node's canonical hash at a height, or null when it has no block there.
 */
export async function findForkPoint(
  produced: ReadonlyMap<number, string>,
  from: number,
  nodeHash: (n: number) => Promise<string | null>,
): Promise<ForkPoint> {
  const orphaned: ForkPoint["orphaned"] = [];
  let k = from;
  for (;;) {
    const mine = produced.get(k);
    if (mine === undefined) break;
    const theirs = await nodeHash(k);
    if (theirs === mine) break;
    orphaned.push({ number: k, hash: mine, replacedBy: theirs });
    k--;
  }
  orphaned.reverse();
  return { ancestor: k, orphaned, beyondWindow: !produced.has(k) && orphaned.length > 0 };
}

/**
 * Follows the head until `opts.signal` aborts (see `Ingester.follow` in pipeline/ingest/types.ts).
 * @param core - the ingester's machinery ({@link IngestCore}).
 * @param opts - {@link FollowOptions}.
 * @returns the run's counts.
 */
export async function followHead(core: IngestCore, opts: FollowOptions = {}): Promise<IngestStats> {
  const { deps, source, log, nodeRetryMaxMs, state, metrics, seen, rpcRetries, withRetry, fetchOne, produceChunk, announceReorg } = core;
  const stats = emptyStats();
  const signal = opts.signal;
  const window = opts.reorgWindow ?? 128;
  const finalizedEvery = opts.finalizedEveryPolls ?? 30;
  const pollMs = opts.pollIntervalMs ?? 1000;
  const maxWindow = Math.max(1, opts.maxWindow ?? 16);
  const position = await withRetry("load the follower position", () => state.loadFollower(), signal);
  /** Hashes of the blocks produced recently, by number: the branch downstream stages know. */
  const produced = position.produced;
  let finalized: number | null = null;
  let polls = 0;
  const nodeHash = (n: number) => withRetry(`hash of block ${n}`, () => source.blockHash(n), signal, "rpc");
  const header = (id: number | string) =>
    withRetry(`header of block ${id}`, async () => (source.blockHeader ? source.blockHeader(id) : null), signal, "rpc");

  /**
   * Whether the node may no longer have our tip (`tip` at height `n`), given its head `head`. At or above
   * the tip: the node's hash there differs (or is missing). Below it, the node is either behind (a lagging
   * endpoint, or anvil between unwinding and re-mining in `anvil_reorg`) or on a shorter branch; only the
   * second counts: the node's block at its own head differs from the one produced there. A suspicion only:
   * {@link confirmFork} decides.
   */
  const tipOrphaned = async (n: number, tip: string, head: number): Promise<boolean> => {
    if (head >= n) return (await nodeHash(n)) !== tip;
    const mine = produced.get(head);
    return mine !== undefined && (await nodeHash(head)) !== mine;
  };

  /**
   * Confirms a suspected reorg of our blocks up to height `n` (the node's head: `head`) and finds its fork
   * point, or returns null when the node does not confirm it. The node's block at `min(n, head)` must
   * differ from ours (a null is never a reorg by itself: a lagging backend), the new branch must chain by
   * parent hashes (`blockHeader` by hash) down to a block we produced, and the node must name the same
   * block at that height when asked again (a stale backend answers once). Sources without `blockHeader`
   * are walked by number ({@link findForkPoint}) between the two reads.
   */
  const confirmFork = async (n: number, head: number): Promise<ForkPoint | null> => {
    const top = Math.min(n, head);
    const mine = produced.get(top);
    if (mine === undefined) return null;
    if (!source.blockHeader) {
      const first = await nodeHash(top);
      if (first === null || first === mine) return null;
      const fork = await findForkPoint(produced, n, async (k) => (k > head ? null : nodeHash(k)));
      return fork.orphaned.length > 0 && (await nodeHash(top)) === first ? fork : null;
    }
    const first = await header(top);
    if (first === null || first.hash === mine || first.number !== top) return null;
    const branch = new Map<number, string>([[top, first.hash]]);
    let cur = first;
    while (produced.has(cur.number - 1) && produced.get(cur.number - 1) !== cur.parentHash) {
      const parent = await header(cur.parentHash);
      if (parent === null || parent.hash !== cur.parentHash || parent.number !== cur.number - 1) return null;
      branch.set(parent.number, parent.hash);
      cur = parent;
    }
    if ((await nodeHash(top)) !== first.hash) return null;
    const ancestor = cur.number - 1;
    const orphaned: ForkPoint["orphaned"] = [];
    for (let k = ancestor + 1; k <= n; k++) {
      const hash = produced.get(k);
      if (hash !== undefined) orphaned.push({ number: k, hash, replacedBy: branch.get(k) ?? null });
    }
    return { ancestor, orphaned, beyondWindow: !produced.has(ancestor) && orphaned.length > 0 };
  };

  /**
   * Handles a suspected reorg of our blocks up to height `n`: when the node confirms it, announce, unwind,
   * and return the first height to re-ingest; null when it did not (counted; nothing announced).
   */
  const reorg = async (n: number, head: number): Promise<number | null> => {
    const fork = await confirmFork(n, head);
    if (fork === null || fork.orphaned.length === 0) {
      metrics.unconfirmedReorgs.inc();
      log.warn({ height: n, head }, "the node's block differs from the one produced but it did not confirm a reorg; asking again");
      return null;
    }
    stats.reorgs++;
    stats.orphaned += fork.orphaned.length;
    metrics.orphaned.inc(fork.orphaned.length);
    metrics.reorgDepth.observe(fork.orphaned.length);
    const range = { from: fork.ancestor + 1, to: n, depth: fork.orphaned.length };
    if (fork.beyondWindow) {
      stats.deepReorgs++;
      metrics.reorgs.inc({ depth: "beyond_window" });
      log.error(
        { ...range, window, finalized },
        "reorg deeper than the window of produced hashes: the window is re-ingested; orphaned blocks below it are not known and stay indexed",
      );
    } else {
      metrics.reorgs.inc({ depth: "window" });
      if (finalized !== null && fork.ancestor < finalized) log.error({ ...range, finalized }, "reorg below the node's finalized block");
      log.warn(range, "chain reorganised: orphaned blocks announced, re-ingesting the new branch");
    }
    const ancestorHash = produced.get(fork.ancestor) ?? null;
    await announceReorg(fork, ancestorHash, signal);
    deps.crashHook?.("announce-unwind");
    const heights = fork.orphaned.map((o) => o.number);
    await withRetry(
      "unwind the position",
      // Beyond the window the ancestor's hash is unknown: "" resumes after it without a check.
      () => state.unwind({ number: fork.ancestor, hash: ancestorHash ?? "" }, heights),
      signal,
    );
    for (const h of heights) {
      produced.delete(h);
      disputed.delete(h);
    }
    return fork.ancestor + 1;
  };

  /**
   * Heights whose produced block the canonical map names another block for: a reorg was announced
   * (canon changed first) but the process died before unwinding. Each is either confirmed as a reorg
   * by the tip check (and unwound), or, while the node still has our block there, produced again:
   * canon back to it and its records with a new sequence number, so the index and the match stage
   * take it as canonical again (docs/reorgs.md, "Restarts").
   */
  const disputed = new Set<number>();
  /** Adds the heights where canon and produced disagree (at and below `upTo`) to {@link disputed}. */
  const findDisputed = async (upTo: number) => {
    const heights = [...produced.keys()].filter((h) => h <= upTo);
    const canon = await withRetry("read the canonical map", () => state.hashesAt(heights), signal);
    for (const h of heights) {
      const c = canon.get(h);
      if (c !== undefined && c !== produced.get(h)) disputed.add(h);
    }
  };

  let next: number;
  if (opts.from !== undefined) {
    // An explicit start wins over the durable position. Blocks produced above it may have been
    // orphaned meanwhile: announce those first; what is known below it still guards reorgs.
    if (position.tip && position.tip.number >= opts.from) {
      const head = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc");
      if (await tipOrphaned(position.tip.number, position.tip.hash, head)) await reorg(position.tip.number, head);
    }
    next = opts.from;
    for (const h of [...produced.keys()]) if (h >= next) produced.delete(h);
    await findDisputed(next - 1);
  } else if (position.tip) {
    next = position.tip.number + 1;
    await findDisputed(position.tip.number);
    // A crash after `canon` named the next block and before the tip moved: that block may have been
    // produced (in part). Taken as produced until checked: re-produced if the node still has it,
    // announced as orphaned if the node confirms another block there.
    // Not when a height at or below the tip is disputed: then the last write to `canon` above the tip
    // was that unfinished announcement (a process that held such a block announces every height it
    // held, that one included), so `canon` there names the new branch's block, not ours. Taken as
    // ours, it passed the tip check (the node has it) while the disputed height below it never
    // matched: the follower stalled for good (a crash at produce-tip, a reorg below that block, a
    // crash at announce-unwind).
    const pending =
      disputed.size === 0 ? (await withRetry("read the canonical map", () => state.hashesAt([next]), signal)).get(next) : undefined;
    if (pending) {
      produced.set(next, pending);
      disputed.add(next);
      next++;
    }
    log.info({ tip: position.tip, disputed: [...disputed] }, "resuming after the last produced block");
  } else {
    next = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc");
  }

  /** Delay before asking again after a node fault: from the poll interval (≤ 250 ms), doubling up to nodeRetryMaxMs. */
  const faultStartMs = Math.min(pollMs, 250, nodeRetryMaxMs);
  let faultDelayMs = faultStartMs;
  const afterFault = async () => {
    await sleep(faultDelayMs, signal);
    faultDelayMs = Math.min(faultDelayMs * 2, nodeRetryMaxMs);
  };

  /** Produces a fetched block as canonical at its height and moves the position there. */
  const produceAt = async (f: Fetched, bundle: BlockBundle) => {
    await produceChunk([f], stats, signal, true);
    deps.crashHook?.("produce-tip");
    const ref: BlockRef = { number: f.number, hash: bundle.block.hash };
    await withRetry("record the position", () => state.markProduced(ref), signal);
    produced.set(f.number, ref.hash);
  };

  /**
   * The catch-up window: heights above `next` fetched while it is produced (pipeline/ingest/window.ts),
   * released in order. Cleared after every fault or reorg, so what is produced after one is fetched anew.
   */
  const ahead = createAheadWindow((n, drop) => fetchOne(n, signal ? AbortSignal.any([signal, drop]) : drop), WINDOW_SPACING_MS);
  let windowSize = Math.min(WINDOW_START, maxWindow);
  metrics.followWindow.set(windowSize);
  /** Sizes the window after a released height or a fault ({@link nextWindowSize}). */
  const adapt = (outcome: "clean" | "retried" | "fault") => {
    windowSize = nextWindowSize(windowSize, outcome, maxWindow);
    metrics.followWindow.set(windowSize);
  };

  /** Wakes the follower at every new head the node announces over WebSocket, when it offers that. */
  const heads: NewHeads | undefined = opts.wsUrl ? subscribeNewHeads(opts.wsUrl, log) : undefined;

  log.info({ from: next, maxWindow, newHeads: heads !== undefined }, "following the head");
  try {
    while (!signal?.aborted) {
      const head = await withRetry("eth_blockNumber", () => source.headNumber(), signal, "rpc").catch((err) => {
        if (signal?.aborted) return -1;
        throw err;
      });
      if (head >= 0) {
        seen.head = head;
        seen.activeAtMs = Date.now();
        heads?.polled(head);
        if (seen.last !== null) metrics.followLagBlocks.observe(Math.max(0, head - seen.last));
        if (seen.lastTimestampMs !== null) metrics.followLagSeconds.observe(Math.max(0, (Date.now() - seen.lastTimestampMs) / 1000));
      }
      if (finalizedEvery > 0 && polls++ % finalizedEvery === 0) {
        finalized = (await source.finalizedNumber?.().catch(() => null)) ?? null;
        await state.recordFinalized?.(finalized).catch((err) => log.warn({ err }, "finalized block not published"));
      }
      // A reorg that replaced the tip without growing the chain (or while we were down) shows up only here;
      // so does one onto a branch with fewer blocks (the head dropped below our tip and the node's block at
      // its head is not ours). A node that is merely behind still has our block at its head: no reorg.
      const tip = produced.get(next - 1);
      if (tip !== undefined && head >= 0 && (await tipOrphaned(next - 1, tip, head))) {
        ahead.clear();
        const resumeAt = await reorg(next - 1, head);
        if (resumeAt === null) {
          await afterFault();
          continue;
        }
        next = resumeAt;
      }
      let faulted = false;
      // Before anything new: produce again what an unfinished reorg announcement left disputed.
      for (const h of [...disputed].sort((a, b) => a - b)) {
        if (signal?.aborted || head < h) break;
        const f = await fetchOne(h, signal);
        const mine = produced.get(h);
        if (!f.bundle || f.bundle.block.hash !== mine) {
          // Nothing is produced until it matches: say why (a stall here was silent in the stage's output).
          log.warn(
            { block: h, hash: mine, node: f.bundle?.block.hash ?? null, tip: next - 1 },
            "a height a reorg announcement left disputed: the node has another block (or none) there; asking again",
          );
          faulted = true; // a lagging backend, or a reorg the tip check confirms at the next poll
          break;
        }
        await produceAt(f, f.bundle);
        disputed.delete(h);
        metrics.reproduced.inc();
        log.warn({ block: h, hash: mine }, "produced again: a reorg announced before a crash is not on the node's chain");
      }
      while (!faulted && disputed.size === 0 && next <= head && !signal?.aborted) {
        const retriesBefore = rpcRetries.count;
        // One block behind or less: no window (the height asked is the head).
        const taken = await ahead.take(next, head, next < head ? windowSize : 1);
        const f = taken.value;
        if (!f.bundle && !f.error) {
          // At or below the head the node reported and yet null: a lagging backend. Never skipped.
          metrics.blockUnavailable.inc();
          log.warn({ block: next, head }, "the node has no block at a height at or below its head; asking again");
          faulted = true;
          break;
        }
        const parent = produced.get(next - 1);
        if (f.bundle && parent !== undefined && f.bundle.block.parentHash !== parent) {
          if (taken.ahead) {
            // Fetched before its parent was produced: maybe of a branch the node has left since. Asked anew first.
            ahead.clear();
            continue;
          }
          ahead.clear();
          const resumeAt = await reorg(next - 1, head);
          if (resumeAt === null) {
            faulted = true;
            break;
          }
          next = resumeAt;
          continue;
        }
        if (f.bundle) {
          await produceAt(f, f.bundle);
          // Keep `window` blocks, and every block the node does not call final yet.
          const keepFrom = Math.min(next - window + 1, finalized === null ? Number.POSITIVE_INFINITY : finalized + 1);
          for (const h of [...produced.keys()]) if (h < keepFrom) produced.delete(h);
          if (next % 64 === 0) {
            await withRetry("prune the position", () => state.prune(keepFrom, keepFrom - 16 * window), signal);
          }
          opts.onBlock?.(f.bundle);
        } else {
          await produceChunk([f], stats, signal, true); // malformed: dead-lettered whole, never dropped
        }
        faultDelayMs = faultStartMs;
        adapt(rpcRetries.count > retriesBefore ? "retried" : "clean");
        next++;
      }
      if (faulted) {
        ahead.clear();
        adapt("fault");
        await afterFault();
      } else await (heads ? heads.wait(pollMs, signal) : sleep(pollMs, signal));
    }
  } finally {
    ahead.clear();
    heads?.close();
  }
  return stats;
}
