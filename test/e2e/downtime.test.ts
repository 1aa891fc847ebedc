/**
 * Downtime: the pipeline (decode + index) keeps running while only the follower is stopped; during
 * the downtime the node reorganises the blocks the follower produced last and mines more. A NEW
 * ingester (pipeline.createIngester) following WITHOUT `from` must resume from its durable position
 * in Redis (lib/chain/state.ts), find the reorg that happened while it was down, announce the
 * orphaned blocks, and ingest everything mined meanwhile: compareWithChain over 0..N then proves the
 * API serves exactly the node's canonical chain (every height, no duplicate `_id` or height, no
 * orphaned hash).
 *
 * Determinism: interval mining is paused (`evm_setIntervalMining 0`) before the follower is stopped,
 * so the orphaned blocks are exactly ones the follower produced; blocks of the downtime are mined
 * with `anvil_mine` (the traffic generator's pending transactions land in them). Interval mining
 * resumes at 1 s between the cases (the RPC takes whole seconds).
 */
import { Interface } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { startTraffic, type TrafficHandle } from "../../cli/devchain/traffic.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import type { IngestStats } from "../../pipeline/ingest/ingest.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { type ChainComparison, compareWithChain } from "../support/canonical.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();

const erc20 = new Interface(["function transfer(address to, uint256 amount) returns (bool)"]);
const hex = (n: number) => `0x${n.toString(16)}`;

/** A running follower: its first and last produced heights, and stop() (abort, await, close). */
interface Follower {
  first: number | undefined;
  last: number | undefined;
  stop(): Promise<IngestStats>;
}

