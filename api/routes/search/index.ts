/**
 * The data-query routes of the contract:
 * - `POST /:technology/:blockchain/:network/es/:kinds/search/` (kinds `block`, `tx`, `log`, `event`,
 *   or a comma list such as `block,tx`): query body → hits envelope (streamed for `size: -1`).
 * - `GET /:technology/:blockchain/:network/es/block/:hash/`: the single block with that hash.
 *
 * The chain segments pick one of the served chains (`chains`); index names are resolved per request.
 * Order of checks: authentication and rate limit (onRequest), chain and kinds (preValidation: 404
 * before any body error), the TypeBox body schema, then the allowlist validators.
 * @module
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { ChainId, Config } from "../../../lib/config/index.js";
import { validateSearchBody } from "../../dsl/validate.js";
import { ApiError, apiError } from "../../errors.js";
import { CACHE_HEADER, cacheUse } from "../../plugins/result-cache.js";
import { createBufferPool } from "../../search/pool.js";
import { runSearchText, type SearchTarget } from "../../search/search.js";
import { streamSearch } from "../../search/stream.js";
import { expandWatchlists } from "../../search/watchlist-terms.js";
import { BlockParams, HitsEnvelopeSchema, SEARCH_ERROR_RESPONSES, SearchBody, SearchParams } from "./schema.js";
import { resolveTarget } from "./target.js";

/** Options of {@link searchRoutes}. */
export interface SearchRoutesOptions {
  /** Uses `chain`, `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`, `api.maxSize`. */
  config: Config;
  /** The chains served (path segments → indices). Default: `[config.chain]`. */
  chains?: readonly ChainId[];
  /**
   * Called after each successful search (metrics) with the number of hits returned and how the
   * answer was written: `bytes`, `parsed` (see api/search/raw.ts) or `stream` (size -1).
   */
  onHits?: (target: SearchTarget, hits: number, path: "bytes" | "parsed" | "stream") => void;
  /** The caller's watchlist members, for `terms` by watchlist (api/search/watchlist-terms.ts). */
  watchlistMembers?: (account: string, id: string) => Promise<string[] | null>;
}

/** Content type of every search answer (their bodies are JSON text already). */
const JSON_TYPE = "application/json; charset=utf-8";

/** A block hash: 0x and 64 hex digits (any letter case; looked up lower-case). */
export const BLOCK_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Registers the search routes (needs `app.es` from the elasticsearch plugin). */
export const searchRoutes: FastifyPluginAsyncTypebox<SearchRoutesOptions> = async (
  app,
  { config, chains: served, onHits, watchlistMembers },
) => {
  const chains: readonly ChainId[] = served && served.length > 0 ? served : [config.chain];
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  // Answers are written into pooled buffers, given back once the response is written (api/search/pool.ts).
  const pool = createBufferPool();

  app.post(
    "/:technology/:blockchain/:network/es/:kinds/search/",
    {
      schema: {
        operationId: "search",
        summary: "Search records of one or more kinds",
        description:
          "Query body: query, sort, size, _source; extensions: search_after, aggs/aggregations. size -1 streams all matches. " +
          "Everything else is refused with 400 and a stable code.",
        tags: ["search"],
        params: SearchParams,
        body: SearchBody,
        response: { 200: HitsEnvelopeSchema, ...SEARCH_ERROR_RESPONSES },
      },
      preValidation: async (request) => {
        resolveTarget(chains, prefix, request.params as { technology: string; blockchain: string; network: string; kinds: string });
        // No body (or an empty JSON body) is the same as {}.
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const target = resolveTarget(chains, prefix, request.params);
      const checked = validateSearchBody(request.body, { kinds: target.kinds, maxSize: config.api.maxSize });
      if (!checked.ok) throw new ApiError(checked.errors);
      const plan = checked.value;
      const who = request.account?.id;
      plan.query = await expandWatchlists(plan.query, (id) =>
        who === undefined ? Promise.resolve(null) : (watchlistMembers?.(who, id) ?? Promise.resolve(null)),
      );
      if (plan.size === -1) {
        const stream = await streamSearch({ es: app.es, plan, target, requestTimeoutMs: timeoutMs, log: request.log });
        onHits?.(target, stream.total, "stream");
        // The stream produces the same envelope as JSON text; the response schema only documents it.
        return reply.type(JSON_TYPE).send(stream.body as never);
      }
      const lease = pool.lease();
      reply.raw.once("finish", lease.release);
      const cache = cacheUse(app.resultCache);
      const answer = await runSearchText(app.es, plan, target, timeoutMs, lease.allocate, cache);
      if (cache?.outcome) reply.header(CACHE_HEADER, cache.outcome);
      onHits?.(target, answer.hits, answer.path);
      // Already JSON text (api/search/raw.ts); the response schema only documents it.
      return reply.type(JSON_TYPE).send(answer.body as never);
    },
  );

  app.get(
    "/:technology/:blockchain/:network/es/block/:hash/",
    {
      schema: {
        operationId: "getBlock",
        summary: "Get one block by hash",
        tags: ["search"],
        params: BlockParams,
        response: { 200: HitsEnvelopeSchema, ...SEARCH_ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { hash } = request.params;
      const target = resolveTarget(chains, prefix, { ...request.params, kinds: "block" });
      if (!BLOCK_HASH.test(hash)) throw apiError("CS_HASH_INVALID", "the block hash must be 0x followed by 64 hex digits", "params.hash");
      const answer = await runSearchText(app.es, { query: { ids: { values: [hash.toLowerCase()] } }, size: 1 }, target, timeoutMs);
      if (answer.total === 0) throw apiError("CS_NOT_FOUND", `no block with hash ${hash.toLowerCase()}`, "params.hash");
      onHits?.(target, answer.hits, answer.path);
      return reply.type(JSON_TYPE).send(answer.body as never);
    },
  );
};
