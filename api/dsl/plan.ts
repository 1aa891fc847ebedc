/**
 * The search API's query language: its caps, the accepted body keys and clauses, the validated
 * {@link SearchPlan}.
 * Moved out of ./validate.ts (issue 21: files of at most 600 lines); ./validate.ts re-exports it.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import type { ValidationResult as Result } from "../../lib/validation/problems.js";
import type { ApiErrorDetail } from "../errors.js";
import type { EsAggs } from "./aggs.js";

/** Caps of the query language. */
export const LIMITS = {
  /** Deepest clause nesting (the root clause is depth 1; bool children and nested queries add 1). */
  maxDepth: 8,
  /** Most clauses in one query (every clause object counts, compound ones included). */
  maxClauses: 256,
  /** Most values of one `terms` or `ids` clause. */
  maxValues: 1024,
  /** Most problems reported for one body (validation stops collecting after that). */
  maxErrors: 50,
  /** `size` of a search without `size`. */
  defaultSize: 10,
  /**
   * Largest `from + size`: Elasticsearch's `index.max_result_window` default
   * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/index-modules.html#index-max-result-window).
   */
  maxResultWindow: 10_000,
} as const;

/** The query clauses accepted, in documentation order. */
export const ALLOWED_CLAUSES = [
  "bool",
  "term",
  "terms",
  "range",
  "ids",
  "nested",
  "exists",
  "match_all",
  "match",
  "query_string",
  "simple_query_string",
] as const;

/** Keys accepted at the top level of a query body (the last four are extensions beyond the contract). */
export const BODY_KEYS = ["query", "sort", "size", "_source", "search_after", "aggs", "aggregations", "from"] as const;

/**
 * Elasticsearch search-body keys this API refuses on purpose, with the reason given in the error
 * message (all are `CS_BODY_INVALID` at the key's path). Any other unknown key is refused too.
 */
export const REFUSED_BODY_KEYS: Readonly<Record<string, string>> = {
  runtime_mappings: "runtime_mappings (scripted runtime fields) are not supported",
  script_fields: "script_fields are not supported",
  highlight: "highlight is not supported here (the Elasticsearch-compatible …/es/_search answers it)",
  suggest: "suggest is not supported",
  rescore: "rescore is not supported",
  profile: "profile is not supported",
  explain: "explain is not supported",
  stored_fields: "stored_fields are not supported; use _source",
  docvalue_fields: "docvalue_fields are not supported; use _source",
  fields: "fields is not supported here (the Elasticsearch-compatible …/es/_search answers it); use _source",
  post_filter: "post_filter is not supported; put the condition in query",
  min_score: "min_score is not supported",
  collapse: "collapse is not supported",
  pit: "pit is taken only by the Elasticsearch-compatible …/es/_search (open one with POST …/es/<index>/_pit); here use search_after, or size -1 for all matches",
  slice: "slice is not supported",
  knn: "knn is not supported",
  timeout: "timeout is set by the server",
  terminate_after: "terminate_after is not supported",
  track_total_hits: "track_total_hits is always true",
  track_scores: "track_scores is not supported",
  indices_boost: "indices_boost is not supported",
  version: "version is not supported",
  seq_no_primary_term: "seq_no_primary_term is not supported",
  stats: "stats is not supported",
  ext: "ext is not supported",
  rank: "rank is not supported",
  retriever: "retriever is not supported",
  script: "scripts are not supported",
};

/** The `CS_BODY_INVALID` message of an unknown or refused top-level body key. */
export function unknownKeyMessage(key: string): string {
  const why = Object.hasOwn(REFUSED_BODY_KEYS, key) ? `${REFUSED_BODY_KEYS[key]}; ` : `unknown key ${JSON.stringify(key)}; `;
  return `${why}allowed keys: ${BODY_KEYS.join(", ")}`;
}

/** Longest `search_after` array (one value per sort key). */
export const MAX_SORT_KEYS = 16;

/** A sanitized ES query clause (a one-key object). */
export type EsQuery = Record<string, unknown>;

/** Sort order. */
export type SortOrder = "asc" | "desc";

/** One sanitized ES sort clause, `{field: {order, unmapped_type?}}`. */
export type EsSortClause = Record<string, { order: SortOrder; unmapped_type?: string; numeric_type?: string }>;

/** A validated search request. */
export interface SearchPlan {
  /** Sanitized ES query; absent = match all. */
  query?: EsQuery;
  /** Sanitized ES sort; absent = unsorted (order undefined). */
  sort?: EsSortClause[];
  /** Records to return: 0..maxSize, or -1 for all matches. Default {@link LIMITS.defaultSize} (10). */
  size: number;
  /** Hits to skip (`from`), > 0 only: `from + size` ≤ {@link LIMITS.maxResultWindow}; absent = 0. */
  from?: number;
  /** `_source` paths to keep; absent (or empty) = the whole record. */
  source?: string[];
  /** `_source` paths to drop (`_source: {excludes}`), applied after {@link source}. */
  sourceExcludes?: string[];
  /** `_source: false`: hits carry no `_source` at all. */
  noSource?: true;
  /** Extension: the sort values of the last hit of the previous page (one per sort clause). */
  searchAfter?: Array<string | number | boolean | null>;
  /** Extension: sanitized aggregations (see api/dsl/aggs.ts). */
  aggs?: EsAggs;
}

/** Either the validated value or every problem found (at least one): lib/validation's result with API error details. */
export type ValidationResult<T> = Result<T, ApiErrorDetail>;

/** Options of {@link validateSearchBody}. */
export interface ValidateOptions {
  /** The requested record kinds (one, or several for `block,tx`); fields valid in any of them are accepted. */
  kinds: readonly RecordKind[];
  /** Largest positive `size` (config.api.maxSize). */
  maxSize: number;
  /**
   * The search runs on a point in time (Elasticsearch-compatible routes): hits' sort values then end
   * with Elasticsearch's implicit `_shard_doc` tiebreaker, so `search_after` may have one value more
   * than the sort (a number). Default false.
   */
  pit?: boolean;
}
