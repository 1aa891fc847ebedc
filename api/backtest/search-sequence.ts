/**
 * Backtests of saved searches with `sequence` (lib/searches/sequence.ts; `POST
 * /alerting/searches/test/`, docs/alerting.md "Sequences on saved searches"): the search's own query
 * selects the first records and its `sequence.followedBy` query (over the documents of
 * `followedBy.kind`) the followedBy records of each block, each compiled and evaluated as the match
 * stage does ({@link searchSelector}; the second search built by lib/searches/sequence.ts
 * `followedBySearch`, as pipeline/match/sequences/searches.ts holds it live), and both go through the
 * rule sequences' replay (lib/match/sequence-backtest.ts `sequenceBacktesterOf`: the stage's pairing,
 * span, newest first record and `maxPending`; one `match` per sequence that fired, entity
 * `sequence:<first id>:<followedBy id>` with `sequenceMatch`, `targetType` of the search's kind).
 *
 * The scan reads the documents of both kinds ({@link searchBacktestKinds}) beside every block of the
 * range (api/backtest/window-scan.ts). One limit of the scan: it orders every kind's documents by
 * one block-number field, and blocks carry theirs as `number`, the other kinds as `blockNumber`; so
 * a sequence with `block` on one side and another kind on the other is refused
 * ({@link searchSequenceUnsupported}).
 * @module
 */

import { backtestStoredFields } from "../../lib/match/backtest.js";
import { type SequenceBacktester, sequenceBacktesterOf } from "../../lib/match/sequence-backtest.js";
import type { RecordKind } from "../../lib/records.js";
import { ruleSequence } from "../../lib/rules/schema-sequence.js";
import { type StoredSearch, searchAsRule } from "../../lib/searches/model.js";
import { followedBySearch, isSearchSequence, type SearchSequence } from "../../lib/searches/sequence.js";
import type { ApiErrorDetail } from "../errors.js";
import { type SearchBacktesterOptions, searchSelector } from "./search-tester.js";

/** The saved search's `sequence` when it has one (a checked body), else null. */
function searchSequenceOf(search: object): SearchSequence | null {
  const seq = ruleSequence(search);
  return seq !== null && isSearchSequence(seq) ? seq : null;
}

/** Whether a checked saved-search body carries `sequence` (then its backtest is {@link createSearchSequenceBacktester}). */
export function isSequenceSearch(search: object): boolean {
  return searchSequenceOf(search) !== null;
}

/** The record kinds a saved-search backtest reads: the search's `kind` and, with `sequence`, `sequence.followedBy.kind`, each once. */
export function searchBacktestKinds(search: { config: { kind: RecordKind } }): RecordKind[] {
  const seq = searchSequenceOf(search);
  return [...new Set([search.config.kind, ...(seq === null ? [] : [seq.followedBy.kind])])];
}

/**
 * `CS_BACKTEST_TARGET_UNSUPPORTED` at `search.sequence.followedBy.kind` when the search's sequence
 * pairs `block` documents with documents of another kind (see the module notes); none otherwise.
 */
export function searchSequenceUnsupported(search: { config: { kind: RecordKind } }): ApiErrorDetail[] {
  const kinds = searchBacktestKinds(search);
  if (kinds.length < 2 || !kinds.includes("block")) return [];
  const path = "search.sequence.followedBy.kind";
  return [
    {
      code: "CS_BACKTEST_TARGET_UNSUPPORTED",
      path,
      message: `${path}: backtests cannot pair block documents with ${kinds.filter((k) => k !== "block").join(", ")} documents (the live match stage does); use the same kind on both sides to test it`,
    },
  ];
}

/**
 * Starts a backtest of a saved search with `sequence` (see the module notes); feed it every block of
 * the range (api/backtest/window-scan.ts). A block's `records` and `entities` count the documents
 * of both kinds (those of one kind once), `selected` the first plus the followedBy selections.
 * @throws {TypeError} when the search has no `sequence`; an Error when a query cannot be compiled
 *   (a checked search always compiles); RangeError (lib/match/sequences.ts) on a sequence validation refuses.
 */
export function createSearchSequenceBacktester(options: SearchBacktesterOptions): SequenceBacktester {
  const now = options.now ?? (() => new Date());
  const stored: StoredSearch = { ...options.search, ...backtestStoredFields(options.search, options.accountId, now) };
  const seq = searchSequenceOf(stored);
  if (seq === null) throw new TypeError("not a saved search with sequence");
  // Watchlist lookups in either query are answered under one prefetch per block (`blockWithLists`).
  const lookup = options.watchlists?.lookup;
  const selectFirst = searchSelector(stored, lookup);
  const selectFollowedBy = searchSelector(followedBySearch(stored, seq), lookup);
  const sameKind = seq.followedBy.kind === stored.config.kind;
  return sequenceBacktesterOf(
    searchAsRule(stored),
    (records) => {
      const first = selectFirst(records);
      const followedBy = selectFollowedBy(records);
      return {
        first,
        followedBy,
        records: first.records + (sameKind ? 0 : followedBy.records),
        entities: first.entities + (sameKind ? 0 : followedBy.entities),
      };
    },
    { ...options, now },
  );
}
