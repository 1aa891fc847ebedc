/**
 * Runs a validated search ({@link SearchPlan}) against Elasticsearch and shapes the answer.
 * Sizes 0..maxSize use one `_search` request; size -1 is streamed by api/search/stream.ts.
 *
 * Every request carries the client-side timeout `requestTimeoutMs` and the same value as the ES
 * search `timeout` (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-search.html),
 * plus `track_total_hits: true` so that `hits.total` is exact.
 * @module
 */
import type { Client, estypes, TransportRequestOptions } from "@elastic/elasticsearch";
import type { RecordKind } from "../../lib/records.js";
import type { SearchPlan } from "../dsl/validate.js";
import { type HitsEnvelope, shapeEnvelope } from "./envelope.js";

/** Which indices a request searches. */
export interface SearchTarget {
  /** Requested kinds, in request order. */
  kinds: RecordKind[];
  /** Their index names (`indexName(chain, kind, prefix)`), same order. */
  indices: string[];
}

/** Fields needed to compute `_routing`/`_parent` of each kind (see `parentOf` in lib/records.ts). */
const PARENT_FIELD: Record<RecordKind, string | undefined> = {
  block: undefined,
  tx: "blockHash",
  log: "transactionHash",
  event: "transactionHash",
};

/**
 * The `_source` includes sent to ES: the requested paths plus the parent fields of the kinds, so
 * that `_routing`/`_parent` can still be derived; the envelope removes the extras again.
 * @returns undefined when the whole record is wanted.
 */
export function sourceIncludes(plan: Pick<SearchPlan, "source">, kinds: readonly RecordKind[]): string[] | undefined {
  if (!plan.source || plan.source.length === 0) return undefined;
  const extra = kinds.map((k) => PARENT_FIELD[k]).filter((f): f is string => f !== undefined);
  return [...new Set([...plan.source, ...extra])];
}

/** Per-request transport options: the client-side timeout in milliseconds. */
export function requestOptions(requestTimeoutMs: number): TransportRequestOptions {
  return { requestTimeout: requestTimeoutMs };
}

/**
 * The ES search request of a plan with `size >= 0`: the sanitized query and sort, `_source`
 * includes, `track_total_hits: true`, `timeout: "<ms>ms"`, and `ignore_unavailable` so that a kind
 * whose index does not exist yet answers with no hits instead of an error.
 */
export function buildSearchRequest(plan: SearchPlan, target: SearchTarget, requestTimeoutMs: number): estypes.SearchRequest {
  const req: estypes.SearchRequest = {
    index: target.indices,
    size: Math.max(plan.size, 0),
    track_total_hits: true,
    timeout: `${requestTimeoutMs}ms`,
    ignore_unavailable: true,
    allow_no_indices: true,
  };
  if (plan.query) req.query = plan.query as estypes.QueryDslQueryContainer;
  if (plan.sort) req.sort = plan.sort as estypes.Sort;
  const includes = sourceIncludes(plan, target.kinds);
  if (includes) req._source = includes;
  return req;
}

/**
 * Runs a search with `size >= 0` and returns the hits envelope.
 * @throws the ES client's errors (`ResponseError`, `ConnectionError`, `TimeoutError`, …), which the
 * error handler maps to CS_QUERY_REJECTED / CS_BACKEND_UNAVAILABLE / CS_INTERNAL.
 */
export async function runSearch(es: Client, plan: SearchPlan, target: SearchTarget, requestTimeoutMs: number): Promise<HitsEnvelope> {
  const res = await es.search(buildSearchRequest(plan, target, requestTimeoutMs), requestOptions(requestTimeoutMs));
  return shapeEnvelope(res, plan.source ? { source: plan.source } : {});
}
