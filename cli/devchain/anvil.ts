/**
 * Runs a local anvil node (Foundry's dev chain, shipped by the `@foundry-rs/anvil` npm package)
 * as a child process bound to 127.0.0.1: the default chain of `npm start` when no RPC URL is given.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { ChainsiftError } from "../../lib/errors.js";
import { type DevchainLogger, errorMessage, silentLogger } from "./log.js";
import { fetchChainId } from "./rpc.js";

/** Options of {@link startAnvil}. */
export interface AnvilOptions {
  /** TCP port on 127.0.0.1; 0 (the default) lets the OS pick a free one (read back from anvil's "Listening on" line). A port in use makes start-up fail. */
  port?: number;
  /**
   * Seconds between blocks (anvil `--block-time`); fractions allowed. Omitted/undefined: 1.
   * 0: automine, i.e. one block per transaction as soon as it arrives.
   */
  blockTimeSec?: number;
  /** Chain id reported by `eth_chainId`. Default 31337 (anvil's own default). */
  chainId?: number;
  /** Receives anvil's stdout at `debug`, its stderr at `warn`, and lifecycle events. Default: silent. */
  logger?: DevchainLogger;
  /** Path of the anvil executable; default: found by {@link resolveAnvilBinary}. */
  binary?: string;
  /** How long to wait for anvil to answer `eth_chainId`, in milliseconds. Default 30000. */
  startTimeoutMs?: number;
  /** More command-line arguments for anvil, e.g. `["--fork-url", url, "--fork-block-number", "3"]` (tests). Default none. */
  extraArgs?: string[];
}

/** A running anvil started by {@link startAnvil}. */
export interface AnvilHandle {
  /** `http://127.0.0.1:<port>`: HTTP JSON-RPC (anvil serves WebSocket on the same port). */
  rpcUrl: string;
  /** The port actually bound. */
  port: number;
  /** The chain id anvil reports. */
  chainId: number;
  /** OS process id of the anvil executable itself (no wrapper process in between). */
  pid: number;
  /** Settles when the anvil process exits, for whatever reason (never rejects). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Stops anvil: SIGTERM, then SIGKILL after 5 s, resolving once the process has exited and been
   * reaped. Idempotent (later calls return the same promise); never rejects.
   */
  stop(): Promise<void>;
}

/** Thrown by {@link resolveAnvilBinary} (and so {@link startAnvil}) when no anvil executable is found. */
export class AnvilNotFoundError extends ChainsiftError {
  /** Always `CS_ANVIL_NOT_FOUND`. */
  readonly code = "CS_ANVIL_NOT_FOUND";
  constructor(
    /** Every path that was tried, in order. */
    readonly searched: string[],
  ) {
    super(
      `anvil executable not found. It comes with the npm dependency @foundry-rs/anvil through its platform package ` +
        `(${platformPackage() ?? `none exists for ${process.platform}/${process.arch}`}); run \`npm install\` without ` +
        `--omit=optional, install Foundry (anvil on PATH), or give an RPC URL to use another node. Looked in:\n  ${searched.join("\n  ")}`,
    );
    this.name = "AnvilNotFoundError";
  }
}

/** Thrown by {@link startAnvil} when anvil exits, fails to spawn or does not answer in time. */
export class AnvilStartError extends ChainsiftError {
  /** Always `CS_ANVIL_START`. */
  readonly code = "CS_ANVIL_START";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AnvilStartError";
  }
}

const ANVIL_PLATFORMS: Record<string, Record<string, string>> = {
  linux: { x64: "linux-amd64", arm64: "linux-arm64" },
  darwin: { x64: "darwin-amd64", arm64: "darwin-arm64" },
  win32: { x64: "win32-amd64" },
};

