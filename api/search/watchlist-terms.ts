/**
 * `terms` by watchlist (issue 34; docs/api.md "Watchlists in a search"): a chainsift extension of
 * Elasticsearch's terms lookup — `{"terms": {"<field>": {"watchlist": "<id>"}}}` matches the records
 * whose keyword field holds any member of one of the caller's watchlists (lib/watchlists/store.ts).
 * Elasticsearch's own lookup (`{index, id, path}`,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-terms-query.html#query-dsl-terms-lookup)
 * reads a document of an index, which a watchlist is not.
 *
 * Validation (api/dsl/query.ts) turns the clause into a placeholder (es/watchlist-lookup.ts);
 * {@link expandWatchlists} replaces every placeholder, once the body is valid, with the members
 * read from Redis: one `terms` query when they fit in {@link TERMS_CHUNK} values, else a `bool`
 * `should` of `terms` chunks (each chunk under Elasticsearch's default `index.max_terms_count`,
 * 65,536: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/index-modules.html#index-max-terms-count).
 * The expanded query is what the result cache keys on, so an edited list is a new key.
 * @module
 */
import { type WatchlistClause, watchlistClauseOf, watchlistClauses } from "../../es/watchlist-lookup.js";
import type { EsQuery } from "../dsl/plan.js";
import { apiError } from "../errors.js";

/** Most values in one `terms` chunk: Elasticsearch's default `index.max_terms_count` (65,536). */
export const TERMS_CHUNK = 65_536;

/** Most members a search may expand (a larger list is refused with `CS_QUERY_WATCHLIST_TOO_LARGE`): 1,000,000. */
export const MAX_SEARCH_MEMBERS = 1_000_000;

/** The request paths of the watchlist lookups in a validated query (`query.terms.from.watchlist`), in order. */
export const watchlistPaths = (query: unknown): string[] => watchlistClauses(query).map((c) => c.path);

/** Whether a validated query holds a watchlist lookup. */
export const hasWatchlists = (query: unknown): boolean => watchlistPaths(query).length > 0;

/**
 * Reads the members of the caller's watchlist `id`: null when the caller has none of that id.
 * @throws whatever Redis throws.
 */
export type WatchlistMembers = (id: string) => Promise<string[] | null>;

/**
 * The query with every watchlist placeholder replaced by the list's members (module doc). A query
 * without placeholders is returned as is, without reading anything.
 * @throws ApiError `CS_WATCHLIST_NOT_FOUND` (404) at the clause's path for an unknown list;
 *   `CS_QUERY_WATCHLIST_TOO_LARGE` (400) past {@link MAX_SEARCH_MEMBERS}.
 */
export async function expandWatchlists<Q extends EsQuery | undefined>(query: Q, members: WatchlistMembers): Promise<Q> {
  if (!hasWatchlists(query)) return query;
  // One read per list, shared by its lookups (the walk visits siblings concurrently).
  const read = new Map<string, Promise<string[]>>();
  const membersOf = (p: WatchlistClause): Promise<string[]> => {
    let pending = read.get(p.id);
    if (pending === undefined) {
      pending = members(p.id).then((got) => {
        if (got === null) throw apiError("CS_WATCHLIST_NOT_FOUND", `no watchlist ${JSON.stringify(p.id)} in your account`, p.path);
        if (got.length > MAX_SEARCH_MEMBERS)
          throw apiError(
            "CS_QUERY_WATCHLIST_TOO_LARGE",
            `a search expands at most ${MAX_SEARCH_MEMBERS} watchlist members; this one holds ${got.length}`,
            p.path,
          );
        return got.sort();
      });
      read.set(p.id, pending);
    }
    return pending;
  };
  const walk = async (node: unknown): Promise<unknown> => {
    if (Array.isArray(node)) return Promise.all(node.map(walk));
    if (typeof node !== "object" || node === null) return node;
    const p = watchlistClauseOf(node as Record<string, unknown>);
    if (p) {
      const values = await membersOf(p);
      if (values.length <= TERMS_CHUNK) return { terms: { [p.field]: values } };
      const should: EsQuery[] = [];
      for (let i = 0; i < values.length; i += TERMS_CHUNK) should.push({ terms: { [p.field]: values.slice(i, i + TERMS_CHUNK) } });
      return { bool: { should, minimum_should_match: 1 } };
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = await walk(v);
    return out;
  };
  return (await walk(query)) as Q;
}
