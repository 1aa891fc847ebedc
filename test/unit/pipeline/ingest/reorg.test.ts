import { keccak256, toUtf8Bytes } from "ethers";
import { describe, expect, it } from "vitest";
import { createMemoryChainState } from "../../../../lib/chain/state.js";
import { createLogger } from "../../../../lib/logger.js";
import type { ReorgRecord } from "../../../../lib/records.js";
import { createIngester, findForkPoint } from "../../../../pipeline/ingest/ingest.js";
import type { ChainSource } from "../../../../pipeline/ingest/rpc.js";
import type { OutgoingRecord, RecordProducer } from "../../../../pipeline/kafka/bus.js";
import { hasMainnetFixtures, loadMainnetBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { followUntil, h, recordingProducer, scriptedChain, seqOf } from "../../../support/scripted-chain.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** Longest run of fixture blocks linked by parentHash (real consecutive mainnet hashes). */
function mainnetRun(): Array<{ number: number; hash: string }> {
  const blocks = loadMainnetBlocks();
  let best: Array<{ number: number; hash: string; parent: string }> = [];
  let cur: typeof best = [];
  for (const b of blocks) {
    const e = { number: b.number, hash: b.hash, parent: String(b.block.parentHash).toLowerCase() };
    const prev = cur.at(-1);
    cur = prev && prev.number + 1 === e.number && prev.hash === e.parent ? [...cur, e] : [e];
    if (cur.length > best.length) best = cur;
  }
  return best;
}

describe.skipIf(!fixtures)("findForkPoint on real mainnet block hashes", () => {
  const run = fixtures ? mainnetRun() : [];
  const produced = new Map(run.map((b) => [b.number, b.hash]));
  const top = run.at(-1)?.number ?? 0;
  const other = (n: number) => keccak256(toUtf8Bytes(`other branch ${n}`));
  /** A node that agrees with `produced` up to `ancestor` and has other blocks above it (up to `height`). */
  const node = (ancestor: number, height = top) => {
    const asked: number[] = [];
    const fn = async (n: number) => {
      asked.push(n);
      if (n > height) return null;
      return n <= ancestor ? (produced.get(n) ?? other(n)) : other(n);
    };
    return { fn, asked };
  };

  it("uses a run of at least 3 consecutive linked blocks", () => {
    expect(run.length).toBeGreaterThanOrEqual(3);
  });

  it("finds no fork when the node still has the produced tip (one call)", async () => {
    const n = node(top);
    const fork = await findForkPoint(produced, top, n.fn);
    expect(fork).toEqual({ ancestor: top, orphaned: [], beyondWindow: false });
    expect(n.asked).toEqual([top]);
  });

  it("walks back to the common ancestor and lists the orphaned blocks with their replacements, oldest first", async () => {
    const depth = Math.min(2, run.length - 1);
    const n = node(top - depth);
    const fork = await findForkPoint(produced, top, n.fn);
    expect(fork.ancestor).toBe(top - depth);
    expect(fork.beyondWindow).toBe(false);
    expect(fork.orphaned).toEqual(
      Array.from({ length: depth }, (_, i) => {
        const h = top - depth + 1 + i;
        return { number: h, hash: produced.get(h), replacedBy: other(h) };
      }),
    );
    expect(n.asked).toHaveLength(depth + 1);
  });

  it("reports a node without a block at an orphaned height (shorter new chain) as replacedBy null", async () => {
    const fork = await findForkPoint(produced, top, node(top - 2, top - 1).fn);
    expect(fork.orphaned.at(-1)).toEqual({ number: top, hash: produced.get(top), replacedBy: null });
    expect(fork.orphaned.at(-2)?.replacedBy).toBe(other(top - 1));
  });

  it("flags a reorg deeper than the window", async () => {
    const first = run[0]?.number ?? 0;
    const fork = await findForkPoint(produced, top, node(first - 5).fn);
    expect(fork.beyondWindow).toBe(true);
    expect(fork.ancestor).toBe(first - 1);
    expect(fork.orphaned).toHaveLength(run.length);
  });
});

// ---------------------------------------------------------------------------------------------
// The follower against a scripted chain (pure logic: in-memory state and producer).
// ---------------------------------------------------------------------------------------------

const logger = createLogger("silent");

describe("the follower announces reorgs before the new branch and resumes from its durable position", () => {
  it("announces each orphaned block with a sequence number between the orphaned and the new records", async () => {
    const chain = scriptedChain();
    chain.mine(6);
    const state = createMemoryChainState();
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source: chain.source, producer, logger, state });
    const blocksAt = (n: number) => sent.filter((m) => m.kind === "blocks" && (m.record as { number: { num: number } }).number.num === n);
    await followUntil(ingester, () => blocksAt(5).length === 1, 0);
    const orphanedHashes = [h("a", 4), h("a", 5)];
    chain.reorg(2, "b");
    chain.mine(1, "b");
    const stats = await followUntil(ingester, () => blocksAt(6).length === 1);

    expect(stats.reorgs).toBe(1);
    expect(stats.orphaned).toBe(2);
    const reorgs = sent.filter((m) => m.kind === "reorgs");
    expect(reorgs.map((m) => (m.record as ReorgRecord).orphanedHash)).toEqual(orphanedHashes);
    expect(reorgs.map((m) => m.record)).toEqual([
      expect.objectContaining({ number: 4, replacedBy: h("b", 4), ancestorNumber: 3, ancestorHash: h("a", 3), depth: 2 }),
      expect.objectContaining({ number: 5, replacedBy: h("b", 5), ancestorNumber: 3, ancestorHash: h("a", 3), depth: 2 }),
    ]);
    // Order: orphaned blocks' records < reorg announcements < the new branch's records.
    const iReorg = sent.indexOf(reorgs[0] as OutgoingRecord);
    const newBranch = sent.filter((m) => m.kind === "blocks" && (m.record as { hash: string }).hash === h("b", 4));
    expect(sent.indexOf(newBranch[0] as OutgoingRecord)).toBeGreaterThan(iReorg);
    const orphanSeq = seqOf(sent.find((m) => m.key === h("a", 5)) as OutgoingRecord);
    expect(seqOf(reorgs[0] as OutgoingRecord)).toBeGreaterThan(orphanSeq);
    expect(seqOf(newBranch[0] as OutgoingRecord)).toBeGreaterThan(seqOf(reorgs[0] as OutgoingRecord));
    // The canonical map names the new branch at every reorganised height.
    const canon = await state.hashesAt([3, 4, 5, 6]);
    expect([...canon.values()]).toEqual([h("a", 3), h("b", 4), h("b", 5), h("b", 6)]);
  });

  it("resumes after the durable tip and finds a reorg that happened while it was down (deeper than what was mined since)", async () => {
    const chain = scriptedChain();
    chain.mine(10);
    const state = createMemoryChainState();
    const first = recordingProducer();
    await followUntil(
      createIngester({ source: chain.source, producer: first.producer, logger, state }),
      () => first.sent.some((m) => m.key === h("a", 9)),
      0,
    );
    // Down: a reorg of depth 4, then one more block.
    chain.reorg(4, "c");
    chain.mine(1, "c");
    const second = recordingProducer();
    const stats = await followUntil(createIngester({ source: chain.source, producer: second.producer, logger, state }), () =>
      second.sent.some((m) => m.key === h("c", 10)),
    );
    expect(stats.reorgs).toBe(1);
    expect(second.sent.filter((m) => m.kind === "reorgs").map((m) => (m.record as ReorgRecord).number)).toEqual([6, 7, 8, 9]);
    // Nothing below the fork is produced again; every height of the new branch is.
    const blocks = second.sent.filter((m) => m.kind === "blocks").map((m) => (m.record as { number: { num: number } }).number.num);
    expect(blocks).toEqual([6, 7, 8, 9, 10]);
    expect((await state.loadFollower()).tip).toEqual({ number: 10, hash: h("c", 10) });
  });

  it("announces the orphaned tip at once when the new branch is shorter (the head drops below the tip, no new block)", async () => {
    const chain = scriptedChain();
    chain.mine(8);
    const state = createMemoryChainState();
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source: chain.source, producer, logger, state });
    await followUntil(ingester, () => sent.some((m) => m.key === h("a", 7)), 0);
    // The new branch forks after block 4 and has only one block (5): heights 6 and 7 no longer exist.
    chain.shorten(3);
    chain.mine(1, "d");
    const stats = await followUntil(ingester, () => sent.some((m) => m.kind === "reorgs" && (m.record as ReorgRecord).number === 7));
    expect(stats.reorgs).toBe(1);
    expect(sent.filter((m) => m.kind === "reorgs").map((m) => m.record)).toEqual([
      expect.objectContaining({ number: 5, replacedBy: h("d", 5), ancestorNumber: 4 }),
      expect.objectContaining({ number: 6, replacedBy: null, ancestorNumber: 4 }),
      expect.objectContaining({ number: 7, replacedBy: null, ancestorNumber: 4 }),
    ]);
    expect(sent.some((m) => m.key === h("d", 5))).toBe(true);
    expect((await state.loadFollower()).tip).toEqual({ number: 5, hash: h("d", 5) });
  });

  it("a node that is behind (its head below our tip, our block at its head) is not a reorg", async () => {
    const chain = scriptedChain();
    chain.mine(8);
    const state = createMemoryChainState();
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source: chain.source, producer, logger, state });
    await followUntil(ingester, () => sent.some((m) => m.key === h("a", 7)), 0);
    // A lagging endpoint (or anvil between unwinding and re-mining): heights 5..7 are missing, 4 is ours.
    chain.shorten(3);
    let polls = 0;
    const behind = await followUntil(ingester, () => ++polls > 40);
    expect(behind.reorgs).toBe(0);
    // It catches up with the same blocks and grows: block 8 follows our 7, nothing was announced.
    chain.mine(4);
    const stats = await followUntil(ingester, () => sent.some((m) => m.key === h("a", 8)));
    expect(stats.reorgs).toBe(0);
    expect(sent.filter((m) => m.kind === "reorgs")).toEqual([]);
    expect(sent.filter((m) => m.kind === "blocks").map((m) => (m.record as { number: { num: number } }).number.num)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8,
    ]);
  });

  it("a first start without a position begins at the node's head; an explicit from wins over the position", async () => {
    const chain = scriptedChain();
    chain.mine(8);
    const state = createMemoryChainState();
    const a = recordingProducer();
    await followUntil(createIngester({ source: chain.source, producer: a.producer, logger, state }), () => a.sent.length > 0);
    expect(a.sent.filter((m) => m.kind === "blocks").map((m) => (m.record as { number: { num: number } }).number.num)).toEqual([7]);
    const b = recordingProducer();
    await followUntil(
      createIngester({ source: chain.source, producer: b.producer, logger, state }),
      () => b.sent.some((m) => m.key === h("a", 7)),
      2,
    );
    expect(b.sent.filter((m) => m.kind === "blocks").map((m) => (m.record as { number: { num: number } }).number.num)).toEqual([
      2, 3, 4, 5, 6, 7,
    ]);
  });
});

