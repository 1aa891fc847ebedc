/**
 * Pipeline stages as real processes (`cli/stage.ts <stage>`, what `npm run stage` runs) for tests:
 * the environment that points a child at this run's harness prefixes, a spawn that waits for
 * the stage's ready line (`{"stage","pid","ready":true,"metrics":…}`), and, for tests that kill
 * them, a spawn that counts the records each process handled and SIGKILLs by pid.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import type { Config } from "../../lib/config/index.js";

/** The repository root (the children run from there). */
const ROOT = resolve(import.meta.dirname, "../..");

/**
 * The variables that point a process at `config`'s services and its prefixes (topics, consumer
 * groups, indices, Redis keys) — no chain, no node: a chains file or {@link configEnv} adds those.
 */
export function serviceEnv(config: Config): NodeJS.ProcessEnv {
  return {
    KAFKA_BROKERS: config.kafka.brokers.join(","),
    CHAINSIFT_TOPIC_PREFIX: config.kafka.topicPrefix,
    CHAINSIFT_GROUP_PREFIX: config.kafka.groupPrefix,
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    ELASTICSEARCH_URL: config.elasticsearch.url,
    CHAINSIFT_INDEX_PREFIX: config.elasticsearch.indexPrefix,
    REDIS_URL: config.redisUrl,
    CHAINSIFT_REDIS_PREFIX: config.redisKeyPrefix,
  };
}

/**
 * The environment variables that make a child process load `config` (lib/config/index.ts reads them),
 * on top of this process's environment.
 * @param config - usually a harness's config.
 * @param extra - more variables (e.g. `CHAINSIFT_RPC_URL`), applied last.
 */
export function configEnv(config: Config, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CHAINSIFT_TECHNOLOGY: config.chain.technology,
    CHAINSIFT_BLOCKCHAIN: config.chain.blockchain,
    CHAINSIFT_NETWORK: config.chain.network,
    ...serviceEnv(config),
    CHAINSIFT_RPC_URL: config.ingest.rpcUrl,
    CHAINSIFT_POLL_INTERVAL_MS: String(config.ingest.pollIntervalMs),
    CHAINSIFT_INGEST_TRACES: String(config.ingest.traces),
    CHAINSIFT_DECODE_TOKEN_CALLS: String(config.decode.tokenCalls),
    CHAINSIFT_DECODE_TOKEN_NEGATIVE_TTL_MS: String(config.decode.tokenNegativeTtlMs),
    CHAINSIFT_DECODE_SIGNATURES: String(config.decode.signatures),
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    ...extra,
  };
}

