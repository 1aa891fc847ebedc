/**
 * TypeBox schemas of the Elasticsearch-compatible routes (api/routes/es/index.ts): path and query
 * parameters (validated) and the answers (documentation only, as for every route: the app
 * serializes with `JSON.stringify`).
 * @module
 */
import { Type } from "typebox";
import { component } from "../../../lib/validation/component.js";
import { ErrorDetailSchema, SearchBody, ShardsSchema } from "../search/schema.js";

const segment = (description: string, example: string) => Type.String({ description, examples: [example] });

/** The chain segments of every Elasticsearch-compatible path. */
export const EsChainParams = Type.Object({
  technology: segment("Technology of a served chain", "ethereum"),
  blockchain: segment("Blockchain of a served chain", "ethereum"),
  network: segment("Network of a served chain", "mainnet"),
});

/** The chain segments and an index expression. */
export const EsIndexParams = Type.Object({
  technology: segment("Technology of a served chain", "ethereum"),
  blockchain: segment("Blockchain of a served chain", "ethereum"),
  network: segment("Network of a served chain", "mainnet"),
  index: segment(
    "Index expression: comma list of kinds (tx), index-style names (ethereum-ethereum-mainnet-tx), or * / <technology>-<blockchain>-<network>-* for all kinds",
    "ethereum-ethereum-mainnet-tx",
  ),
});

const flag = (description: string) => Type.Optional(Type.String({ description }));

const ignored = (why: string) => flag(`Accepted and ignored: ${why}`);

/**
 * Query-string parameters accepted on the Elasticsearch-compatible routes; any other is 400
 * `CS_BAD_REQUEST` (e.g. `q`: the query belongs in the body, where the allowlist checks it;
 * `routing`: it would search some shards only). Those that change nothing here are accepted and
 * ignored (what the official clients and their helpers send).
 */
export const EsQuerystring = Type.Object(
  {
    rest_total_hits_as_int: flag("true: hits.total as an integer instead of {value, relation}"),
    typed_keys: flag("true: aggregation results keyed <type>#<name> (sterms#by_to), as the Java and Go typed clients read them"),
    track_total_hits: flag("true, false or a number (the body's wins): the shape of hits.total"),
    filter_path: flag("Comma list of dotted paths of the answer to keep (* and ** wildcards, - to exclude), as Elasticsearch"),
    scroll: flag("_search, _search/scroll: open (keep alive) a scroll for this time (30s, 1m, …)"),
    scroll_id: flag("_search/scroll: the scroll id (else in the body)"),
    keep_alive: flag("_pit: how long the point in time is kept (1m, …); required there"),
    size: flag("Same as the body's size (the body's wins)"),
    from: flag("Same as the body's from (the body's wins)"),
    sort: flag("Comma list of field or field:asc|desc (the body's sort wins)"),
    _source: flag("true, false or a comma list of paths (the body's _source wins)"),
    _source_includes: flag("Comma list of paths to keep"),
    _source_excludes: flag("Comma list of paths to drop"),
    stored_fields: flag('Only "_none_": hits without _source'),
    docvalue_fields: flag("Comma list of fields with doc values, answered in each hit's fields"),
    search_type: ignored("query_then_fetch and dfs_query_then_fetch give the same hits here"),
    preference: ignored("every copy holds the same records"),
    request_cache: flag(
      "false: the answer is kept neither by Elasticsearch's shard request cache nor by chainsift's result cache (docs/api.md Result cache)",
    ),
    allow_partial_search_results: ignored("shard failures are answered as errors"),
    ccs_minimize_roundtrips: ignored("no cross-cluster search"),
    batched_reduce_size: ignored("a reduce setting"),
    max_concurrent_shard_requests: ignored("a concurrency setting"),
    pre_filter_shard_size: ignored("the server sets it"),
    ignore_unavailable: ignored("kinds without an index yet answer no hits"),
    allow_no_indices: ignored("kinds without an index yet answer no hits"),
    expand_wildcards: ignored("index expressions are resolved by chainsift"),
    ignore_throttled: ignored("no frozen indices"),
    track_scores: ignored("scores are always computed"),
    timeout: ignored("the server sets the search timeout (ELASTICSEARCH_REQUEST_TIMEOUT_MS)"),
    pretty: ignored("answers are compact"),
    human: ignored("no human-readable fields"),
    error_trace: ignored("stack traces are never returned"),
  },
  { additionalProperties: false },
);

