/**
 * Wires the pipeline stages of one chain into a running whole: one Kafka bus, one ES client,
 * the decode, index, match and notify stages, and ingesters. `npm start`, the e2e tests and the
 * benchmarks all start the pipeline through here.
 * @module
 */
import { Client } from "@elastic/elasticsearch";
import { Registry } from "prom-client";
import { indexName } from "../es/mappings.js";
import { createRedecodeStatusStore } from "../lib/abis/redecode-status.js";
import { createAbiStore } from "../lib/abis/store.js";
import { startIngestStatusWriter } from "../lib/chain/ingest-status.js";
import { type ChainState, createRedisChainState, ingestKeyPrefix } from "../lib/chain/state.js";
import { createTokenMetadataCache } from "../lib/chain/token-cache.js";
import { readTokenMetadata } from "../lib/chain/token-metadata.js";
import { chainKey } from "../lib/config/chains-file.js";
import { type Config, ConfigError } from "../lib/config/index.js";
import { NonRetryableError } from "../lib/errors.js";
import { publishIndexWrites } from "../lib/index-writes.js";
import { CONSUMING_STAGES } from "../lib/kafka/consumer-health.js";
import type { Logger } from "../lib/logger.js";
import type { ReadinessCheck } from "../lib/metrics.js";
import { lazyRedis, type RedisClient } from "../lib/redis.js";
import type { RpcTarget } from "../lib/rpc/client.js";
import { createChainContext, type PipelineChainContext } from "./chain-context.js";
import { createDecoder, type Decoder } from "./decode/decoder.js";
import { rpcImplementationReader } from "./decode/proxy.js";
import { type DecodeStageDeps, startDecodeStage } from "./decode/stage.js";
import { ensureIndices, startIndexStage } from "./index/indexer.js";
import { createCrashHook } from "./ingest/crash.js";
import { createIngester, type Ingester } from "./ingest/ingest.js";
import { ingestMetricsOf } from "./ingest/metrics.js";
import { type ChainSource, createRpcSource, redactRpcUrl, type TraceSource } from "./ingest/rpc.js";
import { type Bus, createBus, createRecordProducer, type RecordProducer } from "./kafka/bus.js";
import type { RunningConsumer } from "./kafka/consumer.js";
import { startMatchStage } from "./match/stage.js";
import { startNotifyStage } from "./notify/stage.js";

/** The consuming stages, in pipeline order (`npm start` runs them all; defined in lib/kafka/consumer-health.ts). */
export { CONSUMING_STAGES };
/** A consuming stage. */
export type ConsumingStage = (typeof CONSUMING_STAGES)[number];
/** Every stage `npm run stage -- <stage>` can run: ingest (the producer) and the consuming stages. */
export const STAGES = ["ingest", ...CONSUMING_STAGES] as const;
/** A stage name. */
export type Stage = (typeof STAGES)[number];

/** Dependencies of {@link startPipeline} (its Parameters). */
export interface PipelineDeps {
  /**
   * The whole configuration (lib/config/index.ts): `chain`, `kafka` and `schemaRegistryUrl` (the bus),
   * `elasticsearch` (`url`, `requestTimeoutMs`, `indexPrefix`), `redisUrl` and `redisKeyPrefix`,
   * `ingest` (`concurrency`, `traces`: defaults of {@link Pipeline.createIngester}; `rpcUrl`: the
   * decode stage's token-metadata node by default), `decode` (`tokenCalls`, `tokenNegativeTtlMs`, `signatures`: the default decoder's) and `notify`.
   */
  config: Config;
  /** The process's logger; every stage logs through a child of it (`stage: "<name>"`). */
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
  /**
   * The chain's context (lib/chain-context.ts): ids, JSON-RPC client, token lookups and decode
   * options of every stage. Its `metrics` registry receives the stages' and the ingesters' metrics
   * (docs/metrics.md). Default one resolved from `config` (its first served chain), whose client
   * the pipeline destroys on stop, and private registries per stage. `config` should be its `config`.
   * Tests that need another node or registry build a context (pipeline/chain-context.ts
   * `createChainContext`) rather than override parts of it.
   */
  chain?: PipelineChainContext;
  /**
   * Decoder; when absent, `createDecoder` with the chain's id and tokens ({@link PipelineDeps.chain})
   * and the signature database per `config.decode.signatures`.
   */
  decoder?: Decoder;
  /**
   * Whether the decode stage also decodes with the user ABIs (lib/abis: registry in Redis, proxies
   * read through the chain's JSON-RPC client, history re-decoded from the log index;
   * settings `config.abis`).
   * Default true.
   */
  abis?: boolean;
  /** Which consuming stages to run. Default decode and index (match and notify need Redis and rules). */
  stages?: ConsumingStage[];
  /** Refresh indices after each bulk (tests). Default false. */
  refresh?: boolean;
}

