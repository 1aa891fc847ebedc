/**
 * `npm run bench -- <name> [options]`: runs one benchmark and prints its figures.
 * Benchmarks: ingest, decode, search, stream, export, match, alert-latency, reorg, rules, startup, capacity, faults, follow, wire, kafka, console, state (docs/benchmarks.md).
 * @module
 */
import { benchAlertLatency } from "./alert-latency.js";
import { benchCapacity } from "./capacity.js";
import { benchConsole } from "./console.js";
import { benchDecode } from "./decode.js";
import { benchExport } from "./export.js";
import { benchFaults } from "./faults.js";
import { benchFollow } from "./follow.js";
import { benchIngest } from "./ingest.js";
import { benchKafka } from "./kafka.js";
import { benchMatch } from "./match.js";
import { benchReorg } from "./reorg.js";
import { benchRules } from "./rules.js";
import { benchSearch } from "./search.js";
import { benchStartup } from "./startup.js";
import { benchState } from "./state.js";
import { benchStream } from "./stream.js";
import { benchWire } from "./wire.js";

const benches: Record<string, (args: string[]) => Promise<void>> = {
  ingest: benchIngest,
  decode: benchDecode,
  match: benchMatch,
  "alert-latency": benchAlertLatency,
  search: benchSearch,
  stream: benchStream,
  export: benchExport,
  reorg: benchReorg,
  rules: benchRules,
  startup: benchStartup,
  capacity: benchCapacity,
  faults: benchFaults,
  follow: benchFollow,
  wire: benchWire,
  kafka: benchKafka,
  console: benchConsole,
  state: benchState,
};
const [name, ...args] = process.argv.slice(2);
const run = name ? benches[name] : undefined;
if (!run) {
  console.error(`usage: npm run bench -- <${Object.keys(benches).join("|")}> [options]`);
  process.exit(2);
}
await run(args);
process.exit(0);
