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
import type { ChainId } from "../../lib/config/index.js";
import { PARENT_FIELD, type RecordKind } from "../../lib/records.js";
import { AGG_LIMITS, countBuckets } from "../dsl/aggs.js";
import type { EsFieldAndFormat, EsHighlight } from "../dsl/hit-parts.js";
import type { SearchPlan } from "../dsl/validate.js";
import { apiError } from "../errors.js";
import { type HitsEnvelope, type ShapeOptions, shapeEnvelope } from "./envelope.js";
import { prunedTarget } from "./partitions.js";
import type { BufferLease } from "./pool.js";
import { type Allocate, type RawEnvelope, type RawEsFormat, shapeRawEnvelope } from "./raw.js";
import type { CacheUse } from "./result-cache.js";

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
  /**
   * Search this Elasticsearch point in time (its own id and keep-alive) instead of the target's
   * indices: the request then names no index and no index options, as Elasticsearch requires, and
   * is not pruned (the point in time fixes the indices).
   */
  pit?: { id: string; keepAlive?: string };
  /** Open an Elasticsearch scroll with this keep-alive (`1m`, …): the response has `_scroll_id`. */
  scroll?: string;
  /**
   * `track_total_hits: false` (the Elasticsearch-compatible routes): Elasticsearch counts no total.
   * Default (and any other value): an exact total.
   */
  noTotal?: boolean;
  /** More fields to ask as `docvalue_fields` (the Elasticsearch-compatible routes' `docvalue_fields`), answered in each hit's `fields`. */
  docvalueFields?: readonly string[];
  /** Elasticsearch's `fields` (the Elasticsearch-compatible routes, api/dsl/hit-parts.ts): answered in each hit's `fields`. */
  fields?: readonly EsFieldAndFormat[];
  /** Elasticsearch's `highlight` (the Elasticsearch-compatible routes, api/dsl/hit-parts.ts): answered in each hit's `highlight`. */
  highlight?: EsHighlight;
  /**
   * `request_cache: false` (the client's `?request_cache=false`): sent to Elasticsearch, whose shard
   * request cache then skips the search, and keeps it out of the API's result cache too.
   */
  noRequestCache?: boolean;
  /** Answer a search without hits through this result cache (api/search/result-cache.ts); its outcome is set there. */
  cache?: CacheUse;
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

/**
 * The `_source` of the ES request of a plan: `false` (`_source: false`), the includes, includes and
 * excludes, or undefined (the whole record).
 */
export function esSource(plan: Pick<SearchPlan, "source" | "sourceExcludes" | "noSource">): estypes.SearchSourceConfig | undefined {
  if (plan.noSource) return false;
  if (plan.sourceExcludes) return { excludes: [...plan.sourceExcludes], ...(plan.source ? { includes: [...plan.source] } : {}) };
  if (plan.source && plan.source.length > 0) return [...plan.source];
  return undefined;
}

/** Per-request transport options: the client-side timeout in milliseconds. */
export function requestOptions(requestTimeoutMs: number): TransportRequestOptions {
  return { requestTimeout: requestTimeoutMs };
}

/**
 * The ES search request of a plan with `size >= 0`: `from`, the sanitized query and sort, `search_after`,
 * aggregations, `_source` (`false`, the includes, or includes and excludes), `docvalue_fields` with the
 * kinds' parent fields ({@link parentFields}, for `_routing`/`_parent`), `track_total_hits: true`,
 * `timeout: "<ms>ms"`, and `ignore_unavailable` so that a kind whose index does not exist yet
 * answers with no hits instead of an error (with `options.pit`: the point in time instead of the
 * indices and their options; with `options.scroll`: `scroll`). With `options.typedKeys`, `typed_keys: true`: Elasticsearch
 * keys every aggregation result `<type>#<name>` (the Elasticsearch-compatible routes' `?typed_keys`).
 */
