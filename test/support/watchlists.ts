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

/** An in-memory store of one address list, for unit tests of `In watchlist` evaluation (the reads a membership makes). */
export interface MemoryListStore extends Pick<WatchlistStore, "get" | "contains"> {
  /** The list's members (lowercase); change it between runs. */
  members: Set<string>;
  /** `contains` calls so far. */
  reads: number;
}

/**
 * An address list `id` of account `accountId` holding `members`; every other list is unknown.
 * @param members - addresses in any letter case (stored lowercased, as the real store does).
 */
export function memoryListStore(accountId: string, id: string, members: readonly string[]): MemoryListStore {
  const store: MemoryListStore = {
    reads: 0,
    members: new Set(members.map((m) => m.toLowerCase())),
    get: async (a, i) => (a === accountId && i === id ? { id, accountId, name: id, kind: "address", createdAt: "" } : null),
    contains: async (a, i, values) => {
      store.reads++;
      return values.map((v) => a === accountId && i === id && store.members.has(v));
    },
  };
  return store;
}
