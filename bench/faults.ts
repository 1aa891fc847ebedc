/**
 * `npm run bench -- faults [--duration-s 30] [--seed N] [--rate 0.2] [--rpc-timeout-ms 10000] [--cases none,lagging,…]`:
 * how well ingest follows a faulty node (issue 19 §5). anvil mines a block every second under
 * ERC-20 traffic (transfers every 400 ms); for each case a fresh ingester (state in memory,
 * 100 ms polls, the transport's defaults but its JSON-RPC timeout `--rpc-timeout-ms`, default the
 * config default `CHAINSIFT_RPC_TIMEOUT_MS` 10 s; a hang lasts 5 s longer) follows the head for `--duration-s`
 * through the faulty node of test/support/faulty-node.ts and produces to Kafka. Cases, in one run:
 * `none` (the control), each fault mode at `--rate`, `mixed` (every request faulted at `--rate`,
 * a mode drawn at random), and `two-endpoints` (ingest given two endpoints: first one with mixed
 * faults at `--rate`, then anvil itself).
 *
 * Measured per case: head lag = for every block, when ingest produced it minus when it first
 * appeared on anvil (anvil polled directly every 50 ms), p50/p99/max in ms; the lag of the first
 * and the last quarter of the run (does it grow?); blocks/s produced; blocks lost (heights below
 * the highest produced one never produced: skipped) and behind (due heights above it at the end); reorgs the follower announced (none are made: every one is false);
 * faults injected. Prints a table and the seed. Needs the stack (Kafka, registry) and anvil.
 * @module
 */
import { performance } from "node:perf_hooks";
import { startAnvil } from "../cli/devchain/anvil.js";
import { rpcCall } from "../cli/devchain/rpc.js";
import { startTraffic } from "../cli/devchain/traffic.js";
import { createLogger } from "../lib/logger.js";
import { createIngester } from "../pipeline/ingest/ingest.js";
import { createRpcSource } from "../pipeline/ingest/rpc.js";
import { createRecordProducer } from "../pipeline/kafka/bus.js";
import { startPipeline } from "../pipeline/runtime.js";
import { FAULT_MODES, type FaultSetting, startFaultyNode } from "../test/support/faulty-node.js";
import { createHarness } from "../test/support/harness.js";
import { numberArg, stringArg } from "./support/data.js";
import { percentile } from "./support/load.js";
import { prng } from "./support/prng.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One case's figures. */
interface CaseResult {
  name: string;
  blocks: number;
  blocksPerSec: number;
  p50: number;
  p99: number;
  max: number;
  firstQuarterP50: number;
  lastQuarterP50: number;
  /** Heights below the highest produced one that were never produced (skipped). */
  lost: number;
  /** Heights due (appeared ≥ 2 s before the end) above the highest produced one: the follower is behind. */
  behind: number;
  reorgs: number;
  injected: number;
}

