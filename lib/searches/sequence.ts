/**
 * The `sequence` extension of a saved search (issue 33; docs/alerting.md, "Sequences on saved
 * searches"; docs/rules.md): a rule's `sequence` (lib/rules/schema-sequence.ts) whose second step is
 * a second search query instead of a target map. The search's own `query` selects the *first*
 * records, `sequence.followedBy.query` (over the records of `sequence.followedBy.kind`) the
 * *followedBy* records; `correlate` names fields of the indexed documents (the search API's
 * documents, read as a window's `groupBy` reads them: lib/match/window-records.ts `fieldAt`).
 *
 * The match stage evaluates it with the rules' sequence evaluator (pipeline/match/sequences/):
 * same arithmetic, state, reorg and restart guarantees, same alert (`sequenceMatch`).
 * @module
 */
import { type Static, Type } from "typebox";
import { SequenceSchema } from "../rules/schema-sequence.js";
import { component } from "../validation/component.js";
import { SEARCH_KINDS, type StoredSearch } from "./model.js";

/** `sequence.followedBy` of a saved search: the second step's record kind and search DSL query (and, service-added, its compiled form). */
export const SearchSequenceFollowedBySchema = Type.Object(
  {
    kind: Type.Enum(SEARCH_KINDS, { description: "The record kind the second query searches" }),
    query: Type.Object({}, { additionalProperties: true, description: "The second step's search DSL query (the search API's allowlist)" }),
    esQuery: Type.Optional(
      Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
        description:
          "Service-added: the query as the search API sends it to Elasticsearch (the match stage evaluates it); ignored on input",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The `sequence` member of a saved search: a rule's (`RuleSequence`) with {@link SearchSequenceFollowedBySchema} as `followedBy`. */
export const SearchSequenceSchema = Type.Object(
  { ...SequenceSchema.properties, followedBy: SearchSequenceFollowedBySchema },
  {
    additionalProperties: false,
    description:
      "Alert when a record the followedBy query selects follows a record the search's query selects, same correlate value, within the span",
    ...component("SearchSequence"),
  },
);

/** A saved search's `sequence` member as stored (with `followedBy.esQuery`). */
export type SearchSequence = Static<typeof SearchSequenceSchema>;

/** Whether a `sequence` member (a rule's or a saved search's) is a saved search's: its `followedBy` has a `kind`. */
export function isSearchSequence(seq: object): seq is SearchSequence {
  const f = (seq as { followedBy?: unknown }).followedBy;
  return typeof f === "object" && f !== null && "kind" in f;
}

/**
 * The saved search whose query is a sequence's second step: `search` (a stored search, or the match
 * stage's snapshot of one) with `config` the followedBy kind, query and compiled query and the
 * search's actions — same id, account and version. The match stage holds it in a search index of
 * its own (pipeline/match/sequences/searches.ts) and saved-search backtests select with it
 * (api/backtest/search-sequence.ts), so both select the same followedBy records.
 */
export function followedBySearch(search: { config: { alerts: StoredSearch["config"]["alerts"] } }, seq: SearchSequence): StoredSearch {
  return {
    ...search,
    config: {
      kind: seq.followedBy.kind,
      query: seq.followedBy.query,
      esQuery: seq.followedBy.esQuery ?? null,
      alerts: search.config.alerts,
    },
  } as unknown as StoredSearch;
}
