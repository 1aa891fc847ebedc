/**
 * Introspection routes of the Elasticsearch-compatible API (issue 30), under
 * `/<technology>/<blockchain>/<network>/es`, for the tools that look at indices before they search
 * (eland's `DataFrame(es, "tx")`, elasticsearch.dsl, Grafana's field list, OpenSearch Dashboards'
 * and Kibana's index patterns, DBeaver):
 * - `GET /_mapping`, `GET /<index>/_mapping`: `{<index>: {mappings}}` (introspect-shapes.ts `publicMapping`);
 * - `GET /<index>`, `GET /_all`: `{<index>: {aliases: {}, mappings, settings: {index: {…}}}}`;
 *   `HEAD /<index>`: 200 when the expression names a kind, else 404;
 * - `GET|POST /_field_caps`, `GET|POST /<index>/_field_caps` (`fields` in the query string or body);
 * - `GET /_cat/indices`, `GET /_cat/indices/<index>` (JSON or text; `v`, `h`, `s`, `bytes`),
 *   `GET /_cat/aliases[/<name>]` (there are none: the kinds' aliases are shown as indices);
 * - `GET /_resolve/index/<index>`;
 * - `GET|HEAD /<index>/_doc/<id>`, `GET|HEAD /<index>/_source/<id>`.
 *
 * The indices shown are the kinds' aliases (`_index` of hits: es/mappings.ts `indexName` with the
 * deployment's prefix); their backing indices (es/partitions.ts) are never shown: doc counts and
 * sizes are summed over them, shard counts added up, the creation date is the oldest one's.
 * Every kind of the chain exists for these routes, also before its first record is indexed
 * (a search of it answers no hits): its counts are then 0. Index expressions: api/routes/es/indices.ts
 * (a pattern matching nothing is `{}`, `[]` or `{indices: [], fields: {}}`, as Elasticsearch with its
 * default `allow_no_indices=true`; `allow_no_indices=false` makes it 404).
 * Sources: the 8.19 reference pages of each API (linked on the handlers) and the answers of the
 * Elasticsearch 8.19.4 the stack runs.
 * @module
 */
import type { estypes } from "@elastic/elasticsearch";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { aliasOfIndex } from "../../../es/partitions.js";
import type { ChainId, Config } from "../../../lib/config/index.js";
import type { RecordKind } from "../../../lib/records.js";
import { apiError } from "../../errors.js";
import { requestOptions } from "../../search/search.js";
import { resolveIndexTarget } from "./indices.js";
import { type CatColumn, type CatRow, catTable, fieldCaps, fieldPatterns, publicMapping } from "./introspect-shapes.js";
import { ES_ERROR_RESPONSES, EsChainParams, EsIndexParams } from "./schema.js";

/** Options of {@link introspectRoutes}. */
export interface IntrospectRoutesOptions {
  /** Uses `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`, `api.maxSize`. */
  config: Config;
  /** The chains served. */
  chains: readonly ChainId[];
}

const flag = (description: string) => Type.Optional(Type.String({ description }));
const IGNORED = "Accepted and ignored";

/** Query-string parameters every introspection route takes; any other is 400 CS_BAD_REQUEST. */
const COMMON = {
  pretty: flag(IGNORED),
  human: flag(IGNORED),
  error_trace: flag(IGNORED),
  master_timeout: flag(IGNORED),
  local: flag(IGNORED),
  expand_wildcards: flag(IGNORED),
  ignore_unavailable: flag(IGNORED),
  allow_no_indices: flag("false: an index expression matching no index is 404 CS_UNKNOWN_KIND (default true: an empty answer)"),
};
const IndexQuery = Type.Object(
  { ...COMMON, flat_settings: flag("true: settings as flat keys (index.number_of_shards)"), include_defaults: flag(IGNORED) },
  { additionalProperties: false },
);
const FieldCapsQuery = Type.Object(
  {
    ...COMMON,
    fields: flag("Comma list of field names and * patterns (or fields in the body)"),
    include_unmapped: flag("true: an unmapped entry per field listing the indices without it"),
    include_empty_fields: flag("Accepted and ignored (fields are reported whether or not a document has a value)"),
  },
  { additionalProperties: false },
);
const CatQuery = Type.Object(
  {
    ...COMMON,
    format: flag("json or text (default)"),
    v: flag("Text: a header line"),
    h: flag("Columns to show: comma list of names, aliases or * patterns"),
    s: flag("Sort: comma list of column[:asc|:desc]"),
    bytes: flag("Unit of sizes: b, kb, mb, gb, tb, pb (default human-readable)"),
  },
  { additionalProperties: false },
);
const DocQuery = Type.Object(
  {
    ...COMMON,
    realtime: flag(IGNORED),
    refresh: flag(IGNORED),
    preference: flag(IGNORED),
    routing: flag("Accepted and ignored (a document is found whatever the routing)"),
  },
  { additionalProperties: false },
);
const DocParams = Type.Object({ ...EsIndexParams.properties, id: Type.String({ description: "Document id (a hit's _id)" }) });
const FieldCapsBody = Type.Object(
  { fields: Type.Optional(Type.Union([Type.Array(Type.String()), Type.String()], { description: "Field names and * patterns" })) },
  { additionalProperties: false },
);
const AnyObject = Type.Object({}, { additionalProperties: true });

