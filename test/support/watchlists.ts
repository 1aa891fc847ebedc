/**
 * A watchlist store that counts what reaches Redis, for tests of the match process's watchlist
 * copies (lib/match/watchlist-filters.ts, lib/match/watchlist-membership.ts).
 * @module
 */
import type { WatchlistStore } from "../../lib/watchlists/store.js";

/** The counting store and what it counted. */
export interface CountingStore {
  /** `store` with `contains` and `revision` counted. */
  store: WatchlistStore;
  /** The values of each SMISMEMBER (`contains`), in order. */
  asked: string[][];
  /** Revisions read (`revision` calls). */
  reads: { revision: number };
}

/**
 * Wraps a store so that its membership questions and revision reads are recorded.
 * @param store - a real store (lib/watchlists/store.ts).
 */
export function countingStore(store: WatchlistStore): CountingStore {
  const asked: string[][] = [];
  const reads = { revision: 0 };
  const counted: WatchlistStore = {
    ...store,
    contains: (accountId, id, members) => {
      asked.push(members);
      return store.contains(accountId, id, members);
    },
    revision: (accountId, id) => {
      reads.revision++;
      return store.revision(accountId, id);
    },
  };
  return { store: counted, asked, reads };
}