/** A stage process that printed its ready line. */
export interface StageProcess {
  child: ChildProcess;
  /** The parsed ready line. */
  ready: { stage: string; pid: number; ready: true; metrics?: string };
  /** The last lines of its stdout and stderr (diagnostics). */
  output: string[];
  /** SIGTERM, then waits for the exit; returns the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `node --import tsx cli/stage.ts <stage> ...args` and waits for its ready line.
 * @param stage - `ingest`, `decode`, `index`, `match` or `notify`.
 * @param env - the child's environment, e.g. from {@link configEnv}.
 * @param timeoutMs - how long to wait for the ready line; default 90 s.
 * @param onLine - called with every stdout line, before and after the ready line.
 * @param nodeArgs - options for node itself, before `--import tsx` (e.g. `--cpu-prof`); default none.
 * @throws when the process exits or times out before it is ready (with its output).
 */
export async function spawnStage(
  stage: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  timeoutMs = 90_000,
  onLine?: (line: string) => void,
  nodeArgs: string[] = [],
): Promise<StageProcess> {
  const proc = await spawnReady({
    label: `stage ${stage}`,
    script: "cli/stage.ts",
    args: [stage, ...args],
    nodeArgs,
    env,
    isReady: (line) => line.includes('"ready":true'),
    timeoutMs,
    onLine,
  });
  return { ...proc, ready: proc.ready as StageProcess["ready"] };
}

/** A process started by {@link spawnReady} that printed its ready line. */
export interface ReadyProcess {
  child: ChildProcess;
  /** The ready line, parsed as JSON. */
  ready: Record<string, unknown>;
  /** The last lines of its stdout and stderr (diagnostics). */
  output: string[];
  /** SIGTERM (by pid), then waits for the exit; returns the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `node [nodeArgs] --import tsx <script> ...args` from the repository root and waits for
 * the first stdout line that `isReady` accepts (a JSON line).
 * @param opts.timeoutMs - how long to wait for the ready line; default 90000 ms.
 * @param opts.onLine - called with every stdout line, before and after the ready line.
 * @throws when the process exits or times out before it is ready (with its output, labelled).
 */
export async function spawnReady(opts: {
  label: string;
  script: string;
  args?: string[];
  nodeArgs?: string[];
  env: NodeJS.ProcessEnv;
  isReady: (line: string) => boolean;
  timeoutMs?: number;
  onLine?: (line: string) => void;
}): Promise<ReadyProcess> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), "--import", "tsx", opts.script, ...(opts.args ?? [])], {
    cwd: ROOT,
    env: opts.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 60) output.shift();
  };
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (l) => keep(`[stderr] ${l}`));
  const ready = await new Promise<Record<string, unknown> | undefined>((done) => {
    const timer = setTimeout(() => done(undefined), opts.timeoutMs ?? 90_000);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      opts.onLine?.(line);
      keep(line);
      if (!opts.isReady(line)) return;
      clearTimeout(timer);
      done(JSON.parse(line) as Record<string, unknown>);
    });
    void exited.then(() => {
      clearTimeout(timer);
      done(undefined);
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, "SIGTERM");
    return exited;
  };
  if (!ready) {
    await stop();
    throw new Error(`${opts.label} did not become ready:\n${output.join("\n")}`);
  }
  return { child, ready, output, stop };
}

/** A stage process spawned by {@link spawnKillable}: a {@link StageProcess} the test may SIGKILL. */
export interface KillableStage extends StageProcess {
  /** Label given by the caller, e.g. `decode#1`. */
  label: string;
  /** Resolves when the process has exited, with its code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set when {@link killStage} killed it. */
  killed: boolean;
  /**
   * Records handled per topic, from the consumer's debug line `"batch handled"`
   * (pipeline/kafka/consumer.ts); needs `LOG_LEVEL=debug` in the environment.
   */
  handled: Map<string, number>;
}

/**
 * {@link spawnStage} with a label, a count of the records it handles, and its exit.
 * @param opts.readyTimeoutMs - how long to wait for the ready line; default 90000 ms.
 * @throws as {@link spawnStage}.
 */
export async function spawnKillable(opts: {
  stage: string;
  label?: string;
  args?: string[];
  env: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}): Promise<KillableStage> {
  const handled = new Map<string, number>();
  const count = (line: string) => {
    if (!line.includes('"batch handled"')) return;
    try {
      const { topic, records } = JSON.parse(line) as { topic: string; records: number };
      handled.set(topic, (handled.get(topic) ?? 0) + records);
    } catch {
      // not a pino line: only kept in the output
    }
  };
  const proc = await spawnStage(opts.stage, opts.env, opts.args ?? [], opts.readyTimeoutMs ?? 90_000, count);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) done({ code: proc.child.exitCode, signal: proc.child.signalCode });
    else proc.child.once("exit", (code, signal) => done({ code, signal }));
  });
  return { ...proc, label: opts.label ?? opts.stage, exited, killed: false, handled };
}

/** SIGKILLs a process spawned by {@link spawnKillable} (by its pid) and waits until it is gone. */
export async function killStage(proc: KillableStage): Promise<void> {
  proc.killed = true;
  if (proc.child.exitCode === null && proc.child.signalCode === null && proc.child.pid !== undefined)
    process.kill(proc.child.pid, "SIGKILL");
  await proc.exited;
}

/** Total records a process reported handled, all topics. */
export function handledTotal(proc: KillableStage): number {
  let n = 0;
  for (const v of proc.handled.values()) n += v;
  return n;
}
