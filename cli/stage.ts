/**
 * `npm run stage -- <ingest|decode|index|match|notify>… [--chains <file>]`: runs one or several
 * pipeline stages as their own process (operators scale and restart stages independently; `npm
 * start` runs them all in one), through the one wiring function (pipeline/wiring.ts `startStages`).
 * The chains come from a chains file (`--chains <file>` or `CHAINSIFT_CHAINS_FILE`, docs/chains.md):
 * every chain of the file, or those `CHAINSIFT_CHAIN` (a comma-separated list) names; or from the
 * environment's one-chain shorthand. Each chain's stages get its chain context (chain id, token
 * list, decode options). `ingest` serves one chain per process (several are refused,
 * `CS_INGEST_ONE_CHAIN`); it follows the head of the chain's endpoints (failover between several)
 * from its durable position (the block after the last one it produced; the node's head on a first
 * start; `--from N` to start elsewhere); with `--from N --to M` it backfills that range instead (an
 * interrupted one resumes), showing its progress (a bar in a terminal, `backfill progress` log lines
 * otherwise; cli/progress.ts), and exits; it refuses a node whose `eth_chainId` differs from a
 * configured one (`CS_CHAIN_ID_MISMATCH`).
 * Configuration comes from the environment (docs/configuration.md) through the process context
 * ({@link createCommon}), whose Redis client and metrics registry the stages use. Stops cleanly on
 * SIGINT/SIGTERM (offsets of processed batches are committed). Serves `/metrics`, `/healthz` and
 * `/readyz` on `CHAINSIFT_METRICS_HOST:CHAINSIFT_METRICS_PORT` (docs/metrics.md). Prints
 * `{"stage","chains","pid","ready":true,"metrics":"http://…"}` on stdout once started (`stage`: the
 * stages comma-separated; `chains`: the served chains' keys; `metrics` absent with port -1).
 * @module
 */
import { createCommon } from "../lib/common.js";
import { serveProcessMetrics } from "../lib/metrics.js";
import { createChainContexts } from "../pipeline/chain-context.js";
import { STAGES, type Stage } from "../pipeline/runtime.js";
import { startStages } from "../pipeline/wiring.js";
import { createBackfillDisplay } from "./progress.js";

const args = process.argv.slice(2);
const stages: Stage[] = [];
while (args[0] !== undefined && !args[0].startsWith("--")) stages.push(args.shift() as Stage);
const flag = (name: string) => {
  const at = args.indexOf(name);
  return at < 0 ? undefined : (args[at + 1] ?? "");
};
const fromRaw = flag("--from");
const from = fromRaw === undefined ? undefined : Number(fromRaw);
const toRaw = flag("--to");
const to = toRaw === undefined ? undefined : Number(toRaw);
const chainsFile = flag("--chains");
const stage = stages.join(",");
if (stages.length === 0 || stages.some((s) => !STAGES.includes(s)) || new Set(stages).size !== stages.length) {
  console.error(`usage: npm run stage -- <${STAGES.join("|")}>… [--chains <file>] [--from N [--to M] (ingest)]`);
  process.exit(2);
}
const ingest = stages.includes("ingest");
if (from !== undefined && !(ingest && Number.isInteger(from) && from >= 0)) {
  console.error("--from: ingest only, a non-negative integer");
  process.exit(2);
}
if (to !== undefined && (!ingest || from === undefined || !(Number.isInteger(to) && to >= from))) {
  console.error("--to: ingest only, after --from N, an integer >= N");
  process.exit(2);
}

if (chainsFile === "") {
  console.error("--chains: expected a file");
  process.exit(2);
}

const common = createCommon({
  chains: createChainContexts,
  name: `chainsift-${stages.join("-")}`,
  ...(chainsFile ? { env: { ...process.env, CHAINSIFT_CHAINS_FILE: chainsFile } } : {}),
});
const { config, shutdown } = common;
try {
  const server = await serveProcessMetrics(common);
  const running = await startStages(common, { stages });
  const ingester = running.chains[0]?.ingest?.ingester;
  if (ingester) {
    const signal = shutdown.signal;
    let loop: Promise<unknown>;
    if (from !== undefined && to !== undefined) {
      // A progress bar in a terminal, progress lines otherwise (cli/progress.ts); exits when done.
      const progress = createBackfillDisplay({
        logger: common.logger,
        logOutput: common.logOutput,
        intervalMs: config.ingest.progressIntervalMs,
      });
      shutdown.add("progress display", () => progress.stop());
      loop = ingester.backfill(from, to, { signal, onProgress: progress.update }).finally(() => progress.stop());
      loop.then(
        () => shutdown.run("backfill done"),
        () => {},
      );
    } else {
      loop = ingester.follow({
        from,
        pollIntervalMs: config.ingest.pollIntervalMs,
        maxWindow: config.ingest.followWindow,
        wsUrl: config.ingest.rpc.wsUrl,
        signal,
      });
    }
    // Stopped first: the follower (or backfill) ends once the shutdown signal aborts it.
    shutdown.add("ingest loop", () => loop.catch(() => {}));
    loop.catch((err: unknown) => {
      if (shutdown.started) return;
      common.logger.error({ err }, to === undefined ? "the follower failed" : "the backfill failed");
      void shutdown.run("error", 1);
    });
  }
  for (const check of running.readiness) server?.addReadiness(check);
  const chains = running.chains.map((c) => c.context.key);
  console.log(JSON.stringify({ stage, chains, pid: process.pid, ready: true, ...(server ? { metrics: server.url } : {}) }));
} catch (err) {
  common.logger.error({ err }, `stage ${stage} did not start`);
  await shutdown.run("error", 1);
}
