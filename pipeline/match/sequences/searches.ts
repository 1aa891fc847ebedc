/**
 * The second step of saved searches with a `sequence` (lib/searches/sequence.ts) in the match
 * stage: per held search, a derived saved search (same id, account and actions) whose kind and
 * compiled query are `sequence.followedBy`'s, in a search index of its own
 * (../search-index.ts). Its matches are the search's followedBy records; the sequence evaluator
 * (./evaluator.ts) tells them from the search's own matches by the derived snapshot's object, as
 * it does for the followedBy rules of rule sequences.
 * @module
 */
import type { DecodeMethodOptions } from "../../../lib/chain/methods.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { WatchlistLookup } from "../../../lib/match/evaluate.js";
import type { Rule } from "../../../lib/rules/model.js";
import { followedBySearch, type SearchSequence } from "../../../lib/searches/sequence.js";
import type { InputRecord } from "../../kafka/consumer.js";
import type { MatchInput } from "../confirmations/decide.js";
import { createSearchIndex, type SearchIndex, type SearchTopic } from "../search-index.js";

/** The followedBy queries of the held sequence searches. */
export interface FollowedBySearches {
  /**
   * Holds the followedBy query of a saved search (`search` the match stage's snapshot, lib/searches/model.ts `searchAsRule`).
   * @returns the derived snapshot its matches carry, or undefined when not held (disabled, another chain).
   * @throws when the query cannot be compiled.
   */
  hold(search: Rule, seq: SearchSequence): Rule | undefined;
  remove(id: string): void;
  /** The followedBy matches of one consumed record (the search index's `matchRecords`). */
  matchRecords(input: InputRecord<SearchTopic>): MatchInput[];
  /** Held followedBy queries that look a field up in a watchlist (../search-index.ts `watchlistSearches`). */
  watchlistSearches(): number;
}

/**
 * Creates the followedBy searches of a chain.
 * @param decode - the chain's Method/Call decoding for call documents (as the stage's search index).
 * @param watchlists - the membership lookup of watchlist `terms` lookups (as the stage's search index); absent: they never hold.
 */
export function createFollowedBySearches(chain: ChainId, decode: DecodeMethodOptions, watchlists?: WatchlistLookup): FollowedBySearches {
  const index: SearchIndex = createSearchIndex(chain, decode, watchlists);
  return {
    hold(search, seq) {
      index.upsert(followedBySearch(search, seq) as unknown as Rule);
      return index.get(search.id);
    },
    remove: (id) => index.remove(id),
    matchRecords: (input) => (index.size() === 0 ? [] : index.matchRecords(input)),
    watchlistSearches: () => index.watchlistSearches(),
  };
}

/**
 * The stage's saved-search index with the followedBy matches of sequence searches added to its
 * `matchRecords` (the sequence evaluator's `addMatches` writes both as sequence records).
 */
export function withFollowedBySearches<T extends SearchIndex>(
  index: T,
  sequences: Pick<FollowedBySearches, "matchRecords" | "watchlistSearches">,
): T {
  return {
    ...index,
    watchlistSearches: () => index.watchlistSearches() + sequences.watchlistSearches(),
    matchRecords: (input: InputRecord<SearchTopic>) => {
      const own = index.matchRecords(input);
      const followedBy = sequences.matchRecords(input);
      return followedBy.length === 0 ? own : [...own, ...followedBy];
    },
  };
}
