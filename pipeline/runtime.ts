/**
 * Wires the pipeline stages of one chain into a running whole: one Kafka bus, one ES client,
 * the decode, index, match and notify stages, and ingesters. `npm start`, the e2e tests and the
 * benchmarks all start the pipeline through here.
 * @module
 */
import { Client } from "@elastic/elasticsearch";
import type { Registry } from "prom-client";
import type { DecodeMethodOptions } from "../lib/chain/methods.js";
import { type ChainState, createRedisChainState } from "../lib/chain/state.js";
import type { Config } from "../lib/config.js";
import type { Logger } from "../lib/logger.js";
import { lazyRedis, type RedisClient } from "../lib/redis.js";
import { createDecoder, type Decoder } from "./decode/decoder.js";
import { startDecodeStage } from "./decode/stage.js";
import { ensureIndices, startIndexStage } from "./index/indexer.js";
import { createIngester, type Ingester } from "./ingest/ingest.js";
import { type ChainSource, createRpcSource } from "./ingest/rpc.js";
import { type Bus, createBus, createRecordProducer, type RecordProducer } from "./kafka/bus.js";
import type { RunningConsumer } from "./kafka/consumer.js";
import { startMatchStage } from "./match/stage.js";
import type { TokenMetadataSource } from "./match/tokens.js";
import { startNotifyStage } from "./notify/stage.js";

/** The consuming stages, in pipeline order (`npm start` runs them all). */
export const CONSUMING_STAGES = ["decode", "index", "match", "notify"] as const;
/** A consuming stage. */
export type ConsumingStage = (typeof CONSUMING_STAGES)[number];
/** Every stage `npm run stage -- <stage>` can run: ingest (the producer) and the consuming stages. */
export const STAGES = ["ingest", ...CONSUMING_STAGES] as const;
/** A stage name. */
export type Stage = (typeof STAGES)[number];

/** Dependencies of {@link startPipeline}. */
export interface PipelineDeps {
  config: Config;
  logger: Logger;
  /**
   * The process's shared Redis client (lib/common.ts `redis`), asked for only when a stage or the
   * chain state needs it and left open on stop. Default: one client of the pipeline, connected on
   * first use to `config.redisUrl` and closed on stop. The match stage's rule store still opens its
   * own connection (WATCH/MULTI).
   */
  redis?: () => Promise<RedisClient>;
  /** Elasticsearch client; created from config when absent (and closed on stop). */
  es?: Client;
  /** Decoder; `createDecoder()` when absent. */
  decoder?: Decoder;
  /** Which consuming stages to run. Default decode and index (match and notify need Redis and rules). */
  stages?: ConsumingStage[];
  /** Chain id and token decimals for the match stage's decoded Method/Call arguments; default mainnet and the bundled token list. */
  methodDecoding?: DecodeMethodOptions;
  /** Token metadata for the match stage's Token entities (e.g. `rpcTokenMetadataSource(rpcUrl)`); default the bundled mainnet token list. */
  tokenMetadata?: TokenMetadataSource;
  /** Refresh indices after each bulk (tests). Default false. */
  refresh?: boolean;
  /** prom-client registry for the stages' metrics (e.g. the one the API serves at `/metrics`); default a private one per stage. */
  metricsRegistry?: Registry;
}

/** A running pipeline. */
export interface Pipeline {
  bus: Bus;
  es: Client;
  consumers: RunningConsumer[];
  /**
   * Ingest's durable state of this chain in Redis (position, canonical map, sequence numbers;
   * lib/chain/state.ts), shared by the ingesters and the index stage's canonical check.
   */
  chainState(): Promise<ChainState>;
  /** Creates an ingester reading from a JSON-RPC URL (the caller drives it), with the durable {@link Pipeline.chainState}. */
  createIngester(
    rpcUrl: string,
    opts?: { concurrency?: number; traces?: boolean },
  ): Promise<{ ingester: Ingester; source: ChainSource; close(): Promise<void> }>;
  stop(): Promise<void>;
}

/**
 * Sets up topics, schemas and indices, then starts the consuming stages.
 * @param deps - configuration, logger, the shared Redis client and metrics registry, and the
 *   stage options ({@link PipelineDeps}).
 * @returns the running pipeline; `stop()` stops the stages and closes what the pipeline opened.
 * @throws when Kafka, the schema registry, Elasticsearch or (for index, match, notify) Redis cannot
 *   be reached at startup.
 */
export async function startPipeline(deps: PipelineDeps): Promise<Pipeline> {
  const { config, logger } = deps;
  const ownEs = !deps.es;
  const es = deps.es ?? new Client({ node: config.elasticsearch.url, requestTimeout: config.elasticsearch.requestTimeoutMs });
  const bus = await createBus({ config, logger });
  await ensureIndices(es, config.chain, config.elasticsearch.indexPrefix);
  const stages = deps.stages ?? ["decode", "index"];
  const consumers: RunningConsumer[] = [];
  const ownRedis = deps.redis ? undefined : lazyRedis(config.redisUrl, { logger, label: "pipeline" });
  const redis = deps.redis ?? (() => (ownRedis as NonNullable<typeof ownRedis>).client());
  const chainState = async (): Promise<ChainState> => createRedisChainState(await redis(), config.redisKeyPrefix, config.chain);
  if (stages.includes("decode")) {
    consumers.push(await startDecodeStage({ bus, decoder: deps.decoder ?? createDecoder(), logger }));
  }
  if (stages.includes("index")) {
    consumers.push(
      await startIndexStage({
        bus,
        es,
        chain: config.chain,
        indexPrefix: config.elasticsearch.indexPrefix,
        logger,
        refresh: deps.refresh,
        canonical: await chainState(),
      }),
    );
  }
  // The match and notify stages share the bus and the Redis client (neither closes it).
  const shared = async () => ({ bus, config, logger, redis: await redis() });
  if (stages.includes("match")) {
    consumers.push(
      await startMatchStage({
        ...(await shared()),
        ...(deps.tokenMetadata ? { tokens: deps.tokenMetadata } : {}),
        ...(deps.methodDecoding ? { decode: deps.methodDecoding } : {}),
      }),
    );
  }
  if (stages.includes("notify")) {
    consumers.push(await startNotifyStage({ ...(await shared()), ...(deps.metricsRegistry ? { registry: deps.metricsRegistry } : {}) }));
  }
  const producers: RecordProducer[] = [];
  return {
    bus,
    es,
    consumers,
    chainState,
    async createIngester(rpcUrl, opts) {
      const source = createRpcSource({ rpcUrl });
      const producer = await createRecordProducer(bus);
      producers.push(producer);
      const ingester = createIngester({
        source,
        producer,
        logger,
        concurrency: opts?.concurrency ?? config.ingest.concurrency,
        traces: opts?.traces ?? config.ingest.traces,
        state: await chainState(),
      });
      return {
        ingester,
        source,
        async close() {
          source.destroy();
          await producer.disconnect();
        },
      };
    },
    async stop() {
      await Promise.allSettled(consumers.map((c) => c.stop()));
      await Promise.allSettled(producers.map((p) => p.disconnect()));
      await ownRedis?.close();
      if (ownEs) await es.close();
    },
  };
}
