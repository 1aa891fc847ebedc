/**
 * The environment parsers of `loadConfig` (lib/config/index.ts): each reads one variable from the
 * environment object it is given (never `process.env` itself), applies the default and throws a
 * {@link ConfigError} naming the variable for a value that cannot be used.
 * @module
 */
import { ChainsiftError } from "../errors.js";

/**
 * Explorers used when the operator configures none for a chain (`CHAINSIFT_EXPLORER_URLS` adds or
 * replaces entries). All are Etherscan-style (`/tx/<hash>`, `/block/<n>`, `/address/<a>`,
 * `/token/<a>`), which Blockscout and the other Etherscan-family explorers share.
 */
export const DEFAULT_EXPLORER_URLS: Readonly<Record<string, string>> = {
  "ethereum/ethereum/mainnet": "https://etherscan.io",
  "ethereum/ethereum/sepolia": "https://sepolia.etherscan.io",
  "ethereum/ethereum/holesky": "https://holesky.etherscan.io",
  "ethereum/ethereum/hoodi": "https://hoodi.etherscan.io",
};

/** Thrown when an environment variable holds a value that cannot be used. */
export class ConfigError extends ChainsiftError {
  /** Always `CS_CONFIG_INVALID`. */
  readonly code = "CS_CONFIG_INVALID";
  constructor(
    /** The offending variable. */
    readonly variable: string,
    message: string,
    /** The underlying error, e.g. a `ChainsFileError` of lib/config/chains-file.ts (its `code` and `problems`). */
    cause?: unknown,
  ) {
    super(`${variable}: ${message}`, cause === undefined ? undefined : { cause });
    this.name = "ConfigError";
  }
}

/** An integer variable, `fallback` when unset or empty. @throws {ConfigError} when not an integer >= `min` (default 0). */
export function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(name, `expected an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

/** An integer variable from 0 to 100. @throws {ConfigError} when not an integer or outside 0..100. */
export function percent(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const n = int(env, name, fallback, 0);
  if (n > 100) throw new ConfigError(name, `expected an integer from 0 to 100, got ${n}`);
  return n;
}

/** A comma-separated list variable (items trimmed, empty items dropped), `fallback` when unset or blank. */
export function list(env: NodeJS.ProcessEnv, name: string, fallback: string[]): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** A boolean variable: `true`/`1`/`yes` or `false`/`0`/`no` (any case). @throws {ConfigError} for any other value. */
export function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** One of `values` (compared lowercased), `fallback` when unset or empty. @throws {ConfigError} for any other value. */
export function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = values.find((v) => v === raw.toLowerCase());
  if (value === undefined) throw new ConfigError(name, `expected one of ${values.join(", ")}, got ${JSON.stringify(raw)}`);
  return value;
}

/** `CHAINSIFT_EXPLORER_URLS` over {@link DEFAULT_EXPLORER_URLS} (see `notify.explorerUrls`). */
export function explorers(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const out: Record<string, string> = { ...DEFAULT_EXPLORER_URLS };
  for (const entry of list(env, name, [])) {
    const at = entry.indexOf("=");
    const chain = entry.slice(0, at).trim();
    const url = entry.slice(at + 1).trim();
    if (at < 0 || !/^[^/\s]+\/[^/\s]+\/[^/\s]+$/.test(chain)) {
      throw new ConfigError(name, `expected technology/blockchain/network=<URL> entries, got ${JSON.stringify(entry)}`);
    }
    if (url === "") {
      delete out[chain];
      continue;
    }
    if (!/^https?:\/\/[^\s]+$/i.test(url)) throw new ConfigError(name, `expected an http(s) URL for ${chain}, got ${JSON.stringify(url)}`);
    out[chain] = url.replace(/\/+$/, "");
  }
  return out;
}

/**
 * Parses a comma-separated list of JSON-RPC endpoint URLs (`CHAINSIFT_RPC_URLS`, `--rpc-url a,b`).
 * @param name - the variable or flag, for the error.
 * @throws {ConfigError} when the list is empty or an item is not an http(s) URL.
 */
export function parseRpcUrls(raw: string, name: string): string[] {
  const urls = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (urls.length === 0) throw new ConfigError(name, "expected one or more http(s) URLs, comma-separated");
  for (const u of urls) {
    let protocol: string | undefined;
    try {
      protocol = new URL(u).protocol;
    } catch {
      protocol = undefined;
    }
    if (protocol !== "http:" && protocol !== "https:") throw new ConfigError(name, `not an http(s) URL: item ${urls.indexOf(u) + 1}`);
  }
  return urls;
}

/** A string variable, `fallback` when unset or empty. */
export function str(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === "" ? fallback : raw;
}
