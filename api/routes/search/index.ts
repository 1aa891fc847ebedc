/**
 * The data-query routes of the contract:
 * - `POST /:technology/:blockchain/:network/es/:kinds/search/` (kinds `block`, `tx`, `log`, `event`,
 *   or a comma list such as `block,tx`): query body → hits envelope (streamed for `size: -1`).
 * - `GET /:technology/:blockchain/:network/es/block/:hash/`: the single block with that hash.
 *
 * Order of checks: authentication (onRequest), chain and kinds (preValidation: 404 before any body
 * error), the TypeBox body schema, then the allowlist validator.
 * @module
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Config } from "../../../lib/config.js";
import { validateSearchBody } from "../../dsl/validate.js";
import { ApiError, apiError } from "../../errors.js";
import { runSearch } from "../../search/search.js";
import { streamSearch } from "../../search/stream.js";
import { BlockParams, SearchBody, SearchParams } from "./schema.js";
import { checkChain, resolveTarget } from "./target.js";

/** Options of {@link searchRoutes}. */
export interface SearchRoutesOptions {
  /** Uses `chain`, `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`, `api.maxSize`. */
  config: Config;
}

/** A block hash: 0x and 64 hex digits (any letter case; looked up lower-case). */
export const BLOCK_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Registers the search routes (needs `app.es` from the elasticsearch plugin). */
export const searchRoutes: FastifyPluginAsyncTypebox<SearchRoutesOptions> = async (app, { config }) => {
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;

  app.post(
    "/:technology/:blockchain/:network/es/:kinds/search/",
    {
      schema: { params: SearchParams, body: SearchBody },
      preValidation: async (request) => {
        resolveTarget(config.chain, prefix, request.params as { technology: string; blockchain: string; network: string; kinds: string });
        // No body (or an empty JSON body) is the same as {}.
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const target = resolveTarget(config.chain, prefix, request.params);
      const checked = validateSearchBody(request.body, { kinds: target.kinds, maxSize: config.api.maxSize });
      if (!checked.ok) throw new ApiError(checked.errors);
      const plan = checked.value;
      if (plan.size === -1) {
        const stream = await streamSearch({ es: app.es, plan, target, requestTimeoutMs: timeoutMs, log: request.log });
        return reply.type("application/json; charset=utf-8").send(stream.body);
      }
      return runSearch(app.es, plan, target, timeoutMs);
    },
  );

  app.get("/:technology/:blockchain/:network/es/block/:hash/", { schema: { params: BlockParams } }, async (request) => {
    const { hash } = request.params;
    checkChain(config.chain, request.params);
    if (!BLOCK_HASH.test(hash)) throw apiError("CS_HASH_INVALID", "the block hash must be 0x followed by 64 hex digits", "params.hash");
    const target = resolveTarget(config.chain, prefix, { ...request.params, kinds: "block" });
    const envelope = await runSearch(app.es, { query: { ids: { values: [hash.toLowerCase()] } }, size: 1 }, target, timeoutMs);
    if (envelope.hits.total === 0) throw apiError("CS_NOT_FOUND", `no block with hash ${hash.toLowerCase()}`, "params.hash");
    return envelope;
  });
};
