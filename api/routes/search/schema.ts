/**
 * TypeBox schemas of the search routes. They validate requests and generate the OpenAPI document
 * (api/plugins/openapi.ts). The body schema checks only the top level (known keys and their JSON
 * types); the query tree, sort fields, size bounds, `_source` paths, `search_after` and
 * aggregations are checked by the allowlist validators (api/dsl/), which know the requested kinds.
 *
 * Response schemas ({@link HitsEnvelopeSchema}, {@link ErrorBodySchema}) only document the answers:
 * the app serializes with `JSON.stringify`, never through them.
 * @module
 */
import { type Static, Type } from "typebox";
import { component } from "../../../lib/validation/component.js";

const segment = (description: string, example: string) => Type.String({ description, examples: [example] });

/** Path parameters of `POST /:technology/:blockchain/:network/es/:kinds/search/`. */
export const SearchParams = Type.Object({
  technology: segment("Technology of a served chain", "ethereum"),
  blockchain: segment("Blockchain of a served chain", "ethereum"),
  network: segment("Network of a served chain", "mainnet"),
  kinds: segment("Record kind, or a comma list of distinct kinds: block, tx, log, event", "tx"),
});

/** Path parameters of `GET /:technology/:blockchain/:network/es/block/:hash/`. */
export const BlockParams = Type.Object({
  technology: segment("Technology of a served chain", "ethereum"),
  blockchain: segment("Blockchain of a served chain", "ethereum"),
  network: segment("Network of a served chain", "mainnet"),
  hash: Type.String({ description: "Block hash: 0x and 64 hex digits", examples: [`0x${"ab".repeat(32)}`] }),
});

const AnyObject = (description: string) => Type.Object({}, { additionalProperties: true, description });
const SortValue = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

/** Top level of a query body: all keys optional, no other keys. */
export const SearchBody = Type.Object(
  {
    query: Type.Optional(
      AnyObject(
        "One query clause of the allowlist (bool, term, terms, range, ids, nested, exists, match_all, match, query_string, simple_query_string)",
      ),
    ),
    sort: Type.Optional(
      Type.Union([Type.String(), AnyObject('{"<field>": "asc"|"desc"|{"order": …}}'), Type.Array(Type.Unknown())], {
        description:
          'A field name ("_doc", "blockNumber.num"), a map field → asc|desc|{order}, or an array of names and such maps (sortable fields, _score, _doc)',
      }),
    ),
    size: Type.Optional(Type.Integer({ description: "Records to return: 0..maxSize, or -1 for all matches (streamed). Default 10." })),
    from: Type.Optional(
      Type.Integer({ description: "Hits to skip; from + size at most 10000 (deeper: search_after). Not with size -1 or search_after." }),
    ),
    _source: Type.Optional(
      Type.Union(
        [
          Type.Boolean(),
          Type.String(),
          Type.Array(Type.String()),
          Type.Object(
            {
              includes: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
              excludes: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
              include: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
              exclude: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
            },
            { additionalProperties: false },
          ),
        ],
        { description: "Fields to keep in each record: true, false (none), a path, an array of paths, or {includes, excludes}" },
      ),
    ),
    search_after: Type.Optional(
      Type.Array(SortValue, {
        description: "Extension: the sort values of the last hit of the previous page (needs sort; not with size -1)",
      }),
    ),
    aggs: Type.Optional(AnyObject("Extension: aggregations by name (terms, histogram, date_histogram, sum, avg, min, max, cardinality)")),
    aggregations: Type.Optional(AnyObject("Extension: same as aggs")),
  },
  { additionalProperties: false, ...component("SearchBody") },
);

/** Static type of {@link SearchBody}. */
export type SearchBodyType = Static<typeof SearchBody>;

/** One problem of an error answer. */
export const ErrorDetailSchema = Type.Object(
  {
    code: Type.String({ description: "Stable error code, e.g. CS_QUERY_UNSUPPORTED_CLAUSE" }),
    message: Type.String({ description: "Human-readable explanation (not stable)" }),
    path: Type.Union([Type.String(), Type.Null()], { description: "JSON path of the offending part of the request, or null" }),
  },
  component("ErrorDetail"),
);

/** Body of every error answer. */
export const ErrorBodySchema = Type.Object(
  { error: ErrorDetailSchema, errors: Type.Array(ErrorDetailSchema) },
  { description: "Error: the first problem, and all problems", ...component("ErrorBody") },
);

const Hit = Type.Object(
  {
    _index: Type.String(),
    _type: Type.String({ description: "Record kind: block, tx, log or event" }),
    _id: Type.String(),
    _score: Type.Union([Type.Number(), Type.Null()]),
    _routing: Type.Optional(Type.String({ description: "Hash of the containing block (tx) or transaction (log, event)" })),
    _parent: Type.Optional(Type.String({ description: "Same as _routing" })),
    _source: AnyObject("The record"),
    sort: Type.Optional(Type.Array(Type.Unknown(), { description: "Extension, sorted searches: the values to pass as search_after" })),
  },
  component("Hit"),
);

/** Shard counts of a search answer (documentation only). */
export const ShardsSchema = Type.Object(
  { total: Type.Integer(), successful: Type.Integer(), skipped: Type.Integer(), failed: Type.Integer() },
  component("Shards"),
);

/** The hits envelope (documentation only). */
export const HitsEnvelopeSchema = Type.Object(
  {
    took: Type.Integer(),
    timed_out: Type.Boolean(),
    _shards: ShardsSchema,
    hits: Type.Object({
      total: Type.Integer({ description: "Exact number of matches" }),
      max_score: Type.Union([Type.Number(), Type.Null()]),
      hits: Type.Array(Hit),
    }),
    aggregations: Type.Optional(AnyObject("Extension: aggregation results as Elasticsearch returns them")),
  },
  { description: "Meta first (took, timed_out, _shards), then hits, then aggregations (if requested)", ...component("HitsEnvelope") },
);

/** Documented error answers of the search routes. */
export const SEARCH_ERROR_RESPONSES = {
  400: ErrorBodySchema,
  401: ErrorBodySchema,
  404: ErrorBodySchema,
  413: ErrorBodySchema,
  415: ErrorBodySchema,
  429: ErrorBodySchema,
  503: ErrorBodySchema,
} as const;
