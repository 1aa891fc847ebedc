/**
 * Starts the search API in a child process (cli/api.ts, i.e. `npm run api` with its Node flags), so that its CPU time
 * and memory are separate from the load generator's, and reads the child's memory from
 * `/proc/<pid>/status` (Linux). Also starts the pass-through floor of the search benchmark
 * (bench/support/passthrough.ts) the same way: both are {@link spawnReadyChild} children that
 * print one JSON ready line `{"url": "...", "pid": N}`.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";

/** Repository root (the child runs there so that `--import tsx` resolves). */
const ROOT = resolve(import.meta.dirname, "../..");

/** Options of {@link spawnApi}. */
export interface SpawnApiOptions {
  /** `CHAINSIFT_INDEX_PREFIX` of the child; also the Redis key prefix (`CHAINSIFT_REDIS_PREFIX`, `-` → `:`). */
  indexPrefix: string;
  /** The one accepted bearer token (`CHAINSIFT_API_TOKENS`). */
  token: string;
  /** `LOG_LEVEL` of the child. Default `warn` (no per-request log lines). */
  logLevel?: string;
  /** Extra environment variables of the child. */
  env?: Record<string, string>;
  /** How long to wait for the ready line, in milliseconds. Default 60000. */
  startTimeoutMs?: number;
  /** Extra Node flags of the child after those of the `api` script, e.g. `["--cpu-prof", "--cpu-prof-dir=/tmp/prof"]`. */
  nodeFlags?: readonly string[];
  /** The API's entry point: `cli/api.ts` (default, under tsx) or the build's `dist/cli/api.js` (plain node). */
  script?: string;
}

/** Memory figures of a process, in bytes (from `/proc/<pid>/status`). */
export interface ProcMemory {
  /** Current resident set size (`VmRSS`). */
  rss: number;
  /** Peak resident set size since start or since the last {@link resetPeakRss} (`VmHWM`). */
  peakRss: number;
}

/** A running API child process ({@link ReadyChild}: `url`, `pid` of the node process serving the API, `stop()`). */
export interface ApiChild extends ReadyChild {
  /** Its bearer token. */
  token: string;
  /** The child's current memory, or undefined when `/proc` is not available. */
  memory(): ProcMemory | undefined;
}

