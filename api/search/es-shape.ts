/**
 * The answers of the Elasticsearch-compatible routes (api/routes/es/), in Elasticsearch 8's own
 * shapes, which the official clients (`@elastic/elasticsearch` 8, Python `elasticsearch` 8 and
 * `elasticsearch.dsl`, Go `go-elasticsearch/v8`, Java `elasticsearch-java` 8) parse. Pure conversions of the contract's answers:
 * - search: `hits.total` is `{value, relation: "eq"}` (exact: searches use `track_total_hits: true`),
 *   or the bare integer with `rest_total_hits_as_int=true`, as in Elasticsearch; hits have no
 *   `_type` nor `_parent` (Elasticsearch 8 has neither), keep `_routing` (the parent hash) and `sort`;
 *   `aggregations` as Elasticsearch returned them;
 * - errors: Elasticsearch's error shape `{"error": {"root_cause": [{type, reason}, …], "type",
 *   "reason", …}, "status"}`, with our stable code as `type` (so each client's exception carries
 *   the code: the Java client's `ElasticsearchException.error().type()`, Go's `types.ElasticsearchError`,
 *   the JS and Python clients' error message), every problem as a root cause, and the contract's
 *   `code`, `message`, `path` of the first problem kept inside `error`.
 * Source: the response bodies of
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-search.html and
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#common-options-error-options,
 * and the `ErrorResponse` / `ErrorCause` types of github.com/elastic/elasticsearch-specification
 * (`specification/_types/Base.ts`, `specification/_types/Errors.ts`): `error` and `status` required,
 * `ErrorCause.type` required, other keys free.
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
  /** The record, restricted to the requested `_source` paths; absent with `_source: false` or `stored_fields: "_none_"`. */
  _source?: Record<string, unknown>;
  /** `docvalue_fields` and `fields`: the requested fields' values. */
  fields?: Record<string, unknown>;
  /** `highlight`: the highlighted fragments by field. */
  highlight?: Record<string, string[]>;
  /** Sorted searches: the values to pass as `search_after`. */
  sort?: unknown[];
}

/** `hits.total` as Elasticsearch 8 writes it. */
export type EsTotal = { value: number; relation: "eq" | "gte" } | number;

/** A search answer as Elasticsearch 8 writes it. */
export interface EsSearchResponse {
  /** Searches on a point in time: its id (chainsift's opaque one). */
  pit_id?: string;
  /** Scroll searches: the id to pass to `_search/scroll` (chainsift's opaque one). */
  _scroll_id?: string;
  took: number;
  timed_out: boolean;
  _shards: ShardsInfo;
  hits: {
    /** `{value, relation}`, or the integer with `rest_total_hits_as_int=true`; absent with `track_total_hits: false`. */
    total?: EsTotal;
    max_score: number | null;
    hits: EsHit[];
  };
  aggregations?: Record<string, unknown>;
}

/** How {@link toEsSearchResponse} writes an answer. */
export interface EsAnswerOptions {
  /** `rest_total_hits_as_int=true`: `hits.total` as an integer. */
  totalAsInt?: boolean;
  /** `track_total_hits` (default true): see {@link esTotal}. */
  trackTotalHits?: boolean | number;
  /** `_source: false`: hits without `_source`. */
  noSource?: boolean;
  /** `stored_fields: "_none_"`: hits with only `_index`, `_id`, `_score` (and `sort`). */
  metadataOnly?: boolean;
  /** The scroll id to answer as `_scroll_id`. */
  scrollId?: string;
  /** The point-in-time id to answer as `pit_id`. */
  pitId?: string;
}

/**
 * `hits.total` of an exact total as Elasticsearch writes it for a `track_total_hits`
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-your-data.html#track-total-hits):
 * `true` (or absent): `{value: total, relation: "eq"}`; a number N: the same when total ≤ N, else
 * `{value: N, relation: "gte"}`; `false`: undefined (no `total`). With `asInt`, the value alone
 * (-1 for `false`, as Elasticsearch's `rest_total_hits_as_int` writes an untracked total).
 */
