/**
 * `npm run bench -- follow [--block-time-ms 1000] [--faults none|<mode>:<rate>|mixed:<rate>] [--duration-s 300]
 * [--poll-ms <ms>] [--window 16] [--traces true|false] [--ws false|true] [--rpc-timeout-ms 10000] [--hang-ms 40000] [--seed N]
 * [--log-level error] [--outage-s N --outage-mode unavailable|hang --warmup-s 20 --traffic embedded|light]`:
 * how close to the head the follower stays behind one faulty endpoint (issue 32). anvil mines a
 * block every `--block-time-ms` under ERC-20 traffic (a transfer round every 0.4 block times); one
 * ingester (state in memory, call traces on by default, the transport's defaults but the timeout
 * `--rpc-timeout-ms`, its head poll `--poll-ms`, default min(1000, block time), its catch-up window
 * `--window`, 1: one height at a time) follows the head for `--duration-s` through the faulty node
 * of test/support/faulty-node.ts (`--faults`: one mode or `mixed` at a rate, on every kind of call:
 * head polls, blocks, receipts, traces; a hang lasts `--hang-ms`, default 40 s) and produces to Kafka.
 * `--ws true`: the follower also subscribes to `newHeads` on anvil's WebSocket (directly: the
 * faulty node proxies HTTP only) and wakes at every new head (lib/rpc/heads.ts); compare the lag in
 * seconds with and without it for the latency the subscription saves.
 *
 * Measured: the lag in blocks (anvil's head, polled directly every 50 ms, − the highest block
 * produced), sampled every 250 ms: p50/p99/max; the lag in seconds of every block (when it was
 * produced − when it first appeared on anvil): p50/p99; the slope: the mean block lag of the first
 * quarter of the run and of the last (last − first ≤ 0: it does not drift); the lag at the end.
 * Prints a table row (docs/benchmarks.md), the stalls (runs of samples ≥ 6 blocks behind) and the
 * seed, and the transport's timeouts and re-sends by call kind (`chainsift_rpc_timeouts_total`,
 * `chainsift_rpc_resends_total`); `--log-level warn` shows the follower's retries and their causes. Needs the stack (Kafka, registry) and anvil.
 * @module
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { Registry } from "prom-client";
import { startAnvil } from "../cli/devchain/anvil.js";
import { rpcCall } from "../cli/devchain/rpc.js";
import { startTraffic } from "../cli/devchain/traffic.js";
import { createLogger } from "../lib/logger.js";
import { createIngester } from "../pipeline/ingest/ingest.js";
import { ingestMetricsOf } from "../pipeline/ingest/metrics.js";
import { createRpcSource } from "../pipeline/ingest/rpc.js";
import type { BlockBundle } from "../pipeline/ingest/transform.js";
import { createRecordProducer } from "../pipeline/kafka/bus.js";
import { startPipeline } from "../pipeline/runtime.js";
import { FAULT_MODES, type FaultMode, type FaultSetting, type FaultyNode, startFaultyNode } from "../test/support/faulty-node.js";
import { createHarness } from "../test/support/harness.js";
import { numberArg, stringArg } from "./support/data.js";
import { percentile } from "./support/load.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `--faults` as a fault setting and rate (pure): `none`, `<mode>:<rate>` or `mixed:<rate>`.
 * @throws {Error} for an unknown mode or a rate outside 0..1.
 */
export function parseFaults(value: string): { setting: FaultSetting; rate: number } {
  if (value === "none") return { setting: "none", rate: 0 };
  const [mode, r] = value.split(":");
  const rate = Number(r);
  if (!(rate >= 0 && rate <= 1)) throw new Error(`--faults ${value}: expected <mode>:<rate 0..1>`);
  if (mode === "mixed") return { setting: "mixed", rate };
  if (!FAULT_MODES.includes(mode as FaultMode))
    throw new Error(`--faults ${value}: mode is none, mixed or one of ${FAULT_MODES.join(", ")}`);
  return { setting: mode as FaultMode, rate };
}

