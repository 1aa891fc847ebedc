/**
 * Searches of the Elasticsearch-compatible routes and their paging contexts:
 * - {@link esSearcher}: one `_search` (also each search of `_msearch`): the body split
 *   (api/routes/es/request.ts), validated (api/dsl/), run (api/search/search.ts), optionally on a
 *   point in time (`pit` in the body) or opening a scroll (`?scroll=`), answered in Elasticsearch 8's
 *   shape (api/search/es-shape.ts) and cut by `filter_path` (api/search/filter-path.ts);
 * - {@link pagingRoutes}: `POST|GET …/es/_search/scroll[/<id>]` (next page of a scroll),
 *   `DELETE …/es/_search/scroll[/<ids>]` (clear), `POST …/es/<index>/_pit?keep_alive=` (open a point
 *   in time over every partition of the kinds), `DELETE …/es/_pit` (close it).
 * Scroll and point-in-time ids are chainsift's own, bound to the account, chain and Elasticsearch's
 * id in Redis (api/search/contexts.ts).
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { indexName } from "../../../es/mappings.js";
import type { ChainId, Config } from "../../../lib/config/index.js";
import { isJsonObject } from "../../../lib/validation/problems.js";
import { validateFields, validateHighlight } from "../../dsl/hit-parts.js";
import { type ValidationResult, validateSearchBody } from "../../dsl/validate.js";
import { ApiError, apiError } from "../../errors.js";
import { cacheUse } from "../../plugins/result-cache.js";
import { type ContextRecord, contextTypeOf, type ScrollAnswer, type SearchContexts } from "../../search/contexts.js";
import { type EsAnswerOptions, toEsSearchResponse } from "../../search/es-shape.js";
import { applyFilterPath } from "../../search/filter-path.js";
import type { RawEsFormat } from "../../search/raw.js";
import { runPitPage } from "../../search/read-ahead.js";
import type { CacheOutcome } from "../../search/result-cache.js";
import {
  type AS_STREAM,
  hitsOf,
  type RawOrParsed,
  rawOrParsed,
  requestOptions,
  runEsSearchBytes,
  runSearchWithIds,
  type SearchOptions,
  type SearchTarget,
  shapeOptions,
  withResponseBytes,
} from "../../search/search.js";
import { expandWatchlists } from "../../search/watchlist-terms.js";
import { chainLabel } from "../search/target.js";
import { resolveIndexTarget } from "./indices.js";
import { checkDocvalueFields, type EsSearchQuery, splitEsSearch } from "./request.js";
import {
  ES_ERROR_RESPONSES,
  EsChainParams,
  EsFreedSchema,
  EsIndexParams,
  EsOpenPitSchema,
  EsQuerystring,
  EsSearchResponseSchema,
} from "./schema.js";

/** The value of a validation, or its problems thrown. */
function valueOrThrow<T>(result: ValidationResult<T>): T {
  if (!result.ok) throw new ApiError(result.errors);
  return result.value;
}

/** Whether a query-string flag is set (`?flag`, `?flag=true`). */
export const isSet = (v: string | undefined): boolean => v === "" || v === "true";

/** One search of `_search` or `_msearch`. */
export interface EsSearchInput {
  /** The path's chain, kinds and aliases. */
  target: SearchTarget & { chain: ChainId };
  /** Whether the path named an index (a search with a `pit` must not). */
  pathIndex: boolean;
  /** The parsed body (undefined: none). */
  body: unknown;
  /** The query string (`_msearch`: its own, shared by its searches). */
  query: EsSearchQuery;
  /** `request.account.id`. */
  account: string;
  /** Whether `scroll` may be opened (not in `_msearch`, as in Elasticsearch). */
  scrollAllowed: boolean;
  /** `request_cache` of the query string or `_msearch` header: false keeps the search out of the result cache. Default true. */
  requestCache?: boolean;
}

/** What a search answers, before `filter_path`, and the hits counted for metrics. */
export interface EsSearchResult {
  /** The answer as an object (undefined when {@link text} is given). */
  body: unknown;
  /** The answer as JSON already (written from Elasticsearch's bytes; only without `filter_path`). */
  text?: Buffer | string;
  target: SearchTarget;
  hits: number;
  /** How the search used the result cache (api/search/result-cache.ts), when it went through it. */
  cache?: CacheOutcome;
}

/** Dependencies of {@link esSearcher} and {@link pagingRoutes}. */
export interface PagingDeps {
  app: FastifyInstance;
  config: Config;
  contexts: SearchContexts;
  /** The caller's watchlist members for `terms` by watchlist (api/search/watchlist-terms.ts); absent: every lookup is unknown. */
  watchlistMembers?: (account: string, id: string) => Promise<string[] | null>;
}

