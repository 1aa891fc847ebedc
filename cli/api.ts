/**
 * `npm run api`: the search and alerting API alone, as its own process (deployments that scale the
 * API apart from the pipeline; `npm start` runs everything in one process). Creates the process
 * context ({@link createCommon}: configuration from the environment, logger, metrics registry,
 * shared Redis client, shutdown path), starts the API with {@link startApi} and prints one JSON
 * line `{"url": "...", "pid": N}` on stdout once it listens. SIGTERM / SIGINT close it and exit 0
 * (1 when closing failed).
 *
 * The npm script starts Node with `--max-semi-space-size=8 --max-old-space-size=256`: V8 otherwise
 * sizes its heap from the machine's memory (here 24 GiB), and a `size: -1` stream of 200,000 events
 * peaked at 336 MiB RSS; with these flags it peaks at ~190 MiB at the same speed (bench stream).
 * The benchmarks start this same script with the flags read from package.json.
 * @module
 */
import { startApi } from "../api/server.js";
import { createCommon } from "../lib/common.js";

const common = createCommon({ name: "chainsift-api" });
try {
  const { url } = await startApi(common);
  process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
} catch (err) {
  common.logger.error({ err }, "the API did not start");
  await common.shutdown.run("error", 1);
}