/** Runs the benchmark and prints its figures. */
export async function benchFollow(args: string[]): Promise<void> {
  const blockTimeMs = numberArg(args, "--block-time-ms", 1000);
  const durationMs = numberArg(args, "--duration-s", 300) * 1000;
  const { setting, rate } = parseFaults(stringArg(args, "--faults", "none"));
  const pollMs = numberArg(args, "--poll-ms", Math.min(1000, blockTimeMs));
  const maxWindow = numberArg(args, "--window", 16);
  const traces = stringArg(args, "--traces", "true") !== "false";
  const ws = stringArg(args, "--ws", "false") === "true";
  const timeoutMs = numberArg(args, "--rpc-timeout-ms", 10_000);
  const hangMs = numberArg(args, "--hang-ms", 40_000);
  const seed = numberArg(args, "--seed", Math.floor(Math.random() * 2 ** 31) + 1);
  const outageMs = numberArg(args, "--outage-s", 0) * 1000;
  const outageMode = stringArg(args, "--outage-mode", "unavailable");
  if (outageMode !== "unavailable" && outageMode !== "hang") throw new Error(`--outage-mode ${outageMode}: expected unavailable or hang`);
  const warmupMs = numberArg(args, "--warmup-s", 20) * 1000;
  const trafficKind = stringArg(args, "--traffic", outageMs > 0 ? "embedded" : "light");
  if (trafficKind !== "embedded" && trafficKind !== "light") throw new Error(`--traffic ${trafficKind}: expected embedded or light`);
  const faults = setting === "none" ? "none" : `${String(setting)}:${rate}`;
  console.log(
    `bench follow: seed ${seed}; ${blockTimeMs} ms blocks for ${outageMs > 0 ? `${warmupMs / 1000} s, then an outage (${outageMode}) of ${outageMs / 1000} s and the catch-up` : `${durationMs / 1000} s`}, ` +
      `faults ${faults} (hang ${hangMs} ms), poll ${pollMs} ms, window ${maxWindow}, traces ${traces}, newHeads ${ws}, RPC timeout ${timeoutMs} ms, traffic ${trafficKind}`,
  );

  const h = createHarness();
  const logger = createLogger(stringArg(args, "--log-level", "error"), "bench-follow");
  const anvil = await startAnvil({ blockTimeSec: blockTimeMs / 1000 });
  const traffic = await startTraffic(
    trafficKind === "embedded"
      ? { rpcUrl: anvil.rpcUrl, intervalMs: 1000 } // cli/start.ts's embedded chain
      : { rpcUrl: anvil.rpcUrl, intervalMs: Math.max(100, 0.4 * blockTimeMs), nft: false, transfersPerRound: 1 },
  );
  const pipeline = await startPipeline({ config: h.config, logger, es: h.es, stages: [] });
  // Catch-up: the durable position in Redis, as `npm start`'s follower (two round trips per block).
  const state = outageMs > 0 ? await pipeline.chainState() : undefined;
  const producer = await createRecordProducer(pipeline.bus);
  const faulty = await startFaultyNode({ upstream: anvil.rpcUrl, seed, hangMs, mode: setting, rate });
  const registry = new Registry();
  const source = createRpcSource({ rpcUrl: faulty.url, timeoutMs, registry });
  const ingester = createIngester({ source, producer, logger, retryInitialMs: 100, traces, registry, state });
  const controller = new AbortController();
  const firstSeen = new Map<number, number>();
  const producedAt = new Map<number, number>();
  let anvilHead = -1;
  let last = -1;
  let onBlock: ((b: BlockBundle) => void) | undefined;
  const samples: Array<{ t: number; lag: number }> = [];
  let stats: Awaited<ReturnType<typeof ingester.follow>> | undefined;
  try {
    const start = Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", []));
    const watching = (async () => {
      while (!controller.signal.aborted) {
        const head = Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", []).catch(() => -1));
        const now = performance.now();
        for (let n = Math.max(start, anvilHead + 1); n <= head; n++) firstSeen.set(n, now);
        anvilHead = Math.max(anvilHead, head);
        await sleep(50);
      }
    })();
    const t0 = performance.now();
    const sampling = (async () => {
      while (!controller.signal.aborted) {
        await sleep(250);
        if (anvilHead >= start) samples.push({ t: performance.now() - t0, lag: Math.max(0, anvilHead - Math.max(last, start - 1)) });
      }
    })();
    const following = ingester.follow({
      from: start,
      pollIntervalMs: pollMs,
      maxWindow,
      wsUrl: ws ? anvil.rpcUrl.replace(/^http/, "ws") : undefined,
      signal: controller.signal,
      onBlock: (b) => {
        const n = b.block.number.num;
        if (!producedAt.has(n)) producedAt.set(n, performance.now());
        last = Math.max(last, n);
        onBlock?.(b);
      },
    });
    if (outageMs > 0) {
      const tracked = { anvilHead: () => anvilHead, last: () => last, onBlock: (f: (b: BlockBundle) => void) => (onBlock = f) };
      await measureCatchUp({ ...tracked, faulty, registry, warmupMs, outageMs, outageMode, setting, rate, seed });
      await printTimeouts(registry);
      return;
    }
    await sleep(durationMs);
    const endLag = anvilHead - last;
    controller.abort();
    stats = await following.catch((err: Error) => {
      console.log(`the follower failed: ${err.message}`);
      return undefined;
    });
    await Promise.all([watching, sampling]);

    const lags = samples.map((s) => s.lag).sort((a, b) => a - b);
    const due = [...firstSeen.entries()].filter(([n]) => n <= last);
    const seconds = due.flatMap(([n, t]) => {
      const p = producedAt.get(n);
      return p === undefined ? [] : [Math.max(0, p - t) / 1000];
    });
    seconds.sort((a, b) => a - b);
    const q = Math.max(1, Math.floor(samples.length / 4));
    const mean = (xs: Array<{ lag: number }>) => xs.reduce((a, s) => a + s.lag, 0) / Math.max(1, xs.length);
    const first = mean(samples.slice(0, q));
    const lastQ = mean(samples.slice(-q));
    const missing = due.filter(([n]) => !producedAt.has(n)).length;
    console.log("");
    console.log(
      "| block time | faults | window | newHeads | duration s | blocks | lag p50 blocks | p99 | max | lag p50 s | p99 s | mean lag first ¼ → last ¼ (slope) | lag at the end | heights skipped | reorgs (false) | faults injected |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    console.log(
      `| ${blockTimeMs} ms | ${faults} | ${maxWindow} | ${ws ? "on" : "off"} | ${(durationMs / 1000).toFixed(0)} | ${producedAt.size} | ${percentile(lags, 0.5)} | ${percentile(lags, 0.99)} | ${lags.at(-1) ?? "–"} | ` +
        `${percentile(seconds, 0.5).toFixed(2)} | ${percentile(seconds, 0.99).toFixed(2)} | ${first.toFixed(1)} → ${lastQ.toFixed(1)} (${(lastQ - first).toFixed(1)}) | ` +
        `${endLag} | ${missing} | ${stats?.reorgs ?? "–"} | ${faulty.total()} |`,
    );
    console.log(`faults by kind: ${JSON.stringify(faulty.injectedOn)}`);
    // Stalls: runs of samples 6 blocks or more behind (when, how long, how far).
    const stalls: string[] = [];
    for (let i = 0; i < samples.length; i++) {
      if ((samples[i]?.lag ?? 0) < 6) continue;
      let j = i;
      let worst = 0;
      while (j < samples.length && (samples[j]?.lag ?? 0) >= 6) worst = Math.max(worst, samples[j++]?.lag ?? 0);
      stalls.push(`${((samples[i]?.t ?? 0) / 1000).toFixed(1)} s: ${((j - i) * 0.25).toFixed(2)} s, up to ${worst} blocks`);
      i = j;
    }
    await printTimeouts(registry);
    console.log(`stalls (≥ 6 blocks behind): ${stalls.length === 0 ? "none" : stalls.join("; ")}`);
    console.log(`seed ${seed} (reproduce with --seed ${seed})`);
  } finally {
    controller.abort();
    source.destroy();
    await faulty.close();
    await traffic.stop();
    await producer.disconnect().catch(() => {});
    await state?.reset().catch(() => {});
    await pipeline.stop();
    await anvil.stop();
    await h.cleanup();
  }
}