/** A running pipeline (the ReturnType of {@link startPipeline}). */
export interface Pipeline {
  /** The chain's Kafka bus (topics created, schemas registered); the consumers and producers made from it are disconnected by {@link Pipeline.stop}. */
  bus: Bus;
  /** The Elasticsearch client: `deps.es`, or one created from `config.elasticsearch` (closed by {@link Pipeline.stop}). */
  es: Client;
  /** The running consuming stages, in the order of {@link CONSUMING_STAGES} (only those asked for). */
  consumers: RunningConsumer[];
  /**
   * One readiness check per started stage (`/readyz`, lib/metrics.ts): a consuming stage is ready
   * while its consumers are in their groups; `ingest` (added by {@link Pipeline.createIngester})
   * while it has read the node's head or produced a block within the last max(10 s, 5 poll
   * intervals) (a finished backfill is therefore not ready).
   */
  readiness: ReadinessCheck[];
  /**
   * Ingest's durable state of this chain in Redis (position, canonical map, sequence numbers;
   * lib/chain/state.ts), shared by the ingesters and the index stage's canonical check.
   */
  chainState(): Promise<ChainState>;
  /**
   * Creates an ingester reading from a JSON-RPC URL, or from several endpoints of the chain with
   * failover (`config.ingest.rpc` limits; pipeline/ingest/rpc.ts), the caller drives it; with the
   * durable {@link Pipeline.chainState}.
   */
  createIngester(
    rpcUrl?: string | readonly string[],
    opts?: { concurrency?: number; traces?: boolean },
  ): Promise<{
    ingester: Ingester;
    source: ChainSource;
    /** Where call traces come from (probed at creation): the node's method, `none`, or `off` (traces switched off). */
    traceSource: TraceSource | "off";
    close(): Promise<void>;
  }>;
  /**
   * Stops every consuming stage, disconnects the ingesters' producers, and closes the Redis client
   * and the Elasticsearch client when the pipeline created them (shared ones stay open). A stage or
   * producer that fails to stop does not keep the others from stopping (their errors are dropped).
   */
  stop(): Promise<void>;
}

/**
 * Sets up topics, schemas and indices, then starts the consuming stages, in the order decode,
 * index, match, notify (only those in `deps.stages`, default decode and index). Each stage is
 * started as its `start*Stage` documents (startDecodeStage, startIndexStage, startMatchStage,
 * startNotifyStage); the index stage reads the chain state for its canonical check, match and
 * notify share the bus and the Redis client.
 * @param deps - configuration, logger, the shared Redis client and metrics registry, and the
 *   stage options ({@link PipelineDeps}; defaults: own ES client and Redis client, `createDecoder()` (signatures per config),
 *   on-chain token metadata through the chain context's client when `config.decode.tokenCalls`,
 *   stages decode and index, method decoding and Token entities from the bundled token list of `config.chainId`, `refresh` false).
 * @returns the running pipeline ({@link Pipeline}): `bus`, `es`, `consumers`, `chainState()`,
 *   `createIngester(rpcUrl, opts?)` (an ingester over a JSON-RPC source with the durable chain
 *   state; its `close()` releases the source and its producer) and `stop()` (stops the stages and
 *   closes what the pipeline opened).
 * @throws when Kafka, the schema registry, Elasticsearch or (for index, match, notify) Redis cannot
 *   be reached at startup: the client library's error (kafkajs, the schema-registry client,
 *   `@elastic/elasticsearch`, node-redis), not a lib/errors.ts class; record-level errors
 *   (`RetryableError`, `NonRetryableError`) never reach the caller, the stages retry or
 *   dead-letter them. A stage that fails to start leaves the ones started before it running.
 */