export function buildSearchRequest(
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions = {},
): estypes.SearchRequest {
  const req: estypes.SearchRequest = options.pit
    ? { pit: { id: options.pit.id, ...(options.pit.keepAlive ? { keep_alive: options.pit.keepAlive } : {}) } }
    : {
        index: target.indices,
        ignore_unavailable: true,
        allow_no_indices: true,
      };
  req.size = Math.max(plan.size, 0);
  req.track_total_hits = options.noTotal !== true;
  req.timeout = `${requestTimeoutMs}ms`;
  // The aliases span block-range partitions (es/partitions.ts): the can-match phase, run whenever
  // more than one shard is searched, skips the shards a block range or number cannot match.
  req.pre_filter_shard_size = 1;
  if (options.scroll) req.scroll = options.scroll;
  if (options.noRequestCache) req.request_cache = false;
  if (plan.from) req.from = plan.from;
  if (plan.query) req.query = plan.query as estypes.QueryDslQueryContainer;
  if (plan.sort) req.sort = plan.sort as estypes.Sort;
  if (plan.searchAfter) req.search_after = esSearchAfter(plan.searchAfter);
  if (plan.aggs) req.aggs = plan.aggs as Record<string, estypes.AggregationsAggregationContainer>;
  const source = esSource(plan);
  if (source !== undefined) req._source = source;
  if (options.typedKeys && plan.aggs) req.typed_keys = true;
  const docvalues = [...new Set([...parentFields(target.kinds), ...(options.docvalueFields ?? [])])];
  if (docvalues.length > 0) req.docvalue_fields = docvalues;
  if (options.fields && options.fields.length > 0) req.fields = options.fields.map((f) => ({ ...f }));
  if (options.highlight) req.highlight = options.highlight as estypes.SearchHighlight;
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
  return (await runSearchWithIds(es, plan, target, requestTimeoutMs, options)).envelope;
}

/** A search's envelope and the context ids Elasticsearch answered with it. */
export interface SearchWithIds {
  envelope: HitsEnvelope;
  /** `_scroll_id` of a search with {@link SearchOptions.scroll}. */
  scrollId?: string;
  /** `pit_id` of a search with {@link SearchOptions.pit} (it may differ from the one sent). */
  pitId?: string;
}

/**
 * {@link runSearch}, also returning the scroll or point-in-time id of the response. A search on a
 * point in time is not pruned (its indices are fixed).
 * @throws as {@link runSearch}.
 */
export async function runSearchWithIds(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions = {},
): Promise<SearchWithIds> {
  const pruned = options.pit ? target : await prunedTarget(es, target, plan.query);
  const req = buildSearchRequest(plan, pruned, requestTimeoutMs, options);
  // Searches with hits keep the client's own parsing (the cache takes size 0 only).
  const res =
    options.cache && req.size === 0
      ? await withSearchBytes(
          es,
          req,
          requestTimeoutMs,
          (bytes) => JSON.parse(bytes.toString("utf8")) as estypes.SearchResponse<unknown>,
          options.cache,
        )
      : await es.search(req, requestOptions(requestTimeoutMs));
  checkBucketCap(res.aggregations);
  const out: SearchWithIds = { envelope: shapeEnvelope(res, shapeOptions(plan, options)) };
  if (res._scroll_id) out.scrollId = res._scroll_id;
  if (res.pit_id) out.pitId = res.pit_id;
  return out;
}

/** Largest response read into the shared scratch buffer (larger ones get a buffer of their own), in bytes. */
const SCRATCH_MAX_BYTES = 16 * 1024 * 1024;
let scratch = Buffer.allocUnsafeSlow(0);

/**
 * Sends a search and hands ES's response body, as bytes, to `use` (the client's `asStream` mode:
 * the body is neither decoded nor parsed). The bytes are only valid during the synchronous call
 * of `use`: responses up to {@link SCRATCH_MAX_BYTES} are gathered in one shared scratch buffer
 * (no new large buffer per request, see api/search/pool.ts for why that matters). With `cache`,
 * through that result cache (api/search/result-cache.ts `ResultCache.withBytes`).
 * @throws the client's `ResponseError` for a 4xx/5xx answer (its body parsed, as the client itself
 *   would throw it), and its connection/timeout errors; whatever `use` throws.
 */
export async function withSearchBytes<T>(
  es: Client,
  req: estypes.SearchRequest,
  requestTimeoutMs: number,
  use: (bytes: Buffer) => T,
  cache?: CacheUse,
): Promise<T> {
  const fetch = (f: (bytes: Buffer) => T) =>
    withResponseBytes((options) => es.search(req, { ...requestOptions(requestTimeoutMs), ...options }), f);
  return cache ? cache.cache.withBytes(req, fetch, use, cache) : fetch(use);
}

/** The transport options that make the client hand over the response body unparsed. */
export const AS_STREAM = { asStream: true, meta: true } as const;

/**
 * {@link withSearchBytes} for any call answered like a search (`es.scroll(…)`): `send` must pass
 * the options it is given ({@link AS_STREAM}) to the client.
 * @throws as {@link withSearchBytes}.
 */
