/**
 * The query-body validator of the search API: a pure, allowlist-based check of `query`, `sort`,
 * `size` and `_source` that returns either the sanitized Elasticsearch request parts or every
 * problem found, each with a stable code and the JSON path of the offending part.
 *
 * Allowed clauses (ES Query DSL, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl.html):
 * `bool`, `term`, `terms`, `range`, `ids`, `nested`, `exists`, `match_all`, `match` (text fields
 * only). Everything else (script, wildcard, regexp, terms lookup, …) is refused, as are fields not
 * mapped for the requested kinds (see api/dsl/fields.ts).
 *
 * Extensions beyond the query contract: `search_after` (cursor pagination over a sorted search)
 * and `aggs`/`aggregations` (an allowlist of aggregations, validated by api/dsl/aggs.ts). Other
 * Elasticsearch body keys (`from`, `highlight`, `script_fields`, `runtime_mappings`, …) are refused
 * with `CS_BODY_INVALID`.
 *
 * JSON paths, problems and results: the validation kit of lib/validation (`jsonPath`,
 * `ProblemCollector`, `ValidationResult`); e.g. `query.bool.filter[1].term["blockNumber.num"]`.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject, ProblemCollector, type ValidationResult as Result } from "../../lib/validation/problems.js";
import type { ApiErrorDetail, ErrorCode } from "../errors.js";
import { type EsAggs, validateAggs } from "./aggs.js";
import { type FieldCatalog, type FieldInfo, fieldCatalog, RANGE_TYPES } from "./fields.js";

/** Caps of the query language. */
export const LIMITS = {
  /** Deepest clause nesting (the root clause is depth 1; bool children and nested queries add 1). */
  maxDepth: 8,
  /** Most clauses in one query (every clause object counts, compound ones included). */
  maxClauses: 256,
  /** Most values of one `terms` or `ids` clause. */
  maxValues: 1024,
  /** Most problems reported for one body (validation stops collecting after that). */
  maxErrors: 50,
  /** `size` of a search without `size`. */
  defaultSize: 10,
} as const;

/** The query clauses accepted, in documentation order. */
export const ALLOWED_CLAUSES = ["bool", "term", "terms", "range", "ids", "nested", "exists", "match_all", "match"] as const;

/** Keys accepted at the top level of a query body (the last three are extensions beyond the contract). */
export const BODY_KEYS = ["query", "sort", "size", "_source", "search_after", "aggs", "aggregations"] as const;

/**
 * Elasticsearch search-body keys this API refuses on purpose, with the reason given in the error
 * message (all are `CS_BODY_INVALID` at the key's path). Any other unknown key is refused too.
 */
export const REFUSED_BODY_KEYS: Readonly<Record<string, string>> = {
  from: "from is not supported; page with sort + search_after",
  runtime_mappings: "runtime_mappings (scripted runtime fields) are not supported",
  script_fields: "script_fields are not supported",
  highlight: "highlight is not supported",
  suggest: "suggest is not supported",
  rescore: "rescore is not supported",
  profile: "profile is not supported",
  explain: "explain is not supported",
  stored_fields: "stored_fields are not supported; use _source",
  docvalue_fields: "docvalue_fields are not supported; use _source",
  fields: "fields is not supported; use _source",
  post_filter: "post_filter is not supported; put the condition in query",
  min_score: "min_score is not supported",
  collapse: "collapse is not supported",
  pit: "pit is not supported; use search_after, or size -1 for all matches",
  slice: "slice is not supported",
  knn: "knn is not supported",
  timeout: "timeout is set by the server",
  terminate_after: "terminate_after is not supported",
  track_total_hits: "track_total_hits is always true",
  track_scores: "track_scores is not supported",
  indices_boost: "indices_boost is not supported",
  version: "version is not supported",
  seq_no_primary_term: "seq_no_primary_term is not supported",
  stats: "stats is not supported",
  ext: "ext is not supported",
  rank: "rank is not supported",
  retriever: "retriever is not supported",
  script: "scripts are not supported",
};

/** The `CS_BODY_INVALID` message of an unknown or refused top-level body key. */
export function unknownKeyMessage(key: string): string {
  const why = Object.hasOwn(REFUSED_BODY_KEYS, key) ? `${REFUSED_BODY_KEYS[key]}; ` : `unknown key ${JSON.stringify(key)}; `;
  return `${why}allowed keys: ${BODY_KEYS.join(", ")}`;
}

/** Longest `search_after` array (one value per sort key). */
export const MAX_SORT_KEYS = 16;

/** A sanitized ES query clause (a one-key object). */
export type EsQuery = Record<string, unknown>;

/** Sort order. */
export type SortOrder = "asc" | "desc";

/** One sanitized ES sort clause, `{field: {order, unmapped_type?}}`. */
export type EsSortClause = Record<string, { order: SortOrder; unmapped_type?: string }>;

