/**
 * `npm run api`: the search and alerting API alone, as its own process (deployments that scale the
 * API apart from the pipeline; `npm start` runs everything in one process). Reads the configuration
 * from the environment ({@link loadConfig}), starts the API with {@link startApi} and prints one JSON
 * line `{"url": "...", "pid": N}` on stdout once it listens. SIGTERM / SIGINT close it and exit 0.
 *
 * The npm script starts Node with `--max-semi-space-size=8 --max-old-space-size=256`: V8 otherwise
 * sizes its heap from the machine's memory (here 24 GiB), and a `size: -1` stream of 200,000 events
 * peaked at 336 MiB RSS; with these flags it peaks at ~190 MiB at the same speed (bench stream).
 * The benchmarks start this same script with the flags read from package.json.
 * @module
 */
import { startApi } from "../api/server.js";
import { loadConfig } from "../lib/config.js";

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