/** The answer options of a query string: `rest_total_hits_as_int`. */
const totalAsInt = (query: EsSearchQuery): boolean => isSet(query.rest_total_hits_as_int);

/** A body (or query string) as `filter_path` cuts it. */
export function filtered(body: unknown, query: EsSearchQuery): unknown {
  return query.filter_path === undefined ? body : applyFilterPath(body, query.filter_path);
}

/** Runs searches as the Elasticsearch-compatible `_search` answers them (see the module notes). */
export function esSearcher({ app, config, contexts, watchlistMembers }: PagingDeps): (input: EsSearchInput) => Promise<EsSearchResult> {
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  const prefix = config.elasticsearch.indexPrefix;
  const scrolls = scrollCalls(app, timeoutMs);
  return async ({ target, pathIndex, body, query, account, scrollAllowed, requestCache }) => {
    const req = splitEsSearch(body, query);
    const chain = chainLabel(target.chain);
    let t: SearchTarget = target;
    let pit: { id: string; record: ContextRecord; keepAliveMs?: number; keepAlive?: string } | undefined;
    if (req.pit) {
      if (pathIndex)
        throw apiError("CS_BODY_INVALID", "a search with a pit names no index: send it to …/es/_search (the pit fixes the indices)", "pit");
      if (query.scroll !== undefined) throw apiError("CS_BODY_INVALID", "a search with a pit cannot open a scroll", "pit");
      const record = await contexts.load(req.pit.id, "pit", account, chain, "pit.id");
      pit = { id: req.pit.id as string, record };
      if (req.pit.keepAlive !== undefined) {
        pit.keepAliveMs = contexts.keepAlive(req.pit.keepAlive, "pit.keep_alive");
        pit.keepAlive = req.pit.keepAlive as string;
      }
      t = { kinds: record.kinds, indices: record.kinds.map((k) => indexName(target.chain, k, prefix)), chain: target.chain };
    }
    const checked = validateSearchBody(req.body, { kinds: t.kinds, maxSize: config.api.maxSize, pit: pit !== undefined });
    if (!checked.ok) throw new ApiError(checked.errors);
    const plan = checked.value;
    plan.query = await expandWatchlists(plan.query, (id) => watchlistMembers?.(account, id) ?? Promise.resolve(null));
    if (plan.size === -1)
      throw apiError(
        "CS_SIZE_INVALID",
        "size -1 (every match, streamed) is only on the contract's path …/es/<kinds>/search/; here page with sort + search_after, a point in time or a scroll",
        "size",
      );
    checkDocvalueFields(req.docvalueFields, t.kinds);
    const options: SearchOptions = { typedKeys: isSet(query.typed_keys), docvalueFields: req.docvalueFields };
    if (requestCache === false || query.request_cache === "false") options.noRequestCache = true;
    const cache = cacheUse(app.resultCache);
    if (cache) options.cache = cache;
    if (req.fields !== undefined) options.fields = valueOrThrow(validateFields(req.fields, t.kinds));
    if (req.highlight !== undefined) options.highlight = valueOrThrow(validateHighlight(req.highlight, t.kinds));
    if (req.trackTotalHits === false) options.noTotal = true;
    const answer: EsAnswerOptions = {
      totalAsInt: totalAsInt(query),
      trackTotalHits: req.trackTotalHits,
      noSource: plan.noSource === true,
      metadataOnly: req.metadataOnly,
    };
    let scroll: { id: string; ms: number } | undefined;
    if (query.scroll !== undefined) {
      if (!scrollAllowed) throw apiError("CS_BAD_REQUEST", "scroll is not taken by _msearch", "querystring.scroll");
      const ms = contexts.keepAlive(query.scroll, "querystring.scroll");
      scroll = { id: await contexts.reserve("scroll", account, ms), ms };
      options.scroll = query.scroll;
    }
    if (pit) options.pit = pit.keepAlive ? { id: pit.record.esId, keepAlive: pit.keepAlive } : { id: pit.record.esId };
    try {
      // Written from Elasticsearch's bytes when nothing asks for more than the plain answer.
      // Hits with `fields` or `highlight` take the parse path (see api/search/raw.ts), which answers them.
      const plain =
        !plan.aggs &&
        typeof req.trackTotalHits === "boolean" &&
        !plan.noSource &&
        !req.metadataOnly &&
        req.docvalueFields.length === 0 &&
        !options.fields?.length &&
        !options.highlight;
      const format: RawEsFormat = { totalAsInt: answer.totalAsInt === true };
      if (pit) Object.assign(format, { idKey: "pit_id", id: pit.id });
      if (scroll) Object.assign(format, { idKey: "_scroll_id", id: scroll.id });
      const run = async (): Promise<RawOrParsed> =>
        plain && query.filter_path === undefined
          ? pit
            ? runPitPage(app.es, app.readAhead, pit.id, { plan, target: t, requestTimeoutMs: timeoutMs, options, format })
            : runEsSearchBytes(app.es, plan, t, timeoutMs, options, format)
          : { parsed: await runSearchWithIds(app.es, plan, t, timeoutMs, options) };
      const out = pit ? await contexts.use(pit.id, pit.record, "pit.id", run) : await run();
      const esContextId = "raw" in out ? out.raw.contextId : (out.parsed.pitId ?? out.parsed.scrollId);
      if (pit) {
        answer.pitId = pit.id;
        const renew = contexts.needsRenewal(pit.record, pit.keepAliveMs);
        if ((esContextId && esContextId !== pit.record.esId) || renew)
          await contexts.save(pit.id, { ...pit.record, esId: esContextId ?? pit.record.esId }, renew ? pit.keepAliveMs : undefined);
      }
      if (scroll) {
        if (!esContextId) throw new Error("Elasticsearch answered a scroll search without _scroll_id");
        const kept: ScrollAnswer = {
          shape: shapeOptions(plan, options),
          noSource: plan.noSource === true,
          metadataOnly: req.metadataOnly,
          trackTotalHits: req.trackTotalHits,
        };
        await contexts.save(
          scroll.id,
          { type: "scroll", account, chain, esId: esContextId, kinds: t.kinds, answer: kept },
          scroll.ms,
          true,
        );
        answer.scrollId = scroll.id;
        if (hitsOf(out) > 0) await scrolls.ahead(scroll.id, esContextId, query.scroll, scroll.ms);
        scroll = undefined;
      }
      const used = cache?.outcome ? { cache: cache.outcome } : {};
      if ("raw" in out) return { body: undefined, text: out.raw.body, target: t, hits: out.raw.hits, ...used };
      const env = out.parsed.envelope;
      return { body: toEsSearchResponse(env, answer), target: t, hits: env.hits.hits.length, ...used };
    } finally {
      if (scroll) await contexts.forget(scroll.id, account);
    }
  };
}