/** A validated search request. */
export interface SearchPlan {
  /** Sanitized ES query; absent = match all. */
  query?: EsQuery;
  /** Sanitized ES sort; absent = unsorted (order undefined). */
  sort?: EsSortClause[];
  /** Records to return: 0..maxSize, or -1 for all matches. Default {@link LIMITS.defaultSize} (10). */
  size: number;
  /** `_source` paths to keep; absent (or empty) = the whole record. */
  source?: string[];
  /** Extension: the sort values of the last hit of the previous page (one per sort clause). */
  searchAfter?: Array<string | number | boolean | null>;
  /** Extension: sanitized aggregations (see api/dsl/aggs.ts). */
  aggs?: EsAggs;
}

/** Either the validated value or every problem found (at least one): lib/validation's result with API error details. */
export type ValidationResult<T> = Result<T, ApiErrorDetail>;

/** Options of {@link validateSearchBody}. */
export interface ValidateOptions {
  /** The requested record kinds (one, or several for `block,tx`); fields valid in any of them are accepted. */
  kinds: readonly RecordKind[];
  /** Largest positive `size` (config.api.maxSize). */
  maxSize: number;
}

const ALLOWED = new Set<string>(ALLOWED_CLAUSES);
const BOOL_OCCURS = new Set(["filter", "must", "must_not", "should"]);
const RANGE_BOUNDS = new Set(["gte", "gt", "lte", "lt"]);
const SCORE_MODES = new Set(["avg", "sum", "min", "max", "none"]);
const MSM = /^-?\d+%?$/;

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean";
}

function kindsLabel(catalog: FieldCatalog): string {
  return catalog.kinds.join(",");
}

/** The problems of one search body (at most {@link LIMITS.maxErrors}). */
class Collector extends ProblemCollector<ErrorCode, string | null> {
  constructor() {
    super(LIMITS.maxErrors);
  }
}

interface QueryContext {
  catalog: FieldCatalog;
  out: Collector;
  clauses: number;
  aborted: boolean;
}

/** The single entry of a `{field: value}` clause body as `[field, value, path of the field]`, or an error. */
function singleField(ctx: QueryContext, clause: string, body: unknown, path: string): [string, unknown, string] | undefined {
  if (!isJsonObject(body)) {
    ctx.out.add("CS_QUERY_INVALID", `${clause} must be an object {<field>: …}`, path);
    return undefined;
  }
  const entries = Object.entries(body);
  const first = entries[0];
  if (entries.length !== 1 || !first) {
    ctx.out.add("CS_QUERY_INVALID", `${clause} must name exactly one field, got ${entries.length}`, path);
    return undefined;
  }
  return [first[0], first[1], jsonPath(path, first[0])];
}

/** Checks a field name against the allowlist and the nested context; reports and returns undefined when refused. */
function checkField(ctx: QueryContext, field: string, path: string, nested: string | undefined): FieldInfo | undefined {
  const { catalog } = ctx;
  const info = catalog.fields.get(field);
  if (!info) {
    if (catalog.objectPaths.has(field) || catalog.nestedPaths.has(field)) {
      ctx.out.add("CS_QUERY_INVALID", `${field} is an object, name one of its leaf fields (e.g. ${field}.num)`, path);
    } else {
      ctx.out.add("CS_QUERY_UNKNOWN_FIELD", `unknown field ${JSON.stringify(field)} for ${kindsLabel(catalog)}`, path);
    }
    return undefined;
  }
  if (!info.searchable) {
    ctx.out.add("CS_QUERY_UNKNOWN_FIELD", `field ${field} is stored but not searchable`, path);
    return undefined;
  }
  if (!nestedOk(ctx, field, info.nestedPath, path, nested)) return undefined;
  return info;
}

function nestedOk(ctx: QueryContext, field: string, fieldNested: string | undefined, path: string, nested: string | undefined): boolean {
  if (fieldNested === nested) return true;
  if (nested === undefined) {
    ctx.out.add(
      "CS_QUERY_NESTED_FIELD",
      `${field} is inside the nested path ${fieldNested}; wrap the clause in {"nested": {"path": "${fieldNested}", "query": …}}`,
      path,
    );
  } else {
    ctx.out.add("CS_QUERY_NESTED_FIELD", `${field} is outside the nested path ${nested} of the enclosing nested query`, path);
  }
  return false;
}

/** Light value check against the field type, so that obvious mistakes get a path instead of an ES error. */
function checkValue(ctx: QueryContext, info: FieldInfo, value: unknown, path: string): boolean {
  if (!isScalar(value)) {
    ctx.out.add("CS_QUERY_INVALID", "value must be a string, number or boolean", path);
    return false;
  }
  switch (info.type) {
    case "long":
    case "integer":
    case "double":
      if (typeof value === "boolean" || (typeof value === "string" && (value.trim() === "" || !Number.isFinite(Number(value))))) {
        ctx.out.add("CS_QUERY_INVALID", `${info.path} is numeric (${info.type}); got ${JSON.stringify(value)}`, path);
        return false;
      }
      return true;
    case "boolean":
      if (typeof value === "number" || (typeof value === "string" && value !== "true" && value !== "false")) {
        ctx.out.add("CS_QUERY_INVALID", `${info.path} is boolean; got ${JSON.stringify(value)}`, path);
        return false;
      }
      return true;
    case "date":
      if (typeof value === "boolean") {
        ctx.out.add("CS_QUERY_INVALID", `${info.path} is a date (ISO 8601 string or epoch milliseconds)`, path);
        return false;
      }
      return true;
    default:
      return true;
  }
}

