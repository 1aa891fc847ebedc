/**
 * `size: -1` ("return all matches"): a point-in-time (PIT) + `search_after` scan whose hits are
 * written to the reply incrementally, so memory stays bounded by one page whatever the result size.
 *
 * 1. Open a PIT on every requested index (the partitions a block range can match: api/search/partitions.ts)
 *    (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/point-in-time-api.html).
 * 2. Count the matches against that PIT (`size: 0`, `track_total_hits: true`): the envelope's
 *    `hits.total`, `took`, `timed_out` and `_shards` come from this request. Because the scan uses the
 *    same PIT, it returns exactly `hits.total` records even while documents are being indexed.
 * 3. Page with `search_after` sorted by the user's sort plus the `_shard_doc` tiebreaker
 *    (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/paginate-search-results.html#search-after),
 *    writing each page as soon as it arrives. Pages use `track_total_hits: false`: the total is
 *    already known, and counting every match again for every page would make the scan quadratic.
 * 4. Close the PIT when the scan ends, fails, or the client disconnects.
 *
 * Scores: every streamed hit has `_score` 1 unless ES computed a positive score (sorted scans
 * report none), and `max_score` is 1 (null when there are no matches).
 *
 * Aggregations (extension) are computed by the count request of step 2, capped like other
 * searches, and written after the hits. Streamed hits carry no `sort` values.
 *
 * Errors before the first byte (opening the PIT, counting) are thrown to the caller. Errors during
 * the scan (ES failure, timed-out or partial page) destroy the stream: the client sees a truncated,
 * invalid JSON body, never a silently shortened result.
 * @module
 */
import { Readable } from "node:stream";
import type { Client, estypes } from "@elastic/elasticsearch";
import { ChainsiftError } from "../../lib/errors.js";
import type { SearchPlan } from "../dsl/validate.js";
import { shapeHit, shapeShards, totalOf } from "./envelope.js";
import { searchIndices } from "./partitions.js";
import { checkBucketCap, esSource, parentFields, requestOptions, type SearchTarget } from "./search.js";

