/**
 * Elasticsearch-compatible routes, next to the contract's, so that the official Elasticsearch
 * clients (`@elastic/elasticsearch` 8, Python `elasticsearch` 8 and `elasticsearch.dsl`, Go
 * `go-elasticsearch/v8` esapi and typed API, Java `elasticsearch-java` 8) and tools
 * work with `…/<technology>/<blockchain>/<network>/es` as their node URL:
 * - `GET|HEAD /:technology/:blockchain/:network/es/`: the cluster-info shape of the clients'
 *   `info()` and `ping()` (chainsift's name and version, and every version field of the
 *   Elasticsearch release claimed, {@link CLAIMED_ES_VERSION});
 * - `POST|GET …/es/_search`, `…/es/:index/_search`: a search, answered in Elasticsearch 8's shape
 *   (api/search/es-shape.ts);
 * - `POST|GET …/es/_count`, `…/es/:index/_count`: `{count, _shards}` of a `query`;
 * - `POST|GET …/es/_msearch`, `…/es/:index/_msearch`: up to {@link MSEARCH_MAX_SEARCHES} searches in
 *   one NDJSON body, sent as any of {@link MSEARCH_TYPES} (the Go client's esapi sends
 *   `application/json`, the Java client `application/vnd.elasticsearch+json; compatible-with=8`);
 *   another media type is 415 before the body is read.
 * - `GET …/es/_cluster/health[/<index>]`: Elasticsearch's health of the chain's indices (api/routes/es/health.ts).
 * `:index` is an index expression (api/routes/es/indices.ts); without one, all kinds. Any other
 * `…/es/_<endpoint>` or `…/es/<index>/_<endpoint>` is 404 `CS_ROUTE_NOT_FOUND` in Elasticsearch's
 * error shape.
 *
 * The same checks as the contract's search path: authentication and rate limit (one request of
 * the budget per HTTP request, also for `_msearch`), the DSL allowlist (api/dsl/), `maxSize`, the
 * body limit. Differences, on these routes only: `size: -1` is refused (streaming is the contract
 * path's), `from: 0` and `track_total_hits: true` are accepted and dropped (elasticsearch.dsl sends
 * `from: 0` for `s[:n]`; totals are always exact), a GET with a body is refused (Fastify does not
 * read GET bodies: the query would be dropped silently), and unknown query-string parameters are
 * refused; `typed_keys` is honoured (aggregation keys `<type>#<name>`, which the Java and Go typed
 * clients require; Elasticsearch itself names them). `compatible-with` majors other than
 * {@link COMPATIBLE_MAJORS} (Content-Type or Accept) are 415. Every answer carries `X-Elastic-Product:
 * Elasticsearch` (the clients refuse 2xx answers without it); error answers are in Elasticsearch's
 * error shape (api/search/es-shape.ts `toEsErrorBody`).
 * @module
 */
import type { estypes } from "@elastic/elasticsearch";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ChainId, Config } from "../../../lib/config/index.js";
import { isJsonObject } from "../../../lib/validation/problems.js";
import { validateQuery } from "../../dsl/validate.js";
import { ApiError, apiError, type ErrorBody, errorBody } from "../../errors.js";
import { mapError } from "../../plugins/errors.js";
import { requireObjectBody } from "../../plugins/object-body.js";
import { CACHE_HEADER } from "../../plugins/result-cache.js";
import { toEsErrorBody } from "../../search/es-shape.js";
import { searchIndices } from "../../search/partitions.js";
import { requestOptions, type SearchTarget } from "../../search/search.js";
import { expandWatchlists } from "../../search/watchlist-terms.js";
import { chainLabel } from "../search/target.js";
import { healthRoutes } from "./health.js";
import { resolveIndexTarget } from "./indices.js";
import { introspectRoutes } from "./introspect.js";
import { esSearcher, filtered, pagingRoutes } from "./paging.js";
import type { EsSearchQuery } from "./request.js";
import {
  ES_ERROR_RESPONSES,
  EsChainParams,
  EsCountBody,
  EsCountResponseSchema,
  EsIndexParams,
  EsInfoSchema,
  EsMsearchResponseSchema,
  EsQuerystring,
  EsSearchBody,
  EsSearchResponseSchema,
} from "./schema.js";

/** Most searches in one `_msearch` body. */
export const MSEARCH_MAX_SEARCHES = 10;