type ChainPath = { technology: string; blockchain: string; network: string; index?: string; scroll_id?: string };

/**
 * Elasticsearch's scroll calls of an app: `call(esId, keepAlive)` is withResponseBytes' `send` for the
 * next page; `ahead(id, esId, keepAlive)` claims and starts the read-ahead of scroll `id`'s next page
 * (api/search/scroll-ahead.ts; nothing when it is off or its claim cannot be written).
 */
function scrollCalls(app: FastifyInstance, timeoutMs: number) {
  const call = (esId: string, keepAlive: string | undefined) => (options: typeof AS_STREAM) =>
    app.es.scroll(
      { scroll_id: esId, ...(keepAlive !== undefined ? { scroll: keepAlive } : {}) },
      { ...requestOptions(timeoutMs), ...options },
    );
  const ahead = async (id: string, esId: string, keepAlive: string | undefined, lifeMs: number): Promise<void> => {
    await app.scrollAhead?.start(id, () => withResponseBytes(call(esId, keepAlive), (bytes) => Buffer.from(bytes)), lifeMs).catch(() => {});
  };
  return { call, ahead };
}

/** The ids of a clear-scroll request: body `scroll_id` (string or array), else the path's comma list. */
function scrollIdsOf(body: unknown, pathIds: string | undefined): string[] {
  const fromBody = isJsonObject(body) ? body.scroll_id : undefined;
  const raw = fromBody ?? pathIds?.split(",");
  const ids = typeof raw === "string" ? [raw] : raw;
  if (!Array.isArray(ids) || ids.length === 0 || ids.some((id) => typeof id !== "string" || id === ""))
    throw apiError("CS_BODY_INVALID", "give scroll_id: a scroll id, an array of them, or _all", "scroll_id");
  return ids as string[];
}

/**
 * Registers the scroll and point-in-time routes (see the module notes) in the Elasticsearch
 * routes' scope (its hooks: product header, error shape).
 * @param json - sends a JSON answer.
 */