export function esTotal(total: number, track: boolean | number = true, asInt = false): EsTotal | undefined {
  if (track === false) return asInt ? -1 : undefined;
  const capped = typeof track === "number" && total > track;
  const value = capped ? track : total;
  return asInt ? value : { value, relation: capped ? "gte" : "eq" };
}

/**
 * Converts the contract's hits envelope into Elasticsearch 8's search answer (see module notes).
 * @param env - the envelope of `runSearch` (api/search/search.ts).
 * @param options - the answer's options ({@link EsAnswerOptions}); a boolean is `totalAsInt` (the former signature).
 */
export function toEsSearchResponse(env: HitsEnvelope, options: EsAnswerOptions | boolean = {}): EsSearchResponse {
  const o: EsAnswerOptions = typeof options === "boolean" ? { totalAsInt: options } : options;
  const hits = env.hits.hits.map((h): EsHit => {
    const hit: EsHit = { _index: h._index, _id: h._id, _score: h._score };
    if (o.metadataOnly) {
      if (h.sort) hit.sort = h.sort;
      return hit;
    }
    if (h._routing !== undefined) hit._routing = h._routing;
    if (!o.noSource) hit._source = h._source;
    if (h.fields) hit.fields = h.fields;
    if (h.highlight) hit.highlight = h.highlight;
    if (h.sort) hit.sort = h.sort;
    return hit;
  });
  const res: EsSearchResponse = {} as EsSearchResponse;
  if (o.pitId !== undefined) res.pit_id = o.pitId;
  if (o.scrollId !== undefined) res._scroll_id = o.scrollId;
  res.took = env.took;
  res.timed_out = env.timed_out;
  res._shards = env._shards;
  const total = esTotal(env.hits.total, o.trackTotalHits, o.totalAsInt);
  res.hits = { ...(total !== undefined ? { total } : {}), max_score: env.hits.max_score, hits };
  if (env.aggregations) res.aggregations = env.aggregations;
  return res;
}

/** One cause of an error as Elasticsearch writes it: `type` (our code) and `reason` (the message), plus the problem's `path`. */
export interface EsRootCause {
  /** The stable `CS_` code (Elasticsearch puts an exception name here). */
  type: string;
  /** The human-readable message. */
  reason: string;
  /** JSON path of the offending part of the request, or null (an extra field, as Elasticsearch adds `index`, `line`, …). */
  path: string | null;
}

/** The `error` object: Elasticsearch's `root_cause`, `type`, `reason`, plus the contract's `code`, `message`, `path` of the first problem. */
export type EsErrorDetail = ApiErrorDetail & EsRootCause & { root_cause: EsRootCause[] };

/** An error answer in Elasticsearch's shape (see module notes). */
export interface EsErrorBody {
  error: EsErrorDetail;
  /** The HTTP status, as Elasticsearch repeats it in its error bodies. */
  status: number;
}

/**
 * Writes the contract's error body in Elasticsearch's error shape (see module notes): every problem
 * becomes a `root_cause` item `{type: code, reason: message, path}`; `error` is the first one with
 * `root_cause` and the contract's `code`, `message`, `path`; `status` is the HTTP status. There is
 * no top-level `errors` array (the Java client cannot decode one next to `error`).
 * @param body - the contract's error body (api/errors.ts `errorBody`).
 * @param status - the HTTP status of the answer.
 */
export function toEsErrorBody(body: ErrorBody, status: number): EsErrorBody {
  const cause = (d: ApiErrorDetail): EsRootCause => ({ type: d.code, reason: d.message, path: d.path });
  const first = body.error;
  return {
    error: { root_cause: body.errors.map(cause), ...cause(first), code: first.code, message: first.message },
    status,
  };
}
