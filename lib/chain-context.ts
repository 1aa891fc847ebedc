/**
 * The chain context: everything a stage knows about the chain it serves, resolved once per chain
 * and carried in the process context (lib/common.ts `Common.chains`), the way ponder hands its
 * indexing functions `{ common, chain, rpc }`. No stage learns about its chain any other way: the
 * wiring (pipeline/wiring.ts `startStages`) hands each chain's stages its context.
 *
 * - ids: `chain` (the URL segments), `key` (`technology/blockchain/network`), numeric `chainId`;
 * - `config`: the process configuration narrowed to this chain (lib/config/index.ts `configOfChain`);
 * - `client`: the chain's one JSON-RPC client (lib/rpc/client.ts: every endpoint of the chain with
 *   failover, retries and hedging), made by pipeline/chain-context.ts `createChainRpc` (the one place
 *   a chain's client is built); token metadata and proxy reads go through it;
 * - `rpc`: ingest's block reads (pipeline/ingest/rpc.ts `ChainSource`) over that same client;
 * - `tokens`, `decode`: the decimals lookup and the method-decoding options (lib/chain/methods.ts
 *   `DecodeMethodOptions`) of the decode, index and match stages and of rule backtests;
 * - `tokenMetadata`: name/symbol/decimals of the match stage's Token entities;
 * - `metrics`: the chain's prom-client registry, whose series all carry `chain="<key>"`.
 * @module
 */
import { type Aggregator, AggregatorRegistry, Registry } from "prom-client";
import type { DecodeMethodOptions } from "./chain/methods.js";
import type { TokenMetadata } from "./chain/token-metadata.js";
import type { TokenLookup } from "./chain/tokens.js";
import type { ChainId, Config } from "./config/index.js";
import type { RpcClient } from "./rpc/client.js";

/**
 * What lib/ knows of a chain's JSON-RPC client: the client itself is pipeline/ingest/rpc.ts's
 * `ChainSource` (pipeline/chain-context.ts builds it; lib/ imports only lib/), which ingest uses whole.
 */
export interface ChainRpc {
  /** The node's `eth_chainId`. */
  chainId(): Promise<number>;
  /** Releases the client (aborts what is in flight). */
  destroy(): void;
}

/** Token metadata by `eth_call` or a token list (pipeline/match/tokens.ts `TokenMetadataSource`). */
export interface ChainTokenMetadata {
  /** name/symbol/decimals of a token contract at a block (nulls for what it lacks). */
  fetch(address: string, standard: "erc20" | "erc721", at: { blockNumber: number; blockHash: string }): Promise<TokenMetadata>;
}

/**
 * One served chain, resolved once (see the module notes); built by pipeline/chain-context.ts
 * `createChainContext`, once per chain and process, from settled chain settings (`npm start` starts
 * its embedded chains and asks each node's `eth_chainId` first). Read-only: never changed after it is built.
 * @typeParam Rpc - the client's type: pipeline/ingest/rpc.ts `ChainSource` where the pipeline holds it.
 */
export interface ChainContext<Rpc extends ChainRpc = ChainRpc> {
  /** `technology/blockchain/network`, e.g. `ethereum/base/mainnet`: the metric label `chain` and `CHAINSIFT_CHAIN`'s value. */
  readonly key: string;
  /** The URL segments of the search API, and the chain part of topic, index, group and Redis key names. */
  readonly chain: ChainId;
  /** The EIP-155 chain id (the chains file's `chainId`, `CHAINSIFT_CHAIN_ID`, or the embedded anvil's). */
  readonly chainId: number;
  /** The process configuration narrowed to this chain (lib/config/index.ts `configOfChain`). */
  readonly config: Config;
  /** The chain's JSON-RPC endpoints, in order of preference. */
  readonly rpcUrls: readonly string[];
  /**
   * The chain's one JSON-RPC client (lib/rpc/client.ts, made by pipeline/chain-context.ts
   * `createChainRpc`): token metadata, proxy implementation slots and {@link ChainContext.rpc} all
   * speak through it, so they share its endpoints' health, failover and limits.
   */
  readonly client: RpcClient;
  /** Ingest's block, receipt and trace reads over {@link ChainContext.client} (pipeline/ingest/rpc.ts `ChainSource`). */
  readonly rpc: Rpc;
  /** Token decimals for scaled amounts: the bundled list of {@link ChainContext.chainId} (unless `tokenList` is off) plus any extra lookup. */
  readonly tokens: TokenLookup;
  /** Method/Call decoding options of the decode, index and match stages and of backtests: `{ chainId, tokens }`. */
  readonly decode: Required<DecodeMethodOptions>;
  /**
   * Token entity metadata of the match stage: `decimals()`/`symbol()`/`name()` by `eth_call` through
   * {@link ChainContext.client} when the chain's token decimal sources include `calls`, else the bundled list.
   */
  readonly tokenMetadata: ChainTokenMetadata;
  /** The chain's prom-client registry (default label `chain` = {@link ChainContext.key}). */
  readonly metrics: Registry;
}

/** A new registry whose series all carry `chain="<key>"` (prom-client `setDefaultLabels`). */
export function chainRegistry(key: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ chain: key });
  return registry;
}

/**
 * The process's prom-client registry: its own metrics (the default process metrics, the API's)
 * plus one registry per chain ({@link ProcessRegistry.forChain}, default label `chain`), served
 * merged by {@link ProcessRegistry.metrics}, so one `/metrics` shows two series of
 * `chainsift_records_consumed_total` for two chains, told apart by `chain`. The merge is prom-client's
 * `AggregatorRegistry.aggregate` over each registry's `getMetricsAsJSON()`, every family summed
 * per label set: series of different chains never share a label set, so each is kept as is.
 */
export class ProcessRegistry extends Registry {
  readonly #chains = new Map<string, Registry>();

  /**
   * The registry of one chain, made on the first call for its key.
   * @param key - `technology/blockchain/network`.
   */
  forChain(key: string): Registry {
    let registry = this.#chains.get(key);
    if (!registry) {
      registry = chainRegistry(key);
      this.#chains.set(key, registry);
    }
    return registry;
  }

  /** The exposition text of the process's metrics and every chain's, merged (one HELP/TYPE per family). */
  override async metrics(): Promise<string> {
    if (this.#chains.size === 0) return super.metrics();
    const all = await Promise.all([super.getMetricsAsJSON(), ...[...this.#chains.values()].map((r) => r.getMetricsAsJSON())]);
    const summed = all.map((metrics) => metrics.map((m) => ({ ...m, aggregator: "sum" as Aggregator })));
    return AggregatorRegistry.aggregate(summed).metrics();
  }
}
