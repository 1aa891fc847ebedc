/**
 * Alerts over time end to end on anvil (issue 33): a count window over the token's Transfers to
 * one address (3 blocks, ≥ 3 transfers) fires exactly once while the condition holds (crossing, not
 * flooding), its webhook JSON says what crossed, and a reorg that removes the transfers' block
 * drops the window below its threshold: the pending alert is retracted with `removed`, and nothing
 * is confirmed. An absence rule (no transfer to an address for 3 blocks) stays quiet while the
 * transfers run and fires exactly once when they stop.
 *
 * The events reach the match stage through decode, after their block record; the stage evaluates
 * a window at each head with the records it has. So before mining the next block the test waits
 * until the stage has written a block's records (its Redis record hash): then every evaluation the
 * test asserts on saw them.
 */
import { describe, expect, it } from "vitest";
import type { WindowFiring } from "../../lib/match/windows.js";
import { windowKeys } from "../../pipeline/match/windows/scripts.js";
import { absenceRuleOn, anvilWithRedis } from "../support/anvil-api.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();

describe.skipIf(!up.ok)("window alerts on anvil", () => {
  const running = anvilWithRedis();
  const alertsOf = (ruleId: string) =>
    running()
      .env.alertsAt("win")
      .filter((a) => a.ruleId === ruleId);
  /** Waits until the match stage holds `n` window records of a rule (version 1) in a block. */
  const recordsSeen = async (ruleId: string, blockHash: string, n: number) => {
    const { env, redis } = running();
    const key = windowKeys(env.config.redisKeyPrefix, env.config.chain).records(`${ruleId}:1`, blockHash.toLowerCase());
    await waitFor(async () => (await redis.hLen(key)) >= n, 30_000, 50);
  };

  it("a count window fires once, and a reorg that empties it retracts the alert with removed", async () => {
    const { env } = running();
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
    await recordsSeen(rule.id, b.blockHash, 3);
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
    // The search body finds them all (the events search of the chain).
    const search = (pending as unknown as { window: { search: { query: { ids: { values: string[] } } }; searchComplete: boolean } }).window;
    expect(search.searchComplete).toBe(true);
    expect([...search.search.query.ids.values].sort()).toEqual([...ids].sort());

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

  it("a sum window of scaled token amounts fires when the amounts cross, not the count", async () => {
    const { env, redis } = running();
    const to = env.newAddress();
    const input = tokenTransferRule({
      name: "≥ 5 CST to one address within 2 blocks",
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount: 6,
      url: env.hook("win"),
      to,
    });
    const rule = await env.rules.create("acc-e2e", {
      ...input,
      window: {
        blocks: 2,
        aggregate: { fn: "sum", field: "args.value", useScaledValue: true },
        operator: "Greater or Equal",
        threshold: "5",
      },
    });
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
    // The window starts at the first block the stage evaluates after the rule (it saves its state then).
    const state = windowKeys(env.config.redisKeyPrefix, env.config.chain).state(`${rule.id}:1`);
    await waitFor(
      async () => {
        await env.mine(1);
        return (await redis.exists(state)) === 1;
      },
      30_000,
      300,
    );

    // CST has 6 decimals: 1.5 + 1.5 CST in block B (3 CST, two records), 2.25 CST in B + 1 (5.25 CST over B, B + 1).
    const first = [await env.transfer(to, 1_500_000n), await env.transfer(to, 1_500_000n)];
    await env.mine(1);
    const b = await env.eventOf(first[0]!);
    await recordsSeen(rule.id, b.blockHash, 2);
    const third = await env.transfer(to, 2_250_000n);
    await env.mine(1);
    const c = await env.eventOf(third);
    await recordsSeen(rule.id, c.blockHash, 1);
    await env.mine(1); // B + 2: the window (B + 1, B + 2) holds 2.25 CST: below, no new alert
    await waitFor(async () => alertsOf(rule.id).length >= 1, 30_000);
    await env.mine(1);
    await new Promise((r) => setTimeout(r, 1500));

    const fired = alertsOf(rule.id);
    expect(fired.map((a) => [a.status, a.entityId])).toEqual([["pending", `window:${c.blockNumber}`]]);
    const w = (fired[0] as unknown as { window: WindowFiring }).window;
    expect(w).toMatchObject({
      group: null,
      aggregate: "5.25",
      recordCount: 3,
      window: { fromBlock: b.blockNumber, toBlock: c.blockNumber },
    });
  }, 120_000);

  it("an absence rule is quiet while the transfers run and fires once when they stop", async () => {
    const { env } = running();
    const { rule, to } = await absenceRuleOn(env, "win");
    let last = { entityId: "", blockHash: "", blockNumber: 0 };
    for (let i = 0; i < 7; i++) {
      const tx = await env.transfer(to, 1_000n + BigInt(i));
      await env.mine(1);
      last = await env.eventOf(tx);
      await recordsSeen(rule.id, last.blockHash, 1);
    }
    await new Promise((r) => setTimeout(r, 1500));
    expect(alertsOf(rule.id)).toEqual([]); // every window of 3 blocks held a transfer

    await env.mine(4); // last+1 … last+3 silent: fires at last+3, confirmed at last+4
    await waitFor(async () => alertsOf(rule.id).length >= 1, 30_000);
    await env.mine(3); // still silent: no second alert
    await new Promise((r) => setTimeout(r, 1500));
    const alerts = alertsOf(rule.id);
    expect(alerts.map((a) => [a.status, a.entityId])).toEqual([["confirmed", `absence:${last.blockNumber + 3}`]]);
    const w = (alerts[0] as unknown as { window: WindowFiring }).window;
    expect(w).toMatchObject({ aggregate: "0", recordCount: 0, window: { fromBlock: last.blockNumber + 1, toBlock: last.blockNumber + 3 } });
  }, 120_000);
});
