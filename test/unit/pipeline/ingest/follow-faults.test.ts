/**
 * The follower against a node that behaves like a load-balanced provider (issue 19 §1): a lagging
 * backend answers null for a block at or below the head it reported, a stale backend answers another
 * hash once. The follower never skips a height, never announces a reorg the node did not confirm, keeps
 * its node retry delays short, and at a restart finishes (or undoes) a reorg announcement a crash cut
 * short. Pure logic: a scripted in-memory chain (test/support/scripted-chain.ts), state and producer.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryChainState } from "../../../../lib/chain/state.js";
import type { CrashPoint } from "../../../../lib/config/index.js";
import { RetryableError } from "../../../../lib/errors.js";
import { createLogger } from "../../../../lib/logger.js";
import type { ReorgRecord } from "../../../../lib/records.js";
import { createIngester } from "../../../../pipeline/ingest/ingest.js";
import { blockNumbers, followUntil, h, recordingProducer, scriptedChain, seqOf } from "../../../support/scripted-chain.js";

const logger = createLogger("silent");
const counter = async (registry: Registry, name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;
const reorgsOf = (sent: ReturnType<typeof recordingProducer>["sent"]) =>
  sent.filter((m) => m.kind === "reorgs").map((m) => m.record as ReorgRecord);

/** The two ways the follower confirms a reorg: sources without and with `blockHeader`. */
const CONFIRMATIONS = [
  { headers: false, label: "reorgs confirmed by number" },
  { headers: true, label: "reorgs confirmed by parent hashes (blockHeader)" },
];

/** A chain of 6 blocks (0..5), followed until block 5 was produced; the ingester is stopped, ready to follow again. */
async function followedToFive(headers: boolean) {
  const chain = scriptedChain({ headers });
  chain.mine(6);
  const registry = new Registry();
  const { producer, sent } = recordingProducer();
  const ingester = createIngester({ source: chain.source, producer, logger, registry });
  await followUntil(ingester, () => sent.some((m) => m.key === h("a", 5)), 0);
  return { chain, registry, sent, ingester };
}

describe.each(CONFIRMATIONS)("the follower never skips a height and never invents a reorg ($label)", ({ headers }) => {
  it("a null block at or below the node's head is retried (counted), never skipped", async () => {
    const chain = scriptedChain({ headers });
    chain.mine(6);
    chain.fault(3, { kind: "null" }, { kind: "null" });
    const registry = new Registry();
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source: chain.source, producer, logger, registry });
    const stats = await followUntil(ingester, () => sent.some((m) => m.key === h("a", 5)), 0);
    expect(blockNumbers(sent)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(stats.missing).toBe(0);
    expect(stats.reorgs).toBe(0);
    expect(await counter(registry, "chainsift_ingest_block_unavailable_total")).toBe(2);
  });

  it("a null where our tip was is not a reorg", async () => {
    const { chain, registry, sent, ingester } = await followedToFive(headers);
    // Twice: the suspicion and the first look again both meet the lagging backend.
    chain.fault(5, { kind: "null" }, { kind: "null" });
    chain.mine(2);
    const stats = await followUntil(ingester, () => sent.some((m) => m.key === h("a", 7)));
    expect(reorgsOf(sent)).toEqual([]);
    expect(stats.reorgs).toBe(0);
    expect(blockNumbers(sent)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await counter(registry, "chainsift_ingest_unconfirmed_reorgs_total")).toBe(1);
  });

  it("a stale backend naming another block at our tip once is not a reorg (counted as unconfirmed)", async () => {
    const { chain, registry, sent, ingester } = await followedToFive(headers);
    chain.fault(5, { kind: "branch", branch: "stale" });
    let polls = 0;
    await followUntil(ingester, () => ++polls > 20);
    chain.mine(1);
    const stats = await followUntil(ingester, () => sent.some((m) => m.key === h("a", 6)));
    expect(reorgsOf(sent)).toEqual([]);
    expect(stats.reorgs).toBe(0);
    expect(blockNumbers(sent)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(await counter(registry, "chainsift_ingest_unconfirmed_reorgs_total")).toBe(1);
  });

  it("a real reorg is still announced once, with its replacements, and the new branch follows", async () => {
    const { chain, sent, ingester } = await followedToFive(headers);
    chain.reorg(3, "b");
    chain.mine(1, "b");
    const stats = await followUntil(ingester, () => sent.some((m) => m.key === h("b", 6)));
    expect(stats.reorgs).toBe(1);
    expect(reorgsOf(sent).map((r) => [r.number, r.orphanedHash, r.replacedBy, r.ancestorNumber])).toEqual([
      [3, h("a", 3), h("b", 3), 2],
      [4, h("a", 4), h("b", 4), 2],
      [5, h("a", 5), h("b", 5), 2],
    ]);
    expect(blockNumbers(sent)).toEqual([0, 1, 2, 3, 4, 5, 3, 4, 5, 6]);
    if (headers) expect(chain.calls).toContain(`blockHeader:${h("b", 3)}`);
  });
});