/**
 * `_msearch` header keys accepted and ignored besides `index`: they change nothing here, as their
 * query-string namesakes on `_search` (api/routes/es/schema.ts `EsQuerystring`). Grafana's data
 * source sends `search_type`, `ignore_unavailable` and `index` (a string or an array). `routing` is
 * refused (it would search some shards only), as any other key. `request_cache: false` is not
 * ignored: it keeps that search out of the caches (api/search/result-cache.ts). Source: the header of
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-multi-search.html.
 */
export const MSEARCH_IGNORED_HEADER_KEYS = [
  "search_type",
  "ignore_unavailable",
  "allow_no_indices",
  "expand_wildcards",
  "preference",
  "request_cache",
  "allow_partial_search_results",
  "ccs_minimize_roundtrips",
  "ignore_throttled",
] as const;

/** The header the official clients require on every 2xx answer, and its value. */
export const PRODUCT_HEADER = ["x-elastic-product", "Elasticsearch"] as const;

/** NDJSON media types of `_msearch`. */
export const NDJSON_TYPES = ["application/x-ndjson", "application/vnd.elasticsearch+x-ndjson"];

/**
 * Every media type an `_msearch` body may have: NDJSON, and the JSON types the official clients
 * send for it (Go esapi: `application/json`; Java: `application/vnd.elasticsearch+json`), any
 * parameters (`compatible-with`, `charset`) allowed. The body is read as text, whatever the type.
 */
export const MSEARCH_TYPES = [...NDJSON_TYPES, "application/json", "application/vnd.elasticsearch+json"];

/**
 * The majors of `compatible-with=<major>` (Content-Type, Accept) served: 8 (the 8.x clients) and 9
 * (the 9.x clients; the requests and answers of these routes are the same in both). Elasticsearch
 * 8.19 itself takes 7 and 8; 7 (REST compatibility with 7.x: `_type`, integer totals) is not served.
 */
export const COMPATIBLE_MAJORS = ["8", "9"] as const;

/**
 * The Elasticsearch version the cluster-info route claims, with the build facts of its release:
 * 8.19.4, the version the stack runs (scripts/stack.sh), read from its `GET /_nodes/_local`
 * (build_hash, build_type) and its jar's manifest (`Build-Date`, `X-Compile-Lucene-Version`); the
 * compatibility versions are those every 8.x release reports (wire 7.17.0, index 7.0.0).
 */
export const CLAIMED_ES_VERSION = {
  number: "8.19.4",
  build_flavor: "default",
  build_type: "tar",
  build_hash: "aa0a7826e719b392e7782716b323c4fb8fa3b392",
  build_date: "2025-09-16T22:06:03.940754111Z",
  build_snapshot: false,
  lucene_version: "9.12.2",
  minimum_wire_compatibility_version: "7.17.0",
  minimum_index_compatibility_version: "7.0.0",
} as const;

const COMPATIBLE_WITH = /compatible-with\s*=\s*"?([^";,\s]*)/i;

/**
 * Refuses a `compatible-with` major outside {@link COMPATIBLE_MAJORS} in a Content-Type or Accept header.
 * @throws {ApiError} 415 CS_UNSUPPORTED_MEDIA_TYPE.
 */
export function checkCompatibleWith(headers: { "content-type"?: string | undefined; accept?: string | undefined }): void {
  for (const name of ["content-type", "accept"] as const) {
    const major = COMPATIBLE_WITH.exec(headers[name] ?? "")?.[1];
    if (major !== undefined && !(COMPATIBLE_MAJORS as readonly string[]).includes(major))
      throw apiError(
        "CS_UNSUPPORTED_MEDIA_TYPE",
        `${name} compatible-with=${major} is not served; use compatible-with=${COMPATIBLE_MAJORS.join(" or ")} (an 8.x or 9.x client)`,
      );
  }
}

/** Options of {@link esRoutes}. */
export interface EsRoutesOptions {
  /** Uses `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`, `api.maxSize`. */
  config: Config;
  /** The chains served. */
  chains: readonly ChainId[];
  /** chainsift's version, reported by the cluster-info route. */
  version: string;
  /** Called after each successful search (metrics), as the contract's search routes do. */
  onHits?: (target: SearchTarget, hits: number, path: "bytes" | "parsed") => void;
  /** The caller's watchlist members, for `terms` by watchlist (api/search/watchlist-terms.ts). */
  watchlistMembers?: (account: string, id: string) => Promise<string[] | null>;
}