export async function withResponseBytes<T>(send: (options: typeof AS_STREAM) => Promise<unknown>, use: (bytes: Buffer) => T): Promise<T> {
  const res = (await send(AS_STREAM)) as unknown as TransportResult<AsyncIterable<Buffer>, unknown>;
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
 * With `cache`, a search without hits goes through that result cache (api/search/result-cache.ts).
 * @throws as {@link runSearch}.
 */
export async function runSearchText(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  allocate?: Allocate,
  cache?: CacheUse,
): Promise<RawEnvelope> {
  const pruned = await prunedTarget(es, target, plan.query);
  const use = (bytes: Buffer): RawEnvelope => {
    if (!plan.aggs) {
      const fast = shapeRawEnvelope(bytes, allocate);
      if (fast) return fast;
    }
    const res = JSON.parse(bytes.toString("utf8")) as estypes.SearchResponse<unknown>;
    checkBucketCap(res.aggregations);
    const envelope = shapeEnvelope(res, shapeOptions(plan));
    return { body: JSON.stringify(envelope), total: envelope.hits.total, hits: envelope.hits.hits.length, path: "parsed" };
  };
  return withSearchBytes(es, buildSearchRequest(plan, pruned, requestTimeoutMs), requestTimeoutMs, use, cache);
}

/**
 * Runs a search with `size >= 0` for the Elasticsearch-compatible routes: the answer written from
 * Elasticsearch's response bytes in Elasticsearch 8's shape ({@link shapeRawEnvelope} with `format`)
 * when the response has the layout that path expects, else the response parsed (the caller shapes
 * it). Not for plans with aggregations (their bucket cap needs the parsed response).
 * @throws as {@link runSearch}.
 */
export async function runEsSearchBytes(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions,
  format: RawEsFormat,
): Promise<RawOrParsed> {
  const pruned = options.pit ? target : await prunedTarget(es, target, plan.query);
  return withSearchBytes(
    es,
    buildSearchRequest(plan, pruned, requestTimeoutMs, options),
    requestTimeoutMs,
    (bytes) => rawOrParsed(bytes, format, shapeOptions(plan, options)),
    options.cache,
  );
}

/** A search answer: the raw Elasticsearch-shaped bytes ({@link shapeRawEnvelope}) or the parsed envelope. */
export type RawOrParsed = { raw: RawEnvelope } | { parsed: SearchWithIds };

/** The number of hits a {@link RawOrParsed} answer returns on its page (not `hits.total`). */
export const hitsOf = (out: RawOrParsed): number => ("raw" in out ? out.raw.hits : out.parsed.envelope.hits.hits.length);

/**
 * The raw Elasticsearch-shaped answer of response bytes ({@link shapeRawEnvelope} with `format`),
 * or (no `format`, or a layout the raw path does not take) the response parsed and shaped into an envelope.
 */
export function rawOrParsed(bytes: Buffer, format: RawEsFormat | undefined, shape: Omit<ShapeOptions, "unitScores">): RawOrParsed {
  const raw = format && shapeRawEnvelope(bytes, Buffer.allocUnsafe, format);
  if (raw) return { raw };
  const res = JSON.parse(bytes.toString("utf8")) as estypes.SearchResponse<unknown>;
  checkBucketCap(res.aggregations);
  const parsed: SearchWithIds = { envelope: shapeEnvelope(res, shape) };
  if (res._scroll_id) parsed.scrollId = res._scroll_id;
  if (res.pit_id) parsed.pitId = res.pit_id;
  return { parsed };
}

/**
 * How the hits of a plan's responses are shaped (api/search/envelope.ts `shapeEnvelope`): its
 * `_source` includes and excludes, sort values when sorted, the requested doc-value fields and
 * `fields` (names or patterns), highlights.
 */
export function shapeOptions(
  plan: SearchPlan,
  options: Pick<SearchOptions, "docvalueFields" | "fields" | "highlight"> = {},
): Omit<ShapeOptions, "unitScores"> {
  const opts: Omit<ShapeOptions, "unitScores"> = {};
  if (plan.source) opts.source = plan.source;
  if (plan.sourceExcludes) opts.sourceExcludes = plan.sourceExcludes;
  if (plan.sort) opts.sortValues = true;
  if (options.docvalueFields && options.docvalueFields.length > 0) opts.fields = options.docvalueFields;
  if (options.fields && options.fields.length > 0) opts.fieldPatterns = options.fields.map((f) => f.field);
  if (options.highlight) opts.highlight = true;
  return opts;
}