describe("the follower's node retry delays stay short", () => {
  it("a failing node is retried with delays capped at nodeRetryMaxMs (Kafka and Redis keep the long backoff)", async () => {
    const chain = scriptedChain();
    chain.mine(3);
    let failures = 6;
    const source = {
      ...chain.source,
      headNumber: async () => {
        if (failures-- > 0) throw new RetryableError("node down");
        return chain.source.headNumber();
      },
    };
    const delays: number[] = [];
    const capture = pino({ level: "warn" }, { write: (line: string) => delays.push(JSON.parse(line).retryInMs ?? -1) });
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source, producer, logger: capture, retryInitialMs: 20, nodeRetryMaxMs: 80 });
    await followUntil(ingester, () => sent.some((m) => m.key === h("a", 2)), 0);
    const retries = delays.filter((d) => d >= 0);
    expect(retries).toEqual([20, 40, 80, 80, 80, 80]);
  });
});

/** Follows until block `key` is produced, then stops (a run before or after a "crash"), with `state` kept. */
async function run(
  chain: ReturnType<typeof scriptedChain>,
  state: ReturnType<typeof createMemoryChainState>,
  key: string,
  from?: number,
  registry?: Registry,
) {
  const { producer, sent } = recordingProducer();
  const stats = await followUntil(
    createIngester({ source: chain.source, producer, logger, state, registry }),
    () => sent.some((m) => m.key === key),
    from,
  );
  return { stats, sent };
}

describe("a restart finishes or undoes a reorg announcement a crash cut short (issue 19 §3d)", () => {
  it("canon already says B, the tip still A, the node back on A: A is produced again (canon A, newer seq), nothing announced", async () => {
    const chain = scriptedChain({ headers: true });
    chain.mine(6);
    const state = createMemoryChainState();
    await run(chain, state, h("a", 5), 0);
    // The crash: the reorg onto B was announced (canon first, then the reorgs records) but never unwound.
    await state.announce([
      { number: 4, hash: h("a", 4), replacedBy: h("b", 4) },
      { number: 5, hash: h("a", 5), replacedBy: h("b", 5) },
    ]);
    const reorgSeq = await state.reserveSeq(1);
    chain.mine(1);
    const registry = new Registry();
    const { stats, sent: secondSent } = await run(chain, state, h("a", 6), undefined, registry);
    expect(stats.reorgs).toBe(0);
    expect(reorgsOf(secondSent)).toEqual([]);
    expect(blockNumbers(secondSent)).toEqual([4, 5, 6]);
    for (const m of secondSent.filter((x) => x.kind === "blocks")) expect(seqOf(m)).toBeGreaterThan(reorgSeq);
    expect([...(await state.hashesAt([4, 5, 6])).values()]).toEqual([h("a", 4), h("a", 5), h("a", 6)]);
    expect(await counter(registry, "chainsift_ingest_reproduced_blocks_total")).toBe(2);
  });

  it("canon already says B, the tip still A, the node on B: the reorg is announced again and unwound, B produced", async () => {
    const chain = scriptedChain({ headers: true });
    chain.mine(6);
    const state = createMemoryChainState();
    await run(chain, state, h("a", 5), 0);
    chain.reorg(2, "b");
    await state.announce([
      { number: 4, hash: h("a", 4), replacedBy: h("b", 4) },
      { number: 5, hash: h("a", 5), replacedBy: h("b", 5) },
    ]);
    const { stats, sent: secondSent } = await run(chain, state, h("b", 5), undefined);
    expect(stats.reorgs).toBe(1);
    expect(reorgsOf(secondSent).map((r) => r.orphanedHash)).toEqual([h("a", 4), h("a", 5)]);
    expect(blockNumbers(secondSent)).toEqual([4, 5]);
    expect((await state.loadFollower()).tip).toEqual({ number: 5, hash: h("b", 5) });
  });

  it("a crash after producing a block and before the tip moved, the node reorganised meanwhile: that block is announced as orphaned", async () => {
    const chain = scriptedChain({ headers: true });
    chain.mine(6);
    const state = createMemoryChainState();
    await run(chain, state, h("a", 5), 0);
    // The crash: block 6 of A was recorded in canon and produced, the tip still says 5.
    const tip = (await state.loadFollower()).tip;
    expect(tip?.number).toBe(5);
    chain.mine(1);
    await state.expect([{ number: 6, hash: h("a", 6) }]);
    chain.reorg(1, "c");
    const { stats, sent: secondSent } = await run(chain, state, h("c", 6), undefined);
    expect(stats.reorgs).toBe(1);
    expect(reorgsOf(secondSent).map((r) => [r.number, r.orphanedHash, r.replacedBy, r.ancestorNumber])).toEqual([
      [6, h("a", 6), h("c", 6), 5],
    ]);
    expect(blockNumbers(secondSent)).toEqual([6]);
  });
});