function platformPackage(): string | undefined {
  const suffix = ANVIL_PLATFORMS[process.platform]?.[process.arch];
  return suffix ? `@foundry-rs/anvil-${suffix}` : undefined;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the anvil executable, trying in order: `explicit` (when given, it is the only candidate);
 * the platform package of `@foundry-rs/anvil` (e.g. `@foundry-rs/anvil-linux-amd64/bin/anvil`);
 * the binary that package's postinstall may have put beside `@foundry-rs/anvil` (or in `../dist/`);
 * `anvil` on `PATH`. The `node_modules/.bin/anvil` wrapper script is deliberately not used: it
 * runs anvil as a grandchild, which a kill of the wrapper would orphan.
 * @param explicit Path to use instead of searching.
 * @returns An absolute (or as-given) path to an executable file.
 * @throws {AnvilNotFoundError} when no candidate exists and is executable.
 */
export function resolveAnvilBinary(explicit?: string): string {
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil";
  const candidates: string[] = [];
  if (explicit !== undefined) {
    candidates.push(explicit);
  } else {
    const require = createRequire(import.meta.url);
    const pkg = platformPackage();
    if (pkg) {
      try {
        candidates.push(require.resolve(`${pkg}/bin/${exe}`));
      } catch {
        candidates.push(`${pkg}/bin/${exe} (package not installed)`);
      }
    }
    try {
      const wrapperDir = dirname(require.resolve("@foundry-rs/anvil/package.json"));
      candidates.push(join(wrapperDir, exe), join(wrapperDir, "..", "dist", exe));
    } catch {
      candidates.push("@foundry-rs/anvil (package not installed)");
    }
    for (const dir of (process.env.PATH ?? "").split(delimiter)) if (dir) candidates.push(join(dir, exe));
  }
  const found = candidates.find(isExecutable);
  if (found === undefined) throw new AnvilNotFoundError(candidates);
  return found;
}

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name}: expected an integer in [${min}, ${max}], got ${value}`);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Spawns anvil on 127.0.0.1 and resolves once it answers `eth_chainId` with the requested chain id.
 * Anvil gets anvil's default dev accounts (the "test … junk" mnemonic: 10 accounts of 10000 ETH,
 * unlocked for `eth_sendTransaction`).
 *
 * Anvil runs in its own process group, so a terminal's Ctrl-C is not delivered to it directly.
 * It is killed (SIGKILL) when this Node process exits (`exit` event, including `process.exit()`),
 * and on SIGINT/SIGTERM/SIGHUP when nothing else in the process handles that signal (the signal is
 * then re-raised so Node's default behaviour still happens). An application that installs its own
 * signal handlers must call {@link AnvilHandle.stop} itself (or exit). Nothing can clean up after a
 * SIGKILL of Node: anvil then keeps running until killed by pid.
 * @param opts See {@link AnvilOptions}; all optional.
 * @returns A handle with the RPC URL, bound port, pid and `stop()`.
 * @throws {RangeError} when `port`, `chainId` or `blockTimeSec` is out of range.
 * @throws {AnvilNotFoundError} when the executable cannot be found.
 * @throws {AnvilStartError} when anvil fails to spawn, exits during start-up (e.g. port in use;
 *   the message carries its stderr), answers with another chain id, or is not ready in `startTimeoutMs`.
 */
export async function startAnvil(opts: AnvilOptions = {}): Promise<AnvilHandle> {
  const log = opts.logger ?? silentLogger;
  const requestedPort = opts.port ?? 0;
  const chainId = opts.chainId ?? 31337;
  const blockTimeSec = opts.blockTimeSec ?? 1;
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000;
  checkInt("port", requestedPort, 0, 65535);
  checkInt("chainId", chainId, 1, Number.MAX_SAFE_INTEGER);
  if (!Number.isFinite(blockTimeSec) || blockTimeSec < 0) throw new RangeError(`blockTimeSec: expected a number >= 0, got ${blockTimeSec}`);
  const binary = resolveAnvilBinary(opts.binary);

  const args = ["--host", "127.0.0.1", "--port", String(requestedPort), "--chain-id", String(chainId)];
  if (blockTimeSec > 0) args.push("--block-time", String(blockTimeSec));
  args.push(...(opts.extraArgs ?? []));
  log.debug({ binary, args }, "starting anvil");

  // Own process group (POSIX): a terminal's Ctrl-C reaches only Node, whose shutdown then stops anvil in
  // order, instead of killing anvil under still-running clients. The guards below kill it when Node goes.
  const child: ChildProcess = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"], detached: process.platform !== "win32" });
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let spawnError: Error | undefined;
  let stopping = false;
  let ready = false;
  const stderrTail: string[] = [];
  // Set from anvil's "Listening on 127.0.0.1:<port>" line, which it prints only once it has bound the port
  // (so a second node already on a requested port is never mistaken for ours).
  let listeningPort: number | undefined;

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      exitInfo = { code, signal };
      removeGuards();
      if (!stopping && ready) log.error({ code, signal, pid: child.pid }, "anvil exited unexpectedly");
      else log.debug({ code, signal, pid: child.pid }, "anvil exited");
      resolve(exitInfo);
    });
    child.once("error", (err) => {
      spawnError = err;
      // A spawn failure emits no "exit"; settle anyway.
      if (child.pid === undefined) {
        exitInfo = { code: null, signal: null };
        removeGuards();
        resolve(exitInfo);
      }
    });
  });

  if (child.stdout) {
    createInterface({ input: child.stdout }).on("line", (line) => {
      const m = /Listening on (\S+):(\d+)/.exec(line);
      if (m && listeningPort === undefined) listeningPort = Number(m[2]);
      else if (line.trim() !== "") log.debug({ line }, "anvil");
    });
  }
  if (child.stderr) {
    createInterface({ input: child.stderr }).on("line", (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 20) stderrTail.shift();
      if (line.trim() !== "") log.warn({ line }, "anvil stderr");
    });
  }

  const alive = () => exitInfo === undefined && child.exitCode === null && child.signalCode === null;
  const killNow = () => {
    if (alive()) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  const signals: NodeJS.Signals[] = process.platform === "win32" ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];
  const onSignal = (signal: NodeJS.Signals) => {
    // Only act when we are the sole handler: otherwise the application owns shutdown and will stop() us.
    if (process.listenerCount(signal) > 1) return;
    killNow();
    removeGuards();
    process.kill(process.pid, signal);
  };
  const onExit = () => killNow();
  let guarded = true;
  process.once("exit", onExit);
  for (const s of signals) process.on(s, onSignal);
  function removeGuards(): void {
    if (!guarded) return;
    guarded = false;
    process.off("exit", onExit);
    for (const s of signals) process.off(s, onSignal);
  }

  let stopPromise: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopPromise ??= (async () => {
      stopping = true;
      if (alive()) {
        child.kill("SIGTERM");
        const timer = setTimeout(killNow, 5000);
        await exited;
        clearTimeout(timer);
      }
      await exited;
      removeGuards();
    })();
    return stopPromise;
  };

  const describeExit = () => {
    const tail = stderrTail.length ? `\n${stderrTail.join("\n")}` : "";
    if (spawnError) return `could not run ${binary}: ${spawnError.message}`;
    return `anvil exited during start-up (code ${exitInfo?.code ?? "-"}, signal ${exitInfo?.signal ?? "-"})${tail}`;
  };
  try {
    const deadline = Date.now() + startTimeoutMs;
    let lastError: unknown;
    for (;;) {
      if (spawnError || !alive()) throw new AnvilStartError(describeExit(), { cause: spawnError });
      if (Date.now() > deadline) {
        throw new AnvilStartError(
          `anvil did not answer eth_chainId within ${startTimeoutMs} ms${lastError ? ` (last error: ${errorMessage(lastError)})` : ""}`,
          { cause: lastError },
        );
      }
      if (listeningPort !== undefined) {
        try {
          const got = await fetchChainId(`http://127.0.0.1:${listeningPort}`, 1000);
          if (!alive()) continue; // another process answered on that port; report anvil's exit instead
          if (got !== chainId) throw new AnvilStartError(`port ${listeningPort} answers chain id ${got}, expected ${chainId}`);
          break;
        } catch (err) {
          if (err instanceof AnvilStartError) throw err;
          lastError = err;
        }
      }
      await sleep(50);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  ready = true;
  const port = listeningPort as number;
  const rpcUrl = `http://127.0.0.1:${port}`;
  log.info({ rpcUrl, chainId, blockTimeSec: blockTimeSec > 0 ? blockTimeSec : "automine", pid: child.pid }, "anvil started");
  return { rpcUrl, port, chainId, pid: child.pid as number, exited, stop };
}