/** Validates one clause object `{name: body}`; returns the sanitized clause or undefined (errors recorded). */
function clause(ctx: QueryContext, node: unknown, path: string, depth: number, nested: string | undefined): EsQuery | undefined {
  if (ctx.aborted) return undefined;
  if (!isJsonObject(node)) {
    ctx.out.add("CS_QUERY_INVALID", 'a query clause must be an object with exactly one key, e.g. {"term": {…}}', path);
    return undefined;
  }
  const keys = Object.keys(node);
  const name = keys[0];
  if (keys.length !== 1 || name === undefined) {
    ctx.out.add(
      "CS_QUERY_INVALID",
      `a query clause must have exactly one key, got ${keys.length}${keys.length ? ` (${keys.join(", ")})` : ""}`,
      path,
    );
    return undefined;
  }
  const p = jsonPath(path, name);
  if (!ALLOWED.has(name)) {
    ctx.out.add("CS_QUERY_UNSUPPORTED_CLAUSE", `clause ${name} is not supported; allowed: ${ALLOWED_CLAUSES.join(", ")}`, p);
    return undefined;
  }
  if (depth > LIMITS.maxDepth) {
    ctx.out.add("CS_QUERY_TOO_DEEP", `the query is nested deeper than ${LIMITS.maxDepth} clauses`, p);
    return undefined;
  }
  ctx.clauses += 1;
  if (ctx.clauses > LIMITS.maxClauses) {
    ctx.out.add("CS_QUERY_TOO_MANY_CLAUSES", `the query has more than ${LIMITS.maxClauses} clauses`, p);
    ctx.aborted = true;
    return undefined;
  }
  const body = node[name];
  switch (name) {
    case "bool":
      return boolClause(ctx, body, p, depth, nested);
    case "term":
      return termClause(ctx, body, p, nested);
    case "terms":
      return termsClause(ctx, body, p, nested);
    case "range":
      return rangeClause(ctx, body, p, nested);
    case "ids":
      return idsClause(ctx, body, p, nested);
    case "nested":
      return nestedClause(ctx, body, p, depth, nested);
    case "exists":
      return existsClause(ctx, body, p, nested);
    case "match_all":
      if (!isJsonObject(body) || Object.keys(body).length > 0) {
        ctx.out.add("CS_QUERY_INVALID", "match_all takes an empty object {}", p);
        return undefined;
      }
      return { match_all: {} };
    default:
      return matchClause(ctx, body, p, nested);
  }
}

function boolClause(ctx: QueryContext, body: unknown, p: string, depth: number, nested: string | undefined): EsQuery | undefined {
  if (!isJsonObject(body)) {
    ctx.out.add("CS_QUERY_INVALID", "bool must be an object with filter, must, must_not, should or minimum_should_match", p);
    return undefined;
  }
  const out: Record<string, unknown> = {};
  let ok = true;
  for (const [key, value] of Object.entries(body)) {
    const kp = jsonPath(p, key);
    if (BOOL_OCCURS.has(key)) {
      if (Array.isArray(value)) {
        const list = value.map((c, i) => clause(ctx, c, jsonPath(kp, i), depth + 1, nested));
        if (list.some((c) => c === undefined)) ok = false;
        else out[key] = list;
      } else if (isJsonObject(value)) {
        const c = clause(ctx, value, kp, depth + 1, nested);
        if (c === undefined) ok = false;
        else out[key] = c;
      } else {
        ctx.out.add("CS_QUERY_INVALID", `bool.${key} must be a clause or an array of clauses`, kp);
        ok = false;
      }
    } else if (key === "minimum_should_match") {
      if ((typeof value === "number" && Number.isInteger(value)) || (typeof value === "string" && MSM.test(value))) out[key] = value;
      else {
        ctx.out.add("CS_QUERY_INVALID", 'minimum_should_match must be an integer or a string such as "1" or "50%"', kp);
        ok = false;
      }
    } else {
      ctx.out.add("CS_QUERY_INVALID", `unknown bool option ${key}; allowed: filter, must, must_not, should, minimum_should_match`, kp);
      ok = false;
    }
  }
  return ok ? { bool: out } : undefined;
}

