/**
 * Alerting end to end on a real EVM node: anvil with a real OpenZeppelin ERC-20 → ingest (follow
 * the head) → Kafka → decode → match (rules from the real rule store, confirmations in Redis) →
 * notify → a local webhook receiver. Covers pending then confirmed exactly at the N-th block, and
 * a reorg before confirmation giving `removed` and no `confirmed`.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Contract, ContractFactory, JsonRpcProvider } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { compileDevContracts } from "../../cli/devchain/contracts.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { type ConnectedRuleStore, connectRuleStore } from "../../lib/rules/store.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { lookupToken } from "../../pipeline/decode/tokens.js";
import { type MatchStage, startMatchStage } from "../../pipeline/match/stage.js";
import { type NotifyStage, startNotifyStage } from "../../pipeline/notify/stage.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { createHarness, type Harness, servicesUp, skipMessage, waitFor } from "../support/harness.js";

const up = await servicesUp();
if (!up.ok) console.warn(skipMessage(up.missing));

interface WebhookAlert {
  id: string;
  status: "pending" | "confirmed" | "removed";
  confirmations: number;
  blockHash: string;
  blockNumber: number;
  entityId: string;
  ruleId: string;
  sequence: number;
  payload: Record<string, unknown>;
}

describe.skipIf(!up.ok)("alerting end to end on anvil", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let pipeline: Pipeline;
  let match: MatchStage;
  let notify: NotifyStage;
  let rules: ConnectedRuleStore;
  let server: Server;
  let hook: string;
  let token: Contract;
  let provider: JsonRpcProvider;
  let accounts: string[];
  const controller = new AbortController();
  let following: Promise<unknown>;
  let closeIngest: () => Promise<void>;
  const received: WebhookAlert[] = [];

  const rpc = async (method: string, params: unknown[] = []) => provider.send(method, params);
  const mine = (n = 1) => rpc("anvil_mine", [`0x${n.toString(16)}`]);
  const alertsOf = (ruleId: string) => received.filter((a) => a.ruleId === ruleId);

  beforeAll(async () => {
    h = createHarness();
    h.config.chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
    h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"], maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100 };
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push(JSON.parse(Buffer.concat(chunks).toString()) as WebhookAlert);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

    anvil = await startAnvil({ blockTimeSec: 0 });
    provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    accounts = (await rpc("eth_accounts")) as string[];
    const { token: compiled } = await compileDevContracts();
    const signer = await provider.getSigner(accounts[0]);
    const deployed = await new ContractFactory(compiled.abi, compiled.bytecode, signer).deploy(accounts[0]);
    await deployed.waitForDeployment();
    token = deployed as unknown as Contract;
    await (await (token.connect(signer) as Contract).getFunction("mint")(accounts[0], 10n ** 12n)).wait();
    await rpc("evm_setAutomine", [false]);

    const address = (await token.getAddress()).toLowerCase();
    const decoder = createDecoder({
      chainId: anvil.chainId,
      tokens: (a, c) => (a === address ? { symbol: "CST", decimals: 6 } : lookupToken(a, c)),
    });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, decoder, stages: ["decode"] });
    rules = await connectRuleStore(h.config);
    match = await startMatchStage({ bus: pipeline.bus, config: h.config, logger: h.logger, rules: rules.store, reloadIntervalMs: 500 });
    notify = await startNotifyStage({ bus: pipeline.bus, config: h.config, logger: h.logger });
    const ingest = await pipeline.createIngester(anvil.rpcUrl, { traces: true });
    closeIngest = ingest.close;
    following = ingest.ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal });
  }, 180_000);

  afterAll(async () => {
    controller.abort();
    await following?.catch(() => {});
    await closeIngest?.();
    await notify?.stop();
    await match?.stop();
    await rules?.close();
    await pipeline?.stop();
    await anvil?.stop();
    await new Promise((r) => server?.close(r));
    await h?.cleanup();
  });

  const transferRule = async (name: string, to: string, n: number): Promise<string> => {
    const input: RuleInput = {
      name,
      maxConfirmationCount: n,
      sendPendingAlerts: true,
      state: "enabled",
      ...h.config.chain,
      config: {
        targetType: "Event",
        targetMap: [
          { name: "event", operator: "Equals", value: "Transfer", operatorParameters: null },
          { name: "address", operator: "Equals (ignore case)", value: await token.getAddress(), operatorParameters: null },
          {
            name: "args",
            operator: "Inspect",
            operatorParameters: [
              { name: "name", operator: "Equals", value: "to", operatorParameters: null },
              { name: "value", operator: "Equals (ignore case)", value: to, operatorParameters: null },
            ],
          },
        ],
        alerts: [{ type: "Webhook (POST)", parameters: { url: hook }, payload: null }],
      },
    };
    const rule = await rules.store.create("acc-e2e", input);
    await waitFor(async () => match.index.get(rule.id), 10_000, 50);
    return rule.id;
  };

  const transfer = async (to: string, amount: bigint) => {
    const signer = await provider.getSigner(accounts[0]);
    return (await (token.connect(signer) as Contract).getFunction("transfer")(to, amount)).hash as string;
  };

  it("sends pending at first sight and confirmed exactly when the 3rd confirmation arrives", async () => {
    const to = accounts[3]!;
    const ruleId = await transferRule("to account 3", to, 3);
    await transfer(to, 5_000_000n);
    await mine(1); // block B: 1 confirmation
    await waitFor(async () => alertsOf(ruleId).length >= 1, 30_000);
    const [pending] = alertsOf(ruleId);
    expect(pending).toMatchObject({ status: "pending", confirmations: 1 });
    expect(pending?.payload).toBeDefined();

    await mine(1); // 2 confirmations: nothing yet
    await new Promise((r) => setTimeout(r, 1500));
    expect(alertsOf(ruleId).map((a) => a.status)).toEqual(["pending"]);

    await mine(1); // 3 confirmations
    await waitFor(async () => alertsOf(ruleId).length >= 2, 30_000);
    const confirmed = alertsOf(ruleId)[1];
    expect(confirmed).toMatchObject({ status: "confirmed", confirmations: 3, blockHash: pending?.blockHash, entityId: pending?.entityId });
    expect(confirmed!.sequence).toBeGreaterThan(pending!.sequence);
    await mine(3);
    await new Promise((r) => setTimeout(r, 1000));
    expect(alertsOf(ruleId)).toHaveLength(2); // confirmed exactly once
  });

  it("retracts a pending match with `removed` when its block is reorganised away, and never confirms it", async () => {
    const to = accounts[4]!;
    const ruleId = await transferRule("to account 4", to, 3);
    await transfer(to, 7_000_000n);
    await mine(1);
    await waitFor(async () => alertsOf(ruleId).length >= 1, 30_000);
    const pending = alertsOf(ruleId)[0]!;
    expect(pending.status).toBe("pending");

    // Replace the block holding the transfer (and drop the transfer) before it is confirmed.
    await rpc("anvil_reorg", [1, []]);
    await rpc("anvil_dropAllTransactions", []).catch(() => {});
    await mine(3);
    await waitFor(async () => alertsOf(ruleId).some((a) => a.status === "removed"), 30_000);
    await mine(2);
    await new Promise((r) => setTimeout(r, 1500));
    const removed = alertsOf(ruleId).find((a) => a.status === "removed")!;
    expect(removed).toMatchObject({ entityId: pending.entityId, blockHash: pending.blockHash });
    expect(alertsOf(ruleId).some((a) => a.status === "confirmed" && a.blockHash === pending.blockHash)).toBe(false);
  });

  it("matches Call and Trace rules from the node's call traces (debug_traceBlockByNumber)", async () => {
    const to = accounts[5]!;
    const tokenAddress = await token.getAddress();
    const base = { maxConfirmationCount: 1, sendPendingAlerts: false, state: "enabled" as const, ...h.config.chain };
    const alerts = [{ type: "Webhook (POST)" as const, parameters: { url: hook }, payload: null }];
    const call = await rules.store.create("acc-e2e", {
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
    const trace = await rules.store.create("acc-e2e", {
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
            value: [`${token.interface.encodeFunctionData("transfer", [to, 9_000_000n])}`],
            operatorParameters: null,
          },
        ],
        alerts,
      },
    });
    await waitFor(async () => match.index.get(call.id) && match.index.get(trace.id), 10_000, 50);
    const txHash = await transfer(to, 9_000_000n);
    await mine(1);
    await waitFor(async () => alertsOf(call.id).length >= 1 && alertsOf(trace.id).length >= 1, 30_000);
    expect(alertsOf(call.id)[0]).toMatchObject({ status: "confirmed", confirmations: 1 });
    expect(alertsOf(call.id)[0]?.entityId).toContain(txHash);
    expect(alertsOf(trace.id)[0]?.entityId).toContain(txHash);
  });
});
