/**
 * `npm run stage -- <ingest|decode|index|match|notify>`: runs one pipeline stage as its own
 * process (operators scale and restart stages independently; `npm start` runs them all in one).
 * `ingest` follows the head of `CHAINSIFT_RPC_URL` from its durable position (the block after the
 * last one it produced; the node's head on a first start; `--from N` to start elsewhere).
 * Configuration comes from the environment (docs/configuration.md). Stops cleanly on SIGINT/SIGTERM
 * (offsets of processed batches are committed). Prints `{"stage","pid","ready":true}` on stdout
 * once consuming.
 * @module
 */
import { loadConfig } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { startPipeline } from "../pipeline/runtime.js";

const STAGES = ["ingest", "decode", "index", "match", "notify"] as const;
type Stage = (typeof STAGES)[number];

async function main(): Promise<void> {
  const stage = process.argv[2] as Stage | undefined;
  if (!stage || !STAGES.includes(stage)) {
    console.error(`usage: npm run stage -- <${STAGES.join("|")}> [--from N (ingest)]`);
    process.exit(2);
  }
  const config = loadConfig();
  const logger = createLogger(config.logLevel, `chainsift-${stage}`);
  const pipeline = await startPipeline({ config, logger, stages: stage === "ingest" ? [] : [stage] });
  const controller = new AbortController();
  let following: Promise<unknown> | undefined;
  let closeIngester: (() => Promise<void>) | undefined;
  if (stage === "ingest") {
    const fromArg = process.argv.indexOf("--from");
    const from = fromArg > 0 ? Number(process.argv[fromArg + 1]) : undefined;
    if (from !== undefined && !(Number.isInteger(from) && from >= 0)) {
      console.error("--from: expected a non-negative integer");
      process.exit(2);
    }
    const { ingester, close } = await pipeline.createIngester(config.ingest.rpcUrl);
    closeIngester = close;
    following = ingester.follow({ from, pollIntervalMs: config.ingest.pollIntervalMs, signal: controller.signal });
    following.catch((err) => {
      console.error(err);
      process.exit(1);
    });
  }
  console.log(JSON.stringify({ stage, pid: process.pid, ready: true }));
  const stop = async () => {
    controller.abort();
    await following?.catch(() => {});
    await closeIngester?.();
    await pipeline.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
