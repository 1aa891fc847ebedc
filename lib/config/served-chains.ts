/**
 * The served chains of {@link loadConfig} (lib/config/index.ts): the chains file's entries or the env
 * shorthand's one chain, and the configuration narrowed to one of them.
 * @module
 */
import { type ChainEntry, ChainsFileError, chainKey, loadChainsFile } from "./chains-file.js";
import type { Config, loadConfig } from "./index.js";
import { bool, ConfigError, int, parseRpcUrls, str } from "./parse.js";

/** Which chain a deployment (or one pipeline) serves; the three URL segments of the search API. */
export interface ChainId {
  /** e.g. `ethereum`. Env `CHAINSIFT_TECHNOLOGY`, default `ethereum`. */
  technology: string;
  /** e.g. `ethereum`. Env `CHAINSIFT_BLOCKCHAIN`, default `ethereum`. */
  blockchain: string;
  /** e.g. `mainnet`. Env `CHAINSIFT_NETWORK`, default `mainnet`. */
  network: string;
}
/** Where {@link Config.chainId} came from. */
export type ChainIdSource = "file" | "env" | "default";
/**
 * The ingest endpoints of a configuration: `ingest.rpcUrls`, or `[ingest.rpcUrl]` when code replaced
 * `rpcUrl` alone (e.g. a test pointing the configuration at its own node).
 */
export function rpcEndpoints(ingest: Pick<Config["ingest"], "rpcUrl" | "rpcUrls">): string[] {
  return ingest.rpcUrls[0] === ingest.rpcUrl ? ingest.rpcUrls : [ingest.rpcUrl];
}

/**
 * The variables a chains file replaces (per-chain settings): set together with
 * `CHAINSIFT_CHAINS_FILE`, {@link loadConfig} refuses them rather than pick one silently.
 */
export const PER_CHAIN_VARIABLES = [
  "CHAINSIFT_TECHNOLOGY",
  "CHAINSIFT_BLOCKCHAIN",
  "CHAINSIFT_NETWORK",
  "CHAINSIFT_CHAIN_ID",
  "CHAINSIFT_RPC_URL",
  "CHAINSIFT_RPC_URLS",
  "CHAINSIFT_INGEST_CONCURRENCY",
  "CHAINSIFT_INGEST_TRACES",
  "CHAINSIFT_DECODE_TOKEN_CALLS",
] as const;

/** One served chain's settings, from the chains file or from the env shorthand ({@link Config.served}). */
export interface ChainSettings {
  chain: ChainId;
  chainId: number;
  chainIdFrom: ChainIdSource;
  chainsFile: Config["chainsFile"];
  rpcUrls: string[];
  concurrency: number;
  traces: boolean;
  tracesRequired: boolean;
  tokenCalls: boolean;
  tokenList: boolean;
  /** The entry's `explorerUrl` (`""`: links off), absent when the entry has none. */
  explorerUrl?: string;
}

/** The chains this process serves (the env shorthand's one, or the file's, narrowed by `CHAINSIFT_CHAIN`). */
export function servedChains(env: NodeJS.ProcessEnv): ChainSettings[] {
  const path = env.CHAINSIFT_CHAINS_FILE?.trim();
  if (!path) {
    const chainIdRaw = env.CHAINSIFT_CHAIN_ID;
    return [
      {
        chain: {
          technology: str(env, "CHAINSIFT_TECHNOLOGY", "ethereum"),
          blockchain: str(env, "CHAINSIFT_BLOCKCHAIN", "ethereum"),
          network: str(env, "CHAINSIFT_NETWORK", "mainnet"),
        },
        chainId: int(env, "CHAINSIFT_CHAIN_ID", 1, 1),
        chainIdFrom: chainIdRaw === undefined || chainIdRaw === "" ? "default" : "env",
        chainsFile: undefined,
        rpcUrls: env.CHAINSIFT_RPC_URLS?.trim()
          ? parseRpcUrls(env.CHAINSIFT_RPC_URLS, "CHAINSIFT_RPC_URLS")
          : parseRpcUrls(str(env, "CHAINSIFT_RPC_URL", "http://127.0.0.1:8545"), "CHAINSIFT_RPC_URL"),
        concurrency: int(env, "CHAINSIFT_INGEST_CONCURRENCY", 4, 1),
        traces: bool(env, "CHAINSIFT_INGEST_TRACES", true),
        tracesRequired: false,
        tokenCalls: bool(env, "CHAINSIFT_DECODE_TOKEN_CALLS", true),
        tokenList: true,
      },
    ];
  }
  for (const name of PER_CHAIN_VARIABLES) {
    if (env[name] !== undefined && env[name] !== "") {
      throw new ConfigError(name, `set by the chains file (CHAINSIFT_CHAINS_FILE=${path}); unset it or remove the file`);
    }
  }
  let chains: ChainEntry[];
  try {
    chains = loadChainsFile(path).chains;
  } catch (err) {
    if (err instanceof ChainsFileError) throw new ConfigError("CHAINSIFT_CHAINS_FILE", err.message, err);
    throw err;
  }
  const wanted = (env.CHAINSIFT_CHAIN ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  const entries: ChainEntry[] = [];
  for (const key of wanted) {
    const entry = chains.find((c) => chainKey(c) === key);
    if (!entry) {
      throw new ConfigError("CHAINSIFT_CHAIN", `${JSON.stringify(key)} is not in ${path} (it lists ${chains.map(chainKey).join(", ")})`);
    }
    if (!entries.includes(entry)) entries.push(entry);
  }
  const chainsFile = { path, chains };
  return (entries.length > 0 ? entries : chains).map((c) => settingsOfEntry(c, chainsFile));
}

/** A chains file entry's settings, with the file's defaults applied. */
function settingsOfEntry(c: ChainEntry, chainsFile: NonNullable<Config["chainsFile"]>): ChainSettings {
  const decimals = c.tokenDecimals ?? ["tokenList", "calls"];
  return {
    chain: { technology: c.technology, blockchain: c.blockchain, network: c.network },
    chainId: c.chainId,
    chainIdFrom: "file",
    chainsFile,
    rpcUrls: [...c.rpcUrls],
    concurrency: c.ingestConcurrency ?? 4,
    traces: c.traces !== "off",
    tracesRequired: c.traces === "on",
    tokenCalls: decimals.includes("calls"),
    tokenList: decimals.includes("tokenList"),
    ...(c.explorerUrl === undefined ? {} : { explorerUrl: c.explorerUrl.replace(/\/+$/, "") }),
  };
}

/**
 * The process configuration narrowed to one served chain: `chain`, `chainId`, `chainIdFrom`, the
 * endpoints, ingest concurrency and traces, and the token decimal sources are the chain's; the rest
 * (Kafka, Elasticsearch, Redis, the API, notify, the JSON-RPC transport's limits, …) is shared.
 * @param config - the process configuration ({@link loadConfig}).
 * @param s - one of `config.served`.
 * @returns a new configuration whose `served` is `[s]`; `config` is not modified.
 */
export function configOfChain(config: Config, s: ChainSettings): Config {
  return {
    ...config,
    chain: { ...s.chain },
    chainId: s.chainId,
    chainIdFrom: s.chainIdFrom,
    chainsFile: s.chainsFile,
    served: [s],
    ingest: {
      ...config.ingest,
      rpcUrl: s.rpcUrls[0] as string,
      rpcUrls: [...s.rpcUrls],
      concurrency: s.concurrency,
      traces: s.traces,
      tracesRequired: s.tracesRequired,
    },
    decode: { ...config.decode, tokenCalls: s.tokenCalls, tokenList: s.tokenList },
  };
}
