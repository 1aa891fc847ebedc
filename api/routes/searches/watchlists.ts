/**
 * The saved-search routes' checks of `terms` lookups by watchlist (docs/api.md "Watchlists in a
 * search"; es/watchlist-lookup.ts): every list a saved search names, in its query or its
 * `sequence.followedBy.query`, must be one of the caller's, else `400 CS_RULE_WATCHLIST_UNKNOWN` at
 * the lookup's path (as for a rule's `In watchlist`, api/routes/rules/watchlists.ts), so a typo never
 * makes a search that silently matches nothing.
 * @module
 */
import { watchlistClauses } from "../../../es/watchlist-lookup.js";
import type { WatchlistStore } from "../../../lib/watchlists/store.js";
import { refuseUnknownWatchlists } from "../rules/watchlists.js";

/** What a checked body (api/routes/searches/validate.ts) holds of the compiled queries. */
interface SearchQueries {
  config?: { esQuery?: unknown };
  sequence?: { followedBy?: { esQuery?: unknown } } | null;
}

/**
 * The watchlist lookups of a checked saved-search body (create document or update patch): each list
 * id with the request path of its lookup (`query….terms.<field>.watchlist`, `sequence.followedBy.query…`).
 * @param prefix - prepended to the paths (`search.` in a backtest body).
 */
export function searchWatchlistRefs(body: object, prefix = ""): { id: string; path: string }[] {
  const { config, sequence } = body as SearchQueries;
  return [...watchlistClauses(config?.esQuery), ...watchlistClauses(sequence?.followedBy?.esQuery)].map((c) => ({
    id: c.id,
    path: `${prefix}${c.path}`,
  }));
}

/**
 * Refuses a checked saved-search body whose watchlist lookups name a list the account does not have.
 * @param store - the watchlist store (`get`).
 * @param accountId - the caller.
 * @param body - the checked body (its `config.esQuery` and `sequence.followedBy.esQuery`).
 * @param prefix - as {@link searchWatchlistRefs}.
 * @throws {ApiError} `CS_RULE_WATCHLIST_UNKNOWN` with one detail per unknown list reference.
 */
export async function checkSearchWatchlists(
  store: Pick<WatchlistStore, "get">,
  accountId: string,
  body: object,
  prefix = "",
): Promise<void> {
  await refuseUnknownWatchlists(store, accountId, searchWatchlistRefs(body, prefix));
}
