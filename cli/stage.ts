/**
 * `npm run stage -- <ingest|decode|index|match|notify>`: runs one pipeline stage as its own
 * process (operators scale and restart stages independently; `npm start` runs them all in one).
 * `ingest` follows the head of `CHAINSIFT_RPC_URLS` (or `CHAINSIFT_RPC_URL`; failover between several) from its durable position (the block after the
 * last one it produced; the node's head on a first start; `--from N` to start elsewhere); with
 * `--from N --to M` it backfills that range instead (an interrupted one resumes), showing its
 * progress (a bar in a terminal, `backfill progress` log lines otherwise; cli/progress.ts), and exits.
 * Configuration comes from the environment (docs/configuration.md) through the process context
 * ({@link createCommon}), whose Redis client and metrics registry the stage uses. Stops cleanly on
 * SIGINT/SIGTERM (offsets of processed batches are committed). Serves `/metrics`, `/healthz` and
 * `/readyz` on `CHAINSIFT_METRICS_HOST:CHAINSIFT_METRICS_PORT` (docs/metrics.md). Prints
 * `{"stage","pid","ready":true,"metrics":"http://…"}` on stdout once started (`metrics` absent with
 * port -1).
 * @module
 */
import { createCommon } from "../lib/common.js";
import { rpcEndpoints } from "../lib/config.js";
import { serveProcessMetrics } from "../lib/metrics.js";
import { STAGES, type Stage, startPipeline } from "../pipeline/runtime.js";
import { createBackfillDisplay } from "./progress.js";

const stage = process.argv[2] as Stage | undefined;
const fromArg = process.argv.indexOf("--from");
const from = fromArg > 0 ? Number(process.argv[fromArg + 1]) : undefined;
const toArg = process.argv.indexOf("--to");
const to = toArg > 0 ? Number(process.argv[toArg + 1]) : undefined;
if (!stage || !STAGES.includes(stage)) {
  console.error(`usage: npm run stage -- <${STAGES.join("|")}> [--from N [--to M] (ingest)]`);
  process.exit(2);
}
if (stage === "ingest" && from !== undefined && !(Number.isInteger(from) && from >= 0)) {
  console.error("--from: expected a non-negative integer");
  process.exit(2);
}
if (to !== undefined && (stage !== "ingest" || from === undefined || !(Number.isInteger(to) && to >= from))) {
  console.error("--to: ingest only, after --from N, an integer >= N");
  process.exit(2);
}

const common = createCommon({ name: `chainsift-${stage}` });
const { config, shutdown } = common;
try {
  const server = await serveProcessMetrics(common);
  const pipeline = await startPipeline({
    config,
    logger: common.logger,
    redis: common.redis,
    metricsRegistry: common.metrics,
    stages: stage === "ingest" ? [] : [stage],
  });
  shutdown.add("pipeline", () => pipeline.stop());
  if (stage === "ingest") {
    const { ingester, close } = await pipeline.createIngester(rpcEndpoints(config.ingest));
    shutdown.add("ingester", close);
    const signal = shutdown.signal;
    let running: Promise<unknown>;
    if (from !== undefined && to !== undefined) {
      // A progress bar in a terminal, progress lines otherwise (cli/progress.ts); exits when done.
      const progress = createBackfillDisplay({
        logger: common.logger,
        logOutput: common.logOutput,
        intervalMs: config.ingest.progressIntervalMs,
      });
      shutdown.add("progress display", () => progress.stop());
      running = ingester.backfill(from, to, { signal, onProgress: progress.update }).finally(() => progress.stop());
      running.then(
        () => shutdown.run("backfill done"),
        () => {},
      );
    } else {
      running = ingester.follow({ from, pollIntervalMs: config.ingest.pollIntervalMs, signal });
    }
    // Stopped first: the follower (or backfill) ends once the shutdown signal aborts it.
    shutdown.add("ingest loop", () => running.catch(() => {}));
    running.catch((err: unknown) => {
      if (shutdown.started) return;
      common.logger.error({ err }, to === undefined ? "the follower failed" : "the backfill failed");
      void shutdown.run("error", 1);
    });
  }
  for (const check of pipeline.readiness) server?.addReadiness(check);
  console.log(JSON.stringify({ stage, pid: process.pid, ready: true, ...(server ? { metrics: server.url } : {}) }));
} catch (err) {
  common.logger.error({ err }, `stage ${stage} did not start`);
  await shutdown.run("error", 1);
}