/** Runs the benchmark and prints its figures. */
export async function benchFaults(args: string[]): Promise<void> {
  const durationMs = numberArg(args, "--duration-s", 30) * 1000;
  const seed = numberArg(args, "--seed", Math.floor(Math.random() * 2 ** 31) + 1);
  const rate = numberArg(args, "--rate", 0.2);
  const timeoutMs = numberArg(args, "--rpc-timeout-ms", 10_000);
  const all: string[] = ["none", ...FAULT_MODES, "mixed", "two-endpoints"];
  const cases = stringArg(args, "--cases", all.join(",")).split(",");
  const seeds = prng(seed);
  console.log(
    `bench faults: seed ${seed}; ${cases.length} cases × ${durationMs / 1000} s, faults at ${rate * 100} %, 1 s anvil blocks, ` +
      `RPC timeout ${timeoutMs} ms (a hang lasts ${timeoutMs + 5000} ms)`,
  );

  const h = createHarness();
  const logger = createLogger("error", "bench-faults");
  const anvil = await startAnvil({ blockTimeSec: 1 });
  const traffic = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 400, nft: false, transfersPerRound: 1 });
  const pipeline = await startPipeline({ config: h.config, logger, es: h.es, stages: [] });
  const producer = await createRecordProducer(pipeline.bus);
  const results: CaseResult[] = [];
  try {
    for (const name of cases) {
      // two-endpoints: the faulty one (mixed) first, a clean one second (ingest fails over).
      const two = name === "two-endpoints";
      const faulty = await startFaultyNode({
        upstream: anvil.rpcUrl,
        seed: Math.floor(seeds() * 2 ** 31) + 1,
        hangMs: timeoutMs + 5000,
        mode: two ? "mixed" : (name as FaultSetting),
        rate,
        log: () => {},
      });
      const source = createRpcSource({ rpcUrls: two ? [faulty.url, anvil.rpcUrl] : [faulty.url], timeoutMs });
      const ingester = createIngester({ source, producer, logger, retryInitialMs: 100 });
      const firstSeen = new Map<number, number>();
      const producedAt = new Map<number, number>();
      const controller = new AbortController();
      const start = Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", []));
      // anvil polled directly: when each height first appeared.
      const watching = (async () => {
        while (!controller.signal.aborted) {
          const head = Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", []).catch(() => -1));
          const now = performance.now();
          for (let n = start; n <= head; n++) if (!firstSeen.has(n)) firstSeen.set(n, now);
          await sleep(50);
        }
      })();
      const t0 = performance.now();
      const following = ingester.follow({
        from: start,
        pollIntervalMs: 100,
        signal: controller.signal,
        onBlock: (b) => {
          if (!producedAt.has(b.block.number.num)) producedAt.set(b.block.number.num, performance.now());
        },
      });
      await sleep(durationMs);
      controller.abort();
      const stats = await following.catch((err: Error) => {
        console.log(`  ${name}: the follower failed: ${err.message}`);
        return undefined;
      });
      await watching;
      const elapsed = (performance.now() - t0) / 1000;
      source.destroy();
      await faulty.close();

      // Heights that appeared at least 2 s before the end count (the rest may just not be due yet).
      const due = [...firstSeen.entries()].filter(([, t]) => t < t0 + durationMs - 2000).map(([n]) => n);
      const lags = due.flatMap((n) => {
        const p = producedAt.get(n);
        const s = firstSeen.get(n);
        return p !== undefined && s !== undefined ? [Math.max(0, p - s)] : [];
      });
      const quarter = Math.max(1, Math.floor(lags.length / 4));
      const p50Of = (xs: number[]) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          0.5,
        );
      const sorted = [...lags].sort((a, b) => a - b);
      results.push({
        name,
        blocks: producedAt.size,
        blocksPerSec: producedAt.size / elapsed,
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99),
        max: sorted.at(-1) ?? Number.NaN,
        firstQuarterP50: p50Of(lags.slice(0, quarter)),
        lastQuarterP50: p50Of(lags.slice(-quarter)),
        lost: due.filter((n) => !producedAt.has(n) && n < Math.max(-1, ...producedAt.keys())).length,
        behind: due.filter((n) => n > Math.max(-1, ...producedAt.keys())).length,
        reorgs: stats?.reorgs ?? Number.NaN,
        injected: faulty.total(),
      });
      const r = results.at(-1) as CaseResult;
      console.log(
        `  ${name}: ${r.blocks} blocks, lag p50 ${r.p50.toFixed(0)} ms p99 ${r.p99.toFixed(0)} ms, lost ${r.lost}, behind ${r.behind}, reorgs ${r.reorgs}, faults ${r.injected}`,
      );
    }
  } finally {
    await traffic.stop();
    await producer.disconnect().catch(() => {});
    await pipeline.stop();
    await anvil.stop();
    await h.cleanup();
  }

  const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "–");
  console.log("");
  console.log(
    "| case | blocks | blocks/s | head lag p50 ms | p99 ms | max ms | p50 first ¼ → last ¼ ms | lost | behind at the end | reorgs (false) | faults injected |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    console.log(
      `| ${r.name} | ${r.blocks} | ${r.blocksPerSec.toFixed(2)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.max)} | ${fmt(r.firstQuarterP50)} → ${fmt(r.lastQuarterP50)} | ${r.lost} | ${r.behind} | ${fmt(r.reorgs)} | ${r.injected} |`,
    );
  }
  const control = results.find((r) => r.name === "none");
  const two = results.find((r) => r.name === "two-endpoints");
  if (control && two)
    console.log(`two endpoints, one faulty: extra head lag p99 ${fmt(two.p99 - control.p99)} ms vs no faults (target ≤ 2000 ms)`);
  console.log(`seed ${seed} (reproduce with --seed ${seed})`);
}
