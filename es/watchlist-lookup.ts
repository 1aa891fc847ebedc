/**
 * The placeholder of a `terms` lookup by watchlist (`{"terms": {"<field>": {"watchlist": "<id>"}}}`,
 * docs/api.md "Watchlists in a search"): the search API's validation (api/dsl/query.ts) emits it in
 * the sanitized query; the search endpoints expand it into the list's members before Elasticsearch
 * sees the query (api/search/watchlist-terms.ts `expandWatchlists`), while the evaluator
 * (./evaluate.ts) answers it record by record with a synchronous membership lookup (saved searches
 * in the match stage: lib/match/watchlist-membership.ts). A saved search's stored `esQuery` holds it as is.
 * @module
 */

/** The member of a placeholder that names the watchlist (never sent to Elasticsearch). */
const MARK = "__chainsiftWatchlist";

/** One watchlist lookup of a sanitized query. */
export interface WatchlistClause {
  /** The keyword field whose values are looked up. */
  field: string;
  /** The watchlist id (of the query's account). */
  id: string;
  /** The request path of the lookup, e.g. `query.bool.filter[0].terms.from.watchlist`. */
  path: string;
}

/** The placeholder validation emits for `{"terms": {field: {"watchlist": id}}}` at JSON path `path`. */
export function watchlistPlaceholder(field: string, id: string, path: string): Record<string, unknown> {
  return { terms: { [field]: { [MARK]: id, path } } };
}

/** The lookup a query node is (`{terms: {field: placeholder}}`), or undefined for any other node. */
export function watchlistClauseOf(node: Record<string, unknown>): WatchlistClause | undefined {
  const terms = node.terms;
  if (typeof terms !== "object" || terms === null || Array.isArray(terms)) return undefined;
  const [entry, ...rest] = Object.entries(terms as Record<string, unknown>);
  if (!entry || rest.length > 0) return undefined;
  const v = entry[1] as Record<string, unknown> | null;
  if (typeof v !== "object" || v === null || typeof v[MARK] !== "string") return undefined;
  return { field: entry[0], id: v[MARK] as string, path: String(v.path ?? "query") };
}

/** The watchlist lookups of a sanitized query (or of any JSON holding queries), in order. */
export function watchlistClauses(query: unknown): WatchlistClause[] {
  if (Array.isArray(query)) return query.flatMap(watchlistClauses);
  if (typeof query !== "object" || query === null) return [];
  const c = watchlistClauseOf(query as Record<string, unknown>);
  if (c) return [c];
  return Object.values(query).flatMap(watchlistClauses);
}
