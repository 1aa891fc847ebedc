/**
 * `GET /chains/`: the chains this API serves, each with what its ingest last saw (lib/chain/ingest-status.ts
 * in Redis): the node's head, the block ingest produced last, and the lag in blocks and seconds.
 * Authenticated like the search routes (any API token or account token, rate limited): it tells
 * which paths a caller can search and how fresh they are, nothing an account does not see anyway.
 * A chain whose ingest never ran answers nulls. Redis unreachable: 503 `CS_BACKEND_UNAVAILABLE`.
 *
 * `GET /chains/health/`: each served chain's consumer health as `npm run chainsift -- status` shows it
 * (lib/kafka/consumer-health.ts, the same code): every stage's consumer-group lag in records and the
 * dead letters written in the last hour, read from Kafka's own bookkeeping with one admin client of
 * the API process (connected on first use). Authenticated like `GET /chains/`; the group ids are not
 * shown (they carry the deployment's prefixes). Kafka unreachable: 503 `CS_BACKEND_UNAVAILABLE`.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { type Admin, Kafka, logLevel } from "kafkajs";
import { type Static, Type } from "typebox";
import { readIngestStatus } from "../../lib/chain/ingest-status.js";
import type { Config } from "../../lib/config/index.js";
import { CONSUMER_GROUP_STAGES, consumerGroupId, kafkaClientId, readConsumerHealth } from "../../lib/kafka/consumer-health.js";
import { kafkajsLagAdmin } from "../../lib/kafka/lag.js";
import { withTimeout } from "../../lib/redis.js";
import { component } from "../../lib/validation/component.js";
import { topicName } from "../../topics/index.js";
import { apiError } from "../errors.js";
import type { ServedChain } from "../served-chains.js";
import { ErrorBodySchema } from "./search/schema.js";

const nullable = <T extends ReturnType<typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);

/** One served chain in the answer of `GET /chains/` (documentation only). */
export const ChainStatusSchema = Type.Object(
  {
    technology: Type.String({ description: "Path segment 1 (search paths, rule field technology)" }),
    blockchain: Type.String({ description: "Path segment 2 (rule field blockchain)" }),
    network: Type.String({ description: "Path segment 3 (rule field network)" }),
    chainId: nullable(Type.Integer({ description: "EIP-155 chain id (the chains file's chainId), null when not configured" })),
    searchPath: Type.String({ description: "Prefix of the chain's search routes: /<technology>/<blockchain>/<network>/es/" }),
    head: nullable(
      Type.Integer({ description: "The node's head (eth_blockNumber) as the chain's ingest last read it; null before ingest ran" }),
    ),
    headAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
      description: "When ingest last read the head or produced a block (ISO 8601); null when unknown",
    }),
    ingested: Type.Union([Type.Object({ number: Type.Integer(), hash: Type.String() }), Type.Null()], {
      description: "The last block ingest's follower produced (its durable position); null when none",
    }),
    lagBlocks: nullable(Type.Integer({ minimum: 0, description: "max(0, head − ingested.number); null when either is unknown" })),
    lagSeconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
      description: "Seconds since the timestamp of the newest block ingest produced (its header); null when unknown",
    }),
  },
  { ...component("ChainStatus") },
);

/** Answer of `GET /chains/` (documentation only). */
export const ChainsAnswerSchema = Type.Object(
  { chains: Type.Array(ChainStatusSchema, { description: "Every served chain, in configuration order" }) },
  {
    description: "The served chains and their ingest position",
    examples: [
      {
        chains: [
          {
            technology: "ethereum",
            blockchain: "ethereum",
            network: "mainnet",
            chainId: 1,
            searchPath: "/ethereum/ethereum/mainnet/es/",
            head: 21000010,
            headAt: "2026-11-26T12:00:00.000Z",
            ingested: { number: 21000008, hash: `0x${"ab".repeat(32)}` },
            lagBlocks: 2,
            lagSeconds: 26.1,
          },
        ],
      },
    ],
    ...component("Chains"),
  },
);

/** One served chain's status. */
export type ChainStatus = Static<typeof ChainStatusSchema>;