export function pagingRoutes(
  { app, config, contexts }: PagingDeps,
  chains: readonly ChainId[],
  json: (reply: FastifyReply, body: unknown) => FastifyReply,
  onHits?: (target: SearchTarget, hits: number, path: "bytes" | "parsed") => void,
): void {
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  const base = "/:technology/:blockchain/:network/es";
  const tags = ["elasticsearch"];
  const scrolls = scrollCalls(app, timeoutMs);
  const chainOf = (request: FastifyRequest): ChainId =>
    resolveIndexTarget(chains, prefix, { ...(request.params as ChainPath), index: "" }).chain;
  const account = (request: FastifyRequest): string => {
    if (!request.account) throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required");
    return request.account.id;
  };

  /** Next page of a scroll. */
  const nextPage = async (request: FastifyRequest, reply: FastifyReply) => {
    const chain = chainOf(request);
    const query = request.query as EsSearchQuery;
    const body = (request.body ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(body))
      if (key !== "scroll_id" && key !== "scroll" && key !== "rest_total_hits_as_int")
        throw apiError("CS_BODY_INVALID", `_search/scroll takes scroll_id and scroll; unknown key ${JSON.stringify(key)}`, key);
    const id = body.scroll_id ?? (request.params as ChainPath).scroll_id ?? query.scroll_id;
    const keepAlive = body.scroll ?? query.scroll;
    const ms = keepAlive === undefined ? undefined : contexts.keepAlive(keepAlive, "scroll");
    const record = await contexts.load(id, "scroll", account(request), chainLabel(chain), "scroll_id");
    const scrollId = id as string;
    const kept = record.answer ?? { shape: {} };
    const totalAsInt = isSet(query.rest_total_hits_as_int) || body.rest_total_hits_as_int === true;
    const plain =
      !kept.noSource &&
      !kept.metadataOnly &&
      typeof (kept.trackTotalHits ?? true) === "boolean" &&
      !kept.shape.fields &&
      !kept.shape.fieldPatterns &&
      !kept.shape.highlight;
    const shape = (bytes: Buffer) =>
      rawOrParsed(
        bytes,
        plain && query.filter_path === undefined ? { totalAsInt, idKey: "_scroll_id", id: scrollId } : undefined,
        kept.shape,
      );
    const out = await contexts.use(scrollId, record, "scroll_id", async () => {
      const ahead = await app.scrollAhead?.take(scrollId).catch(async (err: unknown) => {
        // The page was read ahead by an instance that stopped: Elasticsearch's cursor is past it, so the
        // scroll is closed (in Elasticsearch too: other instances may hold its binding in their cache), or
        // a retry with this id would get the page after it (a page silently lost).
        if (err instanceof ApiError && err.code === "CS_CONTEXT_NOT_FOUND")
          await contexts
            .close(scrollId, record)
            .catch(() => contexts.drop(scrollId, record))
            .catch(() => {});
        throw err;
      });
      return ahead ? shape(ahead) : withResponseBytes(scrolls.call(record.esId, keepAlive as string | undefined), shape);
    });
    const esId = "raw" in out ? out.raw.contextId : out.parsed.scrollId;
    if (hitsOf(out) > 0)
      await scrolls.ahead(
        scrollId,
        esId ?? record.esId,
        keepAlive as string | undefined,
        ms ?? (record.expiresAt !== undefined ? record.expiresAt - Date.now() : config.api.searchContextMaxKeepAliveMs),
      );
    const renew = contexts.needsRenewal(record, ms);
    if ((esId !== undefined && esId !== record.esId) || renew)
      await contexts.save(scrollId, { ...record, esId: esId ?? record.esId }, renew ? ms : undefined);
    const target: SearchTarget = { kinds: record.kinds, indices: [], chain };
    if ("raw" in out) {
      onHits?.(target, out.raw.hits, "bytes");
      return reply.type("application/json; charset=utf-8").send(out.raw.body as never);
    }
    const env = out.parsed.envelope;
    onHits?.(target, env.hits.hits.length, "parsed");
    const answer: EsAnswerOptions = {
      scrollId,
      totalAsInt,
      noSource: kept.noSource === true,
      metadataOnly: kept.metadataOnly === true,
    };
    if (kept.trackTotalHits !== undefined) answer.trackTotalHits = kept.trackTotalHits;
    return json(reply, filtered(toEsSearchResponse(env, answer), query));
  };

  /** Clears scrolls: 200 `{succeeded, num_freed}` when every id was the caller's, else 404 after freeing the caller's. */
  const clear = async (request: FastifyRequest, reply: FastifyReply) => {
    const chain = chainLabel(chainOf(request));
    const who = account(request);
    let ids = scrollIdsOf(request.body, (request.params as ChainPath).scroll_id ?? (request.query as EsSearchQuery).scroll_id);
    const all = ids.includes("_all");
    if (all) ids = (await contexts.accountIds(who)).filter((id) => contextTypeOf(id) === "scroll");
    let freed = 0;
    let missing: ApiError | undefined;
    for (const id of ids) {
      try {
        const record = await contexts.load(id, "scroll", who, chain, "scroll_id");
        await app.scrollAhead?.drop(id);
        await contexts.close(id, record);
        freed++;
      } catch (err) {
        if (!(err instanceof ApiError && err.code === "CS_CONTEXT_NOT_FOUND")) throw err;
        // With _all, an id of another chain is not the caller's to clear here: skipped.
        if (!all) missing = err;
      }
    }
    if (missing) throw missing;
    return json(reply, { succeeded: true, num_freed: freed });
  };

  const scrollDoc = { tags, querystring: EsQuerystring };
  for (const url of [`${base}/_search/scroll`, `${base}/_search/scroll/:scroll_id`]) {
    const hide = url.endsWith(":scroll_id");
    for (const method of ["POST", "GET"] as const)
      app.route({
        method,
        url,
        schema: {
          ...scrollDoc,
          hide,
          summary: "Next page of a scroll (body {scroll_id, scroll?}, or ?scroll_id=)",
          operationId: method === "GET" ? "esScrollGet" : "esScroll",
          response: { 200: EsSearchResponseSchema, ...ES_ERROR_RESPONSES },
        },
        handler: nextPage,
      });
    app.route({
      method: "DELETE",
      url,
      schema: {
        ...scrollDoc,
        hide,
        summary: "Clear scrolls (body {scroll_id}: an id, an array, or _all)",
        operationId: "esClearScroll",
        response: { 200: EsFreedSchema, ...ES_ERROR_RESPONSES },
      },
      handler: clear,
    });
  }

  const openPit = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as ChainPath;
    if (request.url.includes("/block/_pit")) params.index = "block";
    const t = resolveIndexTarget(chains, prefix, params);
    const query = request.query as EsSearchQuery;
    if (request.body !== undefined && !(isJsonObject(request.body) && Object.keys(request.body).length === 0))
      throw apiError("CS_BODY_INVALID", "_pit takes no body (index_filter is not supported)");
    const ms = contexts.keepAlive(query.keep_alive, "querystring.keep_alive");
    const who = account(request);
    const id = await contexts.reserve("pit", who, ms);
    try {
      // Every partition of the kinds: the aliases, never pruned (a point in time fixes its indices).
      const res = await app.es.openPointInTime(
        { index: t.indices, keep_alive: query.keep_alive as string, ignore_unavailable: true },
        requestOptions(timeoutMs),
      );
      await contexts.save(id, { type: "pit", account: who, chain: chainLabel(t.chain), esId: res.id, kinds: t.kinds }, ms, true);
      const s = res._shards;
      return json(reply, {
        id,
        _shards: { total: s?.total ?? 0, successful: s?.successful ?? 0, skipped: s?.skipped ?? 0, failed: s?.failed ?? 0 },
      });
    } catch (err) {
      await contexts.forget(id, who);
      throw err;
    }
  };
  for (const url of [`${base}/:index/_pit`, `${base}/block/_pit`])
    app.route({
      method: "POST",
      url,
      schema: {
        tags,
        hide: url.includes("/block/"),
        summary: "Open a point in time over every partition of the index's kinds (?keep_alive=1m)",
        operationId: "esOpenPit",
        params: url.includes("/block/") ? EsChainParams : EsIndexParams,
        querystring: EsQuerystring,
        response: { 200: EsOpenPitSchema, ...ES_ERROR_RESPONSES },
      },
      handler: openPit,
    });

  app.route({
    method: "DELETE",
    url: `${base}/_pit`,
    schema: {
      tags,
      summary: "Close a point in time (body {id})",
      operationId: "esClosePit",
      params: EsChainParams,
      querystring: EsQuerystring,
      response: { 200: EsFreedSchema, ...ES_ERROR_RESPONSES },
    },
    handler: async (request, reply) => {
      const chain = chainLabel(chainOf(request));
      const body = request.body;
      if (!isJsonObject(body) || Object.keys(body).some((k) => k !== "id"))
        throw apiError("CS_BODY_INVALID", "give the point in time to close as {id}", "id");
      const record = await contexts.load(body.id, "pit", account(request), chain, "id");
      app.readAhead?.drop(body.id as string);
      await contexts.close(body.id as string, record);
      return json(reply, { succeeded: true, num_freed: 1 });
    },
  });
}