/** Prints the transport's timeouts and re-sends by call kind. */
async function printTimeouts(registry: Registry): Promise<void> {
  const byKind = async (name: string) =>
    Object.fromEntries(((await registry.getSingleMetric(name)?.get())?.values ?? []).map((v) => [String(v.labels.kind), v.value]));
  console.log(
    `timeouts by call kind: ${JSON.stringify(await byKind("chainsift_rpc_timeouts_total"))}; re-sends: ${JSON.stringify(await byKind("chainsift_rpc_resends_total"))}`,
  );
}

/**
 * The catch-up measurement (module doc): warm-up at the head, the outage, then from its end until the
 * follower is back at the head (lag ≤ 1 block, or 2 minutes / the outage's length at most). Prints a table row.
 */
async function measureCatchUp(o: {
  anvilHead: () => number;
  last: () => number;
  onBlock: (f: (b: BlockBundle) => void) => void;
  faulty: FaultyNode;
  registry: Registry;
  warmupMs: number;
  outageMs: number;
  outageMode: "unavailable" | "hang";
  setting: FaultSetting;
  rate: number;
  seed: number;
}): Promise<void> {
  const { faulty } = o;
  const window = ingestMetricsOf(o.registry).followWindow;
  const windowNow = async () => (await window.get()).values[0]?.value ?? 0;
  /** HTTP requests to the node in flight (`chainsift_rpc_requests_in_flight`): near the window, the node bounds the rate; near 0, the produce path does. */
  const inFlightNow = async () => (await o.registry.getSingleMetric("chainsift_rpc_requests_in_flight")?.get())?.values[0]?.value ?? 0;
  await sleep(o.warmupMs);
  const lagBefore = o.anvilHead() - o.last();
  const loadBefore = loadavg();
  faulty.setFaults(o.outageMode, 1);
  console.log(
    `outage (${o.outageMode}) from head ${o.anvilHead()}, ${lagBefore} blocks behind before it; load ${loadBefore.map((x) => x.toFixed(1)).join(" ")}`,
  );
  const injectedBefore = faulty.total();
  await sleep(o.outageMs);
  faulty.setFaults(o.setting, o.rate);
  const tEnd = performance.now();
  const headAtEnd = o.anvilHead();
  const lastAtEnd = o.last();
  const loadAtEnd = loadavg();
  const injectedInOutage = faulty.total() - injectedBefore;
  console.log(
    `outage over: head ${headAtEnd}, last produced ${lastAtEnd} (${headAtEnd - lastAtEnd} behind); ${injectedInOutage} requests refused`,
  );
  const records = { blocks: 0, transactions: 0, logs: 0, traces: 0 };
  o.onBlock((b) => {
    records.blocks++;
    records.transactions += b.transactions.length;
    records.logs += b.logs.length;
    records.traces += b.traces.length;
  });
  let firstAt: number | undefined;
  let caughtAt: number | undefined;
  let maxWindow = 0;
  let nextSample = 0;
  const inFlight: number[] = [];
  const deadline = tEnd + Math.max(120_000, o.outageMs);
  while (performance.now() < deadline) {
    const now = performance.now();
    if (firstAt === undefined && o.last() > lastAtEnd) firstAt = now;
    if (o.last() >= o.anvilHead() - 1 && o.last() > lastAtEnd) {
      caughtAt = now;
      break;
    }
    if (now >= nextSample && firstAt !== undefined) {
      maxWindow = Math.max(maxWindow, await windowNow());
      inFlight.push(await inFlightNow());
      nextSample = now + 50;
    }
    await sleep(10);
  }
  const load = loadavg();
  const lastAtCaught = o.last();
  const caught = lastAtCaught - lastAtEnd;
  const s = ((caughtAt ?? performance.now()) - tEnd) / 1000;
  const producing = firstAt === undefined ? 0 : ((caughtAt ?? performance.now()) - firstAt) / 1000;
  const per = (n: number) => (records.blocks === 0 ? "–" : (n / records.blocks).toFixed(1));
  console.log("");
  console.log(
    "| outage | mode | blocks behind at its end | s to the first block | s to catch up | blocks caught up | blocks/s | blocks/s while producing | txs / logs / traces per block | largest window | mean requests in flight | load (1 min) at the end of the outage → caught up |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
  console.log(
    `| ${o.outageMs / 1000} s | ${o.outageMode} | ${headAtEnd - lastAtEnd} | ${firstAt === undefined ? "–" : ((firstAt - tEnd) / 1000).toFixed(2)} | ` +
      `${caughtAt === undefined ? `not caught up in ${s.toFixed(0)} s` : s.toFixed(2)} | ${caught} | **${(caught / s).toFixed(1)}** | ` +
      `${producing > 0 ? (caught / producing).toFixed(1) : "–"} | ${per(records.transactions)} / ${per(records.logs)} / ${per(records.traces)} | ${maxWindow} | ` +
      `${inFlight.length === 0 ? "–" : (inFlight.reduce((a, b) => a + b, 0) / inFlight.length).toFixed(1)} | ` +
      `${loadAtEnd[0]?.toFixed(1)} → ${load[0]?.toFixed(1)} |`,
  );
  console.log(`seed ${o.seed} (reproduce with --seed ${o.seed})`);
}