/** One served chain in the answer of `GET /chains/health/` (documentation only). */
export const ChainHealthSchema = Type.Object(
  {
    technology: Type.String({ description: "Path segment 1" }),
    blockchain: Type.String({ description: "Path segment 2" }),
    network: Type.String({ description: "Path segment 3" }),
    groups: Type.Array(
      Type.Object({
        stage: Type.String({ description: `The stage whose consumer group this is: ${CONSUMER_GROUP_STAGES.join(", ")}` }),
        lag: nullable(
          Type.Integer({
            minimum: 0,
            description:
              "Records written to its topics and not yet consumed (Σ over partitions of high watermark − committed offset); null when the group never committed (the stage never ran)",
          }),
        ),
        partitions: Type.Integer({ minimum: 0, description: "Partitions the group committed offsets on" }),
      }),
      { description: "One row per consumer group of the chain, in pipeline order" },
    ),
    deadLettersLastHour: nullable(
      Type.Integer({
        minimum: 0,
        description:
          "Records written to the chain's dead-letter topic in the last hour (its time index); null when the topic cannot be read (e.g. not created yet)",
      }),
    ),
  },
  { ...component("ChainHealth") },
);

/** Answer of `GET /chains/health/` (documentation only). */
export const ChainsHealthAnswerSchema = Type.Object(
  {
    at: Type.String({ format: "date-time", description: "When Kafka was read (ISO 8601)" }),
    chains: Type.Array(ChainHealthSchema, { description: "Every served chain, in configuration order" }),
  },
  {
    description: "Each served chain's consumer-group lag and recent dead letters (what `chainsift status` shows)",
    examples: [
      {
        at: "2026-11-26T12:00:00.000Z",
        chains: [
          {
            technology: "ethereum",
            blockchain: "ethereum",
            network: "mainnet",
            groups: [
              { stage: "decode", lag: 12, partitions: 3 },
              { stage: "index", lag: 40, partitions: 6 },
              { stage: "match", lag: 0, partitions: 3 },
              { stage: "notify", lag: 0, partitions: 3 },
              { stage: "index-reorgs", lag: null, partitions: 0 },
            ],
            deadLettersLastHour: 0,
          },
        ],
      },
    ],
    ...component("ChainsHealth"),
  },
);

/** One served chain's consumer health. */
export type ChainHealth = Static<typeof ChainHealthSchema>;

/** Longest wait for Redis, in ms. */
const READ_TIMEOUT_MS = 2000;
/** Longest wait for Kafka's answers to one `GET /chains/health/` (connecting included), in ms. */
const KAFKA_TIMEOUT_MS = 5000;

/** Options of {@link chainsRoutes}. */
export interface ChainsRoutesOptions {
  /** The served chains (api/served-chains.ts). */
  chains: readonly ServedChain[];
  /** config `redisKeyPrefix` (the ingest keys are under it). */
  keyPrefix: string;
  /**
   * config `kafka` (brokers, client id, topic and group prefixes) for `GET /chains/health/`. Absent:
   * that route answers 503 `CS_BACKEND_UNAVAILABLE`.
   */
  kafka?: Pick<Config["kafka"], "brokers" | "clientId" | "instanceId" | "topicPrefix" | "groupPrefix">;
}

/**
 * Registers `GET /chains/` (needs `app.redis`) and `GET /chains/health/` (a Kafka admin client of
 * its own, connected on first use and closed with the app).
 * @param opts - the served chains, the Redis key prefix and the Kafka configuration.
 */
