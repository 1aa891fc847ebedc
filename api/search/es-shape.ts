/**
 * The answers of the Elasticsearch-compatible routes (api/routes/es/), in Elasticsearch 8's own
 * shapes, which the official clients (`@elastic/elasticsearch` 8, Python `elasticsearch` 8 and
 * `elasticsearch.dsl`) parse. Pure conversions of the contract's answers:
 * - search: `hits.total` is `{value, relation: "eq"}` (exact: searches use `track_total_hits: true`),
 *   or the bare integer with `rest_total_hits_as_int=true`, as in Elasticsearch; hits have no
 *   `_type` nor `_parent` (Elasticsearch 8 has neither), keep `_routing` (the parent hash) and `sort`;
 *   `aggregations` as Elasticsearch returned them;
 * - errors: the contract's error body plus what Elasticsearch's error answers have and the clients
 *   read: `error.type` (our stable code, so the clients' error message is the code),
 *   `error.reason` (the message) and the top-level `status`.
 * Source: the response bodies of
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-search.html and
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#common-options-error-options.
 * @module
 */
import type { ApiErrorDetail, ErrorBody } from "../errors.js";
import type { HitsEnvelope, ShardsInfo } from "./envelope.js";

/** One hit as Elasticsearch 8 writes it. */
export interface EsHit {
  /** ES index name, e.g. `ethereum-ethereum-mainnet-tx`. */
  _index: string;
  /** Record id. */
  _id: string;
  /** Relevance score (1 for filter-only queries, as in the contract's envelope). */
  _score: number | null;
  /** Hash of the containing block (tx) or transaction (log, event); absent for blocks. */
  _routing?: string;
  /** The record, restricted to the requested `_source` paths. */
  _source: Record<string, unknown>;
  /** Sorted searches: the values to pass as `search_after`. */
  sort?: unknown[];
}

/** A search answer as Elasticsearch 8 writes it. */
export interface EsSearchResponse {
  took: number;
  timed_out: boolean;
  _shards: ShardsInfo;
  hits: {
    /** `{value, relation: "eq"}`, or the integer with `rest_total_hits_as_int=true`. */
    total: { value: number; relation: "eq" } | number;
    max_score: number | null;
    hits: EsHit[];
  };
  aggregations?: Record<string, unknown>;
}

/**
 * Converts the contract's hits envelope into Elasticsearch 8's search answer (see module notes).
 * @param env - the envelope of `runSearch` (api/search/search.ts).
 * @param totalAsInt - `rest_total_hits_as_int=true`: `hits.total` as an integer.
 */
export function toEsSearchResponse(env: HitsEnvelope, totalAsInt = false): EsSearchResponse {
  const hits = env.hits.hits.map(
    (h): EsHit => ({
      _index: h._index,
      _id: h._id,
      _score: h._score,
      ...(h._routing !== undefined ? { _routing: h._routing } : {}),
      _source: h._source,
      ...(h.sort ? { sort: h.sort } : {}),
    }),
  );
  const res: EsSearchResponse = {
    took: env.took,
    timed_out: env.timed_out,
    _shards: env._shards,
    hits: {
      total: totalAsInt ? env.hits.total : { value: env.hits.total, relation: "eq" },
      max_score: env.hits.max_score,
      hits,
    },
  };
  if (env.aggregations) res.aggregations = env.aggregations;
  return res;
}

/** An error detail with Elasticsearch's `type` (the code) and `reason` (the message) added. */
export type EsErrorDetail = ApiErrorDetail & { type: string; reason: string };

/** The contract's error body with Elasticsearch's error fields added (see module notes). */
export interface EsErrorBody {
  error: EsErrorDetail;
  errors: ApiErrorDetail[];
  /** The HTTP status, as Elasticsearch repeats it in its error bodies. */
  status: number;
}

/**
 * Adds Elasticsearch's error fields to an error body (see module notes); `code`, `message`,
 * `path` and `errors` stay as they are.
 * @param body - the contract's error body (api/errors.ts `errorBody`).
 * @param status - the HTTP status of the answer.
 */
export function toEsErrorBody(body: ErrorBody, status: number): EsErrorBody {
  return { error: { ...body.error, type: body.error.code, reason: body.error.message }, errors: body.errors, status };
}
