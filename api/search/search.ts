/**
 * Runs a validated search ({@link SearchPlan}) against Elasticsearch and shapes the answer.
 * Sizes 0..maxSize use one `_search` request; size -1 is streamed by api/search/stream.ts.
 *
 * Every request carries the client-side timeout `requestTimeoutMs` and the same value as the ES
 * search `timeout` (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-search.html),
 * plus `track_total_hits: true` so that `hits.total` is exact.
 *
 * Extensions: `search_after` is passed on (sort values beyond the 64-bit range, which JSON numbers
 * cannot carry exactly, are sent as the decimal string of the nearest long, see
 * {@link esSearchAfter}); aggregations are passed on and their response is capped at
 * {@link AGG_LIMITS.maxBuckets} buckets ({@link checkBucketCap}).
 * @module
 */
import { unzipSync } from "node:zlib";
import { type Client, errors, type estypes, type TransportRequestOptions, type TransportResult } from "@elastic/elasticsearch";
import type { ChainId } from "../../lib/config.js";
import { PARENT_FIELD, type RecordKind } from "../../lib/records.js";
import { AGG_LIMITS, countBuckets } from "../dsl/aggs.js";
import type { SearchPlan } from "../dsl/validate.js";
import { apiError } from "../errors.js";
import { type HitsEnvelope, shapeEnvelope } from "./envelope.js";
import { prunedTarget } from "./partitions.js";
import type { BufferLease } from "./pool.js";
import { type Allocate, type RawEnvelope, shapeRawEnvelope } from "./raw.js";

/** Which indices a request searches. */
export interface SearchTarget {
  /** Requested kinds, in request order. */
  kinds: RecordKind[];
  /** Their index names (`indexName(chain, kind, prefix)`), same order. */
  indices: string[];
  /** The chain the indices belong to (for metrics); absent in tests that build targets by hand. */
  chain?: ChainId;
}

/** Options of {@link buildSearchRequest} and {@link runSearch}. */
export interface SearchOptions {
  /**
   * Ask Elasticsearch for `typed_keys`: each aggregation result keyed `<type>#<name>` at every
   * level (`sterms#by_to`, `histogram#per_block`, `sum#gas`), the type being the name of
   * Elasticsearch's internal result class. Default false (plain names, as the contract path answers).
   */
  typedKeys?: boolean;
}

const LONG_MAX = 2n ** 63n - 1n;
const LONG_MIN = -(2n ** 63n);

/**
 * The `search_after` values sent to ES. ES reports a missing value of a `long`/`date` sort key as
 * Long.MAX_VALUE / Long.MIN_VALUE, which a JSON number (an IEEE double) rounds to ±2^63, outside
 * the long range; such values (|v| ≥ 2^63) are sent as the decimal string of the nearest long,
 * which ES parses for long and double keys alike. Other values are sent unchanged.
 */
export function esSearchAfter(values: ReadonlyArray<string | number | boolean | null>): estypes.SortResults {
  return values.map((v) => {
    if (typeof v !== "number" || Math.abs(v) < 2 ** 63) return v;
    return (v > 0 ? LONG_MAX : LONG_MIN).toString();
  }) as estypes.SortResults;
}

/**
 * Refuses an aggregations response with more than {@link AGG_LIMITS.maxBuckets} buckets
 * (histograms without `hard_bounds` cannot be capped before searching).
 * @throws {ApiError} 400 CS_AGG_TOO_MANY_BUCKETS.
 */
export function checkBucketCap(aggregations: unknown): void {
  if (aggregations === undefined) return;
  const n = countBuckets(aggregations);
  if (n > AGG_LIMITS.maxBuckets) {
    throw apiError(
      "CS_AGG_TOO_MANY_BUCKETS",
      `the aggregations returned ${n} buckets; the cap is ${AGG_LIMITS.maxBuckets} (raise the interval, add hard_bounds, or narrow the query)`,
      "aggs",
    );
  }
}

/** The parent fields (`PARENT_FIELD` of lib/records.ts) of some kinds, without duplicates, in kind order. */
export function parentFields(kinds: readonly RecordKind[]): string[] {
  return [...new Set(kinds.map((k) => PARENT_FIELD[k]).filter((f) => f !== undefined))];
}

/** Per-request transport options: the client-side timeout in milliseconds. */
export function requestOptions(requestTimeoutMs: number): TransportRequestOptions {
  return { requestTimeout: requestTimeoutMs };
}

/**
 * The ES search request of a plan with `size >= 0`: the sanitized query and sort, `search_after`,
 * aggregations, `_source` includes (exactly the requested paths), `docvalue_fields` with the
 * kinds' parent fields ({@link parentFields}, for `_routing`/`_parent`), `track_total_hits: true`,
 * `timeout: "<ms>ms"`, and `ignore_unavailable` so that a kind whose index does not exist yet
 * answers with no hits instead of an error. With `options.typedKeys`, `typed_keys: true`: Elasticsearch
 * keys every aggregation result `<type>#<name>` (the Elasticsearch-compatible routes' `?typed_keys`).
 */
