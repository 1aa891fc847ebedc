/**
 * Saved searches that alert (docs/rules.md "Saved searches", docs/alerting.md):
 *
 * | method | path                                | body                   | answer                                  |
 * | ------ | ----------------------------------- | ---------------------- | --------------------------------------- |
 * | GET    | /alerting/searches/                 | –                      | 200 `{searches, nextCursor: null}`: all |
 * | GET    | /alerting/searches/?limit=&cursor=  | –                      | 200 `{searches, nextCursor}`: one page  |
 * | GET    | /alerting/searches/:rule_id/        | –                      | 200 saved search                        |
 * | POST   | /alerting/searches/                 | saved search           | 201 saved search (+ `Location`)         |
 * | PUT    | /alerting/searches/:rule_id/        | fields to change       | 200 saved search (version + 1)          |
 * | DELETE | /alerting/searches/:rule_id/        | –                      | 204                                     |
 *
 * Same authentication, ownership (another account's search is 404), versioning, paging, limits
 * and error codes as the rules routes (./../rules/index.ts): the searches live in a rule store of
 * their own (lib/searches/model.ts `searchKeyPrefix`), so the store's answers (`CS_RULE_NOT_FOUND`,
 * `CS_RULE_VERSION_CONFLICT`, `CS_RULE_LIMIT_REACHED`, …) are the rules'. Bodies: ./validate.ts.
 * OpenAPI: ./schema.ts (answers `SavedSearch`, bodies `SavedSearchCreate` and `SavedSearchUpdate`, which
 * never require the server-assigned `id`); `POST /alerting/searches/test/` (backtest): ./test.ts.
 * A PUT that changes `kind`, `query` or `alerts` is applied to the version it was checked against
 * (the stored `config` is rebuilt from it): a concurrent change answers 409, never a lost update.
 * @module
 */
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ChainId } from "../../../lib/config/index.js";
import type { RuleStore } from "../../../lib/rules/store.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "../../../lib/rules/store.js";
import { RULE_LIMITS } from "../../../lib/rules/validate.js";
import { type StoredSearch, searchView } from "../../../lib/searches/model.js";
import type { WatchlistStore } from "../../../lib/watchlists/store.js";
import { ApiError, apiError } from "../../errors.js";
import { callerId, RULES_ROUTE_CONFIG, rulesValidatorCompiler } from "../rules/index.js";
import { RULES_ERROR_RESPONSES, RuleListQuery, RuleParams, RulesErrorBodySchema } from "../rules/schema.js";
import { SavedSearchCreateSchema, SavedSearchSchema, SavedSearchUpdateSchema } from "./schema.js";
import { validateSearchInput } from "./validate.js";
import { checkSearchWatchlists } from "./watchlists.js";

/** Base path of the saved-search routes. */
export const SEARCHES_PREFIX = "/alerting/searches";

/** Dependencies of {@link searchesRoutes}. */
export interface SearchesRoutesDeps {
  /** The saved searches' rule store (`connectRuleStore` under `searchKeyPrefix`). */
  searches: RuleStore;
  /** The chains served; a search's technology/blockchain/network must name one. */
  chains: ChainId[];
  /**
   * Whether ingest found a `finalized` tag on the chain's node (lib/chain/finality.ts), or null when
   * unknown. Absent: no warning is given.
   */
  finalitySource?: (chain: ChainId) => Promise<"finalized" | "none" | null>;
  /** The watchlist store: `terms` lookups by watchlist must name one of the caller's lists (./watchlists.ts). Absent: not checked. */
  watchlists?: Pick<WatchlistStore, "get">;
}

const SearchPageSchema = Type.Object({ searches: Type.Array(SavedSearchSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) });
const common = { tags: ["alerting"] };

function idOf(request: FastifyRequest): string {
  return (request.params as { rule_id: string }).rule_id.toLowerCase();
}

function notFound(id: string): ApiError {
  return apiError("CS_RULE_NOT_FOUND", `no saved search with id ${id}`, "params.rule_id");
}

/**
 * The plugin of the saved-search routes (encapsulated: the rules routes' validator compiler and a
 * `JSON.stringify` serializer). Needs the auth hook and the app's error handler, as the rules routes.
 * @param deps see {@link SearchesRoutesDeps}.
 */