export async function startPipeline(deps: PipelineDeps): Promise<Pipeline> {
  const { config, logger } = deps;
  const ownEs = !deps.es;
  const es = deps.es ?? new Client({ node: config.elasticsearch.url, requestTimeout: config.elasticsearch.requestTimeoutMs });
  const bus = await createBus({ config, logger });
  await ensureIndices(es, config.chain, config.elasticsearch.indexPrefix, config.elasticsearch.partitioning);
  const stages = deps.stages ?? ["decode", "index"];
  const consumers: RunningConsumer[] = [];
  const readiness: ReadinessCheck[] = [];
  /** Adds a started stage's consumer and its readiness check. */
  const started = (stage: string, consumer: RunningConsumer) => {
    consumers.push(consumer);
    readiness.push({ name: stage, ready: () => consumer.ready() });
  };
  const ownRedis = deps.redis ? undefined : lazyRedis(config.redisUrl, { logger, label: "pipeline" });
  const redis = deps.redis ?? (() => (ownRedis as NonNullable<typeof ownRedis>).client());
  const chainState = async (): Promise<ChainState> => createRedisChainState(await redis(), config.redisKeyPrefix, config.chain);
  const registry = deps.chain?.metrics;
  /** The registry, as an optional dependency of a stage (absent: the stage keeps a private one). */
  const metrics = registry ? { registry } : {};
  const ctx = deps.chain ?? createChainContext(config, undefined, { logger });
  const listTokens = ctx.tokens;
  const methodDecoding = ctx.decode;
  if (stages.includes("decode")) {
    logger.info(
      {
        stage: "decode",
        chain: ctx.chain,
        chainId: ctx.chainId,
        chainIdFrom: config.chainIdFrom,
        tokenList: config.decode.tokenList,
        tokenCalls: config.decode.tokenCalls,
      },
      "decode options",
    );
    // The chain's one client (every endpoint, failover).
    const tokenRpc = ctx.client;
    const tokenMetadata = config.decode.tokenCalls
      ? createTokenMetadataCache({
          redis,
          keyPrefix: config.redisKeyPrefix,
          chain: config.chain,
          read: (requests) => readTokenMetadata(tokenRpc, requests),
          negativeTtlMs: config.decode.tokenNegativeTtlMs,
        })
      : undefined;
    const decoder = deps.decoder ?? createDecoder({ chainId: ctx.chainId, tokens: listTokens, signatures: config.decode.signatures });
    // User ABIs: proxies' implementation slots are read from the same node as token metadata.
    const abis = deps.abis === false ? {} : { abis: await abiDeps(config, await redis(), es, tokenRpc) };
    started(
      "decode",
      await startDecodeStage({
        bus,
        decoder,
        logger,
        ...(tokenMetadata ? { tokenMetadata } : {}),
        chainId: ctx.chainId,
        tokens: listTokens,
        ...metrics,
        ...abis,
      }),
    );
  }
  if (stages.includes("index")) {
    started(
      "index",
      await startIndexStage({
        bus,
        es,
        chain: config.chain,
        indexPrefix: config.elasticsearch.indexPrefix,
        partitioning: config.elasticsearch.partitioning,
        logger,
        refresh: deps.refresh,
        canonical: await chainState(),
        decode: methodDecoding,
        // The API instances' result caches drop their answers of what was written (lib/index-writes.ts).
        onWrite: async (aliases) => publishIndexWrites(await redis(), config.redisKeyPrefix, aliases),
        ...metrics,
      }),
    );
  }
  // The match and notify stages share the bus and the Redis client (neither closes it).
  const shared = async () => ({ bus, config, logger, redis: await redis(), ...metrics });
  if (stages.includes("match")) {
    started(
      "match",
      await startMatchStage({
        ...(await shared()),
        tokens: ctx.tokenMetadata,
        decode: methodDecoding,
        rpc: ctx.client,
        stateReads: config.stateReads,
        watchlistCopies: config.watchlistCopies,
      }),
    );
  }
  if (stages.includes("notify")) {
    started("notify", await startNotifyStage(await shared()));
  }
  const producers: RecordProducer[] = [];
  return {
    bus,
    es,
    consumers,
    readiness,
    chainState,
    async createIngester(rpcUrl, opts) {
      // The chain's one client, unless the caller names other endpoints (tests).
      const rpcUrls = rpcUrl === undefined ? ctx.rpcUrls : typeof rpcUrl === "string" ? [rpcUrl] : rpcUrl;
      const ownSource = rpcUrl !== undefined;
      const source = ownSource
        ? createRpcSource({ rpcUrls, ...config.ingest.rpc, logger: logger.child({ stage: "ingest" }), ...metrics })
        : ctx.rpc;
      // Several endpoints must be one chain (an endpoint of another chain would feed its blocks), and
      // a configured chain id must be the node's: checked once here.
      if (rpcUrls.length > 1 || config.chainIdFrom !== "default") {
        await source
          .chainId()
          .then((nodeChainId) => {
            if (config.chainIdFrom !== "default") checkChainId(config, nodeChainId, rpcUrls);
          })
          .catch((err: unknown) => {
            if (ownSource) source.destroy();
            throw err;
          });
      }
      const producer = await createRecordProducer(bus, registry ? { metrics: { registry, stage: "ingest" } } : {});
      producers.push(producer);
      // Traces wherever the node has them: probe once (debug, then parity), say which, remember it for the API.
      const wanted = opts?.traces ?? config.ingest.traces;
      const traceSource: TraceSource | "off" = wanted ? await probeTraceSource(source, { logger }) : "off";
      if (traceSource === "none" && config.ingest.tracesRequired) {
        if (ownSource) source.destroy();
        throw new ConfigError(
          "CHAINSIFT_CHAINS_FILE",
          `${chainKey(config.chain)} has traces: on, but the node has neither debug_traceBlockByNumber nor trace_block (use traces: auto to go on without)`,
        );
      }
      logger.info({ stage: "ingest", traceSource }, traceSourceMessage(traceSource));
      if (registry) ingestMetricsOf(registry).traceSource.set({ source: traceSource }, 1);
      await (await redis()).set(`${ingestKeyPrefix(config.redisKeyPrefix, config.chain)}traces`, traceSource);
      const ingestRegistry = registry ?? new Registry();
      const ingester = createIngester({
        source,
        producer,
        logger,
        concurrency: opts?.concurrency ?? config.ingest.concurrency,
        traces: traceSource === "debug_traceBlockByNumber" || traceSource === "trace_block",
        state: await chainState(),
        // Its own registry when the process has none: the status writer reads its position gauges.
        registry: ingestRegistry,
        crashHook: createCrashHook(
          { point: config.ingest.testCrashPoint, percent: config.ingest.testCrashPercent, seed: config.ingest.testCrashSeed },
          logger,
        ),
      });
      if (registry) {
        const seen = ingestMetricsOf(registry).position;
        const freshMs = Math.max(10_000, 5 * config.ingest.pollIntervalMs);
        readiness.push({ name: "ingest", ready: () => seen.activeAtMs !== null && Date.now() - seen.activeAtMs < freshMs });
      }
      // The head and position for GET /chains/ and `chainsift status` (lib/chain/ingest-status.ts).
      const status = startIngestStatusWriter({
        redis: await redis(),
        keyPrefix: config.redisKeyPrefix,
        chain: config.chain,
        position: ingestMetricsOf(ingestRegistry).position,
        logger,
      });
      return {
        ingester,
        source,
        traceSource,
        async close() {
          await status.stop();
          if (ownSource) source.destroy();
          await producer.disconnect();
        },
      };
    },
    async stop() {
      await Promise.allSettled(consumers.map((c) => c.stop()));
      await Promise.allSettled(producers.map((p) => p.disconnect()));
      await ownRedis?.close();
      if (ownEs) await es.close();
      if (!deps.chain) {
        ctx.rpc.destroy();
        ctx.client.destroy();
      }
    },
  };
}

