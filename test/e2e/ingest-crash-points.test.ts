/**
 * Crash points inside the follower (issue 19 §2, §3d, §4): the ingest stage runs as its own process
 * (`cli/stage.ts ingest`) with the TEST-ONLY hook `CHAINSIFT_TEST_CRASH_POINT` (pipeline/ingest/crash.ts),
 * which SIGKILLs it at a named step, against anvil; the decode and index stages run in this process.
 *
 * 1. A normal run follows blocks 0..4 (one ETH transfer each) and is stopped.
 * 2. `produce-tip`: block 5 (A5) is produced, the process dies before the tip moves.
 * 3. `announce-unwind`, restarted against a node on branch B (a second anvil forked from the first at
 *    block 3, with its own blocks 4 and 5: what a load balancer switching backends looks like): the
 *    follower finds the reorg, announces A4 and A5 as orphaned — the index deletes their documents —
 *    and dies before unwinding: canon says B4, the tip still says A4.
 * 4. A normal restart against the first node (still on branch A) must find that the announced reorg
 *    is not on the node's chain and produce A4 again (hole d: before, A4 stayed deleted), then follow
 *    new blocks.
 * At the end the search API serves exactly the node's chain (compareWithChain, B's hashes not
 * searchable) and ingest's canonical map names the node's hash at every height.
 */
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { ingestKeyPrefix } from "../../lib/chain/state.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { type ChainComparison, compareWithChain } from "../support/canonical.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { configEnv, type KillableStage, spawnKillable } from "../support/stage-process.js";

const up = await probeStack();
const DEV0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const DEV1 = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";

