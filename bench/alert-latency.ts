/**
 * `npm run bench -- alert-latency [--blocks 50] [--per-block 10] [--poll-ms 20]`: time from a
 * block's appearance at the node (anvil, `anvil_mine` returned) to the arrival of each alert's
 * webhook at a local receiver, through the whole real path: ingest (following the head, polling
 * every `--poll-ms`) → Kafka → decode → match (maxConfirmationCount 0) → notify → HTTP POST.
 * Prints p50/p90/p99/max over all alerts. Target: p99 ≤ 250 ms over ≥ 500 alerts.
 * Needs the stack (`npm run stack -- up`).
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { ContractFactory, Interface, JsonRpcProvider } from "ethers";
import { startAnvil } from "../cli/devchain/anvil.js";
import { compileDevContracts } from "../cli/devchain/contracts.js";
import { connectRuleStore } from "../lib/rules/store.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { startMatchStage } from "../pipeline/match/stage.js";
import { startNotifyStage } from "../pipeline/notify/stage.js";
import { startPipeline } from "../pipeline/runtime.js";
import { createHarness, waitFor } from "../test/support/harness.js";

function arg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Runs the benchmark and prints its figures. */
export async function benchAlertLatency(args: string[]): Promise<void> {
  const blocks = arg(args, "blocks", 50);
  const perBlock = arg(args, "per-block", 10);
  const pollMs = arg(args, "poll-ms", 20);
  const h = createHarness();
  h.config.chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
  h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"] };

  const arrivals = new Map<number, number[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { blockNumber: number; status: string };
      if (body.status === "confirmed") {
        const list = arrivals.get(body.blockNumber) ?? [];
        list.push(at);
        arrivals.set(body.blockNumber, list);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  const anvil = await startAnvil({ blockTimeSec: 0 });
  const provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true });
  const accounts = (await provider.send("eth_accounts", [])) as string[];
  const { token: compiled } = await compileDevContracts();
  const deployed = await new ContractFactory(compiled.abi, compiled.bytecode, await provider.getSigner(accounts[0])).deploy(accounts[0]);
  await deployed.waitForDeployment();
  const tokenAddress = await deployed.getAddress();
  const iface = new Interface(compiled.abi);
  await provider.send("eth_sendTransaction", [
    { from: accounts[0], to: tokenAddress, data: iface.encodeFunctionData("mint", [accounts[0], 10n ** 15n]) },
  ]);
  await provider.send("evm_setAutomine", [false]);

  const pipeline = await startPipeline({
    config: h.config,
    logger: h.logger,
    es: h.es,
    decoder: createDecoder({ chainId: anvil.chainId }),
    stages: ["decode"],
  });
  const rules = await connectRuleStore(h.config);
  const match = await startMatchStage({ bus: pipeline.bus, config: h.config, logger: h.logger, rules: rules.store });
  const notify = await startNotifyStage({ bus: pipeline.bus, config: h.config, logger: h.logger });
  const rule = await rules.store.create("bench", {
    name: "every CST transfer",
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    ...h.config.chain,
    config: {
      targetType: "Event",
      targetMap: [
        { name: "event", operator: "Equals", value: "Transfer" },
        { name: "address", operator: "Equals (ignore case)", value: tokenAddress },
      ],
      alerts: [{ type: "Webhook (POST)", parameters: { url: hook } }],
    },
  });
  await waitFor(async () => match.index.get(rule.id), 10_000, 20);
  const { ingester, close } = await pipeline.createIngester(anvil.rpcUrl);
  const controller = new AbortController();
  const following = ingester.follow({ from: 0, pollIntervalMs: pollMs, signal: controller.signal });

  // Warm-up block (not measured): connections, JIT, consumer fetch loops.
  const sendTransfers = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const to = accounts[1 + (i % (accounts.length - 1))];
      await provider.send("eth_sendTransaction", [
        { from: accounts[0], to: tokenAddress, data: iface.encodeFunctionData("transfer", [to, 1000 + i]) },
      ]);
    }
  };
  await sendTransfers(perBlock);
  await provider.send("anvil_mine", ["0x1"]);
  const warmBlock = Number(await provider.send("eth_blockNumber", []));
  await waitFor(async () => (arrivals.get(warmBlock)?.length ?? 0) >= perBlock, 60_000, 10);

  const latencies: number[] = [];
  let missing = 0;
  for (let b = 0; b < blocks; b++) {
    await sendTransfers(perBlock);
    await provider.send("anvil_mine", ["0x1"]);
    const t0 = performance.now();
    const number = Number(await provider.send("eth_blockNumber", []));
    try {
      await waitFor(async () => (arrivals.get(number)?.length ?? 0) >= perBlock, 10_000, 2);
    } catch {
      missing += perBlock - (arrivals.get(number)?.length ?? 0);
    }
    for (const at of arrivals.get(number) ?? []) latencies.push(at - t0);
  }
  controller.abort();
  await following.catch(() => {});
  await close();
  await notify.stop();
  await match.stop();
  await rules.close();
  await pipeline.stop();
  await anvil.stop();
  server.close();
  await h.cleanup();

  latencies.sort((a, b) => a - b);
  const f = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`bench alert-latency: ${blocks} blocks x ${perBlock} matching transfers, maxConfirmationCount 0, head poll ${pollMs} ms`);
  console.log(`alerts received : ${latencies.length} (missing ${missing})`);
  console.log(`latency p50     : ${f(percentile(latencies, 50))}`);
  console.log(`latency p90     : ${f(percentile(latencies, 90))}`);
  console.log(`latency p99     : ${f(percentile(latencies, 99))} (target <= 250 ms)`);
  console.log(`latency max     : ${f(latencies.at(-1) ?? Number.NaN)}`);
}