/**
 * Body of the Elasticsearch-compatible `_search`: the contract's keys ({@link SearchBody}) and
 * Elasticsearch's `track_total_hits`, `pit`, `stored_fields`, `docvalue_fields`, `fields`, `highlight`, `script_fields: {}`. Only the top
 * level is checked here; api/dsl/ and api/routes/es/request.ts check the rest.
 */
export const EsSearchBody = Type.Object(
  {
    ...SearchBody.properties,
    track_total_hits: Type.Optional(
      Type.Union([Type.Boolean(), Type.Integer({ minimum: 0 })], {
        description: "true (exact total), false (no total), or N: {value: min(total, N), relation: gte when more}",
      }),
    ),
    pit: Type.Optional(
      Type.Object(
        { id: Type.String({ description: "The id answered by _pit" }), keep_alive: Type.Optional(Type.String()) },
        { additionalProperties: false, description: "Search this point in time (then no index in the path)" },
      ),
    ),
    stored_fields: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'Only "_none_"' })),
    docvalue_fields: Type.Optional(Type.Array(Type.Unknown(), { description: "Field names (or {field}) with doc values" })),
    fields: Type.Optional(
      Type.Array(Type.Unknown(), { description: "Field names, * patterns or {field, format}: answered in each hit's fields" }),
    ),
    highlight: Type.Optional(
      Type.Unknown({ description: "An object: fields ({<field or *>: {}}), pre_tags, post_tags, fragment_size, …" }),
    ),
    script_fields: Type.Optional(Type.Unknown({ description: "Only {} (no script)" })),
  },
  { additionalProperties: false, ...component("EsSearchBody") },
);

/** Body of `_count`: a query only. */
export const EsCountBody = Type.Object(
  { query: Type.Optional(Type.Object({}, { additionalProperties: true, description: "One query clause of the allowlist" })) },
  { description: "query only; absent counts every record of the kinds", ...component("EsCountBody") },
);

const EsHit = Type.Object(
  {
    fields: Type.Optional(Type.Object({}, { additionalProperties: true, description: "docvalue_fields and fields: the fields' values" })),
    highlight: Type.Optional(Type.Unknown({ description: "highlight: an object, the fragments by field" })),
    _index: Type.String(),
    _id: Type.String(),
    _score: Type.Union([Type.Number(), Type.Null()]),
    _routing: Type.Optional(Type.String({ description: "Hash of the containing block (tx) or transaction (log, event)" })),
    _source: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: "The record (absent with _source false or stored_fields _none_)" }),
    ),
    sort: Type.Optional(Type.Array(Type.Unknown(), { description: "Sorted searches: the values to pass as search_after" })),
  },
  component("EsHit"),
);

/** Elasticsearch 8's search answer (documentation only). */
export const EsSearchResponseSchema = Type.Object(
  {
    pit_id: Type.Optional(Type.String({ description: "Searches on a point in time: its id" })),
    _scroll_id: Type.Optional(Type.String({ description: "?scroll= searches and _search/scroll: the scroll id for the next page" })),
    took: Type.Integer(),
    timed_out: Type.Boolean(),
    _shards: ShardsSchema,
    hits: Type.Object({
      total: Type.Optional(
        Type.Union(
          [Type.Object({ value: Type.Integer(), relation: Type.Union([Type.Literal("eq"), Type.Literal("gte")]) }), Type.Integer()],
          {
            description:
              "{value, relation: eq} (exact), {value: N, relation: gte} with track_total_hits N below the total, an integer with rest_total_hits_as_int=true; absent with track_total_hits false",
          },
        ),
      ),
      max_score: Type.Union([Type.Number(), Type.Null()]),
      hits: Type.Array(EsHit),
    }),
    aggregations: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: "Aggregation results as Elasticsearch returns them" }),
    ),
  },
  { description: "Elasticsearch 8's search answer", ...component("EsSearchResponse") },
);