describe.skipIf(!up.ok)("crash points inside the follower: a SIGKILL at any step leaves nothing half done (anvil)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let branchB: AnvilHandle | undefined;
  let pipeline: Pipeline;
  let app: FastifyInstance;
  let redis: ReturnType<typeof createClient>;
  const decoder = createDecoder({ chainId: 31337 });
  const running: KillableStage[] = [];

  const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
  /** The hash of block `n` on the node at `url`, waiting for it (a transaction's block may come a moment after its hash). */
  const hashOn = (url: string, n: number) =>
    waitFor(
      async () => ((await rpcCall(url, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string } | null)?.hash,
      10_000,
      50,
    );
  const hashAt = (n: number) => hashOn(anvil.rpcUrl, n);
  const transfer = () => rpc("eth_sendTransaction", [{ from: DEV0, to: DEV1, value: "0x1" }]);
  const key = (k: string) => `${ingestKeyPrefix(h.config.redisKeyPrefix, h.config.chain)}${k}`;
  const tip = async () => {
    const raw = await redis.get(key("tip"));
    return raw ? { number: Number(raw.split(":")[0]), hash: raw.split(":")[1] } : null;
  };

  /** Starts `cli/stage.ts ingest` (traces off, 100 ms polls) with extra environment, e.g. a crash point; waits until it is ready. */
  const startIngest = async (extra: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<KillableStage> => {
    const env = configEnv(h.config, {
      CHAINSIFT_RPC_URL: anvil.rpcUrl,
      CHAINSIFT_INGEST_TRACES: "false",
      CHAINSIFT_POLL_INTERVAL_MS: "100",
      CHAINSIFT_METRICS_PORT: "-1",
      ...extra,
    });
    const p = await spawnKillable({ stage: "ingest", env, args });
    running.push(p);
    return p;
  };
  /** Waits for the process to kill itself at its crash point (SIGKILL), at most `ms`. */
  const crashed = async (p: KillableStage, ms = 60_000) => {
    const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms).unref());
    const end = await Promise.race([p.exited, timeout]);
    if (end === "timeout" || end.signal !== "SIGKILL") throw new Error(`no crash (${JSON.stringify(end)}):\n${p.output.join("\n")}`);
    expect(p.output.some((l) => l.includes("test crash point"))).toBe(true);
  };

  beforeAll(async () => {
    h = createHarness();
    h.config.api.rateLimitMax = 1_000_000;
    anvil = await startAnvil({ blockTimeSec: 0 });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, decoder, stages: ["decode", "index"] });
    app = await buildApi({ config: h.config, es: h.es, logger: false });
    redis = createClient({ url: h.config.redisUrl });
    await redis.connect();
  }, 120_000);
  afterAll(async () => {
    for (const p of running) await p.stop().catch(() => {});
    await app?.close();
    await pipeline?.stop();
    await redis?.close().catch(() => {});
    await branchB?.stop();
    await anvil?.stop();
    await h?.cleanup();
  });

  it("produce-tip and announce-unwind crashes, the node back on the first branch: the index equals the node's chain", async () => {
    const started = Date.now();
    for (let i = 0; i < 4; i++) await transfer();
    // 1. A normal run to block 4.
    const first = await startIngest({}, ["--from", "0"]);
    await waitFor(async () => (await tip())?.number === 4, 90_000);
    await first.stop();
    const a4 = await hashAt(4);

    // 2. Dies after producing block 5, before the tip moves.
    const second = await startIngest({ CHAINSIFT_TEST_CRASH_POINT: "produce-tip" });
    await transfer();
    const a5 = await hashAt(5);
    await crashed(second);
    expect(await tip()).toEqual({ number: 4, hash: a4 });
    expect(await redis.hGet(key("canon"), "5")).toBe(a5);

    // 3. Against a node on branch B (forked from A at block 3, own blocks 4 and 5): dies between announce and unwind.
    branchB = await startAnvil({ blockTimeSec: 0, extraArgs: ["--fork-url", anvil.rpcUrl, "--fork-block-number", "3"] });
    const onB = (method: string, params: unknown[] = []) => rpcCall((branchB as AnvilHandle).rpcUrl, method, params);
    await onB("eth_sendTransaction", [{ from: DEV0, to: DEV1, value: "0x2" }]);
    await onB("eth_sendTransaction", [{ from: DEV0, to: DEV1, value: "0x2" }]);
    const hashOnB = (n: number) => hashOn((branchB as AnvilHandle).rpcUrl, n);
    const [b4, b5] = [await hashOnB(4), await hashOnB(5)];
    expect(b4).not.toBe(a4);
    const third = await startIngest({ CHAINSIFT_TEST_CRASH_POINT: "announce-unwind", CHAINSIFT_RPC_URL: branchB.rpcUrl });
    await crashed(third);
    expect(await redis.hGet(key("canon"), "4")).toBe(b4);
    expect((await tip())?.hash).toBe(a4); // hole d's state: canon says B, the tip still A

    // 4. Back on the first node, still on branch A: a normal restart must produce A4 again and follow on.
    const fourth = await startIngest();
    await transfer();
    await transfer();
    await waitFor(async () => (await tip())?.number === 7, 90_000);
    const canon = await redis.hmGet(key("canon"), ["0", "1", "2", "3", "4", "5", "6", "7"]);
    const node = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(hashAt));
    expect(canon).toEqual(node);
    let last: ChainComparison | undefined;
    await waitFor(
      async () => {
        last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, from: 0, to: 7, orphaned: [b4, b5] });
        return last.ok;
      },
      60_000,
      1000,
    ).catch(() => {});
    expect(last?.problems).toEqual([]);
    expect(last?.stillCanonical).toEqual([]);
    await fourth.stop();
    console.log(`crash points test: ${Math.round((Date.now() - started) / 1000)} s`);
  }, 300_000);

  it("backfill-chunk: a backfill killed after producing a chunk and before its progress re-reads it and completes", async () => {
    const started = Date.now();
    const progressKey = key("backfill:0-7");
    // A backfill produces final blocks only; anvil calls head - 64 finalized.
    await rpc("anvil_mine", ["0x48"]);
    const crashing = await startIngest({ CHAINSIFT_TEST_CRASH_POINT: "backfill-chunk", CHAINSIFT_INGEST_CONCURRENCY: "4" }, [
      "--from",
      "0",
      "--to",
      "7",
    ]);
    await crashed(crashing);
    expect(await redis.get(progressKey)).toBeNull(); // the chunk went out, its progress did not
    const again = await startIngest({ CHAINSIFT_INGEST_CONCURRENCY: "4" }, ["--from", "0", "--to", "7"]);
    expect((await again.exited).code).toBe(0);
    expect(await redis.get(progressKey)).toBe("7");
    let last: ChainComparison | undefined;
    await waitFor(
      async () => {
        last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, from: 0, to: 7 });
        return last.ok;
      },
      60_000,
      1000,
    ).catch(() => {});
    expect(last?.problems).toEqual([]);
    console.log(`backfill crash point test: ${Math.round((Date.now() - started) / 1000)} s`);
  }, 180_000);
});
