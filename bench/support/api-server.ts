/**
 * Child-process entry of the search API for the benchmarks: reads the configuration from the
 * environment ({@link loadConfig}: `CHAINSIFT_INDEX_PREFIX`, `CHAINSIFT_API_TOKENS`,
 * `CHAINSIFT_API_HOST`, `CHAINSIFT_API_PORT`, `LOG_LEVEL`, …), starts the API with
 * {@link startApi} and prints one JSON line `{"url": "...", "pid": N}` on stdout once it listens.
 * SIGTERM / SIGINT close the app and exit 0.
 *
 * Run it as `node --import tsx bench/support/api-server.ts` (bench/support/api-child.ts does).
 * @module
 */
import { startApi } from "../../api/server.js";
import { loadConfig } from "../../lib/config.js";

const config = loadConfig();
const { app, url } = await startApi(config);
process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  app.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