type ChainPath = { technology: string; blockchain: string; network: string; index?: string };
/**
 * Splits an `_msearch` NDJSON body into (header, body) pairs.
 * @throws {ApiError} 400 CS_BODY_INVALID for a line that is not a JSON object, a header key other
 *   than `index` and {@link MSEARCH_IGNORED_HEADER_KEYS} (path `line <n>.<key>`), an odd number of lines, no search, or more than {@link MSEARCH_MAX_SEARCHES}.
 * @returns per search: its index expression, body, and `requestCache: false` when its header says so.
 */
export function parseMsearch(text: string): Array<{ index?: string; body: Record<string, unknown>; requestCache?: false }> {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (lines.length === 0 || lines.length % 2 !== 0)
    throw apiError("CS_BODY_INVALID", "an _msearch body is pairs of lines: a header ({} or {index}) and a search body");
  if (lines.length / 2 > MSEARCH_MAX_SEARCHES)
    throw apiError("CS_BODY_INVALID", `an _msearch body has at most ${MSEARCH_MAX_SEARCHES} searches; it has ${lines.length / 2}`);
  const out: Array<{ index?: string; body: Record<string, unknown>; requestCache?: false }> = [];
  for (let i = 0; i < lines.length; i += 2) {
    const [header, body] = [lines[i], lines[i + 1]].map((line, j) => {
      let v: unknown;
      try {
        v = JSON.parse(line as string);
      } catch {
        throw apiError("CS_BODY_INVALID", `line ${i + j + 1} of the _msearch body is not valid JSON`);
      }
      if (!isJsonObject(v)) throw apiError("CS_BODY_INVALID", `line ${i + j + 1} of the _msearch body must be a JSON object`);
      return v;
    }) as [Record<string, unknown>, Record<string, unknown>];
    for (const key of Object.keys(header))
      if (key !== "index" && !(MSEARCH_IGNORED_HEADER_KEYS as readonly string[]).includes(key))
        throw apiError(
          "CS_BODY_INVALID",
          `_msearch header key ${JSON.stringify(key)} is not supported; accepted: index, ${MSEARCH_IGNORED_HEADER_KEYS.join(", ")}${key === "routing" ? " (routing would search some shards only)" : ""}`,
          `line ${i + 1}.${key}`,
        );
    const index = Array.isArray(header.index) && header.index.every((x) => typeof x === "string") ? header.index.join(",") : header.index;
    if (index !== undefined && typeof index !== "string")
      throw apiError("CS_BODY_INVALID", "an _msearch header's index must be a string or an array of strings", `line ${i + 1}.index`);
    // `request_cache: false` (a boolean or the text "false"): kept out of the result cache.
    const noCache = header.request_cache === false || header.request_cache === "false" ? { requestCache: false as const } : {};
    out.push(index === undefined ? { body, ...noCache } : { index, body, ...noCache });
  }
  return out;
}