/** `term` on `_id` or a mapped field; a text field with a `.raw` keyword becomes a case-insensitive term on `.raw`. */
function termClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  const entry = singleField(ctx, "term", body, p);
  if (!entry) return undefined;
  const [field, spec, fp] = entry;
  let value: unknown = spec;
  let vp = fp;
  if (isJsonObject(spec)) {
    const extra = Object.keys(spec).filter((k) => k !== "value");
    if (extra.length > 0 || !("value" in spec)) {
      const bad = extra[0];
      ctx.out.add("CS_QUERY_INVALID", 'term takes {<field>: <value>} or {<field>: {"value": <value>}}', bad ? jsonPath(fp, bad) : fp);
      return undefined;
    }
    value = spec.value;
    vp = jsonPath(fp, "value");
  }
  if (field === "_id") {
    if (nested !== undefined) {
      ctx.out.add("CS_QUERY_NESTED_FIELD", "_id cannot be used inside a nested query", fp);
      return undefined;
    }
    if (typeof value !== "string") {
      ctx.out.add("CS_QUERY_INVALID", "_id must be a string", vp);
      return undefined;
    }
    return { term: { _id: value } };
  }
  const info = checkField(ctx, field, fp, nested);
  if (!info || !checkValue(ctx, info, value, vp)) return undefined;
  if (info.rawKeyword) return { term: { [info.rawKeyword]: { value: String(value), case_insensitive: true } } };
  return { term: { [field]: value } };
}

function termsClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  const entry = singleField(ctx, "terms", body, p);
  if (!entry) return undefined;
  const [field, values, fp] = entry;
  if (!Array.isArray(values)) {
    if (isJsonObject(values) && ("index" in values || "id" in values || "path" in values)) {
      ctx.out.add("CS_QUERY_UNSUPPORTED_CLAUSE", "terms lookup ({index, id, path}) is not supported; list the values", fp);
    } else {
      ctx.out.add("CS_QUERY_INVALID", "terms takes {<field>: [<value>, …]}", fp);
    }
    return undefined;
  }
  if (values.length > LIMITS.maxValues) {
    ctx.out.add("CS_QUERY_TOO_MANY_VALUES", `terms takes at most ${LIMITS.maxValues} values, got ${values.length}`, fp);
    return undefined;
  }
  if (field === "_id") {
    if (nested !== undefined) {
      ctx.out.add("CS_QUERY_NESTED_FIELD", "_id cannot be used inside a nested query", fp);
      return undefined;
    }
    const bad = values.findIndex((v) => typeof v !== "string");
    if (bad >= 0) {
      ctx.out.add("CS_QUERY_INVALID", "_id values must be strings", jsonPath(fp, bad));
      return undefined;
    }
    return { terms: { _id: values } };
  }
  const info = checkField(ctx, field, fp, nested);
  if (!info) return undefined;
  let ok = true;
  values.forEach((v, i) => {
    if (ok && !checkValue(ctx, info, v, jsonPath(fp, i))) ok = false;
  });
  if (!ok) return undefined;
  if (info.rawKeyword) {
    const raw = info.rawKeyword;
    return {
      bool: {
        should: values.map((v) => ({ term: { [raw]: { value: String(v), case_insensitive: true } } })),
        minimum_should_match: 1,
      },
    };
  }
  return { terms: { [field]: values } };
}

function rangeClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  const entry = singleField(ctx, "range", body, p);
  if (!entry) return undefined;
  const [field, spec, fp] = entry;
  const info = checkField(ctx, field, fp, nested);
  if (!info) return undefined;
  if (!RANGE_TYPES.has(info.type)) {
    ctx.out.add("CS_QUERY_INVALID", `range needs a numeric or date field; ${field} is ${info.type}`, fp);
    return undefined;
  }
  if (!isJsonObject(spec) || Object.keys(spec).length === 0) {
    ctx.out.add("CS_QUERY_INVALID", "range takes {<field>: {gte?, gt?, lte?, lt?}} with at least one bound", fp);
    return undefined;
  }
  const out: Record<string, unknown> = {};
  let ok = true;
  for (const [k, v] of Object.entries(spec)) {
    const kp = jsonPath(fp, k);
    if (!RANGE_BOUNDS.has(k)) {
      ctx.out.add("CS_QUERY_INVALID", `unknown range option ${k}; allowed: gte, gt, lte, lt`, kp);
      ok = false;
    } else if (typeof v !== "number" && typeof v !== "string") {
      ctx.out.add("CS_QUERY_INVALID", "a range bound must be a number or a string", kp);
      ok = false;
    } else if (!checkValue(ctx, info, v, kp)) ok = false;
    else out[k] = v;
  }
  return ok ? { range: { [field]: out } } : undefined;
}

function idsClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  if (nested !== undefined) {
    ctx.out.add("CS_QUERY_NESTED_FIELD", "ids cannot be used inside a nested query", p);
    return undefined;
  }
  if (!isJsonObject(body) || !Array.isArray(body.values) || Object.keys(body).length !== 1) {
    ctx.out.add("CS_QUERY_INVALID", 'ids takes {"values": [<id>, …]}', p);
    return undefined;
  }
  const vp = jsonPath(p, "values");
  if (body.values.length > LIMITS.maxValues) {
    ctx.out.add("CS_QUERY_TOO_MANY_VALUES", `ids takes at most ${LIMITS.maxValues} values, got ${body.values.length}`, vp);
    return undefined;
  }
  const bad = body.values.findIndex((v) => typeof v !== "string");
  if (bad >= 0) {
    ctx.out.add("CS_QUERY_INVALID", "ids values must be strings", jsonPath(vp, bad));
    return undefined;
  }
  return { ids: { values: body.values } };
}

function nestedClause(ctx: QueryContext, body: unknown, p: string, depth: number, nested: string | undefined): EsQuery | undefined {
  if (!isJsonObject(body)) {
    ctx.out.add("CS_QUERY_INVALID", 'nested takes {"path": <nested path>, "query": <clause>}', p);
    return undefined;
  }
  let ok = true;
  for (const k of Object.keys(body)) {
    if (k !== "path" && k !== "query" && k !== "score_mode") {
      ctx.out.add("CS_QUERY_INVALID", `unknown nested option ${k}; allowed: path, query, score_mode`, jsonPath(p, k));
      ok = false;
    }
  }
  const pp = jsonPath(p, "path");
  const path = body.path;
  if (typeof path !== "string") {
    ctx.out.add("CS_QUERY_INVALID", "nested.path must be a string naming a nested field, e.g. args", pp);
    return undefined;
  }
  if (!ctx.catalog.nestedPaths.has(path)) {
    const known = ctx.catalog.fields.has(path) || ctx.catalog.objectPaths.has(path);
    const paths = [...ctx.catalog.nestedPaths].join(", ") || "none";
    ctx.out.add(
      known ? "CS_QUERY_INVALID" : "CS_QUERY_UNKNOWN_FIELD",
      `${path} is not a nested path of ${kindsLabel(ctx.catalog)} (nested paths: ${paths})`,
      pp,
    );
    return undefined;
  }
  if (nested !== undefined && !path.startsWith(`${nested}.`)) {
    ctx.out.add("CS_QUERY_NESTED_FIELD", `nested path ${path} is outside the enclosing nested path ${nested}`, pp);
    return undefined;
  }
  const out: Record<string, unknown> = { path };
  if (body.score_mode !== undefined) {
    if (typeof body.score_mode !== "string" || !SCORE_MODES.has(body.score_mode)) {
      ctx.out.add("CS_QUERY_INVALID", "nested.score_mode must be one of avg, sum, min, max, none", jsonPath(p, "score_mode"));
      ok = false;
    } else out.score_mode = body.score_mode;
  }
  if (body.query === undefined) {
    ctx.out.add("CS_QUERY_INVALID", "nested.query is required", jsonPath(p, "query"));
    return undefined;
  }
  const inner = clause(ctx, body.query, jsonPath(p, "query"), depth + 1, path);
  if (!inner || !ok) return undefined;
  out.query = inner;
  // A search over several kinds (e.g. log,event) reaches indices without the nested path: there
  // the clause matches nothing instead of failing the shard (ES nested query, ignore_unmapped).
  out.ignore_unmapped = true;
  return { nested: out };
}

function existsClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  if (!isJsonObject(body) || typeof body.field !== "string" || Object.keys(body).length !== 1) {
    ctx.out.add("CS_QUERY_INVALID", 'exists takes {"field": <field>}', p);
    return undefined;
  }
  const field = body.field;
  const fp = jsonPath(p, "field");
  const { catalog } = ctx;
  if (catalog.fields.has(field)) return checkField(ctx, field, fp, nested) ? { exists: { field } } : undefined;
  if (catalog.objectPaths.has(field) || catalog.nestedPaths.has(field)) {
    // An object (e.g. baseFeePerGas): exists when any searchable leaf below it exists.
    const leaves = [...catalog.fields.values()].filter((f) => f.path.startsWith(`${field}.`) && f.searchable);
    const leaf = leaves[0];
    if (!leaf) {
      ctx.out.add("CS_QUERY_UNKNOWN_FIELD", `${field} has no searchable field`, fp);
      return undefined;
    }
    return nestedOk(ctx, field, leaf.nestedPath, fp, nested) ? { exists: { field } } : undefined;
  }
  ctx.out.add("CS_QUERY_UNKNOWN_FIELD", `unknown field ${JSON.stringify(field)} for ${kindsLabel(catalog)}`, fp);
  return undefined;
}

