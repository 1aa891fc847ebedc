/**
 * `GET /chains/`: the chains this API serves, each with what its ingest last saw (lib/chain/ingest-status.ts
 * in Redis): the node's head, the block ingest produced last, and the lag in blocks and seconds.
 * Authenticated like the search routes (any API token or account token, rate limited): it tells
 * which paths a caller can search and how fresh they are, nothing an account does not see anyway.
 * A chain whose ingest never ran answers nulls. Redis unreachable: 503 `CS_BACKEND_UNAVAILABLE`.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { type Static, Type } from "typebox";
import { readIngestStatus } from "../../lib/chain/ingest-status.js";
import { withTimeout } from "../../lib/redis.js";
import { component } from "../../lib/validation/component.js";
import type { ServedChain } from "../chains.js";
import { apiError } from "../errors.js";
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

/** Longest wait for Redis, in ms. */
const READ_TIMEOUT_MS = 2000;

/** Options of {@link chainsRoutes}. */
export interface ChainsRoutesOptions {
  /** The served chains (api/chains.ts). */
  chains: readonly ServedChain[];
  /** config `redisKeyPrefix` (the ingest keys are under it). */
  keyPrefix: string;
}

/**
 * Registers `GET /chains/` (needs `app.redis`).
 * @param opts - the served chains and the Redis key prefix.
 */
export function chainsRoutes(opts: ChainsRoutesOptions): FastifyPluginAsync {
  return async (app) => {
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
