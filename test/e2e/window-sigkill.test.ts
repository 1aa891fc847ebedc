/**
 * A window alert survives a SIGKILL of the match stage mid-window (issue 33): anvil with the real
 * ERC-20, ingest and decode in this process (test/support/anvil-env.ts), the match stage as its own
 * process (`cli/stage.ts match`, test/support/stage-process.ts) on the run's prefixes, notify here
 * with its webhook receiver. A count window (≥ 3 transfers to one address within 4 blocks) holds 2
 * transfers written by the first match process when it is SIGKILLed; the third transfer is mined
 * while no match process runs; a second process with the same consumer group and Redis prefix takes
 * over. The alert must be delivered exactly once (one `confirmed`, nothing else), with the 3
 * transfers in its window.
 */
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WindowFiring } from "../../lib/match/windows.js";
import { windowKeys } from "../../pipeline/match/windows/scripts.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";
import { configEnv, type KillableStage, killStage, spawnKillable } from "../support/stage-process.js";

const up = await probeStack();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!up.ok)("window alert across a SIGKILL of the match stage (anvil)", () => {
  let env: AnvilEnv;
  let redis: RedisClientType;
  let match: KillableStage | undefined;
  const spawnMatch = async (label: string) => {
    match = await spawnKillable({ stage: "match", label, env: configEnv(env.config) });
  };

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false });
    // The in-process match stage gives way to a stage process the test can SIGKILL.
    await env.stopMatch();
    await spawnMatch("match#1");
    redis = createClient({ url: env.config.redisUrl }) as RedisClientType;
    await redis.connect();
  }, 180_000);

  afterAll(async () => {
    await match?.stop();
    await redis?.close();
    await env?.stop();
  });

  it("fires exactly once, with the records written before the kill and after the restart", async () => {
    const to = env.newAddress();
    const rule = await env.rules.create("acc-e2e", {
      ...tokenTransferRule({
        name: "≥ 3 transfers to one address within 4 blocks",
        chain: env.config.chain,
        token: await env.token.getAddress(),
        maxConfirmationCount: 2,
        sendPendingAlerts: false,
        url: env.hook("kill"),
        to,
      }),
      window: { blocks: 4, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" },
    });
    const recordsSeen = async (blockHash: string, n: number) => {
      const key = windowKeys(env.config.redisKeyPrefix, env.config.chain).records(`${rule.id}:1`, blockHash.toLowerCase());
      await waitFor(async () => (await redis.hLen(key)) >= n, 60_000, 50);
    };
    // The stage process learns the rule from the store's change feed; the window starts at the next block it
    // evaluates, which saves the window's state: mine until that state exists (no fixed wait).
    const stateKey = windowKeys(env.config.redisKeyPrefix, env.config.chain).state(`${rule.id}:1`);
    await waitFor(
      async () => {
        await env.mine(1);
        return (await redis.exists(stateKey)) === 1;
      },
      60_000,
      500,
    );

    const first = [await env.transfer(to, 1_000n), await env.transfer(to, 2_000n)];
    await env.mine(1); // block B: 2 transfers
    const b = await env.eventOf(first[0] as string);
    await recordsSeen(b.blockHash, 2);
    await killStage(match as KillableStage);
    expect(env.alertsAt("kill")).toEqual([]);

    const third = await env.transfer(to, 3_000n);
    await env.mine(1); // B + 1, mined while no match process runs
    const c = await env.eventOf(third);
    await spawnMatch("match#2");
    await recordsSeen(c.blockHash, 1);
    await env.mine(3); // the window still holds B and B + 1; confirmations
    await waitFor(async () => env.alertsAt("kill").length >= 1, 90_000);
    await env.mine(3);
    await sleep(2000);

    const alerts = env.alertsAt("kill").filter((a) => a.ruleId === rule.id);
    expect(alerts.map((a) => a.status)).toEqual(["confirmed"]);
    const w = (alerts[0] as unknown as { window: WindowFiring }).window;
    expect(w).toMatchObject({ group: null, aggregate: "3", recordCount: 3 });
    expect(w.window.fromBlock).toBeLessThanOrEqual(b.blockNumber);
    expect(w.window.toBlock).toBeGreaterThanOrEqual(c.blockNumber);
    const ids = await Promise.all([...first, third].map(async (t) => (await env.eventOf(t)).entityId));
    expect([...w.recordIds].sort()).toEqual([...ids].sort());
  }, 240_000);
});
