/**
 * The process context: what every entry point (`npm start`, `npm run stage`, `npm run api`) needs,
 * made once by {@link createCommon} and handed to the API and the pipeline.
 *
 * - `config`: read once from the environment (lib/config/index.ts), with an optional typed overlay
 *   (e.g. {@link embeddedOverlay} for `npm start` on the embedded chain);
 * - `logger`: the root pino logger (stages and the API take children), JSON lines or, in a terminal,
 *   human-readable ones (`LOG_FORMAT`); `logOutput`, where its lines go (a progress bar redirects
 *   them while it owns the terminal);
 * - `metrics`: one prom-client registry per process, with the default process metrics; the API
 *   serves it at `/metrics`, merged with the registry of every chain (lib/chain-context.ts
 *   `ProcessRegistry`), in which that chain's stages register theirs (label `chain`);
 * - `chains`: one chain context per served chain (lib/chain-context.ts; `config.served`): ids,
 *   narrowed configuration, JSON-RPC client, token lookups and decode options;
 * - `redis`: one node-redis client per process, connected on first use (lib/redis.ts) and closed on
 *   shutdown; connections that cannot be shared (the rule store's WATCH/MULTI, subscribers) are
 *   still opened by their owners;
 * - `shutdown`: one signal and shutdown path. The first SIGINT or SIGTERM aborts
 *   {@link Shutdown.signal}, runs the registered stop functions in reverse order of registration
 *   (the last started stops first), closes Redis last and exits (0, or 1 when a stop failed or the
 *   shutdown was started for an error). Later signals are logged (at debug: they are expected) and ignored: a Ctrl-C reaches
 *   every process of the group (npm, tsx, node) and `timeout` sends its signal twice, so a second
 *   copy must not cut the stops short (consumers that do not leave their groups hold them for the
 *   session timeout).
 * @module
 */
import { setMaxListeners } from "node:events";
import { collectDefaultMetrics } from "prom-client";
import { type ChainContext, ProcessRegistry } from "./chain-context.js";
import { type Config, loadConfig } from "./config/index.js";
import { createLogger, createLogOutput, type Logger, type LogOutput } from "./logger.js";
import { lazyRedis, type RedisClient } from "./redis.js";

/**
 * Options of {@link createCommon}.
 * @typeParam C - the chain contexts' type (pipeline/chain-context.ts `PipelineChainContext` where the pipeline builds them).
 */
export interface CommonOptions<C extends ChainContext = ChainContext> {
  /** Name of the root logger, e.g. `chainsift-api`; default `chainsift`. */
  name?: string;
  /** The environment to read the configuration from; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A typed overlay applied to the loaded configuration, e.g. {@link embeddedOverlay}. */
  overlay?: (config: Config, env: NodeJS.ProcessEnv) => Config;
  /** Route SIGINT and SIGTERM to `shutdown.run` (default true; tests pass false). */
  signals?: boolean;
  /**
   * Resolves the chain contexts of `config.served` (pipeline/chain-context.ts `createChainContexts`,
   * which `npm run stage` passes: lib/ cannot build a JSON-RPC client). Default none. `npm start`,
   * whose chain settings need asynchronous work first, uses {@link createProcess} and {@link withChains}.
   */
  chains?: (config: Config, opts: { processMetrics: ProcessRegistry; logger: Logger }) => C[];
  /** Ends the process once the shutdown has run; default `process.exit`. */
  exit?: (code: number) => void;
}

/** A function run on shutdown; its result is awaited, a rejection logged. */
export type StopFunction = () => unknown;

