/**
 * Alerts over time end to end on anvil (issue 33): a count window over the token's Transfers to
 * one address (3 blocks, ≥ 3 transfers) fires exactly once while the condition holds (crossing, not
 * flooding), its webhook JSON says what crossed, and a reorg that removes the transfers' block
 * drops the window below its threshold: the pending alert is retracted with `removed`, and nothing
 * is confirmed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WindowFiring } from "../../lib/match/windows.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();

describe.skipIf(!up.ok)("window alerts on anvil", () => {
  let env: AnvilEnv;
  const alertsOf = (ruleId: string) => env.alertsAt("win").filter((a) => a.ruleId === ruleId);

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false, match: () => ({ reloadIntervalMs: 500 }) });
  }, 180_000);

  afterAll(async () => {
    await env?.stop();
  });

  it("a count window fires once, and a reorg that empties it retracts the alert with removed", async () => {
    const to = env.newAddress();
    const input = tokenTransferRule({
      name: "≥ 3 transfers to one address within 3 blocks",
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount: 6,
      url: env.hook("win"),
      to,
    });
    const rule = await env.rules.create("acc-e2e", {
      ...input,
      window: { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" },
    });
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
    // The window starts at the first block the stage sees after the rule; 3 blocks make it complete.
    await env.mine(3);
    await new Promise((r) => setTimeout(r, 1000));

    const txs = [await env.transfer(to, 1_000_000n), await env.transfer(to, 2_000_000n), await env.transfer(to, 3_000_000n)];
    await env.mine(1); // block B holds the 3 transfers
    const b = await env.eventOf(txs[0]!);
    await env.mine(1); // B + 1: the window still holds B; records consumed after B's block record are evaluated here
    await waitFor(async () => alertsOf(rule.id).length >= 1, 30_000);
    await env.mine(1); // B + 2: still crossing, no second alert
    await new Promise((r) => setTimeout(r, 1500));

    const fired = alertsOf(rule.id);
    expect(fired.map((a) => a.status)).toEqual(["pending"]);
    const pending = fired[0]!;
    const w = (pending as unknown as { window: WindowFiring }).window;
    expect(pending).toMatchObject({ blockHash: b.blockHash, blockNumber: b.blockNumber, entityId: `window:${b.blockNumber}` });
    expect(w).toMatchObject({ group: null, aggregate: "3", recordCount: 3, end: { number: b.blockNumber, hash: b.blockHash } });
    expect(w.window).toMatchObject({ fromBlock: b.blockNumber - 2, toBlock: b.blockNumber });
    expect(w.recordIds).toHaveLength(3);
    const ids = await Promise.all(txs.map(async (t) => (await env.eventOf(t)).entityId));
    expect([...w.recordIds].sort()).toEqual([...ids].sort());

    // Replace B, B + 1 and B + 2 with empty blocks: the window never held 3 transfers.
    await env.rpc("anvil_reorg", [3, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(4);
    await waitFor(async () => alertsOf(rule.id).some((a) => a.status === "removed"), 30_000);
    await env.mine(3);
    await new Promise((r) => setTimeout(r, 1500));
    const all = alertsOf(rule.id);
    expect(all.map((a) => a.status)).toEqual(["pending", "removed"]);
    expect(all[1]).toMatchObject({ entityId: pending.entityId, blockHash: pending.blockHash });
  }, 120_000);
});
