/**
 * Every error code the API answers with, its HTTP status and meaning, plus the
 * {@link ApiError} class the routes throw and the JSON error body shape.
 *
 * Error body (always `application/json`):
 * ```json
 * { "error": { "code": "CS_QUERY_UNKNOWN_FIELD", "message": "…", "path": "query.term.foo" },
 *   "errors": [ { "code": "…", "message": "…", "path": "…" } ] }
 * ```
 * `error` is the first problem, `errors` all of them (at least one). `path` is the JSON path of
 * the offending part of the request body (`query.bool.filter[1].term`, `size`, `sort[0]`), of a
 * path parameter (`params.hash`), or null when the problem is not tied to a part of the request.
 * The codes are stable: clients may switch on them; messages may change.
 * @module
 */

import { ACCOUNT_ERROR_CODES, type AccountErrorCode } from "../lib/accounts/model.js";
import { ChainsiftError } from "../lib/errors.js";
import { BACKTEST_ERROR_CODES } from "./backtest/errors.js";
import { ABIS_ERROR_CODES } from "./routes/abis/errors.js";
import { RULES_ERROR_CODES } from "./routes/rules/errors.js";
import { WATCHLISTS_ERROR_CODES } from "./routes/watchlists/errors.js";

/** One documented error code: HTTP status and a one-line description (rendered in docs/api.md). */
export interface ErrorCodeInfo {
  /** HTTP status code answered with this code. */
  status: number;
  /** Human-readable meaning. */
  description: string;
}