/**
 * Follows with a crash hook that throws at `point` (a SIGKILL there: nothing after it runs) and resolves once
 * the follower died there; rejects when it did not within 5 s.
 */
async function crashAt(chain: ReturnType<typeof scriptedChain>, state: ReturnType<typeof createMemoryChainState>, point: CrashPoint) {
  const { producer, sent } = recordingProducer();
  const crash = new Error(`crash point ${point}`);
  const ingester = createIngester({
    source: chain.source,
    producer,
    logger,
    state,
    crashHook: (p) => {
      if (p === point) throw crash;
    },
  });
  const ended = await ingester.follow({ pollIntervalMs: 5, signal: AbortSignal.timeout(5000), finalizedEveryPolls: 0 }).then(
    () => "stopped",
    (err: unknown) => (err === crash ? "crashed" : err),
  );
  expect(ended).toBe("crashed");
  return sent;
}

describe.each(CONFIRMATIONS)("crashes at produce-tip, then at announce-unwind of a reorg below that block ($label)", ({ headers }) => {
  it("the next start unwinds the announced reorg and produces the new branch (it stalled for good: canon's replacement above the tip was taken for a block being produced)", async () => {
    const chain = scriptedChain({ headers });
    chain.mine(6);
    const state = createMemoryChainState();
    await run(chain, state, h("a", 5), 0);
    // Crash 1: block 6 of A recorded in canon and produced, the tip still 5.
    chain.mine(1);
    const first = await crashAt(chain, state, "produce-tip");
    expect(blockNumbers(first)).toEqual([6]);
    expect((await state.loadFollower()).tip).toEqual({ number: 5, hash: h("a", 5) });
    // While it is down, a reorg of depth 2 replaces 5 and 6 (the tip and the block above it).
    chain.reorg(2, "c");
    // Crash 2: the restart finds the reorg from block 6 (taken as produced), announces 5 and 6 (canon: C), dies before unwinding.
    const second = await crashAt(chain, state, "announce-unwind");
    expect(reorgsOf(second).map((r) => [r.number, r.orphanedHash, r.replacedBy])).toEqual([
      [5, h("a", 5), h("c", 5)],
      [6, h("a", 6), h("c", 6)],
    ]);
    expect([...(await state.hashesAt([5, 6])).values()]).toEqual([h("c", 5), h("c", 6)]);
    expect((await state.loadFollower()).tip).toEqual({ number: 5, hash: h("a", 5) });
    // The next start must unwind to 4 and produce C from 5 on, not wait for A's block 5 forever.
    chain.mine(1, "c");
    const { sent } = await run(chain, state, h("c", 7));
    expect(blockNumbers(sent)).toEqual([5, 6, 7]);
    expect(sent.filter((m) => m.kind === "blocks").map((m) => m.key)).toEqual([h("c", 5), h("c", 6), h("c", 7)]);
    expect((await state.loadFollower()).tip).toEqual({ number: 7, hash: h("c", 7) });
    expect([...(await state.hashesAt([4, 5, 6, 7])).values()]).toEqual([h("a", 4), h("c", 5), h("c", 6), h("c", 7)]);
  });
});

describe("backfills near the head (issue 19 §2, §3c): only final blocks, the rest left to the follower", () => {
  it("stops at the node's finalized block, reports the rest as deferred, and a later run of the range resumes there", async () => {
    let finalized = 12;
    const chain = scriptedChain({ finalized: () => finalized });
    chain.mine(21);
    const state = createMemoryChainState();
    const first = recordingProducer();
    const progress: Array<{ done: number; total: number; to: number }> = [];
    const stats = await createIngester({ source: chain.source, producer: first.producer, logger, state }).backfill(0, 20, {
      onProgress: (p) => progress.push(p),
    });
    expect(blockNumbers(first.sent)).toEqual(Array.from({ length: 13 }, (_, i) => i));
    expect(stats.deferred).toBe(8);
    expect(await state.backfillProgress(0, 20)).toBe(12);
    expect(progress.at(-1)).toMatchObject({ to: 12, total: 13, done: 13 });
    finalized = 20;
    const later = recordingProducer();
    const again = await createIngester({ source: chain.source, producer: later.producer, logger, state }).backfill(0, 20);
    expect(blockNumbers(later.sent)).toEqual([13, 14, 15, 16, 17, 18, 19, 20]);
    expect(again.deferred).toBe(0);
  });

  it("on a node without the finalized tag, stops at head - backfillSafetyDepth", async () => {
    const chain = scriptedChain();
    chain.mine(21);
    const { producer, sent } = recordingProducer();
    const stats = await createIngester({ source: chain.source, producer, logger, backfillSafetyDepth: 5 }).backfill(3, 20);
    expect(blockNumbers(sent)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    expect(stats.deferred).toBe(5);
  });
});
