/**
 * `npm run bench -- alert-latency [--blocks 50] [--per-block 10] [--poll-ms 20] [--dead-destinations N]`:
 * time from a block's appearance at the node (anvil, `anvil_mine` returned) to the arrival of each
 * alert's webhook at a local receiver, through the whole real path: ingest (following the head,
 * polling every `--poll-ms`) → Kafka → decode → match (maxConfirmationCount 0) → notify → HTTP POST.
 * Prints p50/p90/p99/max over all alerts. Target: p99 ≤ 250 ms over ≥ 500 alerts.
 *
 * With `--dead-destinations N` (N ≥ 1) the same run then adds N rules matching the same transfers
 * whose webhooks are dead local endpoints (alternately one that accepts the request and never
 * answers, and a closed port: connection refused), each its own destination, measures the healthy
 * rule's alerts over the same number of blocks again and prints both figures and
 * p99(dead) / p99(none) against the target ≤ 1.2. The notify settings are the configuration's
 * (`CHAINSIFT_NOTIFY_*`, defaults: 10 s timeout, unhealthy after 3 failures in a row).
 * Needs the stack (`npm run stack -- up`).
 * @module
 */
import { createServer, type Server } from "node:http";
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
import { tokenTransferRule } from "../test/support/rules.js";
import { percentile } from "./support/load.js";

function arg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const listen = (server: Server, port = 0) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });

/** A webhook receiver on 127.0.0.1 that reads every request and never answers it ({@link startHangingEndpoint}). */
export interface HangingEndpoint {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Requests received so far. */
  requests(): number;
  /** Most requests open at the same time so far. */
  maxOpen(): number;
  /** Drops every open connection and stops listening. */
  close(): Promise<void>;
}

/** Starts a {@link HangingEndpoint} on a free port of 127.0.0.1. */
export async function startHangingEndpoint(): Promise<HangingEndpoint> {
  let requests = 0;
  let open = 0;
  let maxOpen = 0;
  const server = createServer((req, res) => {
    requests++;
    maxOpen = Math.max(maxOpen, ++open);
    res.on("close", () => open--);
    req.resume();
  });
  const port = await listen(server);
  return {
    base: `http://127.0.0.1:${port}`,
    requests: () => requests,
    maxOpen: () => maxOpen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port of 127.0.0.1 that nothing listens on (connecting is refused): one the OS just gave out and got back. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs the benchmark and prints its figures. */
export async function benchAlertLatency(args: string[]): Promise<void> {
  const blocks = arg(args, "blocks", 50);
  const perBlock = arg(args, "per-block", 10);
  const pollMs = arg(args, "poll-ms", 20);
  const deadCount = Math.floor(arg(args, "dead-destinations", 0));
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
  const hook = `http://127.0.0.1:${await listen(server)}/hook`;

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
  const match = await startMatchStage({
    bus: pipeline.bus,
    config: h.config,
    logger: h.logger,
    rules: rules.store,
    decode: { chainId: anvil.chainId },
  });
  const notify = await startNotifyStage({ bus: pipeline.bus, config: h.config, logger: h.logger });
  /** A rule on every CST transfer, posting to `url`. */
  const everyTransfer = async (name: string, url: string) => {
    const rule = await rules.store.create(
      "bench",
      tokenTransferRule({ name, chain: h.config.chain, token: tokenAddress, maxConfirmationCount: 0, sendPendingAlerts: false, url }),
    );
    await waitFor(async () => match.index.get(rule.id), 10_000, 20);
  };
  await everyTransfer("every CST transfer", hook);
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

  /** Mines `blocks` blocks of `perBlock` transfers, each after the previous one's alerts arrived (or 10 s). */
  const measure = async () => {
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
    return { latencies: latencies.sort((a, b) => a - b), missing };
  };
  const none = await measure();

  const hanging: HangingEndpoint[] = [];
  let dead: Awaited<ReturnType<typeof measure>> | undefined;
  if (deadCount > 0) {
    const urls: string[] = [];
    for (let i = 0; i < deadCount; i++) {
      if (i % 2 === 0) {
        const endpoint = await startHangingEndpoint();
        hanging.push(endpoint);
        urls.push(`${endpoint.base}/hook`);
      } else urls.push(`http://127.0.0.1:${await closedPort()}/hook`);
    }
    for (const [i, url] of urls.entries()) await everyTransfer(`dead destination ${i + 1}`, url);
    dead = await measure();
  }
  const stats = notify.scheduler.stats();
  const unhealthy = (await notify.queue.destinations()).filter((d) => d.health.unhealthy).length;

  controller.abort();
  await following.catch(() => {});
  await close();
  // The hung endpoints close after the notify stage (which waits up to one timeout for the attempts
  // in flight): closed first, the stage would keep attempting them while it stops and log them unhealthy.
  await notify.stop();
  await Promise.all(hanging.map((e) => e.close()));
  await match.stop();
  await rules.close();
  await pipeline.stop();
  await anvil.stop();
  server.close();
  await h.cleanup();

  const f = (x: number) => `${x.toFixed(1)} ms`;
  const report = (r: { latencies: number[]; missing: number }, target: string) => {
    console.log(`alerts received : ${r.latencies.length} (missing ${r.missing})`);
    console.log(`latency p50     : ${f(percentile(r.latencies, 0.5))}`);
    console.log(`latency p90     : ${f(percentile(r.latencies, 0.9))}`);
    console.log(`latency p99     : ${f(percentile(r.latencies, 0.99))}${target}`);
    console.log(`latency max     : ${f(r.latencies.at(-1) ?? Number.NaN)}`);
  };
  console.log(`bench alert-latency: ${blocks} blocks x ${perBlock} matching transfers, maxConfirmationCount 0, head poll ${pollMs} ms`);
  if (!dead) {
    report(none, " (target <= 250 ms)");
    return;
  }
  const n = h.config.notify;
  console.log("-- healthy rule alone (0 dead destinations)");
  report(none, " (target <= 250 ms)");
  console.log(
    `-- healthy rule next to ${deadCount} dead destinations (${hanging.length} never answering, ${deadCount - hanging.length} refusing; ` +
      `notify timeout ${n.timeoutMs} ms, unhealthy after ${n.unhealthyAfter}, ${n.destinationConcurrency} per destination)`,
  );
  report(dead, "");
  const ratio = percentile(dead.latencies, 0.99) / percentile(none.latencies, 0.99);
  console.log(`p99 dead / none : ${ratio.toFixed(2)} (target <= 1.2) ${ratio <= 1.2 ? "met" : "missed"}`);
  console.log(
    `notify          : ${stats.delivered} delivered, ${stats.retried} retries scheduled, ${stats.deadLettered} dead-lettered; ` +
      `${unhealthy} destinations unhealthy; requests to the never-answering endpoints: ${hanging.map((e) => e.requests()).join(", ")}`,
  );
}
