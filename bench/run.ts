/**
 * `npm run bench -- <name> [options]`: runs one benchmark and prints its figures.
 * Benchmarks: ingest, match (and search, stream, alert-latency when present).
 * @module
 */
import { benchIngest } from "./ingest.js";
import { benchMatch } from "./match.js";

const benches: Record<string, (args: string[]) => Promise<void>> = { ingest: benchIngest, match: benchMatch };
const [name, ...args] = process.argv.slice(2);
const run = name ? benches[name] : undefined;
if (!run) {
  console.error(`usage: npm run bench -- <${Object.keys(benches).join("|")}> [options]`);
  process.exit(2);
}
await run(args);
process.exit(0);