function matchClause(ctx: QueryContext, body: unknown, p: string, nested: string | undefined): EsQuery | undefined {
  const entry = singleField(ctx, "match", body, p);
  if (!entry) return undefined;
  const [field, spec, fp] = entry;
  const info = checkField(ctx, field, fp, nested);
  if (!info) return undefined;
  if (info.type !== "text") {
    ctx.out.add("CS_QUERY_INVALID", `match is only allowed on text fields; ${field} is ${info.type}, use term`, fp);
    return undefined;
  }
  if (typeof spec === "string") return { match: { [field]: { query: spec } } };
  if (!isJsonObject(spec) || typeof spec.query !== "string") {
    ctx.out.add("CS_QUERY_INVALID", 'match takes {<field>: <text>} or {<field>: {"query": <text>, "operator"?: "and"|"or"}}', fp);
    return undefined;
  }
  const out: Record<string, unknown> = { query: spec.query };
  for (const [k, v] of Object.entries(spec)) {
    if (k === "query") continue;
    const kp = jsonPath(fp, k);
    if (k === "operator" && (v === "and" || v === "or" || v === "AND" || v === "OR")) out.operator = (v as string).toLowerCase();
    else if (k === "minimum_should_match" && ((typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && MSM.test(v))))
      out.minimum_should_match = v;
    else {
      ctx.out.add("CS_QUERY_INVALID", `unsupported match option ${k}; allowed: query, operator (and|or), minimum_should_match`, kp);
      return undefined;
    }
  }
  return { match: { [field]: out } };
}

/**
 * Validates a query tree against the allowlist for the given kinds.
 * @param query - the `query` value of the body (any JSON); `{}` means match all.
 * @param kinds - requested record kinds.
 * @param path - JSON path of `query` in the body (default `query`).
 * @returns the sanitized ES query (`undefined` value for `{}`), or every problem found.
 */
export function validateQuery(query: unknown, kinds: readonly RecordKind[], path = "query"): ValidationResult<EsQuery | undefined> {
  const out = new Collector();
  const value = queryInto(query, fieldCatalog(kinds), out, path);
  return out.result(value);
}

function queryInto(query: unknown, catalog: FieldCatalog, out: Collector, path: string): EsQuery | undefined {
  if (isJsonObject(query) && Object.keys(query).length === 0) return undefined;
  const ctx: QueryContext = { catalog, out, clauses: 0, aborted: false };
  return clause(ctx, query, path, 1, undefined);
}

/**
 * Validates `sort`: a map `{field: "asc"|"desc"|{order}}` or an array of such maps (or of bare field
 * names, ascending; `_score` descending). Fields must be sortable ({@link FieldInfo.sortable}) or `_score`.
 * For several kinds, a field missing from some of them gets `unmapped_type` so ES does not fail.
 * @returns the sanitized ES sort (`undefined` when empty), or `CS_SORT_INVALID` problems.
 */
export function validateSort(sort: unknown, kinds: readonly RecordKind[], path = "sort"): ValidationResult<EsSortClause[] | undefined> {
  const out = new Collector();
  const value = sortInto(sort, fieldCatalog(kinds), out, path);
  return out.result(value);
}

function sortField(catalog: FieldCatalog, out: Collector, field: string, order: SortOrder, path: string): EsSortClause | undefined {
  if (field === "_score") return { _score: { order } };
  if (field === "_script") {
    out.add("CS_SORT_INVALID", "script sorting (_script) is not supported; sort on a sortable field", path);
    return undefined;
  }
  const info = catalog.fields.get(field);
  if (!info) {
    out.add("CS_SORT_INVALID", `unknown sort field ${JSON.stringify(field)} for ${kindsLabel(catalog)}`, path);
    return undefined;
  }
  if (!info.sortable) {
    const why =
      info.type === "text"
        ? `${field} is a text field${info.rawKeyword ? `; sort on ${info.rawKeyword}` : ""}`
        : info.nestedPath
          ? `${field} is inside the nested path ${info.nestedPath}`
          : `${field} has no doc values`;
    out.add("CS_SORT_INVALID", `cannot sort on ${field}: ${why}`, path);
    return undefined;
  }
  const clauseBody: { order: SortOrder; unmapped_type?: string } = { order };
  if (info.kinds.length < catalog.kinds.length) clauseBody.unmapped_type = info.type;
  return { [field]: clauseBody };
}

function sortOrder(out: Collector, spec: unknown, path: string): SortOrder | undefined {
  let order: unknown = spec;
  let op = path;
  if (isJsonObject(spec)) {
    const extra = Object.keys(spec).find((k) => k !== "order");
    if (extra !== undefined) {
      out.add("CS_SORT_INVALID", `unknown sort option ${extra}; only order is accepted`, jsonPath(path, extra));
      return undefined;
    }
    order = spec.order;
    op = jsonPath(path, "order");
  }
  if (typeof order === "string" && (order.toLowerCase() === "asc" || order.toLowerCase() === "desc"))
    return order.toLowerCase() as SortOrder;
  out.add("CS_SORT_INVALID", 'sort order must be "asc" or "desc" (or {"order": "asc"|"desc"})', op);
  return undefined;
}