/** Error codes of the API, code → {status, description}. Stable: never renamed. */
export const ERROR_CODES = {
  CS_AUTH_REQUIRED: {
    status: 401,
    description:
      "Missing, malformed, unknown, revoked or expired bearer token, a token of a disabled account, or a wrong admin token (the same answer for all).",
  },
  CS_RATE_LIMITED: {
    status: 429,
    description:
      "The token (or, for failed authentications, the client address) used up its request budget; retry after Retry-After seconds.",
  },
  CS_ROUTE_NOT_FOUND: { status: 404, description: "No route matches the method and path." },
  CS_UNKNOWN_CHAIN: {
    status: 404,
    description: "The <technology>/<blockchain>/<network> path segments are not one of the chains this deployment serves.",
  },
  CS_UNKNOWN_KIND: {
    status: 404,
    description:
      "A record kind in the path is not one of block, tx, log, event, or a kind is repeated; on the Elasticsearch-compatible routes, an index name that names no kind of the path's chain (Elasticsearch: index_not_found_exception), or an index pattern that matches none where an index is required (searches, allow_no_indices=false).",
  },
  CS_NOT_FOUND: {
    status: 404,
    description: "The requested record does not exist (GET block by hash; GET …/es/<index>/_source/<id>).",
  },
  CS_HASH_INVALID: { status: 400, description: "A hash path parameter is not 0x followed by 64 hex digits." },
  CS_BODY_INVALID: {
    status: 400,
    description:
      "The body is not valid JSON, or is JSON but not an object (null, an array, a number, a string, a boolean), or (search) has a top-level key other than query, sort, size, _source, search_after, aggs/aggregations (e.g. from, highlight, script_fields, runtime_mappings).",
  },
  CS_URL_INVALID: {
    status: 400,
    description: "The URL path has bad percent-encoding (e.g. /%ZZ, or %-escapes that are not UTF-8); answered before authentication.",
  },
  CS_URL_TOO_LONG: {
    status: 414,
    description: "A path segment is longer than 100 characters (the router's limit on a path parameter); answered before authentication.",
  },
  CS_BAD_REQUEST: {
    status: 400,
    description: "The request is malformed in a way not covered by another code (e.g. a bad header, or bytes that are not HTTP/1.1).",
  },
  CS_REQUEST_TIMEOUT: {
    status: 408,
    description:
      "The request's headers (CHAINSIFT_API_HEADERS_TIMEOUT_MS) or the whole request with its body (CHAINSIFT_API_REQUEST_TIMEOUT_MS) did not arrive in time; the connection is closed.",
  },
  CS_HEADERS_TOO_LARGE: {
    status: 431,
    description:
      "The request headers exceed the server's header size limit (Node's --max-http-header-size, 16 KiB by default); the connection is closed.",
  },
  CS_BODY_TOO_LARGE: { status: 413, description: "The body exceeds the server's body limit (1 MiB)." },
  CS_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    description:
      "The body's Content-Type is not application/json (or, on the Elasticsearch-compatible routes, another type they take), or a compatible-with major other than 8 or 9.",
  },
  CS_QUERY_INVALID: {
    status: 400,
    description: "A query clause has a bad shape (wrong type, unknown option, missing value, wrong field type for the clause).",
  },
  CS_QUERY_UNSUPPORTED_CLAUSE: {
    status: 400,
    description:
      "A query clause outside the allowlist (e.g. script, script_score, function_score, wildcard, regexp, prefix, fuzzy, terms lookup).",
  },
  CS_QUERY_UNKNOWN_FIELD: {
    status: 400,
    description: "A field is not mapped for the requested record kind(s), or is stored but not searchable.",
  },
  CS_QUERY_NESTED_FIELD: {
    status: 400,
    description:
      "A field of a nested object (e.g. args.name) used outside a nested query on its path, or a field outside the path inside a nested query.",
  },
  CS_QUERY_LEADING_WILDCARD: {
    status: 400,
    description:
      "A query_string term starts with a wildcard (*foo, ?foo), or allow_leading_wildcard is true: such terms scan every term of the field.",
  },
  CS_QUERY_REGEXP: {
    status: 400,
    description:
      "A query_string has a regular expression (/…/, or an unescaped / outside a phrase); regular expressions are not supported.",
  },
  CS_QUERY_SLOP_TOO_LARGE: {
    status: 400,
    description: 'A query_string or simple_query_string phrase proximity ("a b"~N) or phrase_slop is above 10.',
  },
  CS_QUERY_TOO_DEEP: { status: 400, description: "The query tree is nested deeper than 8 clauses." },
  CS_QUERY_TOO_MANY_CLAUSES: { status: 400, description: "The query has more than 256 clauses." },
  CS_QUERY_TOO_MANY_VALUES: { status: 400, description: "A terms or ids clause has more than 1024 values." },
  CS_QUERY_WATCHLIST_TOO_LARGE: {
    status: 400,
    description: "A terms clause names a watchlist of more than 1,000,000 members, more than a search expands.",
  },
  CS_SORT_INVALID: {
    status: 400,
    description:
      "sort is not a field name, a map (or an array of names and maps) from a sortable field to asc/desc or {order}, or names a field that cannot be sorted on (including _script).",
  },
  CS_SIZE_INVALID: { status: 400, description: "size is not an integer, or is outside -1 and 0..maxSize." },
  CS_SOURCE_INVALID: {
    status: 400,
    description:
      "_source is not true/false, a mapped field path, an array of them, or {includes, excludes} of them (paths of the record or prefixes of them; no wildcards).",
  },
  CS_SEARCH_AFTER_INVALID: {
    status: 400,
    description: "search_after (extension) is not an array of one value per sort key, is given without sort, or is combined with size -1.",
  },
  CS_AGG_UNSUPPORTED: {
    status: 400,
    description: "An aggregation type outside the allowlist (e.g. scripted_metric, bucket_script, geo_distance).",
  },
  CS_AGG_TOO_DEEP: {
    status: 400,
    description: "Aggregations nest deeper than 5 levels (top-level aggregations are level 1).",
  },
  CS_AGG_SIZE_TOO_LARGE: {
    status: 400,
    description:
      "An aggregation asks for too much at once: top_hits size above 100, composite size above 1000, more than 20 percentiles percents or percentile_ranks values.",
  },
  CS_AGG_BUCKETS_PATH: {
    status: 400,
    description:
      "A pipeline aggregation's buckets_path (or a bucket_sort sort path) does not name a sibling metric aggregation (through single-bucket aggregations with >), or _count.",
  },
  CS_AGG_INVALID: {
    status: 400,
    description:
      "An aggregation (extension) has a bad name or shape, an unknown option, or a field it cannot use (unknown, text, nested outside a nested aggregation of its path, or not numeric where a number is needed), or a pipeline under the wrong parent.",
  },
  CS_AGG_TOO_MANY_BUCKETS: {
    status: 400,
    description:
      "The aggregations would return more buckets than the cap (10000 in all, terms size at most 1000, at most 100 ranges or filters), or there are more than 30 aggregations.",
  },
  CS_RESULT_WINDOW_TOO_LARGE: {
    status: 400,
    description:
      "from + size exceeds 10000 (Elasticsearch's index.max_result_window), or from is not an integer >= 0; page deeper with sort + search_after, or with a point in time (_pit) or a scroll.",
  },
  CS_KEEP_ALIVE_INVALID: {
    status: 400,
    description:
      "A scroll or point-in-time keep-alive (scroll, keep_alive, pit.keep_alive) is missing where required, is not an Elasticsearch time value (30s, 5m, 1h, …), or exceeds CHAINSIFT_SEARCH_CONTEXT_MAX_KEEP_ALIVE_MS (default 1h).",
  },
  CS_CONTEXT_NOT_FOUND: {
    status: 404,
    description:
      "A scroll id or point-in-time id is unknown, expired, closed, of another chain, or was opened by another account (all answer the same).",
  },
  CS_CONTEXT_LIMIT: {
    status: 429,
    description:
      "The account already has CHAINSIFT_SEARCH_CONTEXTS_MAX open scrolls and points in time (default 20); close one (DELETE _search/scroll, DELETE _pit) or let it expire.",
  },
  CS_QUERY_REJECTED: {
    status: 400,
    description: "Elasticsearch rejected the (validated) query, e.g. a value of the wrong type for a field.",
  },
  CS_ACCOUNT_NOT_FOUND: { status: 404, description: "Admin endpoints: no account has that id." },
  CS_TOKEN_NOT_FOUND: { status: 404, description: "Admin endpoints: no token has that id." },
  CS_ACCOUNT_INVALID: { status: 400, description: "Admin endpoints: bad account name or e-mail (path names the field)." },
  CS_TOKEN_INVALID: { status: 400, description: "Admin endpoints: bad token name, or expiresAt not an ISO 8601 time in the future." },
  CS_ACCOUNT_DISABLED: { status: 409, description: "Admin endpoints: a token cannot be issued to a disabled account." },
  CS_BACKEND_UNAVAILABLE: {
    status: 503,
    description:
      "Elasticsearch, Redis (accounts, rate limits) or, for a state-rule backtest, the chain's JSON-RPC node is unreachable, overloaded or timed out.",
  },
  CS_INTERNAL: { status: 500, description: "Unexpected server error (details are logged, never returned)." },
  ...RULES_ERROR_CODES,
  ...BACKTEST_ERROR_CODES,
  ...ABIS_ERROR_CODES,
  ...WATCHLISTS_ERROR_CODES,
} as const satisfies Record<string, ErrorCodeInfo>;

