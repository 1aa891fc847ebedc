/**
 * Pipeline stages as real processes (`cli/stage.ts <stage>`, what `npm run stage` runs) for tests:
 * the environment that points a child at this run's harness prefixes, and a spawn that waits for
 * the stage's ready line (`{"stage","pid","ready":true,"metrics":…}`).
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import type { Config } from "../../lib/config.js";

/** The repository root (the children run from there). */
const ROOT = resolve(import.meta.dirname, "../..");

/**
 * The environment variables that make a child process load `config` (lib/config.ts reads them),
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
    KAFKA_BROKERS: config.kafka.brokers.join(","),
    CHAINSIFT_TOPIC_PREFIX: config.kafka.topicPrefix,
    CHAINSIFT_GROUP_PREFIX: config.kafka.groupPrefix,
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    ELASTICSEARCH_URL: config.elasticsearch.url,
    CHAINSIFT_INDEX_PREFIX: config.elasticsearch.indexPrefix,
    REDIS_URL: config.redisUrl,
    CHAINSIFT_REDIS_PREFIX: config.redisKeyPrefix,
    CHAINSIFT_RPC_URL: config.ingest.rpcUrl,
    CHAINSIFT_POLL_INTERVAL_MS: String(config.ingest.pollIntervalMs),
    CHAINSIFT_INGEST_TRACES: String(config.ingest.traces),
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
 * @throws when the process exits or times out before it is ready (with its output).
 */
export async function spawnStage(stage: string, env: NodeJS.ProcessEnv, args: string[] = [], timeoutMs = 90_000): Promise<StageProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "cli/stage.ts", stage, ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 60) output.shift();
  };
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (l) => keep(`[stderr] ${l}`));
  const ready = await new Promise<StageProcess["ready"] | undefined>((done) => {
    const timer = setTimeout(() => done(undefined), timeoutMs);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      keep(line);
      if (!line.includes('"ready":true')) return;
      clearTimeout(timer);
      done(JSON.parse(line) as StageProcess["ready"]);
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
    throw new Error(`stage ${stage} did not become ready:\n${output.join("\n")}`);
  }
  return { child, ready, output, stop };
}
