/**
 * The one wiring function: {@link startStages} starts any subset of the stages for any subset of
 * the served chains in one process. `npm start`, `npm run stage -- <stage…>` and the docker-compose
 * services all start through it, so every stage of a chain gets the same chain context
 * (lib/chain-context.ts: chain id, token lookups, decode options, JSON-RPC client) however the
 * stages are deployed.
 *
 * Per chain: one {@link startPipeline} (its own Kafka consumers, in consumer groups named after the
 * chain, `<groupPrefix>.<topicPrefix><technology>.<blockchain>.<network>.<stage>`; its own
 * producer; metrics in the chain's registry, label `chain`), sharing the process's Redis client and
 * one Elasticsearch client. A reorg, a fault or a dead destination on one chain therefore never
 * delays another's: nothing of a chain's consumers waits on another chain's.
 *
 * Ingest is the single writer of its chain's state: `npm run stage -- ingest` serves one chain per
 * process ({@link INGEST_ONE_CHAIN}); only `npm start` (`multiChainIngest`) runs the ingest of
 * several chains in one process.
 * @module
 */
import { Client } from "@elastic/elasticsearch";
import { indexName } from "../es/mappings.js";
import { deleteIndicesOf } from "../es/partitions.js";
import type { Common } from "../lib/common.js";
import { type ChainSettings, type Config, ConfigError, configOfChain } from "../lib/config/index.js";
import { publishIndexWrites } from "../lib/index-writes.js";
import type { Logger } from "../lib/logger.js";
import type { ReadinessCheck } from "../lib/metrics.js";
import { RECORD_KINDS } from "../lib/records.js";
import { connectRedisClient } from "../lib/redis.js";
import { withRpcClient } from "../lib/rpc/client.js";
import type { PipelineChainContext } from "./chain-context.js";
import { INDEX_REORGS_STAGE } from "./index/indexer.js";
import { createBus, skipExistingRecords } from "./kafka/bus.js";
import { CONSUMING_STAGES, type ConsumingStage, checkChainId, type Pipeline, type Stage, startPipeline } from "./runtime.js";

/** Code of the refusal to run ingest for more than one chain in a stage process. */
export const INGEST_ONE_CHAIN = "CS_INGEST_ONE_CHAIN";

/** Options of {@link startStages}. */
export interface StartStagesOptions {
  /** The stages to run: `ingest` and any consuming stage, in any order. */
  stages: readonly Stage[];
  /** Keys (`technology/blockchain/network`) of the chains to serve; default every chain of `common.chains`. */
  chains?: readonly string[];
  /**
   * Allow `ingest` for several chains in this process (`npm start`). Default false: ingest of more
   * than one chain is refused ({@link INGEST_ONE_CHAIN}).
   */
  multiChainIngest?: boolean;
  /** Decode with the user ABIs (pipeline/runtime.ts `PipelineDeps.abis`); default true. */
  abis?: boolean;
}

/** One chain's part of {@link RunningStages}. */
export interface RunningChain {
  context: PipelineChainContext;
  pipeline: Pipeline;
  /** The chain's ingester when `ingest` was asked for (the caller drives it: follow, backfill, blocks). */
  ingest?: Awaited<ReturnType<Pipeline["createIngester"]>>;
}

/** What {@link startStages} started. Every stop is registered in `common.shutdown`. */
export interface RunningStages {
  /** One entry per served chain, in `common.chains` order. */
  chains: RunningChain[];
  /** Readiness checks of every stage of every chain, named `<stage>` (one chain) or `<stage> <chain>`. */
  readiness: ReadinessCheck[];
}

/**
 * Starts `opts.stages` for the chosen chains: per chain one {@link startPipeline} with the chain's
 * context and registry, and (with `ingest`) its ingester over the chain's JSON-RPC client, the
 * chain id checked against the node when configured. Registers every stop in `common.shutdown`.
 * @param common - the process context (its `chains`, Redis client, logger, shutdown).
 * @param opts - see {@link StartStagesOptions}.
 * @returns the running chains and their readiness checks.
 * @throws {ConfigError} `CHAINSIFT_CHAIN: CS_INGEST_ONE_CHAIN: …` when ingest is asked for several
 *   chains without `multiChainIngest`; `CHAINSIFT_CHAIN: "<key>" is not served …` for an unknown
 *   key; and what {@link startPipeline} and `createIngester` throw (unreachable services,
 *   `CS_CHAIN_ID_MISMATCH`).
 */
