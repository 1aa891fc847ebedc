/**
 * The match stage's state evaluator (pipeline/match/state/evaluator.ts) on anvil and the real Redis,
 * without Kafka: blocks are handed to it directly. Reads go through a JSON-RPC proxy
 * (test/support/faulty-node.ts) that counts the calls. Checks: a threshold fires once, stays quiet,
 * re-arms past `reset` and fires again; two rules watching the same subject cost one read per block;
 * a subject past the read budget and a block far below the head that the node lacks are reported
 * (`onSkipped`), not guessed; the same block near the head is a retryable failure instead.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { loadConfig } from "../../../lib/config/index.js";
import { RetryableError } from "../../../lib/errors.js";
import { createLogger } from "../../../lib/logger.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import { type ConnectedRedis, connectRedisClient } from "../../../lib/redis.js";
import { createRpcClient, type RpcClient } from "../../../lib/rpc/client.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createStateEvaluator, type StateEvaluator } from "../../../pipeline/match/state/evaluator.js";
import { type FaultyNode, startFaultyNode } from "../../support/faulty-node.js";
import { probeStack } from "../../support/harness.js";
import { tokenTransferRule } from "../../support/rules.js";
import { deletePrefix } from "../accounts/redis.js";

const up = await probeStack();
const chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
const REDIS_URL = loadConfig().redisUrl;

describe.skipIf(!up.ok)("state evaluator on anvil and Redis", () => {
  let anvil: AnvilHandle;
  let proxy: FaultyNode;
  let rpc: RpcClient;
  let redis: ConnectedRedis;
  const prefix = `t${randomUUID().slice(0, 8)}:`;
  let fired: MatchInput[] = [];
  let skipped: string[] = [];

  const rule = (stateCondition: Record<string, unknown>): Rule =>
    ({
      ...tokenTransferRule({
        name: "state",
        chain,
        token: "0x00000000000000000000000000000000000000cc",
        maxConfirmationCount: 1,
        url: "http://127.0.0.1:1/",
      }),
      id: randomUUID(),
      accountId: "acc",
      version: 1,
      state: "enabled",
      sendPendingAlerts: true,
      description: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      stateCondition,
    }) as Rule;

  const evaluator = (maxReadsPerBlock = 100): StateEvaluator =>
    createStateEvaluator({
      redis: redis.client,
      keyPrefix: prefix,
      chain,
      logger: createLogger("silent"),
      rpc,
      settings: { maxReadsPerBlock, readAttempts: 2, readRetryMs: 1, backtestMaxReads: 1 },
      fire: async (m) => {
        fired.push(...m);
      },
      onSkipped: (kind) => {
        skipped.push(kind);
      },
    });

  /** Canonical hashes of the blocks {@link mine} mined, by number (the stage's chain view in miniature). */
  const canonical = new Map<number, string>();
  const latest = async () => {
    const b = await rpc.request<{ number: string; hash: string; parentHash: string }>("eth_getBlockByNumber", ["latest", false]);
    canonical.set(Number(b.number), b.hash);
    return { number: Number(b.number), hash: b.hash, parentHash: b.parentHash };
  };
  /** Mines a block and one above it (anvil's cheat codes change the latest block in place); returns the first. */
  const mine = async () => {
    await rpc.request("evm_mine", []);
    const b = await latest();
    await rpc.request("evm_mine", []);
    await latest();
    return b;
  };

  beforeAll(async () => {
    anvil = await startAnvil({ blockTimeSec: 0 });
    proxy = await startFaultyNode({ upstream: anvil.rpcUrl, name: "state-evaluator-proxy" });
    rpc = createRpcClient({ urls: [proxy.url] });
    redis = await connectRedisClient(REDIS_URL);
  }, 60_000);
  afterAll(async () => {
    rpc?.destroy();
    await redis?.close();
    await deletePrefix(REDIS_URL, prefix);
    await proxy?.close();
    await anvil?.stop();
  });

  it("fires once on crossing, re-arms past reset and fires again; one read for two rules of one subject", async () => {
    fired = [];
    const wallet = "0x00000000000000000000000000000000000000a1";
    const condition = { subject: { type: "balance", address: wallet }, comparison: { operator: "Less", threshold: "5", reset: "8" } };
    const a = rule(condition);
    const b = rule(condition);
    const ev = evaluator();
    const index = ev.watch(createRuleIndex({ chain }));
    index.upsert(a);
    index.upsert(b);
    expect(
      ev
        .rules()
        .map((r) => r.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    const firedAt: number[] = [];
    for (const balance of [10, 4, 3, 7, 9, 2]) {
      await rpc.request("anvil_setBalance", [wallet, `0x${balance.toString(16)}`]);
      const block = await mine();
      const before = proxy.methods.eth_getBalance ?? 0;
      await ev.onBlock(block, block.number + 1, (n) => canonical.get(n));
      expect((proxy.methods.eth_getBalance ?? 0) - before).toBe(1);
      if (fired.some((m) => m.entity.blockNumber === block.number)) firedAt.push(balance);
    }
    // 4 crosses below 5; 3 is still below (no flood); 7 is not past reset 8; 9 re-arms; 2 crosses again.
    expect(firedAt).toEqual([4, 2]);
    expect(fired.filter((m) => m.rule.id === a.id)).toHaveLength(2);
    expect(fired.filter((m) => m.rule.id === b.id)).toHaveLength(2);
    expect(fired[0]?.entity).toMatchObject({ state: { reading: "4" } });
    // Per-record matches of a state rule are not alerts.
    expect(ev.recordMatches([{ rule: a, entity: fired[0]!.entity }])).toEqual([]);
  });

  it("reports a subject past the read budget and a lacking past block; a lacking recent block is retryable", async () => {
    fired = [];
    skipped = [];
    const ev = evaluator(1);
    const index = ev.watch(createRuleIndex({ chain }));
    index.upsert(
      rule({
        subject: { type: "balance", address: "0x00000000000000000000000000000000000000b1" },
        comparison: { operator: "Less", threshold: "1" },
      }),
    );
    index.upsert(
      rule({
        subject: { type: "storage", address: "0x00000000000000000000000000000000000000b2", slot: "0x1" },
        comparison: { operator: "Less", threshold: "1" },
      }),
    );
    const block = await mine();
    await ev.onBlock(block, block.number + 1);
    expect(fired).toHaveLength(1);
    expect(skipped).toEqual(["over_budget"]);

    skipped = [];
    const unknown = { number: block.number, hash: `0x${"ab".repeat(32)}`, parentHash: block.hash };
    await ev.onBlock(unknown, block.number + 500);
    expect(skipped.sort()).toEqual(["over_budget", "unavailable"]);
    await expect(ev.onBlock(unknown, block.number + 1)).rejects.toBeInstanceOf(RetryableError);
  });
});
