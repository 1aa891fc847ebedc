/**
 * The match stage's saved searches (lib/searches/model.ts): the enabled searches of the served
 * chain, each compiled once by the search DSL evaluator (es/evaluate.ts) from its `esQuery` (the
 * query as the search API sends it to Elasticsearch), grouped by record kind. Kept equal to the
 * searches' store by `rule-sync.ts`, like the rule index.
 *
 * {@link SearchIndex.matchRecords} answers, for the records of one topic, the (search, entity) pairs
 * the confirmation tracker takes: the entity is the indexed document (a `call` document per frame
 * of a trace) with `entityId` (its Elasticsearch `_id`), `blockHash` and `blockNumber`. The stage
 * wraps the index with the window evaluator (`windows/evaluator.ts` `watch`), so the matches of a
 * search with `window` or `absence` become window records instead of alerts, and with the sequence
 * evaluator (`sequences/evaluator.ts` `watch`, `sequences/searches.ts`), so those of a search with
 * `sequence` (and of its second query) become sequence records.
 *
 * A search whose query looks a field up in a watchlist (`terms` by watchlist, es/watchlist-lookup.ts)
 * is compiled with the match stage's membership lookup (lib/match/watchlist-membership.ts); while
 * the index holds one, the stage matches a batch's records through {@link matchSearches}, as it
 * matches rules with `In watchlist` conditions (`matchEntities`): memberships prefetched per batch,
 * so a member added through the API applies from the next batch on.
 * @module
 */
import { compileEsQuery, type DocPredicate } from "../../es/evaluate.js";
import { watchlistClauses } from "../../es/watchlist-lookup.js";
import { callDocuments } from "../../lib/chain/call-records.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { ChainId } from "../../lib/config/index.js";
import type { MatchedEntity } from "../../lib/match/alert-template.js";
import type { WatchlistLookup } from "../../lib/match/evaluate.js";
import type { WatchlistMembership } from "../../lib/match/watchlist-membership.js";
import { type RecordKind, recordId } from "../../lib/records.js";
import type { Rule } from "../../lib/rules/model.js";
import { type StoredSearch, searchAsRule, searchEntity } from "../../lib/searches/model.js";
import type { InputRecord } from "../kafka/consumer.js";

/** The topics whose records saved searches match. */
export type SearchTopic = "blocks" | "transactions" | "logs" | "events" | "traces";

/** The record kind of each topic the stage consumes. */
const KIND_OF_TOPIC: Readonly<Record<SearchTopic, RecordKind>> = {
  blocks: "block",
  transactions: "tx",
  logs: "log",
  events: "event",
  traces: "call",
};

interface Compiled {
  rule: Rule;
  matches: DocPredicate;
  kind: RecordKind;
  /** Whether the query looks a field up in a watchlist. */
  lists: boolean;
}

/** The compiled saved searches of one chain. */
export interface SearchIndex {
  /** Adds or replaces a search (given as the rule-store document); a disabled one or another chain's is removed. @throws when its query cannot be compiled. */
  upsert(search: Rule): void;
  remove(id: string): void;
  /** The rule-shaped snapshot of a held search. */
  get(id: string): Rule | undefined;
  /** Searches held. */
  size(): number;
  /** Held searches whose query looks a field up in a watchlist (0: no membership prefetch needed). */
  watchlistSearches(): number;
  /**
   * The matches of one consumed record (a `call` document per frame of a trace).
   * @throws {SyntaxError} for a trace whose `frameJson` is not JSON (the caller skips it).
   */
  matchRecords(input: InputRecord<SearchTopic>): Array<{ rule: Rule; entity: MatchedEntity }>;
}

/**
 * Creates an empty {@link SearchIndex} for a chain.
 * @param chain - the chain whose records it matches.
 * @param decode - the chain's Method/Call decoding (chain id and tokens) for call documents, as the index stage's.
 * @param watchlists - the membership lookup of `terms` lookups by watchlist (the search's account's lists); absent: they never hold.
 */
export function createSearchIndex(chain: ChainId, decode: DecodeMethodOptions, watchlists?: WatchlistLookup): SearchIndex {
  const byId = new Map<string, Compiled>();
  const byKind = new Map<RecordKind, Compiled[]>();
  let listed = 0;
  const rebuild = () => {
    byKind.clear();
    listed = 0;
    for (const c of byId.values()) {
      byKind.set(c.kind, [...(byKind.get(c.kind) ?? []), c]);
      if (c.lists) listed += 1;
    }
  };
  const onChain = (s: StoredSearch) =>
    s.technology === chain.technology && s.blockchain === chain.blockchain && s.network === chain.network;
  return {
    upsert(doc) {
      const search = doc as unknown as StoredSearch;
      const held = byId.get(search.id);
      if (held && held.rule.version > search.version) return;
      if (search.state !== "enabled" || !onChain(search)) {
        if (byId.delete(search.id)) rebuild();
        return;
      }
      const esQuery = search.config.esQuery ?? undefined;
      const options = watchlists && { accountId: search.accountId, watchlists };
      const compiled = compileEsQuery(esQuery, search.config.kind, "query", options);
      if (!compiled.ok) throw new Error(`saved search ${search.id}: ${compiled.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
      const lists = watchlistClauses(esQuery).length > 0;
      byId.set(search.id, { rule: searchAsRule(search), matches: compiled.value, kind: search.config.kind, lists });
      rebuild();
    },
    remove(id) {
      if (byId.delete(id)) rebuild();
    },
    get: (id) => byId.get(id)?.rule,
    size: () => byId.size,
    watchlistSearches: () => listed,
    matchRecords(input) {
      const kind = KIND_OF_TOPIC[input.topicKind];
      const searches = kind ? byKind.get(kind) : undefined;
      if (!kind || !searches || searches.length === 0) return [];
      const docs: object[] = input.topicKind === "traces" ? callDocuments(input.record, decode) : [input.record];
      const out: Array<{ rule: Rule; entity: MatchedEntity }> = [];
      for (const doc of docs as Array<Record<string, unknown>>) {
        const id = recordId(kind, doc as never);
        let entity: MatchedEntity | undefined;
        for (const s of searches) {
          if (!s.matches(doc, id)) continue;
          entity ??= searchEntity(kind, doc, id);
          out.push({ rule: s.rule, entity });
        }
      }
      return out;
    },
  };
}

/**
 * The saved-search matches of each record of a batch, in order: one synchronous pass when no held
 * search looks a field up in a watchlist, else {@link WatchlistMembership.runEach} (memberships
 * prefetched, the matching run again for the records that got a "yes"), as `matchEntities`
 * (lib/match/watchlist-membership.ts) does for rules.
 * @param index - the search index (wrapped as the stage wraps it), compiled with `membership.lookup`.
 * @param membership - the prefetcher.
 * @param inputs - the batch's records.
 * @param each - the matches of one record (pure: it may run more than once per record).
 * @throws when Redis fails during the prefetch.
 */
export async function matchSearches<T, R>(
  index: Pick<SearchIndex, "watchlistSearches">,
  membership: Pick<WatchlistMembership, "runEach">,
  inputs: readonly T[],
  each: (input: T) => R[],
): Promise<R[][]> {
  return index.watchlistSearches() === 0 ? inputs.map(each) : membership.runEach(inputs, each);
}
