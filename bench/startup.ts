/**
 * `npm run bench -- startup [--rounds N] [--stage S]`: start-up time and resident memory of a
 * consuming stage process (`cli/stage.ts <stage>`, default decode) and of the API (`cli/api.ts`,
 * with the `api` script's V8 flags) run from source under tsx (`node --import tsx`, what
 * `npm run stage` / `npm run api` do) against the same entry points from the build
 * (`node dist/cli/….js`, `npm run build`), with and without `--enable-source-maps` (off in the `:prod`
 * scripts).
 *
 * Per round and variant, each process is spawned by the `node` running this benchmark and timed
 * from the spawn to its ready line (stage: `{"stage","pid","ready":true}` once it consumes; API:
 * `{"url","pid"}` once it listens); its `VmRSS` and `VmHWM` (`/proc/<pid>/status`) are read at that
 * moment, then it is stopped with SIGTERM. Also "load": the stage script without arguments, which
 * imports its whole module graph, prints its usage and exits (no network): spawn → exit.
 * Variants alternate inside each round; a first unrecorded round creates the topics, indices and
 * schemas, so the recorded rounds measure the same work. Medians (min–max) are printed.
 * Needs `dist/` (prints a `skipped:` line without it) and the services of `npm run stack`.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { childEnv } from "../test/support/child-env.js";
import { createHarness } from "../test/support/harness.js";
import { apiNodeFlags, type JsonReadyChild, readProcMemory, spawnJsonReadyChild } from "./support/api-child.js";
import { percentile } from "./support/load.js";

const ROOT = resolve(import.meta.dirname, "..");

/** How one process is started: from source under tsx, or from the build. */
interface Variant {
  name: string;
  /** Script relative to the repository root (`.ts`: under `--import tsx`). */
  script(entry: "stage" | "api"): string;
  /** Node flags of the variant (besides the API's V8 flags). */
  flags: string[];
}

const VARIANTS: Variant[] = [
  { name: "tsx (source)", script: (e) => `cli/${e}.ts`, flags: [] },
  { name: "node dist/", script: (e) => `dist/cli/${e}.js`, flags: [] },
  { name: "node --enable-source-maps dist/", script: (e) => `dist/cli/${e}.js`, flags: ["--enable-source-maps"] },
];

/** One measurement of one process. */
interface Sample {
  /** Spawn → ready line (or exit, for "load"), ms. */
  ms: number;
  /** `VmRSS` at the ready line, bytes (NaN for "load"). */
  rss: number;
  /** `VmHWM` at the ready line, bytes (NaN for "load"). */
  peakRss: number;
}

const mib = (bytes: number) => (Number.isNaN(bytes) ? "-" : `${(bytes / 2 ** 20).toFixed(0)} MiB`);

/** Nearest-rank median (the lower middle value of an even count). */
const median = (xs: number[]): number =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

/** Spawns `node <flags> [--import tsx] <script>` (no arguments) and resolves with the ms until it exits. */
function timeToExit(script: string, flags: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const loader = script.endsWith(".ts") ? ["--import", "tsx"] : [];
  const started = performance.now();
  const child = spawn(process.execPath, [...flags, ...loader, resolve(ROOT, script)], { cwd: ROOT, env, stdio: "ignore" });
  return new Promise((done, fail) => {
    child.once("error", fail);
    child.once("exit", () => done(performance.now() - started));
  });
}

/** Runs the benchmark and prints its figures. */
export async function benchStartup(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { rounds: { type: "string", default: "5" }, stage: { type: "string", default: "decode" } },
  });
  const rounds = Number(values.rounds);
  const stage = values.stage as string;
  const built = resolve(ROOT, "dist/cli/stage.js");
  if (!existsSync(built)) {
    console.log("skipped: dist/ is absent; run `npm run build` first");
    return;
  }
  // The test harness's isolated prefixes (topics, groups, indices, Redis keys) and its cleanup.
  const h = createHarness();
  const env = childEnv(h.config, {
    CHAINSIFT_API_HOST: "127.0.0.1",
    CHAINSIFT_API_PORT: "0",
    CHAINSIFT_API_TOKENS: h.id,
    LOG_LEVEL: "warn",
  });
  const apiFlags = apiNodeFlags();
  console.log(
    `node ${process.version}, ${rounds} rounds (+1 warm-up), stage ${stage}, prefix ${h.id}, dist/ built ${statSync(built).mtime.toISOString()}`,
  );

  const results = new Map<string, Sample[]>();
  const record = (key: string, s: Sample) => results.set(key, [...(results.get(key) ?? []), s]);
  const measure = async (child: JsonReadyChild): Promise<Sample> => {
    const mem = readProcMemory(child.pid);
    await child.stop();
    return { ms: child.readyMs, rss: mem?.rss ?? Number.NaN, peakRss: mem?.peakRss ?? Number.NaN };
  };
  try {
    for (let round = 0; round <= rounds; round++) {
      for (const v of VARIANTS) {
        const load = await timeToExit(v.script("stage"), v.flags, env);
        const stageChild = await spawnJsonReadyChild(
          { label: `${stage} (${v.name})`, script: v.script("stage"), args: [stage], nodeFlags: v.flags, env },
          (line) => line.ready === true,
        );
        const stageSample = await measure(stageChild);
        const apiChild = await spawnJsonReadyChild(
          { label: `API (${v.name})`, script: v.script("api"), nodeFlags: [...apiFlags, ...v.flags], env },
          (line) => typeof line.url === "string",
        );
        const apiSample = await measure(apiChild);
        if (round === 0) continue; // warm-up: topics, indices and schemas are created here
        record(`load: stage script, no args (import graph, exit) | ${v.name}`, { ms: load, rss: Number.NaN, peakRss: Number.NaN });
        record(`stage ${stage}: spawn -> consuming | ${v.name}`, stageSample);
        record(`API: spawn -> listening | ${v.name}`, apiSample);
      }
    }
  } finally {
    await h.cleanup();
  }

  console.log(`\n${"what | how".padEnd(78)} ${"time median (min-max)".padEnd(24)} ${"RSS median".padEnd(11)} peak RSS median`);
  for (const [key, samples] of [...results.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const ms = samples.map((s) => s.ms);
    const range = `${median(ms).toFixed(0)} ms (${Math.min(...ms).toFixed(0)}-${Math.max(...ms).toFixed(0)})`;
    console.log(
      `${key.padEnd(78)} ${range.padEnd(24)} ${mib(median(samples.map((s) => s.rss))).padEnd(11)} ${mib(median(samples.map((s) => s.peakRss)))}`,
    );
  }
}