export function buildSearchRequest(
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions = {},
): estypes.SearchRequest {
  const req: estypes.SearchRequest = {
    index: target.indices,
    size: Math.max(plan.size, 0),
    track_total_hits: true,
    timeout: `${requestTimeoutMs}ms`,
    ignore_unavailable: true,
    allow_no_indices: true,
    // The aliases span block-range partitions (es/partitions.ts): the can-match phase, run whenever
    // more than one shard is searched, skips the shards a block range or number cannot match.
    pre_filter_shard_size: 1,
  };
  if (plan.query) req.query = plan.query as estypes.QueryDslQueryContainer;
  if (plan.sort) req.sort = plan.sort as estypes.Sort;
  if (plan.searchAfter) req.search_after = esSearchAfter(plan.searchAfter);
  if (plan.aggs) req.aggs = plan.aggs as Record<string, estypes.AggregationsAggregationContainer>;
  if (plan.source && plan.source.length > 0) req._source = [...plan.source];
  if (options.typedKeys && plan.aggs) req.typed_keys = true;
  const parents = parentFields(target.kinds);
  if (parents.length > 0) req.docvalue_fields = parents;
  return req;
}

/**
 * Runs a search with `size >= 0` and returns the hits envelope (with each hit's `sort` values when
 * the plan is sorted, and `aggregations` when it has any). The target's aliases are narrowed to the
 * partitions the query's block range can match (api/search/partitions.ts `prunedTarget`).
 * @throws the ES client's errors (`ResponseError`, `ConnectionError`, `TimeoutError`, …), which the
 * error handler maps to CS_QUERY_REJECTED / CS_BACKEND_UNAVAILABLE / CS_INTERNAL; `ApiError`
 * CS_AGG_TOO_MANY_BUCKETS from {@link checkBucketCap}.
 */
export async function runSearch(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions = {},
): Promise<HitsEnvelope> {
  const pruned = await prunedTarget(es, target, plan.query);
  const res = await es.search(buildSearchRequest(plan, pruned, requestTimeoutMs, options), requestOptions(requestTimeoutMs));
  checkBucketCap(res.aggregations);
  return shapeEnvelope(res, shapeOptions(plan));
}

/** Largest response read into the shared scratch buffer (larger ones get a buffer of their own), in bytes. */
const SCRATCH_MAX_BYTES = 16 * 1024 * 1024;
let scratch = Buffer.allocUnsafeSlow(0);

/**
 * Sends a search and hands ES's response body, as bytes, to `use` (the client's `asStream` mode:
 * the body is neither decoded nor parsed). The bytes are only valid during the synchronous call
 * of `use`: responses up to {@link SCRATCH_MAX_BYTES} are gathered in one shared scratch buffer
 * (no new large buffer per request, see api/search/pool.ts for why that matters).
 * @throws the client's `ResponseError` for a 4xx/5xx answer (its body parsed, as the client itself
 *   would throw it), and its connection/timeout errors; whatever `use` throws.
 */
export async function withSearchBytes<T>(
  es: Client,
  req: estypes.SearchRequest,
  requestTimeoutMs: number,
  use: (bytes: Buffer) => T,
): Promise<T> {
  const res = (await es.search(req, { ...requestOptions(requestTimeoutMs), asStream: true, meta: true })) as unknown as TransportResult<
    AsyncIterable<Buffer>,
    unknown
  >;
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of res.body) {
    chunks.push(chunk);
    length += chunk.length;
  }
  let bytes: Buffer;
  if (length > SCRATCH_MAX_BYTES) bytes = Buffer.concat(chunks, length);
  else {
    if (scratch.length < length) scratch = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(length)));
    let at = 0;
    for (const c of chunks) at += c.copy(scratch, at);
    bytes = scratch.subarray(0, length);
  }
  if (/gzip|deflate/i.test(String(res.headers?.["content-encoding"] ?? ""))) bytes = unzipSync(bytes);
  if (res.statusCode !== null && res.statusCode >= 400) {
    const text = bytes.toString("utf8");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    throw new errors.ResponseError({ ...res, body } as TransportResult<unknown, unknown>);
  }
  return use(bytes);
}

/**
 * Sends a search and returns a copy of ES's response body (see {@link withSearchBytes}).
 * @throws as {@link withSearchBytes}.
 */
export function searchBytes(es: Client, req: estypes.SearchRequest, requestTimeoutMs: number): Promise<Buffer> {
  return withSearchBytes(es, req, requestTimeoutMs, (bytes) => Buffer.from(bytes));
}

/**
 * Runs a search with `size >= 0` and returns the hits envelope as JSON, the same envelope as
 * {@link runSearch}. Without aggregations the envelope is written from ES's response bytes
 * ({@link shapeRawEnvelope}: records copied, not parsed) into a buffer from `allocate` (e.g. a
 * {@link BufferLease} of api/search/pool.ts); with aggregations, or when the response does not have
 * the layout that path expects, the response is parsed and shaped (and `allocate` is not used).
 * @throws as {@link runSearch}.
 */
export async function runSearchText(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  allocate?: Allocate,
): Promise<RawEnvelope> {
  const pruned = await prunedTarget(es, target, plan.query);
  return withSearchBytes(es, buildSearchRequest(plan, pruned, requestTimeoutMs), requestTimeoutMs, (bytes) => {
    if (!plan.aggs) {
      const fast = shapeRawEnvelope(bytes, allocate);
      if (fast) return fast;
    }
    const res = JSON.parse(bytes.toString("utf8")) as estypes.SearchResponse<unknown>;
    checkBucketCap(res.aggregations);
    const envelope = shapeEnvelope(res, shapeOptions(plan));
    return { body: JSON.stringify(envelope), total: envelope.hits.total, hits: envelope.hits.hits.length, path: "parsed" };
  });
}

function shapeOptions(plan: SearchPlan): { source?: string[]; sortValues?: boolean } {
  const opts: { source?: string[]; sortValues?: boolean } = {};
  if (plan.source) opts.source = plan.source;
  if (plan.sort) opts.sortValues = true;
  return opts;
}