/** The text of `/proc/<pid>/<name>`, or undefined when it cannot be read (not Linux, process gone). */
function readProcFile(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Reads `VmRSS` and `VmHWM` of a process.
 * @returns undefined when `/proc/<pid>/status` cannot be read (not Linux, process gone).
 */
export function readProcMemory(pid: number): ProcMemory | undefined {
  const text = readProcFile(pid, "status");
  if (text === undefined) return undefined;
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb("VmRSS"), peakRss: kb("VmHWM") };
}

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 when it cannot be asked). */
const CLOCK_TICKS_PER_SECOND = ((): number => {
  try {
    const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim();
    const n = Number(out);
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time a process has used so far (user + system, all threads), in milliseconds, from
 * `/proc/<pid>/stat` (fields 14 `utime` and 15 `stime`, in clock ticks; proc(5)). Resolution:
 * one clock tick (10 ms at the usual 100 Hz), so measure over many requests.
 * @returns undefined when the file cannot be read (not Linux, process gone).
 */
export function readProcCpuMs(pid: number): number | undefined {
  const text = readProcFile(pid, "stat");
  if (text === undefined) return undefined;
  // The command name (field 2) is in parentheses and may contain spaces: count fields after it.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/**
 * Resets the peak RSS (`VmHWM`) of a process to its current RSS by writing `5` to
 * `/proc/<pid>/clear_refs` (Linux ≥ 4.0; needs the same user).
 * @returns whether the reset worked.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** Samples a process's RSS every `intervalMs` until stopped. */
export interface RssPoller {
  /** Stops sampling. @returns the largest RSS seen (bytes; NaN when none) and the sample count. */
  stop(): { maxRss: number; samples: number };
}

/** Starts an {@link RssPoller} on `pid` (default every 50 ms). */
export function pollRss(pid: number, intervalMs = 50): RssPoller {
  let maxRss = Number.NaN;
  let samples = 0;
  const sample = (): void => {
    const m = readProcMemory(pid);
    if (!m) return;
    samples++;
    if (!(m.rss <= maxRss)) maxRss = m.rss;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { maxRss, samples };
    },
  };
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

/**
 * The Node flags of the `api` npm script (package.json is their single source), e.g.
 * `--max-semi-space-size=8 --max-old-space-size=256`.
 */
export function apiNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { scripts?: Record<string, string> };
  return (pkg.scripts?.api ?? "").split(/\s+/).filter((t) => /^--max-[a-z-]+=\d+$/.test(t));
}

/** Options of {@link spawnReadyChild} and {@link spawnJsonReadyChild}. */
export interface SpawnReadyChildOptions {
  /** What the child is, for error messages, e.g. `API` or `pass-through`. */
  label: string;
  /**
   * Script to run, relative to the repository root: a `.ts` file runs under `node --import tsx`
   * (e.g. `cli/api.ts`), anything else under plain `node` (the build, e.g. `dist/cli/api.js`).
   */
  script: string;
  /** Arguments of the script. */
  args?: readonly string[];
  /** Node flags (before `--import tsx` for a `.ts` script). */
  nodeFlags?: readonly string[];
  /** Environment of the child (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the ready line, in milliseconds. Default 60000. */
  startTimeoutMs?: number;
}

/** A running child process that announced where it listens. */
export interface ReadyChild {
  /** Base URL from the ready line, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Process id from the ready line. */
  pid: number;
  /** Sends SIGTERM and waits for the exit (SIGKILL after 5 s). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Spawns `node <nodeFlags> --import tsx <script> <args>` (same node binary as this process, cwd the
 * repository root; no `--import tsx` for a built `.js` script) and waits for its ready line: the
 * first stdout line that is a JSON object `{"url": string, "pid": number}`. The child's stderr is
 * passed through; its other stdout lines (log lines) are discarded, and stdout keeps being drained
 * so that the child never blocks on a full pipe.
 * @throws when the child exits or stays silent for `startTimeoutMs` before it is ready (it is stopped then).
 */
export async function spawnReadyChild(opts: SpawnReadyChildOptions): Promise<ReadyChild> {
  const child = await spawnJsonReadyChild(opts, (msg) => typeof msg.url === "string");
  return { url: child.line.url as string, pid: child.pid, stop: child.stop };
}

/** A child started by {@link spawnJsonReadyChild}. */
export interface JsonReadyChild {
  /** The ready line, parsed. */
  line: Record<string, unknown>;
  /** Process id of the child (the node process itself: no wrapper in between). */
  pid: number;
  /** Milliseconds from the spawn to the ready line (start-up time, as `performance.now()` measures it here). */
  readyMs: number;
  /** Sends SIGTERM and waits for the exit (SIGKILL after 5 s). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Spawns a script like {@link spawnReadyChild} and waits for the first stdout line that is a JSON
 * object with a numeric `pid` for which `isReady` holds, e.g. `cli/stage.ts`'s
 * `{"stage": "decode", "pid": N, "ready": true}`.
 * @throws when the child exits or stays silent for `startTimeoutMs` before it is ready (it is stopped then).
 */
export async function spawnJsonReadyChild(
  opts: SpawnReadyChildOptions,
  isReady: (line: Record<string, unknown>) => boolean,
): Promise<JsonReadyChild> {
  const loader = opts.script.endsWith(".ts") ? ["--import", "tsx"] : [];
  const started = performance.now();
  const child = spawn(process.execPath, [...(opts.nodeFlags ?? []), ...loader, resolve(ROOT, opts.script), ...(opts.args ?? [])], {
    cwd: ROOT,
    env: opts.env ?? process.env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const stopChild = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    if (!(await waitExit(child, 5000))) {
      child.kill("SIGKILL");
      await waitExit(child, 5000);
    }
  };
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  let ready: Record<string, unknown>;
  let readyMs = Number.NaN;
  try {
    ready = await new Promise<Record<string, unknown>>((resolveReady, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the ${opts.label} child did not start within ${startTimeoutMs} ms`)),
        startTimeoutMs,
      );
      child.once("exit", (code, signal) =>
        reject(new Error(`the ${opts.label} child exited before it was ready (code ${code}, signal ${signal})`)),
      );
      lines.on("line", (line) => {
        try {
          const msg = JSON.parse(line) as unknown;
          if (
            typeof msg === "object" &&
            msg !== null &&
            typeof (msg as { pid?: unknown }).pid === "number" &&
            isReady(msg as Record<string, unknown>)
          ) {
            readyMs = performance.now() - started;
            clearTimeout(timer);
            resolveReady(msg as Record<string, unknown>);
          }
        } catch {
          // a log line that is not JSON: ignore
        }
      });
    });
  } catch (err) {
    await stopChild();
    throw err;
  }
  // Keep draining stdout (log lines) so that the child never blocks on a full pipe.
  lines.removeAllListeners("line");
  let stopping: Promise<void> | undefined;
  return {
    line: ready,
    pid: ready.pid as number,
    readyMs,
    stop() {
      stopping ??= stopChild().finally(() => lines.close());
      return stopping;
    },
  };
}

/**
 * Spawns `node <api flags> --import tsx cli/api.ts` — what `npm run api` runs — (same node binary as this process;
 * `opts.script` `dist/cli/api.js`: the build under plain node, as `npm run api:prod`)
 * listening on 127.0.0.1 on a free port, and waits for its ready line ({@link spawnReadyChild}). The child gets this
 * process's environment plus the index prefix, the token, host/port, `LOG_LEVEL`, its own Redis
 * key prefix and a rate limit the benchmarks cannot reach (`CHAINSIFT_RATE_LIMIT_MAX=1e9`).
 * The child's stderr is passed through; its stdout after the ready line (log lines) is discarded.
 * @throws when the child exits or stays silent for `startTimeoutMs` before it is ready.
 */
export async function spawnApi(opts: SpawnApiOptions): Promise<ApiChild> {
  const child = await spawnReadyChild({
    label: "API",
    script: opts.script ?? "cli/api.ts",
    nodeFlags: [...apiNodeFlags(), ...(opts.nodeFlags ?? [])],
    env: {
      ...process.env,
      CHAINSIFT_INDEX_PREFIX: opts.indexPrefix,
      CHAINSIFT_API_TOKENS: opts.token,
      CHAINSIFT_API_HOST: "127.0.0.1",
      CHAINSIFT_API_PORT: "0",
      // The per-token rate limit stays in the request path (one Redis call per request) but
      // never refuses the benchmark's load; its counters live under this run's own key prefix.
      CHAINSIFT_RATE_LIMIT_MAX: "1000000000",
      CHAINSIFT_REDIS_PREFIX: `${opts.indexPrefix.replace(/-$/, "")}:`,
      LOG_LEVEL: opts.logLevel ?? "warn",
      ...opts.env,
    },
    ...(opts.startTimeoutMs !== undefined ? { startTimeoutMs: opts.startTimeoutMs } : {}),
  });
  return { ...child, token: opts.token, memory: () => readProcMemory(child.pid) };
}

/** Options of {@link spawnPassthrough}. */
export interface SpawnPassthroughOptions {
  /** Keep-alive connections of the proxy's pool to Elasticsearch. Default 16. */
  connections?: number;
  /** How long to wait for the ready line, in milliseconds. Default 60000. */
  startTimeoutMs?: number;
}

/**
 * Spawns the pass-through floor, `bench/support/passthrough.ts`: a zero-logic HTTP proxy to
 * `esUrl` on 127.0.0.1 on a free port (see that script), and waits for its ready line.
 * @throws when the child exits or stays silent for `startTimeoutMs` before it is ready.
 */
export function spawnPassthrough(esUrl: string, opts: SpawnPassthroughOptions = {}): Promise<ReadyChild> {
  return spawnReadyChild({
    label: "pass-through",
    script: "bench/support/passthrough.ts",
    args: [esUrl, String(opts.connections ?? 16)],
    ...(opts.startTimeoutMs !== undefined ? { startTimeoutMs: opts.startTimeoutMs } : {}),
  });
}