export async function startStages(common: Common<PipelineChainContext>, opts: StartStagesOptions): Promise<RunningStages> {
  const chains = pickChains(common, opts.chains);
  const withIngest = opts.stages.includes("ingest");
  if (withIngest && chains.length > 1 && !opts.multiChainIngest) {
    throw new ConfigError(
      "CHAINSIFT_CHAIN",
      `${INGEST_ONE_CHAIN}: ingest serves one chain per process, but ${chains.length} chains are served (${chains.map((c) => c.key).join(", ")}); set CHAINSIFT_CHAIN to one of them`,
    );
  }
  const stages = CONSUMING_STAGES.filter((s): s is ConsumingStage => opts.stages.includes(s));
  const { config } = common;
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: config.elasticsearch.requestTimeoutMs });
  common.shutdown.add("elasticsearch client", () => es.close());
  // One chain after the other: topic creation of two chains at once made the broker answer
  // "This server does not host this topic-partition" to the second chain's metadata requests.
  const running: RunningChain[] = [];
  for (const context of chains) {
    const pipeline = await startPipeline({
      config: context.config,
      logger: chains.length > 1 ? common.logger.child({ chain: context.key }) : common.logger,
      redis: common.redis,
      es,
      chain: context,
      stages,
      ...(opts.abis === undefined ? {} : { abis: opts.abis }),
    });
    common.shutdown.add(`pipeline ${context.key}`, () => pipeline.stop());
    const entry: RunningChain = { context, pipeline };
    if (withIngest) {
      entry.ingest = await pipeline.createIngester();
      common.shutdown.add(`ingester ${context.key}`, entry.ingest.close);
    }
    running.push(entry);
  }
  const readiness = running.flatMap(({ context, pipeline }) =>
    pipeline.readiness.map(
      (check): ReadinessCheck => (chains.length > 1 ? { name: `${check.name} ${context.key}`, ready: check.ready } : check),
    ),
  );
  return { chains: running, readiness };
}

/** The contexts named by `keys` (all when absent). */
function pickChains(common: Common<PipelineChainContext>, keys: readonly string[] | undefined): readonly PipelineChainContext[] {
  const all = common.chains;
  if (!keys) return all;
  return keys.map((key) => {
    const found = all.find((c) => c.key === key);
    if (!found) {
      throw new ConfigError(
        "CHAINSIFT_CHAIN",
        `${JSON.stringify(key)} is not served (served: ${common.chains.map((c) => c.key).join(", ")})`,
      );
    }
    return found;
  });
}

/**
 * Settles each served chain's chain id before its context is built (`npm start`: the chain id picks
 * the token list, so it must be known before any stage starts). Asks every chain's node its
 * `eth_chainId` once, through a short-lived client over the chain's endpoints (destroyed after the
 * answer; the chain's long-lived client is the one its context builds, pipeline/chain-context.ts
 * `createChainRpc`): a configured id (`chainIdFrom` not `default`) must be the node's; an unset one
 * (the env shorthand without `CHAINSIFT_CHAIN_ID`) becomes the node's.
 * @param config - the process configuration: `served` and the JSON-RPC transport's limits (`ingest.rpc`).
 * @param logger - receives the short-lived clients' endpoint warnings.
 * @returns `config.served` with every chain id the node's, in order (`config` is not modified).
 * @throws {ChainIdMismatchError} (`CS_CHAIN_ID_MISMATCH`) when a configured id is not the node's;
 *   the JSON-RPC client's error when a node cannot be reached.
 */
export async function settleChainIds(config: Config, logger: Logger): Promise<ChainSettings[]> {
  return Promise.all(
    config.served.map(async (s) => {
      const node = await withRpcClient(s.rpcUrls, { ...config.ingest.rpc, logger: logger.child({ stage: "ingest" }) }, (client) =>
        client.chainId(),
      );
      if (s.chainIdFrom !== "default") {
        checkChainId(configOfChain(config, s), node, s.rpcUrls);
        return s;
      }
      return node === s.chainId ? s : { ...s, chainId: node };
    }),
  );
}

/**
 * An embedded chain starts again from block 0 on every run: drops the previous run's records of
 * the chain so searches show only this run (topics keep their history), and moves every stage's
 * consumer group past the records already in the topics (a stage stopped before it committed, or a
 * consumer group that is new, would otherwise replay earlier runs).
 * @param common - the process context (logger).
 * @param chain - the embedded chain's context.
 * Publishes the deleted aliases as an index write (lib/index-writes.ts), so the API's result caches
 * drop their answers of the previous run.
 * @throws when Elasticsearch, Redis or Kafka cannot be reached, or another process holds the consumer groups.
 */
export async function forgetEarlierRuns(common: Pick<Common, "logger">, chain: PipelineChainContext): Promise<void> {
  const { config } = chain;
  const es = new Client({ node: config.elasticsearch.url });
  // The names are aliases over block-range partitions: their backing indices are deleted.
  const aliases = RECORD_KINDS.map((k) => indexName(config.chain, k, config.elasticsearch.indexPrefix));
  await deleteIndicesOf(es, aliases);
  await es.close();
  // A write like the index stage's: the API instances drop their cached answers of these aliases
  // (api/search/result-cache.ts) now, not at the cache's maximum age.
  const redis = await connectRedisClient(config.redisUrl);
  try {
    await publishIndexWrites(redis.client, config.redisKeyPrefix, aliases);
  } finally {
    await redis.close();
  }
  const bus = await createBus({ config, logger: common.logger, setup: false });
  try {
    await skipExistingRecords(bus, [...CONSUMING_STAGES, INDEX_REORGS_STAGE]);
  } catch (err) {
    throw new Error(
      `cannot move the stages' consumer groups (${bus.groupId("<stage>")}) past earlier runs: ${(err as Error).message}. ` +
        "Is another npm start (or npm run stage) still running against this stack? Stop it first.",
      { cause: err },
    );
  }
}