type Path = { technology: string; blockchain: string; network: string; index?: string };
type Query = Record<string, string | undefined>;

/** Whether a query-string flag is set (`?flag`, `?flag=true`). */
const isSet = (v: string | undefined): boolean => v === "" || v === "true";

/** `_cat/indices` columns (Elasticsearch 8.19's, with their aliases; `?help` on Elasticsearch lists them). */
const INDEX_COLUMNS: readonly CatColumn[] = [
  { name: "health", aliases: ["h"], default: true },
  { name: "status", aliases: ["s"], default: true },
  { name: "index", aliases: ["i", "idx"], default: true },
  { name: "uuid", aliases: ["id"], default: true },
  { name: "pri", aliases: ["p", "shards.primary", "shardsPrimary"], right: true, numeric: true, default: true },
  { name: "rep", aliases: ["r", "shards.replica", "shardsReplica"], right: true, numeric: true, default: true },
  { name: "docs.count", aliases: ["dc", "docsCount"], right: true, numeric: true, default: true },
  { name: "docs.deleted", aliases: ["dd", "docsDeleted"], right: true, numeric: true, default: true },
  { name: "creation.date", aliases: ["cd"], right: true, numeric: true },
  { name: "creation.date.string", aliases: ["cds"] },
  { name: "store.size", aliases: ["ss", "storeSize"], right: true, bytes: true, default: true },
  { name: "pri.store.size", right: true, bytes: true, default: true },
  { name: "dataset.size", right: true, bytes: true, default: true },
];

/** `_cat/aliases` columns. */
const ALIAS_COLUMNS: readonly CatColumn[] = [
  { name: "alias", aliases: ["a"], default: true },
  { name: "index", aliases: ["i", "idx"], default: true },
  { name: "filter", aliases: ["f", "fi"], default: true },
  { name: "routing.index", aliases: ["ri", "routingIndex"], default: true },
  { name: "routing.search", aliases: ["rs", "routingSearch"], default: true },
  { name: "is_write_index", aliases: ["w", "isWriteIndex"], default: true },
];

/** What Elasticsearch knows of one alias (a kind), summed over its backing indices. */
interface AliasFacts {
  kind: RecordKind;
  name: string;
  /** Worst health of the backing indices; green when there are none. */
  health: string;
  /** The oldest backing index's uuid (by name: the first partition), or `_na_`. */
  uuid: string;
  primaries: number;
  replicas: number;
  /** Oldest backing index's creation date, epoch milliseconds; undefined without backing indices. */
  creationDate?: number;
  docs: number;
  deleted: number;
  storeBytes: number;
  priStoreBytes: number;
  datasetBytes: number;
}

const HEALTH_ORDER = ["green", "yellow", "red"];

