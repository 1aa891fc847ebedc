/**
 * TypeBox schemas of the Elasticsearch-compatible routes (api/routes/es/index.ts): path and query
 * parameters (validated) and the answers (documentation only, as for every route: the app
 * serializes with `JSON.stringify`).
 * @module
 */
import { Type } from "typebox";
import { component } from "../../../lib/validation/component.js";
import { ErrorDetailSchema, ShardsSchema } from "../search/schema.js";

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

/**
 * Query-string parameters accepted on the Elasticsearch-compatible routes; any other is 400
 * `CS_BAD_REQUEST` (the query belongs in the body, where the allowlist checks it).
 */
export const EsQuerystring = Type.Object(
  {
    rest_total_hits_as_int: flag("true: hits.total as an integer instead of {value, relation}"),
    typed_keys: flag("true: aggregation results keyed <type>#<name> (sterms#by_to), as the Java and Go typed clients read them"),
    track_total_hits: flag("Only true (totals are always exact); accepted and ignored"),
    pretty: flag("Accepted and ignored"),
    human: flag("Accepted and ignored"),
    error_trace: flag("Accepted and ignored (stack traces are never returned)"),
  },
  { additionalProperties: false },
);

/** Body of `_count`: a query only. */
export const EsCountBody = Type.Object(
  { query: Type.Optional(Type.Object({}, { additionalProperties: true, description: "One query clause of the allowlist" })) },
  { description: "query only; absent counts every record of the kinds", ...component("EsCountBody") },
);

const EsHit = Type.Object(
  {
    _index: Type.String(),
    _id: Type.String(),
    _score: Type.Union([Type.Number(), Type.Null()]),
    _routing: Type.Optional(Type.String({ description: "Hash of the containing block (tx) or transaction (log, event)" })),
    _source: Type.Object({}, { additionalProperties: true, description: "The record" }),
    sort: Type.Optional(Type.Array(Type.Unknown(), { description: "Sorted searches: the values to pass as search_after" })),
  },
  component("EsHit"),
);

/** Elasticsearch 8's search answer (documentation only). */
export const EsSearchResponseSchema = Type.Object(
  {
    took: Type.Integer(),
    timed_out: Type.Boolean(),
    _shards: ShardsSchema,
    hits: Type.Object({
      total: Type.Union([Type.Object({ value: Type.Integer(), relation: Type.Literal("eq") }), Type.Integer()], {
        description: "Exact: {value, relation: eq}, or an integer with rest_total_hits_as_int=true",
      }),
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