/** Code of {@link ChainIdMismatchError}. */
export const CHAIN_ID_MISMATCH = "CS_CHAIN_ID_MISMATCH";

/** The node answers another `eth_chainId` than the configured chain id: the process refuses to start. */
export class ChainIdMismatchError extends NonRetryableError {
  constructor(
    /** The configured chain id ({@link Config.chainId}). */
    readonly configured: number,
    /** The node's `eth_chainId`. */
    readonly node: number,
    message: string,
  ) {
    super(CHAIN_ID_MISMATCH, message);
    this.name = "ChainIdMismatchError";
  }
}

/**
 * Refuses a node of another chain than the configured one.
 * @param config - `chain`, `chainId`, `chainIdFrom`, `chainsFile` (named in the message).
 * @param nodeChainId - the node's `eth_chainId`.
 * @param rpcUrls - the node's endpoints, shown redacted ({@link redactRpcUrl}).
 * @throws {ChainIdMismatchError} when they differ, e.g. `CS_CHAIN_ID_MISMATCH: ethereum/ethereum/mainnet
 *   is configured as chain id 1 (chains file f.yaml) but http://127.0.0.1:8545 answers eth_chainId 31337;
 *   refusing to start`.
 */
export function checkChainId(
  config: Pick<Config, "chain" | "chainId" | "chainIdFrom" | "chainsFile">,
  nodeChainId: number,
  rpcUrls: readonly string[],
): void {
  if (nodeChainId === config.chainId) return;
  const from = config.chainsFile ? `chains file ${config.chainsFile.path}` : "CHAINSIFT_CHAIN_ID";
  throw new ChainIdMismatchError(
    config.chainId,
    nodeChainId,
    `${CHAIN_ID_MISMATCH}: ${chainKey(config.chain)} is configured as chain id ${config.chainId} (${from}) but ${rpcUrls.map(redactRpcUrl).join(", ")} answers eth_chainId ${nodeChainId}; refusing to start`,
  );
}