/** Registers the introspection routes (needs `app.es`); register it inside the Elasticsearch-compatible routes' scope (their hooks: product header, error shape). */
export const introspectRoutes: FastifyPluginAsyncTypebox<IntrospectRoutesOptions> = async (app, { config, chains }) => {
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  const tags = ["elasticsearch"];
  const base = "/:technology/:blockchain/:network/es";
  const json = (reply: FastifyReply, body: unknown) => reply.type("application/json; charset=utf-8").send(body as never);

  /** The chain and kinds of a request; patterns matching nothing give no kinds unless `allow_no_indices=false`. */
  const resolve = (request: FastifyRequest, index?: string) => {
    const path = request.params as Path;
    const query = request.query as Query;
    const allowNoIndices = query.allow_no_indices !== "false";
    const t = resolveIndexTarget(chains, prefix, { ...path, index: index ?? path.index }, { allowNoIndices });
    return { chain: t.chain, targets: t.kinds.map((kind, i) => ({ kind, name: t.indices[i] as string })) };
  };

  /** Facts of each alias from Elasticsearch's index stats and settings (no backing index: zeros). */
  const facts = async (targets: ReadonlyArray<{ kind: RecordKind; name: string }>): Promise<AliasFacts[]> => {
    if (targets.length === 0) return [];
    const index = targets.map((t) => t.name);
    const opts = { ignore_unavailable: true, allow_no_indices: true } as const;
    const [stats, settings] = await Promise.all([
      app.es.indices.stats({ index, metric: ["docs", "store"], ...opts }, requestOptions(timeoutMs)),
      app.es.indices.getSettings(
        { index, ...opts, name: ["index.number_of_shards", "index.number_of_replicas", "index.creation_date", "index.uuid"] },
        requestOptions(timeoutMs),
      ),
    ]);
    return targets.map(({ kind, name }) => {
      const backing = Object.keys(settings)
        .filter((b) => aliasOfIndex(b) === name)
        .sort();
      const f: AliasFacts = {
        kind,
        name,
        health: "green",
        uuid: "_na_",
        primaries: 0,
        replicas: 0,
        docs: 0,
        deleted: 0,
        storeBytes: 0,
        priStoreBytes: 0,
        datasetBytes: 0,
      };
      for (const b of backing) {
        const s = (settings[b]?.settings?.index ?? {}) as Record<string, unknown>;
        const st = stats.indices?.[b];
        if (f.uuid === "_na_" && typeof s.uuid === "string") f.uuid = s.uuid;
        f.primaries += Number(s.number_of_shards ?? 0);
        f.replicas = Math.max(f.replicas, Number(s.number_of_replicas ?? 0));
        const created = Number(s.creation_date);
        if (Number.isFinite(created)) f.creationDate = Math.min(f.creationDate ?? created, created);
        if (st?.health && HEALTH_ORDER.indexOf(st.health.toLowerCase()) > HEALTH_ORDER.indexOf(f.health))
          f.health = st.health.toLowerCase();
        f.docs += st?.primaries?.docs?.count ?? 0;
        f.deleted += st?.primaries?.docs?.deleted ?? 0;
        f.storeBytes += st?.total?.store?.size_in_bytes ?? 0;
        f.priStoreBytes += st?.primaries?.store?.size_in_bytes ?? 0;
        f.datasetBytes += st?.total?.store?.total_data_set_size_in_bytes ?? 0;
      }
      return f;
    });
  };

  const indexSettings = (f: AliasFacts, flat: boolean): Record<string, unknown> => {
    const index: Record<string, string> = {
      ...(f.creationDate !== undefined ? { creation_date: String(f.creationDate) } : {}),
      max_result_window: String(config.api.maxSize),
      number_of_replicas: String(f.replicas),
      number_of_shards: String(f.primaries),
      provided_name: f.name,
      uuid: f.uuid,
    };
    return flat ? Object.fromEntries(Object.entries(index).map(([k, v]) => [`index.${k}`, v])) : { index };
  };

  /**
   * Registers a route; a URL with `:index` also as hidden routes for the index `block` (which the
   * contract's block-by-hash route would otherwise take) and `_all` (which the `_*` catch-all of
   * api/routes/es/index.ts would otherwise take).
   */
  const route = (
    method: "GET" | "POST" | "HEAD",
    url: string,
    schema: Record<string, unknown>,
    handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  ) => {
    const fixed = url.includes("/:index") && !url.includes("/_cat/") && !url.includes("/_resolve/") ? ["block", "_all"] : [];
    for (const index of [undefined, ...fixed]) {
      if (index === "block" && url.endsWith("/:index")) continue;
      const { operationId: _id, params, ...rest } = schema as { operationId?: string; params: typeof DocParams };
      const { index: _index, ...others } = params.properties;
      const own = index === undefined ? schema : { ...rest, hide: true, params: Type.Object(others) };
      app.route({
        method,
        url: index === undefined ? url : url.replace("/:index", `/${index}`),
        exposeHeadRoute: false,
        schema: { tags, ...own, response: { 200: AnyObject, ...ES_ERROR_RESPONSES } },
        preValidation: async (request) => {
          if (index !== undefined) (request.params as Path).index = index;
        },
        handler,
      });
    }
  };

  // GET /_mapping, /<index>/_mapping
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-get-mapping.html
  const mapping = async (request: FastifyRequest, reply: FastifyReply) => {
    const { targets } = resolve(request);
    return json(reply, Object.fromEntries(targets.map((t) => [t.name, { mappings: publicMapping(t.kind) }])));
  };
  const mappingDoc = {
    summary: "Mappings of indices (es.indices.get_mapping, eland, Grafana)",
    description: "{<index>: {mappings}} for each kind the expression names: the explicit mapping, properties sorted by name.",
    querystring: IndexQuery,
  };
  route("GET", `${base}/_mapping`, { ...mappingDoc, operationId: "esGetMapping", params: EsChainParams }, mapping);
  route("GET", `${base}/:index/_mapping`, { ...mappingDoc, operationId: "esGetMappingIndex", params: EsIndexParams }, mapping);

  // GET /<index>, HEAD /<index>
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-get-index.html,
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-exists.html
  const getIndex = async (request: FastifyRequest, reply: FastifyReply) => {
    const { targets } = resolve(request);
    const flat = isSet((request.query as Query).flat_settings);
    const all = await facts(targets);
    return json(
      reply,
      Object.fromEntries(all.map((f) => [f.name, { aliases: {}, mappings: publicMapping(f.kind), settings: indexSettings(f, flat) }])),
    );
  };
  const exists = async (request: FastifyRequest, reply: FastifyReply) => {
    // Elasticsearch's exists API defaults to allow_no_indices=false: a pattern matching nothing is 404.
    const query = request.query as Query;
    const path = request.params as Path;
    const t = resolveIndexTarget(chains, prefix, { ...path }, { allowNoIndices: query.allow_no_indices === "true" });
    return reply.code(t.kinds.length > 0 ? 200 : 404).send();
  };
  const getIndexDoc = {
    summary: "Index information (es.indices.get; HEAD: es.indices.exists)",
    description:
      "{<index>: {aliases: {}, mappings, settings: {index: {creation_date, max_result_window, number_of_replicas, number_of_shards, provided_name, uuid}}}}; HEAD answers 200 or 404 without a body.",
    querystring: IndexQuery,
  };
  route("GET", `${base}/:index`, { ...getIndexDoc, operationId: "esGetIndex", params: EsIndexParams }, getIndex);
  route("HEAD", `${base}/:index`, { ...getIndexDoc, operationId: "esIndexExists", params: EsIndexParams }, exists);

  // GET|POST /_field_caps, /<index>/_field_caps
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-field-caps.html
  const caps = async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Query;
    const body = (request.body ?? {}) as { fields?: unknown };
    const patterns =
      query.fields !== undefined
        ? fieldPatterns(query.fields, "querystring.fields")
        : fieldPatterns(body.fields, body.fields === undefined ? "querystring.fields" : "fields");
    const { targets } = resolve(request);
    return json(reply, fieldCaps(targets, patterns, isSet(query.include_unmapped)));
  };
  const capsDoc = {
    summary: "Field capabilities (es.field_caps; Kibana and OpenSearch Dashboards index patterns)",
    description:
      "{indices, fields: {<name>: {<type>: {type, metadata_field, searchable, aggregatable, indices?, non_searchable_indices?, non_aggregatable_indices?}}}} of the fields matching fields (names and * patterns), with their enclosing objects.",
    querystring: FieldCapsQuery,
  };
  for (const method of ["GET", "POST"] as const) {
    const post = method === "POST" ? { body: FieldCapsBody } : {};
    const get = method === "GET" ? "Get" : "";
    route(method, `${base}/_field_caps`, { ...capsDoc, ...post, operationId: `esFieldCaps${get}`, params: EsChainParams }, caps);
    route(
      method,
      `${base}/:index/_field_caps`,
      { ...capsDoc, ...post, operationId: `esFieldCapsIndex${get}`, params: EsIndexParams },
      caps,
    );
  }

  // GET /_cat/indices[/<index>], /_cat/aliases[/<name>]
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/cat-indices.html,
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/cat-alias.html
  const catIndices = async (request: FastifyRequest, reply: FastifyReply) => {
    const { targets } = resolve(request);
    const rows: CatRow[] = (await facts(targets)).map((f) => ({
      health: f.health,
      status: "open",
      index: f.name,
      uuid: f.uuid,
      pri: f.primaries,
      rep: f.replicas,
      "docs.count": f.docs,
      "docs.deleted": f.deleted,
      "creation.date": f.creationDate ?? null,
      "creation.date.string": f.creationDate !== undefined ? new Date(f.creationDate).toISOString() : null,
      "store.size": f.storeBytes,
      "pri.store.size": f.priStoreBytes,
      "dataset.size": f.datasetBytes,
    }));
    const { body, type } = catTable(INDEX_COLUMNS, rows, request.query as Query);
    return reply.type(type).send(body as never);
  };
  const catAliases = async (request: FastifyRequest, reply: FastifyReply) => {
    resolveIndexTarget(chains, prefix, request.params as Path, { allowNoIndices: true });
    const { body, type } = catTable(ALIAS_COLUMNS, [], request.query as Query);
    return reply.type(type).send(body as never);
  };
  const catDoc = (what: string) => ({
    summary: `${what} (es.cat.${what.split(" ")[0]})`,
    description:
      "A JSON array (format=json, values as strings) or a text table (v: header line; h: columns; s: sort; bytes: unit), Elasticsearch 8.19's columns.",
    querystring: CatQuery,
  });
  const CatIndexParams = Type.Object({ ...EsChainParams.properties, index: EsIndexParams.properties.index });
  route(
    "GET",
    `${base}/_cat/indices`,
    { ...catDoc("indices: counts and sizes"), operationId: "esCatIndices", params: EsChainParams },
    catIndices,
  );
  route(
    "GET",
    `${base}/_cat/indices/:index`,
    { ...catDoc("indices"), operationId: "esCatIndicesIndex", params: CatIndexParams },
    catIndices,
  );
  route("GET", `${base}/_cat/aliases`, { ...catDoc("aliases (none)"), operationId: "esCatAliases", params: EsChainParams }, catAliases);
  route("GET", `${base}/_cat/aliases/:index`, { ...catDoc("aliases"), hide: true, params: CatIndexParams }, catAliases);

  // GET /_resolve/index/<index>
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-resolve-index-api.html
  route(
    "GET",
    `${base}/_resolve/index/:index`,
    {
      summary: "Resolve an index expression (es.indices.resolve_index)",
      description: "{indices: [{name, attributes: [open]}], aliases: [], data_streams: []}",
      operationId: "esResolveIndex",
      params: CatIndexParams,
      querystring: IndexQuery,
    },
    async (request, reply) => {
      const { targets } = resolve(request);
      const indices = targets.map((t) => t.name).sort();
      return json(reply, { indices: indices.map((name) => ({ name, attributes: ["open"] })), aliases: [], data_streams: [] });
    },
  );

  // GET|HEAD /<index>/_doc/<id>, /<index>/_source/<id>
  // https://www.elastic.co/guide/en/elasticsearch/reference/8.19/docs-get.html
  const lookup = async (request: FastifyRequest) => {
    const { targets } = resolve(request);
    const target = targets[0];
    if (!target || targets.length > 1)
      throw apiError("CS_BAD_REQUEST", "_doc and _source take one index (one kind), not a pattern or a list", "params.index");
    const id = (request.params as { id: string }).id;
    const res = await app.es.search<Record<string, unknown>>(
      {
        index: target.name,
        query: { ids: { values: [id] } },
        size: 1,
        version: true,
        seq_no_primary_term: true,
        ignore_unavailable: true,
        allow_no_indices: true,
      },
      requestOptions(timeoutMs),
    );
    return { index: target.name, id, hit: res.hits.hits[0] as estypes.SearchHit<Record<string, unknown>> | undefined };
  };
  const getDoc = async (request: FastifyRequest, reply: FastifyReply) => {
    const { index, id, hit } = await lookup(request);
    if (!hit) return json(reply.code(404), { _index: index, _id: id, found: false });
    if (request.method === "HEAD") return reply.code(200).send();
    return json(reply, {
      _index: index,
      _id: id,
      _version: hit._version,
      _seq_no: hit._seq_no,
      _primary_term: hit._primary_term,
      found: true,
      _source: hit._source ?? {},
    });
  };
  const getSource = async (request: FastifyRequest, reply: FastifyReply) => {
    const { index, id, hit } = await lookup(request);
    if (!hit) throw apiError("CS_NOT_FOUND", `Document not found [${index}]/[${id}]`, "params.id");
    if (request.method === "HEAD") return reply.code(200).send();
    return json(reply, hit._source ?? {});
  };
  const docDoc = (what: string, fn: string) => ({
    summary: `${what} by id (${fn})`,
    description:
      "_doc: {_index, _id, _version, _seq_no, _primary_term, found: true, _source}, or 404 {_index, _id, found: false}; _source: the record, or 404 CS_NOT_FOUND. HEAD: 200 or 404 without a body.",
    querystring: DocQuery,
  });
  for (const method of ["GET", "HEAD"] as const) {
    const head = method === "HEAD" ? "Exists" : "";
    for (const [segment, handler, fn] of [
      ["_doc", getDoc, method === "HEAD" ? "es.exists" : "es.get"],
      ["_source", getSource, method === "HEAD" ? "es.exists_source" : "es.get_source"],
    ] as const) {
      const doc = docDoc(segment === "_doc" ? "A document" : "A document's source", fn);
      const name = segment === "_doc" ? "Doc" : "Source";
      route(method, `${base}/:index/${segment}/:id`, { ...doc, operationId: `esGet${name}${head}`, params: DocParams }, handler);
    }
  }
};