/** Elasticsearch's `_count` answer (documentation only). */
export const EsCountResponseSchema = Type.Object(
  { count: Type.Integer({ description: "Exact number of matches" }), _shards: ShardsSchema },
  component("EsCountResponse"),
);

const EsRootCause = Type.Object(
  {
    type: Type.String({ description: "The error code, e.g. CS_QUERY_UNSUPPORTED_CLAUSE" }),
    reason: Type.String({ description: "Human-readable explanation (not stable)" }),
    path: Type.Union([Type.String(), Type.Null()], { description: "JSON path of the offending part of the request, or null" }),
  },
  component("EsRootCause"),
);

/** The error body on the Elasticsearch-compatible routes (documentation only). */
export const EsErrorBodySchema = Type.Object(
  {
    error: Type.Intersect([
      ErrorDetailSchema,
      EsRootCause,
      Type.Object({ root_cause: Type.Array(EsRootCause, { description: "Every problem found (the first is error itself)" }) }),
    ]),
    status: Type.Integer({ description: "The HTTP status" }),
  },
  {
    description:
      "Elasticsearch's error shape: error.type is the code (also error.code), error.reason the message, error.root_cause every problem; status the HTTP status",
    ...component("EsErrorBody"),
  },
);

/** `_msearch` answer (documentation only): one search answer or error body per search, in request order. */
export const EsMsearchResponseSchema = Type.Object(
  {
    took: Type.Integer(),
    responses: Type.Array(
      Type.Object({ status: Type.Integer() }, { additionalProperties: true, description: "A search answer or an error body, with status" }),
    ),
  },
  component("EsMsearchResponse"),
);

/** `GET /<technology>/<blockchain>/<network>/es/` (documentation only): the cluster-info shape of the clients' `info()`. */
export const EsInfoSchema = Type.Object(
  {
    name: Type.String({ description: "chainsift" }),
    cluster_name: Type.String({ description: "chainsift and the chain, e.g. chainsift ethereum/ethereum/mainnet" }),
    cluster_uuid: Type.String(),
    version: Type.Object(
      {
        number: Type.String({ description: "The Elasticsearch version whose API is served: 8.19.4" }),
        build_flavor: Type.String(),
        build_type: Type.String(),
        build_hash: Type.String(),
        build_date: Type.String(),
        build_snapshot: Type.Boolean(),
        lucene_version: Type.String(),
        minimum_wire_compatibility_version: Type.String(),
        minimum_index_compatibility_version: Type.String(),
      },
      { description: "The Elasticsearch release claimed (its build facts), as the Java client requires every field" },
    ),
    tagline: Type.String({ description: "chainsift's version and purpose" }),
  },
  component("EsInfo"),
);

/** Documented error answers of the Elasticsearch-compatible routes. */
export const ES_ERROR_RESPONSES = {
  400: EsErrorBodySchema,
  401: EsErrorBodySchema,
  404: EsErrorBodySchema,
  413: EsErrorBodySchema,
  415: EsErrorBodySchema,
  429: EsErrorBodySchema,
  503: EsErrorBodySchema,
} as const;

/** Answer of clearing scrolls and closing a point in time (documentation only). */
export const EsFreedSchema = Type.Object(
  { succeeded: Type.Boolean(), num_freed: Type.Integer({ description: "Contexts closed" }) },
  component("EsFreed"),
);

/** Answer of opening a point in time (documentation only). */
export const EsOpenPitSchema = Type.Object(
  { id: Type.String({ description: "chainsift's point-in-time id (csp_…), for pit.id and DELETE _pit" }), _shards: ShardsSchema },
  component("EsOpenPit"),
);