/** The decode stage's user-ABI dependencies: the store and its change feed on the shared client, proxy reads, re-decode from the log index. */
async function abiDeps(config: Config, redis: RedisClient, es: Client, rpc: RpcTarget): Promise<NonNullable<DecodeStageDeps["abis"]>> {
  const prefix = config.redisKeyPrefix;
  return {
    store: createAbiStore({ redis, keyPrefix: prefix, maxPerAccount: config.abis.maxPerAccount }),
    subscriber: () => redis.duplicate(),
    implementations: rpcImplementationReader(rpc),
    proxyTtlMs: config.abis.proxyTtlMs,
    reloadIntervalMs: config.abis.reloadIntervalMs,
    redecode: {
      es,
      logIndex: indexName(config.chain, "log", config.elasticsearch.indexPrefix),
      maxLogs: config.abis.redecodeMaxLogs,
      // One decode process of the group re-decodes each registration (a lock for a day, released on failure).
      status: createRedecodeStatusStore({ redis, keyPrefix: prefix }),
    },
  };
}

/** Options of {@link probeTraceSource}. */
export interface ProbeTraceSourceOptions {
  /** Probes before giving up (the first included). Default 5. */
  attempts?: number;
  /** Wait before the second probe, in ms; doubles per probe. Default 1000 (so 1+2+4+8 = 15 s in all). */
  firstDelayMs?: number;
  /** Receives one warn line per failed probe and an error line when traces stay off. */
  logger?: Logger;
}

/**
 * The node's trace method, probed at its head. A probe that gets no JSON-RPC answer (node not up
 * yet, timeout) is repeated with doubling delays; after `attempts` such failures traces are off for
 * this run (`none`, logged as an error: restart ingest to probe again). A node that answers decides
 * at once.
 * @returns the trace method, or `none` (also for sources without `probeTraces`).
 */
export async function probeTraceSource(source: ChainSource, opts: ProbeTraceSourceOptions = {}): Promise<TraceSource> {
  if (!source.probeTraces) return "none";
  const attempts = opts.attempts ?? 5;
  let delayMs = opts.firstDelayMs ?? 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await source.probeTraces(await source.headNumber());
    } catch (err) {
      if (attempt >= attempts) {
        opts.logger?.error(
          { stage: "ingest", attempts, err: (err as Error).message },
          "cannot probe the node's trace method: call traces are off for this run (restart ingest to probe again)",
        );
        return "none";
      }
      opts.logger?.warn({ stage: "ingest", attempt, retryInMs: delayMs, err: (err as Error).message }, "trace probe failed; retrying");
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs *= 2;
    }
  }
}

/** The start banner's line about call traces. */
function traceSourceMessage(source: TraceSource | "off"): string {
  switch (source) {
    case "debug_traceBlockByNumber":
      return "call traces: debug_traceBlockByNumber (callTracer)";
    case "trace_block":
      return "call traces: trace_block (parity-style, converted to callTracer frames)";
    case "off":
      return "call traces: off (CHAINSIFT_INGEST_TRACES=false): Trace and Call rules never fire";
    default:
      return "call traces: UNAVAILABLE — the node has neither debug_traceBlockByNumber nor trace_block; Trace and Call rules never fire on this chain";
  }
}
