/**
 * `npm start -- --no-stack` as a user runs it (cli/start.ts: the two embedded anvil chains with
 * their traffic, every stage and one API), in its own process group, for the end-to-end tests that
 * need the whole thing (test/e2e/console.test.ts). The caller gives the environment (the harness's
 * prefixes, a token, an API port of 0: a free one, read from the banner).
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { type Config, PER_CHAIN_VARIABLES } from "../../lib/config/index.js";
import { configEnv } from "./stage-process.js";

/** A running `npm start`. */
export interface NpmStart {
  /** The API's base URL from the banner, without a trailing slash. */
  apiUrl: string;
  /** The banner's text (stdout up to and including it). */
  banner: string;
  /** The last output lines (stdout and stderr), for failure messages. */
  output: string[];
  /** SIGINT to the process group, SIGKILL after `stopTimeoutMs`; resolves once npm exited. */
  stop(): Promise<void>;
}

/**
 * The environment of an `npm start` with its embedded chains: the harness config's services and
 * prefixes (stage-process.ts `configEnv`), an API on a free port with one static token, no metrics
 * server, JSON logs at warn, and no chain of the caller's environment (a CHAINSIFT_RPC_URL or chains
 * file would replace the embedded chains).
 * @param extra - more variables (e.g. `CHAINSIFT_NOTIFY_ALLOWLIST`).
 */
export function npmStartEnv(config: Config, token: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = configEnv(config, {
    LOG_LEVEL: "warn",
    LOG_FORMAT: "json",
    CHAINSIFT_API_PORT: "0",
    CHAINSIFT_API_TOKENS: token,
    CHAINSIFT_METRICS_PORT: "-1",
    ...extra,
  });
  for (const name of [...PER_CHAIN_VARIABLES, "CHAINSIFT_CHAINS_FILE", "CHAINSIFT_CHAIN"]) delete env[name];
  return env;
}

/**
 * Spawns `npm start -- --no-stack` and waits for its banner (both embedded chains listed).
 * @param env - the whole environment of the process.
 * @param bannerTimeoutMs - longest wait for the banner (default 120 s).
 * @param stopTimeoutMs - longest wait after SIGINT before SIGKILL (default 30 s).
 * @throws when npm exits before its banner, or no banner comes in time (the output is in the message).
 */
export async function startNpmStart(env: NodeJS.ProcessEnv, bannerTimeoutMs = 120_000, stopTimeoutMs = 30_000): Promise<NpmStart> {
  const output: string[] = [];
  const keep = (s: string) => {
    output.push(s);
    if (output.length > 200) output.shift();
  };
  const child: ChildProcess = spawn("npm", ["start", "--", "--no-stack"], {
    cwd: join(import.meta.dirname, "../.."),
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, stopped as a whole (npm → tsx → node → anvil)
  });
  const stop = async (): Promise<void> => {
    if (!child.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-(child.pid as number), signal);
      } catch {
        // already gone
      }
    };
    group("SIGINT");
    const timer = setTimeout(() => group("SIGKILL"), stopTimeoutMs);
    await exited;
    clearTimeout(timer);
    group("SIGKILL"); // the anvils and node are in the group too: none outlives npm
  };
  try {
    const banner = await new Promise<string>((resolve, reject) => {
      let text = "";
      child.stdout?.on("data", (d: Buffer) => {
        const s = d.toString();
        keep(s);
        text += s;
        if (/chainsift is running\.\s+API:\s+\S+/.test(text) && text.includes("# ethereum/ethereum/anvil-l2")) resolve(text);
      });
      child.stderr?.on("data", (d: Buffer) => keep(d.toString()));
      child.once("exit", (code, signal) =>
        reject(new Error(`npm start exited (${code ?? signal}) before its banner:\n${output.join("")}`)),
      );
      setTimeout(() => reject(new Error(`no banner within ${bannerTimeoutMs} ms:\n${output.join("")}`)), bannerTimeoutMs).unref();
    });
    const apiUrl = (/chainsift is running\.\s+API:\s+(\S+)/.exec(banner)?.[1] ?? "").replace(/\/$/, "");
    return { apiUrl, banner, output, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