describe.skipIf(!up.ok)("Downtime (follower stopped while the node reorgs and mines; pipeline keeps running)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let traffic: TrafficHandle;
  let pipeline: Pipeline;
  let app: FastifyInstance;
  let follower: Follower | undefined;
  const decoder = createDecoder({ chainId: 31337 });

  const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
  const headNumber = async () => Number(await rpc("eth_blockNumber"));
  const hashAt = async (n: number) => ((await rpc("eth_getBlockByNumber", [hex(n), false])) as { hash: string }).hash;

  /** A new ingester from the pipeline, following without `from` (or from 0 on the very first start). */
  const startFollower = async (from?: number): Promise<Follower> => {
    const { ingester, close } = await pipeline.createIngester(anvil.rpcUrl);
    const controller = new AbortController();
    const f: Follower = {
      first: undefined,
      last: undefined,
      async stop() {
        controller.abort();
        try {
          return await running;
        } finally {
          await close();
        }
      },
    };
    const running = ingester.follow({
      ...(from === undefined ? {} : { from }),
      pollIntervalMs: 100,
      signal: controller.signal,
      onBlock: (b) => {
        f.first ??= b.block.number.num;
        f.last = b.block.number.num;
      },
    });
    running.catch(() => {}); // surfaced by stop()
    return f;
  };

  /** A search through the API (the real route). */
  const search = async (kinds: string, body: Record<string, unknown>) => {
    const { chain } = h.config;
    const res = await app.inject({
      method: "POST",
      url: `/${chain.technology}/${chain.blockchain}/${chain.network}/es/${kinds}/search/`,
      headers: { authorization: `Bearer ${h.config.api.tokens[0]}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    expect(res.statusCode).toBe(200);
    return res.json() as { hits: { total: { value: number } | number; hits: Array<{ _id: string }> } };
  };
  /** The exact number of hits of a search (`hits.total.value`, or the bare integer). */
  const count = async (kinds: string, query: Record<string, unknown>): Promise<number> => {
    const { total } = (await search(kinds, { query, size: 0 })).hits;
    return typeof total === "number" ? total : total.value;
  };

  const settle = async (to: number, orphaned: string[] = [], from = 0): Promise<ChainComparison | undefined> => {
    let last: ChainComparison | undefined;
    await waitFor(
      async () => {
        last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, from, to, orphaned });
        return last.ok;
      },
      120_000,
      1000,
    ).catch(() => {});
    return last;
  };

  /**
   * Pauses mining, waits until the running follower produced the head and the API serves it, stops
   * the follower (the downtime starts) and returns its stats and the tip it produced.
   */
  const pauseAndStopFollower = async (): Promise<{ tip: number; stats: IngestStats }> => {
    await rpc("evm_setIntervalMining", [0]);
    const tip = await headNumber();
    await waitFor(async () => follower?.last === tip, 60_000, 100);
    const indexed = await settle(tip, [], Math.max(0, tip - 8));
    expect(indexed?.problems).toEqual([]);
    const stats = await stopFollower();
    const position = await (await pipeline.chainState()).loadFollower();
    expect(position.tip?.number).toBe(tip);
    return { tip, stats };
  };

  /** Stops the running follower (none runs afterwards); its stats. */
  const stopFollower = async (): Promise<IngestStats> => {
    const stats = await (follower as Follower).stop();
    follower = undefined;
    return stats;
  };

  /**
   * Starts a new follower after a downtime and waits until the API serves the node's chain up to
   * `end` with none of the `orphaned` block hashes left; returns the follower.
   */
  const restartAndSettle = async (end: number, orphaned: string[]): Promise<Follower> => {
    follower = await startFollower();
    const last = await settle(end, orphaned);
    expect(last?.problems).toEqual([]);
    expect(last?.stillCanonical).toEqual([]);
    expect(last?.heights).toBe(end + 1);
    return follower;
  };

  /** Stops the resumed follower and checks its stats: exactly one reorg, not deep, orphaning `orphaned` blocks; `blocks` blocks produced. */
  const stopAfterOneReorg = async (orphaned: number, blocks: number): Promise<void> => {
    const stats = await stopFollower();
    expect(stats.reorgs).toBe(1);
    expect(stats.orphaned).toBe(orphaned);
    expect(stats.deepReorgs).toBe(0);
    expect(stats.blocks).toBe(blocks);
  };

  /** An ERC-20 transfer from an unlocked dev account, as an anvil_reorg tx entry (the new branch has events). */
  const transferEntry = (offset: number): [unknown, number] => [
    { from: traffic.deployer, to: traffic.token, data: erc20.encodeFunctionData("transfer", [traffic.accounts[1], 4242]) },
    offset,
  ];

  beforeAll(async () => {
    h = createHarness();
    h.config.api.rateLimitMax = 1_000_000;
    anvil = await startAnvil({ blockTimeSec: 0.25 });
    traffic = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 200, nft: false });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, decoder, stages: ["decode", "index"] });
    app = await buildApi({ config: h.config, es: h.es, logger: false });
    follower = await startFollower(0);
  });
  afterAll(async () => {
    await follower?.stop().catch(() => {});
    await traffic?.stop();
    await app?.close();
    await pipeline?.stop();
    await anvil?.stop();
    await (await pipeline?.chainState())?.reset().catch(() => {});
    await h?.cleanup();
  });

  it("down for 50 blocks and a reorg of depth 3 of its tip: resumes at the fork, removes the orphans, ingests the downtime", async () => {
    await waitFor(async () => (await headNumber()) >= 30, 60_000, 100);
    const { tip, stats: before } = await pauseAndStopFollower();
    expect(before.reorgs).toBe(0);
    try {
      // Downtime: the node reorgs the 3 blocks the follower produced last, then mines 50 more.
      const orphaned = await Promise.all([tip - 2, tip - 1, tip].map(hashAt));
      await rpc("anvil_reorg", [3, [transferEntry(1)]]);
      for (const [i, n] of [tip - 2, tip - 1, tip].entries()) expect(await hashAt(n)).not.toBe(orphaned[i]);
      await rpc("anvil_mine", ["0x32"]);
      const end = await headNumber();
      expect(end).toBe(tip + 50);
      // Nothing follows the chain yet: the orphans are still served, the downtime's blocks are not.
      expect(await count("block", { ids: { values: orphaned } })).toBe(3);
      const downtime = { range: { "number.num": { gt: tip, lte: end } } };
      expect(await count("block", downtime)).toBe(0);

      const resumed = await restartAndSettle(end, orphaned);
      // Resumed at the fork (the first orphaned height), not at the node's head.
      expect(resumed.first).toBe(tip - 2);
      expect(await count("block", downtime)).toBe(50);
      await stopAfterOneReorg(3, 53);
    } finally {
      await rpc("evm_setIntervalMining", [1]);
    }
  }, 240_000);

  it("a reorg deeper than what was mined since (stop, reorg depth 4, mine 1): resumes at the fork", async () => {
    follower ??= await startFollower();
    const start = await headNumber();
    await waitFor(async () => (await headNumber()) >= start + 5, 60_000, 100);
    const { tip, stats: before } = await pauseAndStopFollower();
    expect(before.reorgs).toBe(0);
    try {
      const heights = [tip - 3, tip - 2, tip - 1, tip];
      const orphaned = await Promise.all(heights.map(hashAt));
      await rpc("anvil_reorg", [4, [transferEntry(0), transferEntry(3)]]);
      for (const [i, n] of heights.entries()) expect(await hashAt(n)).not.toBe(orphaned[i]);
      await rpc("anvil_mine", ["0x1"]);
      const end = await headNumber();
      expect(end).toBe(tip + 1);
      expect(await count("block", { ids: { values: orphaned } })).toBe(4);

      const resumed = await restartAndSettle(end, orphaned);
      expect(resumed.first).toBe(tip - 3);
      await stopAfterOneReorg(4, 5);
    } finally {
      await rpc("evm_setIntervalMining", [1]);
    }
  }, 240_000);
});
