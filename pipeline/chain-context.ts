/**
 * Builds the chain contexts (lib/chain-context.ts `ChainContext`): the one place a chain's JSON-RPC
 * client, token lookups and decode options are made. lib/ holds the type (the process context,
 * lib/common.ts, carries the contexts); this module holds what needs the pipeline's JSON-RPC client
 * and token metadata readers.
 * @module
 */
import type { Registry } from "prom-client";
import { bundledTokens, type TokenLookup } from "../lib/chain/tokens.js";
import { type ChainContext, chainRegistry, ProcessRegistry } from "../lib/chain-context.js";
import { chainKey } from "../lib/config/chains-file.js";
import { type ChainSettings, type Config, configOfChain } from "../lib/config/index.js";
import type { Logger } from "../lib/logger.js";
import { createRpcClient, type RpcClient } from "../lib/rpc/client.js";
import { ingestMetricsOf } from "./ingest/metrics.js";
import { type ChainSource, createRpcSource } from "./ingest/rpc.js";
import { rpcTokenMetadataSource } from "./match/token-metadata.js";
import { tokenListMetadataSource } from "./match/tokens.js";

/** A chain context as the pipeline holds it: its client is the ingest's `ChainSource`. */
export type PipelineChainContext = ChainContext<ChainSource>;

/** Options of {@link createChainContext}. */
export interface ChainContextOptions {
  /** The registry the chain's metrics go to; default {@link ProcessRegistry.forChain} of `processMetrics`, else a new one labelled `chain`. */
  metrics?: Registry;
  /** The process registry the chain's registry is merged into (lib/common.ts `Common.metrics`). */
  processMetrics?: Registry;
  /** Receives the JSON-RPC client's endpoint warnings. */
  logger?: Logger;
  /** Tokens known before the bundled list, e.g. the embedded chain's own ERC-20. Default none. */
  extraTokens?: TokenLookup;
}

/**
 * Builds the chain's one JSON-RPC client (lib/rpc/client.ts): the chain's endpoints with failover
 * and the process's transport limits (`config.ingest.rpc`), and ingest's block reads over it. The
 * only place a chain's client is made.
 * @param config - a configuration narrowed to the chain (`ingest.rpcUrls`, `ingest.rpc`).
 * @param opts - logger and registry of the client's endpoint metrics (`chainsift_ingest_rpc_*`).
 * @returns `client` (token metadata, proxy reads) and `rpc` (ingest's `ChainSource` on that client;
 *   its `destroy` leaves the client open: destroy both).
 */
export function createChainRpc(
  config: Config,
  opts: { logger?: Logger; registry?: Registry } = {},
): { client: RpcClient; rpc: ChainSource } {
  const client = createRpcClient({
    ...config.ingest.rpc,
    urls: config.ingest.rpcUrls,
    ...(opts.logger ? { logger: opts.logger.child({ stage: "ingest" }) } : {}),
    ...(opts.registry ? { metrics: ingestMetricsOf(opts.registry) } : {}),
  });
  return { client, rpc: createRpcSource({ client, ...(opts.registry ? { registry: opts.registry } : {}) }) };
}

/**
 * Resolves one chain's context. Nothing is connected: the client speaks on first use.
 * @param config - the process configuration, or one already narrowed to the chain.
 * @param settings - which of `config.served`; default `config.served[0]` (the configuration's own chain).
 * @param opts - see {@link ChainContextOptions}.
 */
export function createChainContext(config: Config, settings?: ChainSettings, opts: ChainContextOptions = {}): PipelineChainContext {
  const own = settings ? configOfChain(config, settings) : config;
  const key = chainKey(own.chain);
  const metrics = opts.metrics ?? (opts.processMetrics instanceof ProcessRegistry ? opts.processMetrics.forChain(key) : chainRegistry(key));
  const listed = bundledTokens(own);
  const extra = opts.extraTokens;
  const tokens: TokenLookup = extra ? (address, id) => extra(address, id) ?? listed(address, id) : listed;
  const { client, rpc } = createChainRpc(own, { ...(opts.logger ? { logger: opts.logger } : {}), registry: metrics });
  return {
    key,
    chain: own.chain,
    chainId: own.chainId,
    config: own,
    rpcUrls: own.ingest.rpcUrls,
    client,
    rpc,
    tokens,
    decode: { chainId: own.chainId, tokens },
    tokenMetadata: own.decode.tokenCalls ? rpcTokenMetadataSource(client) : tokenListMetadataSource(own.chainId),
    metrics,
  };
}

/**
 * The contexts of every chain the configuration serves (`config.served`), in its order.
 * @param config - the process configuration.
 * @param opts - as {@link createChainContext} (`metrics` is ignored: each chain gets its own registry).
 */
export function createChainContexts(config: Config, opts: Omit<ChainContextOptions, "metrics"> = {}): PipelineChainContext[] {
  return config.served.map((s) => createChainContext(config, s, opts));
}