/** The one shutdown path of a process (see the module notes). */
export interface Shutdown {
  /** Aborted when the shutdown starts: long-running loops (an ingester's `follow`) watch it. */
  readonly signal: AbortSignal;
  /** Whether the shutdown has started. */
  readonly started: boolean;
  /**
   * Registers a stop function. Stops run in reverse order of registration, one at a time; one
   * registered while the shutdown runs (a start that was under way) runs next.
   * @param name - shown in the log when the stop fails.
   * @param stop - e.g. `() => pipeline.stop()`.
   */
  add(name: string, stop: StopFunction): void;
  /**
   * Starts the shutdown (once; later calls return the same promise): aborts {@link Shutdown.signal},
   * runs the stops, then exits with `exitCode`, or 1 when a stop failed.
   * @param reason - logged, e.g. `SIGINT` or `error`.
   * @param exitCode - default 0.
   * @returns after the exit function was called (never, with `process.exit`).
   */
  run(reason: string, exitCode?: number): Promise<void>;
}

/**
 * The process context before its chains are resolved: configuration, logger, metrics registry,
 * Redis client and shutdown path ({@link createProcess}). `npm start` holds one while it settles its
 * chains' settings (embedded anvils started, `--rpc-url` applied, each node's `eth_chainId` asked),
 * then builds the chain contexts once ({@link withChains}).
 */
export interface ProcessContext {
  config: Config;
  logger: Logger;
  /** Where {@link ProcessContext.logger}'s lines go: stdout, or what a terminal display redirects them to. */
  logOutput: LogOutput;
  /** The process's prom-client registry (default metrics collected), serving every chain's registry merged. */
  metrics: ProcessRegistry;
  /**
   * The process's shared node-redis client, connected by the first call (later calls share it;
   * a failed connection is retried by the next call) and closed by the shutdown.
   * @throws the connection error when Redis cannot be reached.
   */
  redis(): Promise<RedisClient>;
  shutdown: Shutdown;
}

/**
 * The process context (see the module notes).
 * @typeParam C - the chain contexts' type, as {@link CommonOptions.chains} builds them.
 */
export interface Common<C extends ChainContext = ChainContext> extends ProcessContext {
  /**
   * Every served chain's context, in `config.served` order (the first is `config.chain`'s), built
   * once ({@link createCommon} with {@link CommonOptions.chains}, none without; or {@link withChains})
   * and never replaced: the array is frozen.
   */
  readonly chains: readonly C[];
}

/**
 * Creates the process context: loads the configuration (plus `options.overlay`), creates the root
 * logger, the metrics registry, the lazy Redis client and the shutdown path, and (unless
 * `options.signals` is false) routes SIGINT and SIGTERM to `shutdown.run`; then builds the chain
 * contexts with `options.chains` ({@link withChains}).
 * @param options - see {@link CommonOptions}.
 * @returns the context; nothing is connected yet.
 * @throws {ConfigError} when the environment holds an unusable value (lib/config/index.ts).
 */
export function createCommon<C extends ChainContext = ChainContext>(options: CommonOptions<C> = {}): Common<C> {
  const base = createProcess(options);
  const chains = options.chains?.(base.config, { processMetrics: base.metrics, logger: base.logger }) ?? [];
  return withChains(base, chains);
}

/**
 * The process context without chains: {@link createCommon} up to the chain contexts, for a process
 * whose chain settings need asynchronous work first (`npm start`); {@link withChains} adds them.
 * @param options - see {@link CommonOptions} (`chains` is not used).
 * @returns the context; nothing is connected yet.
 * @throws {ConfigError} when the environment holds an unusable value (lib/config/index.ts).
 */