function sortInto(sort: unknown, catalog: FieldCatalog, out: Collector, path: string): EsSortClause[] | undefined {
  const items: Array<[unknown, string]> = Array.isArray(sort) ? sort.map((s, i) => [s, jsonPath(path, i)]) : [[sort, path]];
  if (!Array.isArray(sort) && !isJsonObject(sort)) {
    out.add("CS_SORT_INVALID", 'sort must be a map {<field>: "asc"|"desc"} or an array of such maps', path);
    return undefined;
  }
  const result: EsSortClause[] = [];
  for (const [item, ip] of items) {
    if (typeof item === "string") {
      const c = sortField(catalog, out, item, item === "_score" ? "desc" : "asc", ip);
      if (c) result.push(c);
      continue;
    }
    if (!isJsonObject(item) || Object.keys(item).length === 0) {
      out.add("CS_SORT_INVALID", 'a sort item must be a non-empty map {<field>: "asc"|"desc"}', ip);
      continue;
    }
    for (const [field, spec] of Object.entries(item)) {
      const fp = jsonPath(ip, field);
      if (field === "_script") {
        sortField(catalog, out, field, "asc", fp);
        continue;
      }
      const order = sortOrder(out, spec, fp);
      if (!order) continue;
      const c = sortField(catalog, out, field, order, fp);
      if (c) result.push(c);
    }
  }
  return result.length > 0 ? result : undefined;
}

/**
 * Validates `size`: absent → {@link LIMITS.defaultSize}; else an integer, -1 (all matches) or 0..maxSize.
 * @returns the size, or a `CS_SIZE_INVALID` problem at `path`.
 */
export function validateSize(size: unknown, maxSize: number, path = "size"): ValidationResult<number> {
  if (size === undefined) return { ok: true, value: LIMITS.defaultSize };
  if (typeof size === "number" && Number.isInteger(size) && size >= -1 && size <= maxSize) return { ok: true, value: size };
  return {
    ok: false,
    errors: [{ code: "CS_SIZE_INVALID", message: `size must be an integer, -1 (all matches) or 0..${maxSize}`, path }],
  };
}

/**
 * Validates `_source`: an array of `_source` paths of the kinds (a leaf such as `blockNumber.num` or
 * an enclosing object such as `blockNumber`, which keeps everything below it). No wildcards; index-only
 * multi-fields such as `address.raw` are refused. Duplicates are dropped.
 * @returns the paths (`undefined` for an absent or empty array: the whole record), or `CS_SOURCE_INVALID` problems.
 */
export function validateSource(source: unknown, kinds: readonly RecordKind[], path = "_source"): ValidationResult<string[] | undefined> {
  if (source === undefined) return { ok: true, value: undefined };
  const out = new Collector();
  if (!Array.isArray(source)) {
    out.add("CS_SOURCE_INVALID", "_source must be an array of field paths", path);
    return { ok: false, errors: out.problems };
  }
  const catalog = fieldCatalog(kinds);
  const paths: string[] = [];
  source.forEach((p, i) => {
    const ip = jsonPath(path, i);
    if (typeof p !== "string" || p === "") out.add("CS_SOURCE_INVALID", "_source items must be non-empty strings", ip);
    else if (p.includes("*")) out.add("CS_SOURCE_INVALID", "wildcards are not supported in _source; list the fields", ip);
    else if (!catalog.sourcePaths.has(p)) {
      const multi = catalog.fields.has(p) ? ` (${p} is an index-only sub-field, not part of the record)` : "";
      out.add("CS_SOURCE_INVALID", `unknown _source field ${JSON.stringify(p)} for ${kindsLabel(catalog)}${multi}`, ip);
    } else if (!paths.includes(p)) paths.push(p);
  });
  return out.result(paths.length > 0 ? paths : undefined);
}

/**
 * Validates a whole query body (`{query?, sort?, size?, _source?, search_after?, aggs?|aggregations?}`) for the given kinds.
 * `undefined` (no body) is the same as `{}`: the first 10 records, unsorted.
 * Unknown top-level keys are `CS_BODY_INVALID` at the key's path; a body that is not an object is
 * `CS_BODY_INVALID` with path null. All problems are collected (at most {@link LIMITS.maxErrors}).
 *
 * ```ts
 * const checked = validateSearchBody(request.body, { kinds: ["tx"], maxSize: config.api.maxSize });
 * if (!checked.ok) throw new ApiError(checked.errors);
 * ```
 * @param body - the parsed JSON body (anything), `undefined` for none.
 * @param opts - the requested record kinds and the largest `size` ({@link ValidateOptions}).
 * @returns `{ok: true, value}` with the {@link SearchPlan} (sanitized ES query, sort, size,
 *   `_source`, `search_after`, aggregations), or `{ok: false, errors}`: every problem found as an
 *   API error detail `{code, message, path}` (codes `CS_BODY_INVALID`, `CS_QUERY_*`, `CS_SORT_INVALID`,
 *   `CS_SIZE_INVALID`, `CS_SOURCE_INVALID`, `CS_SEARCH_AFTER_INVALID`, `CS_AGG_*`; api/errors.ts).
 * @throws never: every problem is returned.
 */
