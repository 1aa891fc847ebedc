/**
 * Alerting end to end on a real EVM node: anvil with a real OpenZeppelin ERC-20 → ingest (follow
 * the head) → Kafka → decode → match (rules from the real rule store, confirmations in Redis) →
 * notify → a local webhook receiver. Covers pending then confirmed exactly at the N-th block, and
 * a reorg before confirmation giving `removed` and no `confirmed`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();

describe.skipIf(!up.ok)("alerting end to end on anvil", () => {
  let env: AnvilEnv;

  /** Alerts of a rule, in arrival order (every rule posts to `/hook/e2e`). */
  const alertsOf = (ruleId: string) => env.alertsAt("e2e").filter((a) => a.ruleId === ruleId);

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: true, match: () => ({ reloadIntervalMs: 500 }) });
  }, 180_000);

  afterAll(async () => {
    await env?.stop();
  });

  const transferRule = async (name: string, to: string, n: number): Promise<string> => {
    const input = tokenTransferRule({
      name,
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount: n,
      url: env.hook("e2e"),
      to,
    });
    const rule = await env.rules.create("acc-e2e", input);
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
    return rule.id;
  };

  it("sends pending at first sight and confirmed exactly when the 3rd confirmation arrives", async () => {
    const to = env.devAccounts[3]!;
    const ruleId = await transferRule("to account 3", to, 3);
    await env.transfer(to, 5_000_000n);
    await env.mine(1); // block B: 1 confirmation
    await waitFor(async () => alertsOf(ruleId).length >= 1, 30_000);
    const [pending] = alertsOf(ruleId);
    expect(pending).toMatchObject({ status: "pending", confirmations: 1 });
    expect(pending?.payload).toBeDefined();

    await env.mine(1); // 2 confirmations: nothing yet
    await new Promise((r) => setTimeout(r, 1500));
    expect(alertsOf(ruleId).map((a) => a.status)).toEqual(["pending"]);

    await env.mine(1); // 3 confirmations
    await waitFor(async () => alertsOf(ruleId).length >= 2, 30_000);
    const confirmed = alertsOf(ruleId)[1];
    expect(confirmed).toMatchObject({ status: "confirmed", confirmations: 3, blockHash: pending?.blockHash, entityId: pending?.entityId });
    expect(confirmed!.sequence).toBeGreaterThan(pending!.sequence);
    await env.mine(3);
    await new Promise((r) => setTimeout(r, 1000));
    expect(alertsOf(ruleId)).toHaveLength(2); // confirmed exactly once
  });

  it("retracts a pending match with `removed` when its block is reorganised away, and never confirms it", async () => {
    const to = env.devAccounts[4]!;
    const ruleId = await transferRule("to account 4", to, 3);
    await env.transfer(to, 7_000_000n);
    await env.mine(1);
    await waitFor(async () => alertsOf(ruleId).length >= 1, 30_000);
    const pending = alertsOf(ruleId)[0]!;
    expect(pending.status).toBe("pending");

    // Replace the block holding the transfer (and drop the transfer) before it is confirmed.
    await env.rpc("anvil_reorg", [1, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(3);
    await waitFor(async () => alertsOf(ruleId).some((a) => a.status === "removed"), 30_000);
    await env.mine(2);
    await new Promise((r) => setTimeout(r, 1500));
    const removed = alertsOf(ruleId).find((a) => a.status === "removed")!;
    expect(removed).toMatchObject({ entityId: pending.entityId, blockHash: pending.blockHash });
    // The webhook body names the block now at that height: the node's.
    const now = (await env.rpc("eth_getBlockByNumber", [`0x${pending.blockNumber.toString(16)}`, false])) as { hash: string };
    expect(removed.replacedBy).toEqual({ number: pending.blockNumber, hash: now.hash.toLowerCase() });
    expect(alertsOf(ruleId).some((a) => a.status === "confirmed" && a.blockHash === pending.blockHash)).toBe(false);
  });

  it("matches Call and Trace rules from the node's call traces (debug_traceBlockByNumber)", async () => {
    const to = env.devAccounts[5]!;
    const tokenAddress = await env.token.getAddress();
    const base = { maxConfirmationCount: 1, sendPendingAlerts: false, state: "enabled" as const, ...env.config.chain };
    const alerts = [{ type: "Webhook (POST)" as const, parameters: { url: env.hook("e2e") }, payload: null }];
    const call = await env.rules.create("acc-e2e", {
      ...base,
      name: "decoded transfer call to account 5",
      config: {
        targetType: "Call",
        targetMap: [
          { name: "name", operator: "Equals", value: "transfer", operatorParameters: null },
          {
            name: "args",
            operator: "Inspect",
            operatorParameters: [
              { name: "name", operator: "Equals", value: "to", operatorParameters: null },
              { name: "value", operator: "Equals (ignore case)", value: to, operatorParameters: null },
            ],
          },
        ],
        alerts,
      },
    });
    const trace = await env.rules.create("acc-e2e", {
      ...base,
      name: "top-level CALL frame into the token from account 0",
      config: {
        targetType: "Trace",
        targetMap: [
          { name: "type", operator: "Equals", value: "CALL", operatorParameters: null },
          { name: "to", operator: "Equals (ignore case)", value: tokenAddress, operatorParameters: null },
          { name: "depth", operator: "Equals", value: "0", operatorParameters: null },
          {
            name: "input",
            operator: "Equals any (ignore case)",
            value: [`${env.token.interface.encodeFunctionData("transfer", [to, 9_000_000n])}`],
            operatorParameters: null,
          },
        ],
        alerts,
      },
    });
    await waitFor(async () => env.match.index.get(call.id) && env.match.index.get(trace.id), 10_000, 50);
    const txHash = await env.transfer(to, 9_000_000n);
    await env.mine(1);
    await waitFor(async () => alertsOf(call.id).length >= 1 && alertsOf(trace.id).length >= 1, 30_000);
    expect(alertsOf(call.id)[0]).toMatchObject({ status: "confirmed", confirmations: 1 });
    expect(alertsOf(call.id)[0]?.entityId).toContain(txHash);
    expect(alertsOf(trace.id)[0]?.entityId).toContain(txHash);
  });
});