/** Minimal logger used by the stream (pino and Fastify loggers fit). */
export interface StreamLogger {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Options of {@link streamSearch}. */
export interface StreamSearchOptions {
  /** ES client. */
  es: Client;
  /** The validated plan (its `size` is ignored: all matches are returned). */
  plan: SearchPlan;
  /** Indices to scan; the PIT is opened on all of them. */
  target: SearchTarget;
  /** Client-side timeout of each ES request and the ES search `timeout`, in milliseconds. */
  requestTimeoutMs: number;
  /** Hits per `search_after` page. Default 250: smaller pages keep the V8 heap of a long stream small (bench stream: peak RSS 316 MiB at 1000, 202 MiB at 250, and faster). */
  pageSize?: number;
  /** PIT keep-alive, extended by every page request (ES time unit). Default `1m`. */
  keepAlive?: string;
  /** Where scan failures and PIT close failures are logged. */
  log?: StreamLogger;
}

/** A started scan: the exact total and the JSON body stream. */
export interface SearchStream {
  /** `hits.total` of the envelope. */
  total: number;
  /** UTF-8 JSON of the whole hits envelope, produced page by page (backpressure-aware). */
  body: Readable;
}

const noopLog: StreamLogger = { warn() {}, error() {} };

/** Thrown inside the scan when a page is partial (timed out or failed shards). */
class PartialPageError extends ChainsiftError {
  override name = "PartialPageError";
  readonly code = "CS_PARTIAL_PAGE";
}

/**
 * Opens a PIT, counts the matches and returns the envelope as a stream (see the module notes).
 * @throws the ES client's errors when opening the PIT or counting fails, and `ApiError`
 * CS_AGG_TOO_MANY_BUCKETS when the aggregations exceed the cap (the PIT is closed first).
 */
export async function streamSearch(opts: StreamSearchOptions): Promise<SearchStream> {
  const { es, plan, target, requestTimeoutMs } = opts;
  const pageSize = opts.pageSize ?? 250;
  const keepAlive = opts.keepAlive ?? "1m";
  const log = opts.log ?? noopLog;
  const reqOpts = requestOptions(requestTimeoutMs);
  const timeout = `${requestTimeoutMs}ms`;

  // On the partitions the query's block range can match (api/search/partitions.ts), else the aliases.
  const index = await searchIndices(es, target, plan.query);
  const opened = await es.openPointInTime({ index, keep_alive: keepAlive, ignore_unavailable: true }, reqOpts);
  let pitId = opened.id;
  let closing: Promise<void> | undefined;
  /** Idempotent: the scan's `finally` and the stream's `close` event both call it. */
  const closePit = (): Promise<void> => {
    closing ??= es.closePointInTime({ id: pitId }, reqOpts).then(
      () => undefined,
      (err: unknown) => log.warn({ err }, "closing the point in time failed (it expires by itself)"),
    );
    return closing;
  };

  let count: estypes.SearchResponse<unknown>;
  try {
    const countReq: estypes.SearchRequest = { pit: { id: pitId, keep_alive: keepAlive }, size: 0, track_total_hits: true, timeout };
    if (plan.query) countReq.query = plan.query as estypes.QueryDslQueryContainer;
    if (plan.aggs) countReq.aggs = plan.aggs as Record<string, estypes.AggregationsAggregationContainer>;
    count = await es.search(countReq, reqOpts);
    checkBucketCap(count.aggregations);
  } catch (err) {
    await closePit();
    throw err;
  }
  if (count.pit_id) pitId = count.pit_id;
  const total = totalOf(count.hits.total);
  // As buildSearchRequest: `_source` exactly as requested, parents from docvalue_fields.
  const includes = esSource(plan);
  const parents = parentFields(target.kinds);
  const shapeOpts = {
    ...(plan.source ? { source: plan.source } : {}),
    ...(plan.sourceExcludes ? { sourceExcludes: plan.sourceExcludes } : {}),
  };
  const head =
    `{"took":${JSON.stringify(count.took)},"timed_out":${JSON.stringify(count.timed_out)},` +
    `"_shards":${JSON.stringify(shapeShards(count._shards))},` +
    `"hits":{"total":${total},"max_score":${total > 0 ? 1 : null},"hits":[`;

  async function* scan(): AsyncGenerator<string> {
    let emitted = 0;
    let searchAfter: estypes.SortResults | undefined;
    try {
      yield head;
      while (emitted < total) {
        const req: estypes.SearchRequest = {
          pit: { id: pitId, keep_alive: keepAlive },
          size: Math.min(pageSize, total - emitted),
          sort: [...((plan.sort ?? []) as estypes.SortCombinations[]), { _shard_doc: "asc" }],
          track_total_hits: false,
          timeout,
        };
        if (plan.query) req.query = plan.query as estypes.QueryDslQueryContainer;
        if (includes !== undefined) req._source = includes;
        if (parents.length > 0) req.docvalue_fields = parents;
        if (searchAfter) req.search_after = searchAfter;
        const res = await es.search(req, reqOpts);
        if (res.pit_id) pitId = res.pit_id;
        if (res.timed_out || (res._shards?.failed ?? 0) > 0) throw new PartialPageError("a page timed out or had failed shards");
        const hits = res.hits.hits.slice(0, total - emitted);
        const last = hits.at(-1);
        if (!last) break;
        const parts = hits.map((h) =>
          JSON.stringify(shapeHit(h, { ...shapeOpts, unitScores: !(typeof h._score === "number" && h._score > 0) })),
        );
        yield (emitted > 0 ? "," : "") + parts.join(",");
        emitted += hits.length;
        searchAfter = last.sort;
      }
      if (emitted !== total) log.warn({ emitted, total }, "point-in-time scan returned fewer hits than counted");
      yield count.aggregations ? `]},"aggregations":${JSON.stringify(count.aggregations)}}` : "]}}";
    } catch (err) {
      log.error({ err, emitted, total }, "size -1 scan failed; the response is truncated");
      throw err;
    } finally {
      await closePit();
    }
  }

  const body = Readable.from(scan(), { objectMode: false });
  // A stream destroyed before its first read never runs the generator's finally block.
  body.once("close", () => void closePit());
  return { total, body };
}