/** Registers the Elasticsearch-compatible routes (needs `app.es`). Register it in its own scope: its hooks apply to all its routes. */
export const esRoutes: FastifyPluginAsyncTypebox<EsRoutesOptions> = async (app, { config, chains, version, onHits, watchlistMembers }) => {
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  const tags = ["elasticsearch"];

  // Before the body is read: a compatible-with major that is not served is 415 whatever the route.
  app.addHook("preParsing", async (request) => checkCompatibleWith(request.headers));
  app.addHook("preValidation", requireObjectBody);
  app.addHook("onSend", async (_request, reply, payload) => {
    reply.header(PRODUCT_HEADER[0], PRODUCT_HEADER[1]);
    if (reply.statusCode < 400 || typeof payload !== "string") return payload;
    try {
      const body = JSON.parse(payload) as ErrorBody;
      if (typeof body?.error?.code === "string" && Array.isArray(body.errors)) return JSON.stringify(toEsErrorBody(body, reply.statusCode));
    } catch {
      // not our error body: send as is
    }
    return payload;
  });

  /** Resolves the target and refuses a GET with a body (404 before any body error). */
  const target = (request: FastifyRequest): SearchTarget & { chain: ChainId } => {
    const t = resolveIndexTarget(chains, prefix, request.params as ChainPath);
    const h = request.headers;
    if (request.method === "GET" && (Number(h["content-length"] ?? 0) > 0 || h["transfer-encoding"] !== undefined))
      throw apiError("CS_BODY_INVALID", "send a body with POST (a GET body is not read)");
    return t;
  };

  const searcher = esSearcher({ app, config, contexts: app.contexts, watchlistMembers });
  const account = (request: FastifyRequest): string => {
    if (!request.account) throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required");
    return request.account.id;
  };

  const json = (reply: FastifyReply, body: unknown) => reply.type("application/json; charset=utf-8").send(body as never);
  const base = "/:technology/:blockchain/:network/es";
  /** Each endpoint without an index, with one, and (hidden) `block/<endpoint>`, which the block-by-hash GET route would otherwise take. */
  const urls = (endpoint: string, name: string) =>
    (["POST", "GET"] as const).flatMap((method) => {
      const get = method === "GET" ? "Get" : "";
      return [
        { method, url: `${base}/${endpoint}`, params: EsChainParams, doc: { operationId: `${name}${get}` } },
        { method, url: `${base}/:index/${endpoint}`, params: EsIndexParams, doc: { operationId: `${name}Index${get}` } },
        { method, url: `${base}/block/${endpoint}`, params: EsChainParams, doc: { hide: true } },
      ];
    });
  const fixedIndex = (url: string, request: FastifyRequest): void => {
    if (url.includes("/block/_")) (request.params as ChainPath).index = "block";
  };

  app.get(
    `${base}/`,
    {
      schema: {
        summary: "Cluster info (the official clients' info() and ping())",
        description:
          "chainsift's name and version (tagline) in Elasticsearch's cluster-info shape, with the version fields of the Elasticsearch release whose API is served (8.19.4); HEAD answers 200 with no body (ping).",
        operationId: "esInfo",
        tags,
        params: EsChainParams,
        response: { 200: EsInfoSchema, ...ES_ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const chain = resolveIndexTarget(chains, prefix, request.params).chain;
      return json(reply, {
        name: "chainsift",
        cluster_name: `chainsift ${chainLabel(chain)}`,
        cluster_uuid: "_na_",
        version: CLAIMED_ES_VERSION,
        tagline: `chainsift ${version}: search EVM chain data with the Elasticsearch query DSL`,
      });
    },
  );

  for (const { method, url, params, doc } of urls("_search", "esSearch")) {
    app.route({
      method,
      url,
      schema: {
        summary: "Search (Elasticsearch 8's request and answer shapes)",
        description:
          "Same body and allowlist as the contract's search (query, sort, size, _source, search_after, aggs); size -1 is refused here. " +
          "Answer: hits.total as {value, relation}, no _type.",
        ...doc,
        tags,
        params,
        querystring: EsQuerystring,
        ...(method === "POST" ? { body: EsSearchBody } : {}),
        response: { 200: EsSearchResponseSchema, ...ES_ERROR_RESPONSES },
      },
      preValidation: async (request) => {
        fixedIndex(url, request);
        target(request);
        // No body (or an empty JSON body) is the same as {}.
        if (request.method === "POST") request.body ??= {};
      },
      handler: async (request, reply) => {
        const query = request.query as EsSearchQuery;
        const res = await searcher({
          target: target(request),
          pathIndex: (request.params as ChainPath).index !== undefined,
          // A GET has no body (null): the same as none.
          body: request.body ?? undefined,
          query,
          account: account(request),
          scrollAllowed: true,
        });
        if (res.cache) reply.header(CACHE_HEADER, res.cache);
        onHits?.(res.target, res.hits, res.text !== undefined ? "bytes" : "parsed");
        if (res.text !== undefined) return reply.type("application/json; charset=utf-8").send(res.text as never);
        return json(reply, filtered(res.body, query));
      },
    });
  }

  for (const { method, url, params, doc } of urls("_count", "esCount")) {
    app.route({
      method,
      url,
      schema: {
        summary: "Count the matches of a query (Elasticsearch's _count)",
        ...doc,
        tags,
        params,
        querystring: EsQuerystring,
        ...(method === "POST" ? { body: EsCountBody } : {}),
        response: { 200: EsCountResponseSchema, ...ES_ERROR_RESPONSES },
      },
      preValidation: async (request) => {
        fixedIndex(url, request);
        target(request);
        request.body ??= {};
      },
      handler: async (request, reply) => {
        const t = target(request);
        const body = request.body as Record<string, unknown>;
        for (const key of Object.keys(body))
          if (key !== "query") throw apiError("CS_BODY_INVALID", `_count takes only query; unknown key ${JSON.stringify(key)}`, key);
        const checked = validateQuery(body.query ?? {}, t.kinds);
        if (!checked.ok) throw new ApiError(checked.errors);
        const who = account(request);
        const query = await expandWatchlists(checked.value, (id) => watchlistMembers?.(who, id) ?? Promise.resolve(null));
        const index = await searchIndices(app.es, t, query);
        const req: estypes.CountRequest = { index, ignore_unavailable: true, allow_no_indices: true };
        if (query) req.query = query as estypes.QueryDslQueryContainer;
        const res = await app.es.count(req, requestOptions(timeoutMs));
        const s = res._shards;
        return json(reply, {
          count: res.count,
          _shards: { total: s.total, successful: s.successful, skipped: s.skipped ?? 0, failed: s.failed },
        });
      },
    });
  }

  await app.register(introspectRoutes, { config, chains });
  await app.register(healthRoutes, { config, chains });
  pagingRoutes({ app, config, contexts: app.contexts }, chains, json, onHits);

  // Endpoints not served (`_mapping`, `_doc/<id>`, `_cat/…`): 404 in Elasticsearch's error shape
  // (through the onSend hook), which the clients decode into their usual exception; the app's
  // not-found answer, in the contract's format, would be an undecodable one for the Java client.
  for (const url of [`${base}/_*`, `${base}/:index/_*`]) {
    app.all(url, { schema: { hide: true } }, async (request) => {
      throw apiError(
        "CS_ROUTE_NOT_FOUND",
        `no route ${request.method} ${request.url.split("?")[0]}; the Elasticsearch-compatible endpoints are GET /, _search, _search/scroll, _pit, _count, _msearch, _cluster/health and the introspection ones`,
      );
    });
  }

  // _msearch in a scope of its own: every media type it takes is read as text, never as JSON
  // (NDJSON is not JSON); a media type without a parser is 415 before the body is read.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(MSEARCH_TYPES, { parseAs: "string" }, (_request, body, done) => done(null, body));
    for (const { method, url, params, doc } of urls("_msearch", "esMsearch").filter((u) => u.method === "POST")) {
      scope.route({
        method,
        url,
        schema: {
          summary: `Several searches in one request (NDJSON, at most ${MSEARCH_MAX_SEARCHES})`,
          description:
            "Header lines take index (an index expression of the path's chain, or an array of them) and the harmless search_type, ignore_unavailable, allow_no_indices, expand_wildcards, preference, allow_partial_search_results, ccs_minimize_roundtrips, ignore_throttled (ignored) and request_cache (false: not cached); each search is checked and answered on its own (status per response).",
          ...doc,
          tags,
          params,
          querystring: EsQuerystring,
          response: { 200: EsMsearchResponseSchema, ...ES_ERROR_RESPONSES },
        },
        preValidation: async (request) => {
          fixedIndex(url, request);
          target(request);
        },
        handler: async (request, reply) => {
          const started = Date.now();
          const query = request.query as EsSearchQuery;
          const searches = parseMsearch(typeof request.body === "string" ? request.body : "");
          const path = request.params as ChainPath;
          const responses: unknown[] = [];
          // One after the other: an _msearch costs Elasticsearch no more at once than a search.
          for (const s of searches) {
            try {
              const index = s.index ?? path.index;
              const t = resolveIndexTarget(chains, prefix, { ...path, index });
              const res = await searcher({
                target: t,
                pathIndex: index !== undefined,
                body: s.body,
                query,
                account: account(request),
                scrollAllowed: false,
                requestCache: s.requestCache !== false,
              });
              onHits?.(res.target, res.hits, res.text !== undefined ? "bytes" : "parsed");
              const body = res.text !== undefined ? (JSON.parse(res.text.toString()) as object) : (res.body as object);
              responses.push({ ...body, status: 200 });
            } catch (err) {
              const mapped = mapError(err);
              if (mapped.unexpected) request.log.warn({ err }, "_msearch item failed");
              responses.push(toEsErrorBody(errorBody(mapped.details), mapped.status));
            }
          }
          return json(reply, filtered({ took: Date.now() - started, responses }, query));
        },
      });
    }
  });
};