export function validateSearchBody(body: unknown, opts: ValidateOptions): ValidationResult<SearchPlan> {
  if (body === undefined) return { ok: true, value: { size: LIMITS.defaultSize } };
  if (!isJsonObject(body)) {
    return { ok: false, errors: [{ code: "CS_BODY_INVALID", message: "the body must be a JSON object", path: null }] };
  }
  const catalog = fieldCatalog(opts.kinds);
  const out = new Collector();
  for (const key of Object.keys(body)) {
    if (!(BODY_KEYS as readonly string[]).includes(key)) out.add("CS_BODY_INVALID", unknownKeyMessage(key), jsonPath("", key));
  }
  let query: EsQuery | undefined;
  if (body.query !== undefined) {
    if (!isJsonObject(body.query)) out.add("CS_QUERY_INVALID", "query must be an object (a query clause)", "query");
    else query = queryInto(body.query, catalog, out, "query");
  }
  const sort = body.sort === undefined ? undefined : sortInto(body.sort, catalog, out, "sort");
  const size = validateSize(body.size, opts.maxSize);
  if (!size.ok) out.addAll(size.errors);
  const source = validateSource(body._source, opts.kinds);
  if (!source.ok) out.addAll(source.errors);
  let searchAfter: SearchPlan["searchAfter"];
  // With an invalid sort, its own errors say enough: search_after cannot be checked against it.
  if (body.search_after !== undefined && (body.sort === undefined || sort !== undefined)) {
    const sa = validateSearchAfter(body.search_after, sort, size.ok ? size.value : undefined, opts.kinds);
    if (sa.ok) searchAfter = sa.value;
    else out.addAll(sa.errors);
  }
  let aggs: EsAggs | undefined;
  if (body.aggs !== undefined && body.aggregations !== undefined) {
    out.add("CS_AGG_INVALID", "use either aggs or aggregations, not both", "aggregations");
  } else if (body.aggs !== undefined || body.aggregations !== undefined) {
    const key = body.aggs !== undefined ? "aggs" : "aggregations";
    const checked = validateAggs(body[key], opts.kinds, key);
    if (checked.ok) aggs = checked.value;
    else out.addAll(checked.errors);
  }
  if (!out.ok) return { ok: false, errors: out.problems };
  const plan: SearchPlan = { size: size.ok ? size.value : LIMITS.defaultSize };
  if (query) plan.query = query;
  if (sort) plan.sort = sort;
  if (source.ok && source.value) plan.source = source.value;
  if (searchAfter) plan.searchAfter = searchAfter;
  if (aggs && Object.keys(aggs).length > 0) plan.aggs = aggs;
  return { ok: true, value: plan };
}

/**
 * Validates `search_after` (extension): an array with one value (string, number, boolean or null)
 * per clause of the already validated `sort` — the `sort` array of the last hit of the previous
 * page. Numeric and date sort keys need numbers. Not allowed with `size: -1` (which pages by itself).
 * @param value - the `search_after` value of the body.
 * @param sort - the sanitized sort (undefined when the body has none or it was invalid).
 * @param size - the validated size, if valid.
 * @returns the values, or `CS_SEARCH_AFTER_INVALID` problems at `search_after[…]`.
 */
export function validateSearchAfter(
  value: unknown,
  sort: readonly EsSortClause[] | undefined,
  size: number | undefined,
  kinds?: readonly RecordKind[],
): ValidationResult<Array<string | number | boolean | null>> {
  const p = "search_after";
  const err = (message: string, path = p): ValidationResult<never> => ({
    ok: false,
    errors: [{ code: "CS_SEARCH_AFTER_INVALID", message, path }],
  });
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SORT_KEYS)
    return err(`search_after must be an array of 1..${MAX_SORT_KEYS} values: the sort values of the last hit of the previous page`);
  if (size === -1) return err("search_after cannot be combined with size -1 (which returns all matches)");
  if (!sort) return err("search_after needs a sort (end it with a unique field, e.g. hash, so that pages do not overlap)");
  if (value.length !== sort.length)
    return err(`search_after has ${value.length} values but the sort has ${sort.length} keys; pass the sort array of the last hit`);
  const catalog = kinds ? fieldCatalog(kinds) : undefined;
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    const ip = jsonPath(p, i);
    if (!(v === null || typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))))
      return err("search_after values must be strings, numbers, booleans or null", ip);
    const field = Object.keys(sort[i] as EsSortClause)[0] as string;
    const type = field === "_score" ? "double" : catalog?.fields.get(field)?.type;
    if (type !== undefined && RANGE_TYPES.has(type) && typeof v !== "number" && v !== null)
      return err(`sort key ${field} is ${type}: its search_after value must be a number (as in the hit's sort array)`, ip);
  }
  return { ok: true, value: value as Array<string | number | boolean | null> };
}