export function searchesRoutes(deps: SearchesRoutesDeps): FastifyPluginAsync {
  const { searches, chains } = deps;
  const warningsOf = async (s: StoredSearch): Promise<Array<{ code: string; message: string }>> => {
    if (s.confirmOn !== "finalized" || !deps.finalitySource) return [];
    const source = await deps.finalitySource(s).catch(() => null);
    if (source !== "none") return [];
    return [
      {
        code: "CS_RULE_FINALITY_UNAVAILABLE",
        message:
          "confirmOn is finalized, but the chain's node has no finalized block tag: confirmed goes out after maxConfirmationCount confirmations",
      },
    ];
  };
  const answer = async (s: StoredSearch) => {
    const warnings = await warningsOf(s);
    return warnings.length > 0 ? { ...searchView(s), warnings } : searchView(s);
  };
  return async (app) => {
    app.setValidatorCompiler(rulesValidatorCompiler);
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    app.get(
      `${SEARCHES_PREFIX}/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "listSearches",
          summary: "List the caller's saved searches",
          description: `Oldest first. Without limit and cursor: every saved search, nextCursor null. Paging: ?limit= (1–${MAX_LIST_LIMIT}) and ?cursor=.`,
          querystring: RuleListQuery,
          response: { 200: SearchPageSchema, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request) => {
        const accountId = callerId(request);
        const { limit, cursor } = request.query as { limit?: number; cursor?: string };
        const view = (page: { rules: unknown[]; nextCursor: string | null }) => ({
          searches: page.rules.map((r) => searchView(r as StoredSearch)),
          nextCursor: page.nextCursor,
        });
        if (limit !== undefined || cursor !== undefined) {
          return view(await searches.list(accountId, { limit: limit ?? DEFAULT_LIST_LIMIT, cursor: cursor ?? null }));
        }
        const all: unknown[] = [];
        let next: string | null = null;
        do {
          const page = await searches.list(accountId, { limit: MAX_LIST_LIMIT, cursor: next });
          all.push(...page.rules);
          next = page.nextCursor;
        } while (next !== null);
        return view({ rules: all, nextCursor: null });
      },
    );

    app.get(
      `${SEARCHES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "getSearch",
          summary: "Get one saved search",
          params: RuleParams,
          response: { 200: SavedSearchSchema, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request) => {
        const id = idOf(request);
        const s = await searches.get(callerId(request), id);
        if (!s) throw notFound(id);
        return searchView(s as unknown as StoredSearch);
      },
    );

    app.post(
      `${SEARCHES_PREFIX}/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "createSearch",
          summary: "Create a saved search that alerts",
          description:
            "Required: name, maxConfirmationCount, technology, blockchain, network, kind (event, tx, log, block, call), query (the search DSL), alerts (as a rule's config.alerts). " +
            "Optional: description, state, sendPendingAlerts, confirmOn (count | finalized). Refusals: 400 CS_RULE_* (rule fields and alerts), CS_SEARCH_KIND, CS_QUERY_* and CS_SEARCH_INEXACT (query), CS_RULE_WATCHLIST_UNKNOWN (a terms lookup names a watchlist the caller does not have); 409 CS_RULE_LIMIT_REACHED.",
          body: SavedSearchCreateSchema,
          response: { 201: SavedSearchSchema, ...RULES_ERROR_RESPONSES, 409: RulesErrorBodySchema, 413: RulesErrorBodySchema },
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request, reply) => {
        const accountId = callerId(request);
        const checked = validateSearchInput(request.body, "create", chains);
        if (!checked.ok) throw new ApiError(checked.errors);
        if (deps.watchlists) await checkSearchWatchlists(deps.watchlists, accountId, checked.value);
        const stored = (await searches.create(accountId, checked.value as never)) as unknown as StoredSearch;
        return reply
          .code(201)
          .header("location", `${SEARCHES_PREFIX}/${stored.id}/`)
          .send(await answer(stored));
      },
    );

    app.put(
      `${SEARCHES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "updateSearch",
          summary: "Change a saved search",
          description:
            "Any subset of the fields, merged at the top level. With version, applied only to that version (else 409 CS_RULE_VERSION_CONFLICT); a change of kind, query or alerts is always applied to the version it was checked against.",
          params: RuleParams,
          body: SavedSearchUpdateSchema,
          response: { 200: SavedSearchSchema, ...RULES_ERROR_RESPONSES, 409: RulesErrorBodySchema, 413: RulesErrorBodySchema },
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request) => {
        const accountId = callerId(request);
        const id = idOf(request);
        const stored = (await searches.get(accountId, id)) as unknown as StoredSearch | null;
        if (!stored) throw notFound(id);
        const checked = validateSearchInput(request.body, "update", chains, stored);
        if (!checked.ok) throw new ApiError(checked.errors);
        if (deps.watchlists) await checkSearchWatchlists(deps.watchlists, accountId, checked.value);
        const patch = checked.value;
        if (patch.config !== undefined && patch.version === undefined) patch.version = stored.version;
        const updated = (await searches.update(accountId, id, patch as never)) as unknown as StoredSearch;
        return answer(updated);
      },
    );

    app.delete(
      `${SEARCHES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "deleteSearch",
          summary: "Delete a saved search",
          params: RuleParams,
          response: { 204: { type: "null" }, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request, reply) => {
        const id = idOf(request);
        if (!(await searches.delete(callerId(request), id))) throw notFound(id);
        return reply.code(204).send();
      },
    );
  };
}