describe("backfill resume", () => {
  it("an interrupted backfill resumes after the last chunk it produced; resume: false re-reads the range", async () => {
    const chain = scriptedChain();
    chain.mine(30);
    const state = createMemoryChainState();
    const fetched: number[] = [];
    const source: ChainSource = {
      ...chain.source,
      fetchBlock: async (n) => {
        fetched.push(n);
        return chain.source.fetchBlock(n);
      },
    };
    // The first run dies while producing block 12's chunk (a producer that fails for good).
    let sends = 0;
    const dying: RecordProducer = {
      ...recordingProducer().producer,
      send: async () => {
        if (++sends === 3) throw Object.assign(new Error("killed"), { name: "NonRetryable" });
      },
    };
    // Every block of this chain counts as final here (the clamp to finality is tested in follow-faults.test.ts).
    const opts = { source, logger, state, concurrency: 4, maxAttempts: 1, backfillSafetyDepth: 0 };
    await expect(createIngester({ ...opts, producer: dying }).backfill(0, 25)).rejects.toThrow("killed");
    expect(await state.backfillProgress(0, 25)).toBe(7);

    fetched.length = 0;
    const again = recordingProducer();
    const stats = await createIngester({ ...opts, producer: again.producer }).backfill(0, 25);
    expect(stats.resumedPast).toBe(8);
    expect(Math.min(...fetched)).toBe(8);
    expect(stats.blocks).toBe(18);
    expect(await state.backfillProgress(0, 25)).toBe(25);

    const full = recordingProducer();
    const all = await createIngester({ ...opts, producer: full.producer }).backfill(0, 25, { resume: false });
    expect(all.blocks).toBe(26);
    // Another range is another backfill: nothing to resume.
    expect(await state.backfillProgress(0, 20)).toBeNull();
  });
});