export function createProcess(options: Omit<CommonOptions, "chains"> = {}): ProcessContext {
  const env = options.env ?? process.env;
  const loaded = loadConfig(env);
  const config = options.overlay ? options.overlay(loaded, env) : loaded;
  const logOutput = createLogOutput();
  const logger = createLogger(config.logLevel, options.name, { format: config.logFormat, output: logOutput });
  const metrics = new ProcessRegistry();
  collectDefaultMetrics({ register: metrics });
  const shutdown = createShutdown(logger, options.exit ?? ((code) => process.exit(code)));
  const redis = lazyRedis(config.redisUrl, { logger, label: "process" });
  shutdown.add("redis", () => redis.close());
  if (options.signals !== false) {
    const onSignal = (signal: NodeJS.Signals) => {
      if (shutdown.started) logger.debug({ signal }, "already shutting down");
      else void shutdown.run(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }
  return { config, logger, logOutput, metrics, redis: () => redis.client(), shutdown };
}

/**
 * The process context with its chain contexts, built once: the shutdown destroys their JSON-RPC
 * clients. Call it once per process (a second call would register the clients' stop again).
 * @param base - from {@link createProcess}; shared, not copied (same config, logger, shutdown, …).
 * @param chains - one context per chain of `base.config.served`, in its order.
 * @returns a new object: `base`'s parts plus `chains` (frozen).
 */
export function withChains<C extends ChainContext>(base: ProcessContext, chains: readonly C[]): Common<C> {
  const frozen = Object.freeze([...chains]);
  base.shutdown.add("chain clients", () => {
    for (const c of frozen) {
      c.rpc.destroy();
      c.client.destroy();
    }
  });
  return { ...base, chains: frozen };
}

/**
 * The shutdown path alone (createCommon uses it; tests can too).
 * @param logger - receives `shutting down` and failed stops.
 * @param exit - called with the exit code once every stop has run.
 * @returns a {@link Shutdown} with no stop registered.
 */
export function createShutdown(logger: Pick<Logger, "info" | "warn">, exit: (code: number) => void): Shutdown {
  const controller = new AbortController();
  // Every chain's follower, consumers and clients watch the one signal (two chains pass the default of 10).
  setMaxListeners(100, controller.signal);
  const stops: Array<{ name: string; stop: StopFunction }> = [];
  let running: Promise<void> | undefined;
  return {
    signal: controller.signal,
    get started() {
      return running !== undefined;
    },
    add(name, stop) {
      stops.push({ name, stop });
    },
    run(reason, exitCode = 0) {
      running ??= (async () => {
        logger.info({ reason }, "shutting down");
        controller.abort();
        let code = exitCode;
        for (let next = stops.pop(); next; next = stops.pop()) {
          const { name, stop } = next;
          try {
            await stop();
          } catch (err) {
            code = 1;
            logger.warn({ err, stop: name }, "stop failed");
          }
        }
        exit(code);
      })();
      return running;
    },
  };
}

/** The notify allowlist of the embedded chain: webhooks to receivers on this machine are the point. */
export const EMBEDDED_NOTIFY_ALLOWLIST: readonly string[] = ["127.0.0.1", "::1", "localhost"];

/**
 * The embedded-chain defaults of `npm start` (no `--rpc-url`, no `CHAINSIFT_RPC_URL`) as an overlay
 * of a loaded configuration. Only what the environment leaves unset changes:
 * - `chain.network` = `anvil` (when `CHAINSIFT_NETWORK` is unset or empty);
 * - `notify.allowlist` = {@link EMBEDDED_NOTIFY_ALLOWLIST} (when `CHAINSIFT_NOTIFY_ALLOWLIST` is unset);
 * - `ingest.traces` = true (when `CHAINSIFT_INGEST_TRACES` is unset): anvil traces every block cheaply,
 *   so Trace and Call rules work out of the box.
 * @param config - the configuration loaded from `env`.
 * @param env - the environment it was loaded from (default `process.env`).
 * @returns a new configuration; `config` is not modified.
 */
export function embeddedOverlay(config: Config, env: NodeJS.ProcessEnv = process.env): Config {
  return {
    ...config,
    chain: env.CHAINSIFT_NETWORK ? config.chain : { ...config.chain, network: "anvil" },
    notify: env.CHAINSIFT_NOTIFY_ALLOWLIST === undefined ? { ...config.notify, allowlist: [...EMBEDDED_NOTIFY_ALLOWLIST] } : config.notify,
    ingest: env.CHAINSIFT_INGEST_TRACES === undefined ? { ...config.ingest, traces: true } : config.ingest,
  };
}