/** One of the stable error codes of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The HTTP status the API answers for each `AccountErrorCode` of lib/accounts/model.ts (from {@link ERROR_CODES}). */
export const ACCOUNT_ERROR_HTTP_STATUS: Readonly<Record<AccountErrorCode, number>> = Object.fromEntries(
  ACCOUNT_ERROR_CODES.map((code) => [code, ERROR_CODES[code].status]),
) as Record<AccountErrorCode, number>;

/** One problem found in a request. */
export interface ApiErrorDetail {
  /** Stable code, see {@link ERROR_CODES}. */
  code: ErrorCode;
  /** Human-readable explanation; not stable. */
  message: string;
  /** JSON path of the offending part of the request (e.g. `query.bool.filter[1].term`), or null. */
  path: string | null;
}

/** The JSON body of every error answer. */
export interface ErrorBody {
  /** The first (most relevant) problem. */
  error: ApiErrorDetail;
  /** All problems found, `errors[0]` equals `error`. */
  errors: ApiErrorDetail[];
}

/**
 * An error with a stable code, thrown by routes and plugins and rendered by the error handler
 * (api/plugins/errors.ts). The HTTP status is taken from {@link ERROR_CODES} unless given.
 */
export class ApiError extends ChainsiftError<ErrorCode> {
  /** HTTP status answered. */
  readonly statusCode: number;
  /** Code of the first problem. */
  readonly code: ErrorCode;
  /** JSON path of the first problem, or null. */
  readonly path: string | null;
  /** All problems (at least one). */
  readonly details: ApiErrorDetail[];

  /**
   * @param details - one or more problems; the first one gives `code`, `path` and the status.
   * @throws {RangeError} when `details` is empty.
   */
  constructor(details: ApiErrorDetail | ApiErrorDetail[]) {
    const list = Array.isArray(details) ? details : [details];
    const first = list[0];
    if (!first) throw new RangeError("ApiError needs at least one detail");
    super(first.message);
    this.name = "ApiError";
    this.code = first.code;
    this.path = first.path;
    this.details = list;
    this.statusCode = ERROR_CODES[first.code].status;
  }
}

/** Shorthand for `new ApiError({code, message, path})`. */
export function apiError(code: ErrorCode, message: string, path: string | null = null): ApiError {
  return new ApiError({ code, message, path });
}

/** Builds the {@link ErrorBody} of one or more problems (the first must exist). */
export function errorBody(details: ApiErrorDetail[]): ErrorBody {
  const first = details[0] ?? { code: "CS_INTERNAL", message: "internal error", path: null };
  return { error: first, errors: details.length > 0 ? details : [first] };
}
