/**
 * State conditions end to end on anvil (issue 34 part 1; docs/alerting.md, "State conditions"): the
 * match stage reads, at every block, a native balance, an ERC-20 `balanceOf` through an inline-ABI
 * view call, and a storage slot, through a JSON-RPC proxy in front of anvil (test/support/faulty-node.ts);
 * each rule whose threshold is crossed fires once (webhook `pending`, carrying the reading), a rule
 * whose threshold is never reached stays quiet. A reorg that removes the block of the balance's
 * crossing retracts its alert with `removed`, the new branch (without the transfer) does not fire
 * again, and a transfer on it that crosses does; the same for a `totalSupply` view call (a reorg removes
 * the mint) and a proxy upgrade (the EIP-1967 implementation slot, `{changed: true}`). A balance re-arms only
 * past its reset band; `every: "log"` reads a subject only on blocks whose logsBloom may hold a log of its
 * contract. With the proxy failing half of the HTTP requests (503 and cut-short bodies), a crossing
 * still fires exactly once: failed reads are retried, never skipped.
 */
import { formatUnits, parseEther, parseUnits, zeroPadValue } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, type RpcClient } from "../../lib/rpc/client.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();
const settle = () => new Promise((r) => setTimeout(r, 1500));

describe.skipIf(!up.ok)("state-condition alerts on anvil", () => {
  let env: AnvilEnv;
  let proxy: FaultyNode;
  let client: RpcClient;
  const alertsOf = (ruleId: string) => env.alertsAt("state").filter((a) => a.ruleId === ruleId);

  beforeAll(async () => {
    env = await startAnvilEnv({
      traces: false,
      // The stage's reads go through the proxy; ingest reads anvil directly.
      beforeStages: async ({ anvil, onStop }) => {
        proxy = await startFaultyNode({ upstream: anvil.rpcUrl, name: "state-proxy" });
        client = createRpcClient({ urls: [proxy.url], attempts: 1, timeoutMs: 3000, cooldownMs: 50 });
        onStop(() => proxy.close());
      },
      match: () => ({
        reloadIntervalMs: 500,
        rpc: client,
        stateReads: { maxReadsPerBlock: 100, readAttempts: 3, readRetryMs: 20, backtestMaxReads: 1 },
      }),
    });
  }, 180_000);

  afterAll(async () => {
    client?.destroy();
    await env?.stop();
  });

  /** A rule of the env's chain posting to `/hook/state` with a state condition (its targetMap is ignored: the readings trigger it). */
  const stateRule = async (name: string, stateCondition: Record<string, unknown>) => {
    const input: RuleInput = tokenTransferRule({
      name,
      chain: env.config.chain,
      token: env.tokenAddress,
      maxConfirmationCount: 3,
      url: env.hook("state"),
    });
    const rule = await env.rules.create("acc-e2e", { ...input, stateCondition } as RuleInput);
    await env.waitActive([rule.id]);
    return rule;
  };

  /** Waits for the first alert of `fires`, checks its reading, mines 2 more blocks: still one `pending`, none of `quiet`. Returns that alert. */
  const crossedOnce = async (fires: string, quiet: string, reading: string) => {
    const [pending] = await waitFor(async () => (alertsOf(fires).length > 0 ? alertsOf(fires) : undefined), 30_000);
    expect((pending as unknown as { state: { reading: string } }).state.reading).toBe(reading);
    await env.mine(2);
    await settle();
    expect(alertsOf(fires).filter((a) => a.status === "pending")).toHaveLength(1);
    expect(alertsOf(quiet)).toEqual([]);
    return pending;
  };

  it("a native balance crossing fires once; a reorg that removes it retracts the alert", async () => {
    const watched = env.newAddress();
    const fires = await stateRule("balance ≥ 1 ETH", {
      subject: { type: "balance", address: watched },
      decimals: 18,
      comparison: { operator: "Greater or Equal", threshold: "1", reset: "0.5" },
    });
    const quiet = await stateRule("balance ≥ 100 ETH", {
      subject: { type: "balance", address: watched },
      decimals: 18,
      comparison: { operator: "Greater or Equal", threshold: "100" },
    });
    await env.mine(2);
    await settle();
    expect(alertsOf(fires.id)).toEqual([]);

    const tx = await env.deployer.sendTransaction({ to: watched, value: parseEther("2") });
    await env.mine(1);
    const receipt = await env.provider.getTransactionReceipt(tx.hash);
    const [pending] = await waitFor(async () => (alertsOf(fires.id).length > 0 ? alertsOf(fires.id) : undefined), 30_000);
    expect(pending).toMatchObject({ status: "pending", blockNumber: receipt?.blockNumber, blockHash: receipt?.blockHash });
    expect((pending as unknown as { state: { reading: string } }).state.reading).toBe(parseEther("2").toString());
    await env.mine(1);
    await settle();
    expect(alertsOf(fires.id).map((a) => a.status)).toEqual(["pending"]); // crossing, not flooding

    // Replace the transfer's block and its child with empty blocks: the new branch never crosses.
    await env.rpc("anvil_reorg", [2, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(2);
    await waitFor(async () => alertsOf(fires.id).some((a) => a.status === "removed"), 30_000);
    await env.mine(4);
    await settle();
    expect(alertsOf(fires.id).map((a) => a.status)).toEqual(["pending", "removed"]);

    // The new branch starts from the fork point's memory (armed): a transfer on it crosses and fires again.
    const again = await env.deployer.sendTransaction({ to: watched, value: parseEther("2") });
    await env.mine(1);
    const againReceipt = await env.provider.getTransactionReceipt(again.hash);
    await waitFor(async () => alertsOf(fires.id).length >= 3, 30_000);
    expect(alertsOf(fires.id)[2]).toMatchObject({ status: "pending", blockHash: againReceipt?.blockHash });
    expect(alertsOf(quiet.id)).toEqual([]);
  }, 120_000);

  it("an ERC-20 balanceOf view call fires when it reaches the threshold, not before", async () => {
    const holder = env.newAddress();
    const condition = (threshold: string) => ({
      subject: {
        type: "call",
        to: env.tokenAddress,
        function: "balanceOf",
        args: [holder],
        abi: ["function balanceOf(address) view returns (uint256)"],
      },
      decimals: 6,
      comparison: { operator: "Greater or Equal", threshold },
    });
    const fires = await stateRule("CST balance ≥ 5", condition("5"));
    const quiet = await stateRule("CST balance ≥ 1000", condition("1000"));
    await env.transfer(holder, parseUnits("3", 6));
    await env.mine(2);
    await settle();
    expect(alertsOf(fires.id)).toEqual([]); // 3 < 5

    const tx = await env.transfer(holder, parseUnits("3", 6));
    await env.mine(1);
    const receipt = await env.provider.getTransactionReceipt(tx);
    const pending = await crossedOnce(fires.id, quiet.id, parseUnits("6", 6).toString());
    expect(pending).toMatchObject({ status: "pending", blockNumber: receipt?.blockNumber });
  }, 120_000);

  it("a storage slot fires when its value passes the threshold, not before", async () => {
    const contract = env.newAddress();
    await env.rpc("anvil_setCode", [contract, "0x00"]);
    const condition = (threshold: string) => ({
      subject: { type: "storage", address: contract, slot: "0x5" },
      comparison: { operator: "Greater", threshold },
    });
    const fires = await stateRule("slot 5 > 100", condition("100"));
    const quiet = await stateRule("slot 5 > 100000", condition("100000"));
    await env.rpc("anvil_setStorageAt", [contract, "0x5", `0x${"63".padStart(64, "0")}`]); // 99
    await env.mine(2);
    await settle();
    expect(alertsOf(fires.id)).toEqual([]);

    await env.rpc("anvil_setStorageAt", [contract, "0x5", `0x${"1234".padStart(64, "0")}`]); // 4660
    await env.mine(1);
    await crossedOnce(fires.id, quiet.id, "4660");
  }, 120_000);

  /** Replaces the last `depth` blocks with empty ones (the pool dropped) and mines 2 more: the reorg the stages follow. */
  const reorgAway = async (depth: number) => {
    await env.rpc("anvil_reorg", [depth, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(2);
  };

  it("a balance re-arms only past its reset band, then fires again", async () => {
    // Real transfers, one per block (anvil_setBalance rewrites the head's state in place, so a read of
    // that block could see the next value).
    const watched = await env.newSender(parseEther("0.1"));
    const rule = await stateRule("balance ≥ 1 ETH, reset 0.5", {
      subject: { type: "balance", address: watched.address },
      decimals: 18,
      comparison: { operator: "Greater or Equal", threshold: "1", reset: "0.5" },
    });
    const sink = env.newAddress();
    const move = async (from: typeof watched, to: string, eth: string) => {
      await from.sendTransaction({ to, value: parseEther(eth) });
      await env.mine(1);
    };
    await move(env.deployer, watched.address, "1.9"); // 2.0: fires
    await waitFor(async () => alertsOf(rule.id).length === 1, 30_000);
    await move(watched, sink, "1.2"); // ~0.8: below the threshold, not past the reset: still disarmed
    await move(env.deployer, watched.address, "0.7"); // ~1.5
    await env.mine(1);
    await settle();
    expect(alertsOf(rule.id).filter((a) => a.status === "pending")).toHaveLength(1);
    await move(watched, sink, "1.1"); // ~0.4: past the reset, re-armed
    await move(env.deployer, watched.address, "2.6"); // ~3.0: fires again
    await waitFor(async () => alertsOf(rule.id).filter((a) => a.status === "pending").length === 2, 30_000);
    const readings = alertsOf(rule.id)
      .filter((a) => a.status === "pending")
      .map((a) => BigInt((a as unknown as { state: { reading: string } }).state.reading));
    expect(readings[0]).toBe(parseEther("2"));
    expect(readings[1]).toBeGreaterThan(parseEther("2.9")); // 3 ETH less the gas of two transfers
    expect(readings[1]).toBeLessThan(parseEther("3"));
  }, 120_000);

  it("a totalSupply view call: a reorg that removes the mint retracts; the new branch fires only when it crosses too", async () => {
    const supply = (await env.token.getFunction("totalSupply")()) as bigint;
    const threshold = formatUnits(supply + parseUnits("500", 6), 6);
    const rule = await stateRule(`CST supply ≥ ${threshold}`, {
      subject: { type: "call", to: env.tokenAddress, function: "totalSupply", abi: ["function totalSupply() view returns (uint256)"] },
      decimals: 6,
      comparison: { operator: "Greater or Equal", threshold },
    });
    await env.mine(2);
    const minted = await env.mint(env.newAddress(), parseUnits("1000", 6));
    await env.mine(1);
    const receipt = await env.provider.getTransactionReceipt(minted);
    const [pending] = await waitFor(async () => (alertsOf(rule.id).length > 0 ? alertsOf(rule.id) : undefined), 30_000);
    expect(pending).toMatchObject({ status: "pending", blockHash: receipt?.blockHash });
    await env.mine(1);

    await reorgAway(2);
    await waitFor(async () => alertsOf(rule.id).some((a) => a.status === "removed"), 30_000);
    await env.mint(env.newAddress(), parseUnits("100", 6)); // the new branch mints less: below the threshold
    await env.mine(3);
    await settle();
    expect(alertsOf(rule.id).map((a) => a.status)).toEqual(["pending", "removed"]);

    const crossing = await env.mint(env.newAddress(), parseUnits("450", 6)); // 100 + 450 ≥ 500
    await env.mine(1);
    const again = await env.provider.getTransactionReceipt(crossing);
    await waitFor(async () => alertsOf(rule.id).length >= 3, 30_000);
    expect(alertsOf(rule.id)[2]).toMatchObject({ status: "pending", blockHash: again?.blockHash });
    expect((alertsOf(rule.id)[2] as unknown as { state: { reading: string } }).state.reading).toBe(
      (supply + parseUnits("550", 6)).toString(),
    );
  }, 120_000);

  it("a proxy upgrade (EIP-1967 implementation slot, {changed: true}): a reorg that removes it retracts; a later upgrade fires", async () => {
    // A stand-in proxy whose only code stores the call's first word in the implementation slot:
    // PUSH1 0 CALLDATALOAD PUSH32 <slot> SSTORE STOP.
    const slot = "360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
    const proxyAddress = env.newAddress();
    await env.rpc("anvil_setCode", [proxyAddress, `0x6000357f${slot}5500`]);
    const upgrade = async (impl: string) => {
      const tx = await env.deployer.sendTransaction({ to: proxyAddress, data: zeroPadValue(impl, 32) });
      await env.mine(1);
      return env.provider.getTransactionReceipt(tx.hash);
    };
    await upgrade(env.newAddress());
    const rule = await stateRule("proxy implementation changed", {
      subject: { type: "storage", address: proxyAddress, slot: `0x${slot}` },
      comparison: { changed: true },
    });
    await env.mine(2); // the first reading is the baseline
    await settle();
    expect(alertsOf(rule.id)).toEqual([]);

    const implB = env.newAddress();
    const upgraded = await upgrade(implB);
    const [pending] = await waitFor(async () => (alertsOf(rule.id).length > 0 ? alertsOf(rule.id) : undefined), 30_000);
    expect(pending).toMatchObject({ status: "pending", blockHash: upgraded?.blockHash });
    expect((pending as unknown as { state: { reading: string } }).state.reading).toBe(BigInt(implB).toString());
    await env.mine(1);

    await reorgAway(2);
    await waitFor(async () => alertsOf(rule.id).some((a) => a.status === "removed"), 30_000);
    await env.mine(2);
    await settle();
    expect(alertsOf(rule.id).map((a) => a.status)).toEqual(["pending", "removed"]); // the new branch kept the old implementation

    const implC = env.newAddress();
    const later = await upgrade(implC);
    await waitFor(async () => alertsOf(rule.id).length >= 3, 30_000);
    expect(alertsOf(rule.id)[2]).toMatchObject({ status: "pending", blockHash: later?.blockHash });
    expect((alertsOf(rule.id)[2] as unknown as { state: { reading: string } }).state.reading).toBe(BigInt(implC).toString());
  }, 120_000);

  it('every: "log" reads only on blocks with a log of the subject\'s contract (a JSON ABI fragment, as a registered ABI is stored)', async () => {
    const quietContract = env.newAddress();
    await env.rpc("anvil_setCode", [quietContract, "0x00"]);
    const unlogged = await stateRule("slot 7 > 100, on logs only", {
      subject: { type: "storage", address: quietContract, slot: "0x7" },
      every: "log",
      comparison: { operator: "Greater", threshold: "100" },
    });
    const holder = env.newAddress();
    const logged = await stateRule("CST balance ≥ 5, on logs only", {
      subject: {
        type: "call",
        to: env.tokenAddress,
        function: "balanceOf",
        args: [holder],
        abi: [
          { type: "function", name: "balanceOf", inputs: [{ type: "address" }], outputs: [{ type: "uint256" }], stateMutability: "view" },
        ],
      },
      decimals: 6,
      every: "log",
      comparison: { operator: "Greater or Equal", threshold: "5" },
    });
    // Storage written without a log: read at every block it would fire (the storage test above); on logs only, never read.
    await env.rpc("anvil_setStorageAt", [quietContract, "0x7", `0x${"1234".padStart(64, "0")}`]);
    await env.mine(3);
    const tx = await env.transfer(holder, parseUnits("6", 6));
    await env.mine(1);
    const receipt = await env.provider.getTransactionReceipt(tx);
    const [pending] = await waitFor(async () => (alertsOf(logged.id).length > 0 ? alertsOf(logged.id) : undefined), 30_000);
    expect(pending).toMatchObject({ status: "pending", blockNumber: receipt?.blockNumber });
    await env.mine(1);
    await settle();
    expect(alertsOf(unlogged.id)).toEqual([]);
  }, 120_000);

  it("a node failing half of the reads loses no alert: the crossing fires exactly once", async () => {
    const watched = env.newAddress();
    const rule = await stateRule("balance ≥ 1 ETH behind a faulty node", {
      subject: { type: "balance", address: watched },
      decimals: 18,
      comparison: { operator: "Greater or Equal", threshold: "1" },
    });
    proxy.setFaults(["unavailable", "truncated"], 0.5);
    try {
      await env.mine(3);
      const tx = await env.deployer.sendTransaction({ to: watched, value: parseEther("3") });
      await env.mine(1);
      const receipt = await env.provider.getTransactionReceipt(tx.hash);
      await env.mine(2);
      const [pending] = await waitFor(async () => (alertsOf(rule.id).length > 0 ? alertsOf(rule.id) : undefined), 60_000);
      expect(pending).toMatchObject({ status: "pending", blockNumber: receipt?.blockNumber });
      expect(proxy.injected.unavailable + proxy.injected.truncated).toBeGreaterThan(0);
      console.log(`faults injected: ${JSON.stringify(proxy.injected)} (seed ${proxy.seed})`);
    } finally {
      proxy.setFaults("none", 0);
    }
    await env.mine(3);
    // The consumer may be in its back-off after a failed block: wait for the confirmation, then check nothing else came.
    await waitFor(async () => alertsOf(rule.id).some((a) => a.status === "confirmed"), 60_000);
    await settle();
    expect(alertsOf(rule.id).map((a) => a.status)).toEqual(["pending", "confirmed"]);
  }, 120_000);
});