export function chainsRoutes(opts: ChainsRoutesOptions): FastifyPluginAsync {
  return async (app) => {
    const kafkaConfig = opts.kafka;
    /** The connected admin client, or the connection under way; reset after a failure so the next request connects again. */
    let admin: Promise<Admin> | null = null;
    const connected = (): Promise<Admin> => {
      if (!kafkaConfig) return Promise.reject(new Error("Kafka is not configured"));
      admin ??= (async () => {
        const client = new Kafka({
          clientId: kafkaClientId(kafkaConfig, "api-health"),
          brokers: kafkaConfig.brokers,
          logLevel: logLevel.NOTHING,
          connectionTimeout: 3000,
          requestTimeout: 3000,
          retry: { retries: 1, initialRetryTime: 100 },
        }).admin();
        await client.connect();
        return client;
      })();
      return admin;
    };
    app.addHook("onClose", async () => {
      const a = admin;
      admin = null;
      await a?.then((c) => c.disconnect()).catch(() => {});
    });

    app.get(
      "/chains/health/",
      {
        schema: {
          tags: ["chains"],
          operationId: "chainsHealth",
          summary: "Consumer-group lag and dead letters of every served chain",
          description:
            "What `npm run chainsift -- status` shows of the pipeline's consumers, per served chain: each stage's consumer-group lag (records written and not yet consumed, from the committed offsets and high watermarks) " +
            "and the records written to the chain's dead-letter topic in the last hour. Read from Kafka on each request (a handful of small admin requests per chain).",
          response: { 200: ChainsHealthAnswerSchema, 503: ErrorBodySchema },
        },
      },
      async () => {
        const at = new Date();
        const read = async (): Promise<ChainHealth[]> => {
          const lagAdmin = kafkajsLagAdmin(await connected());
          const k = kafkaConfig as NonNullable<typeof kafkaConfig>;
          return Promise.all(
            opts.chains.map(async (c) => {
              const h = await readConsumerHealth(lagAdmin, {
                groupId: (stage) => consumerGroupId(k, c, stage),
                deadLetterTopic: topicName(c, "dead-letter", k.topicPrefix),
                nowMs: at.getTime(),
              });
              return {
                technology: c.technology,
                blockchain: c.blockchain,
                network: c.network,
                groups: h.groups.map(({ stage, lag, partitions }) => ({ stage, lag, partitions })),
                deadLettersLastHour: h.deadLettersLastHour,
              };
            }),
          );
        };
        const chains = await withTimeout(read(), KAFKA_TIMEOUT_MS).catch(async (err: unknown) => {
          const a = admin;
          admin = null;
          await a?.then((c) => c.disconnect()).catch(() => {});
          throw apiError("CS_BACKEND_UNAVAILABLE", `Kafka does not answer (${err instanceof Error ? err.message : String(err)})`);
        });
        return { at: at.toISOString(), chains };
      },
    );

    app.get(
      "/chains/",
      {
        schema: {
          tags: ["chains"],
          operationId: "listChains",
          summary: "The served chains with head, ingested block and lag",
          description:
            "Every chain this deployment serves (its search paths and the chain fields rules may name), with the node's head as the chain's ingest last read it, " +
            "the last block ingest produced and the lag (blocks; seconds since that block's timestamp). Read from Redis (what ingest publishes about once a second); nulls when the chain's ingest never ran.",
          response: { 200: ChainsAnswerSchema, 503: ErrorBodySchema },
        },
      },
      async () => {
        const now = Date.now();
        const statuses = await withTimeout(
          Promise.all(opts.chains.map((c) => readIngestStatus(app.redis, opts.keyPrefix, c))),
          READ_TIMEOUT_MS,
        ).catch((err: unknown) => {
          throw apiError("CS_BACKEND_UNAVAILABLE", `Redis does not answer (${err instanceof Error ? err.message : String(err)})`);
        });
        const chains: ChainStatus[] = opts.chains.map((c, i) => {
          const s = statuses[i] ?? { ingested: null, head: null, headAtMs: null, lastTimestampMs: null };
          return {
            technology: c.technology,
            blockchain: c.blockchain,
            network: c.network,
            chainId: c.chainId,
            searchPath: `/${c.technology}/${c.blockchain}/${c.network}/es/`,
            head: s.head,
            headAt: s.headAtMs === null ? null : new Date(s.headAtMs).toISOString(),
            ingested: s.ingested,
            lagBlocks: s.head !== null && s.ingested !== null ? Math.max(0, s.head - s.ingested.number) : null,
            lagSeconds: s.lastTimestampMs === null ? null : Math.max(0, (now - s.lastTimestampMs) / 1000),
          };
        });
        return { chains };
      },
    );
  };
}
