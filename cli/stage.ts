/**
 * `npm run stage -- <decode|index|match|notify>`: runs one consuming pipeline stage as its own
 * process (operators scale and restart stages independently; `npm start` runs them all in one).
 * Configuration comes from the environment (docs/configuration.md). Stops cleanly on SIGINT/SIGTERM
 * (offsets of processed batches are committed). Prints `{"stage","pid","ready":true}` on stdout
 * once consuming.
 * @module
 */
import { loadConfig } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { startPipeline } from "../pipeline/runtime.js";

const STAGES = ["decode", "index", "match", "notify"] as const;
type Stage = (typeof STAGES)[number];

async function main(): Promise<void> {
  const stage = process.argv[2] as Stage | undefined;
  if (!stage || !STAGES.includes(stage)) {
    console.error(`usage: npm run stage -- <${STAGES.join("|")}>`);
    process.exit(2);
  }
  const config = loadConfig();
  const logger = createLogger(config.logLevel, `chainsift-${stage}`);
  const pipeline = await startPipeline({ config, logger, stages: [stage] });
  console.log(JSON.stringify({ stage, pid: process.pid, ready: true }));
  const stop = async () => {
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
