/**
 * The `query` part of a search body: the allowlist of clauses (`bool`, `term`, `terms`, `range`,
 * `ids`, `nested`, `exists`, `match_all`, `match`, and `query_string` / `simple_query_string`
 * checked by ./query-string.ts; ES Query DSL,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl.html), the fields mapped
 * for the requested kinds (./fields.ts) and light value checks. Moved out of ./validate.ts
 * (issue 21: files of at most 600 lines); ./validate.ts re-exports {@link validateQuery}.
 * @module
 */

import { watchlistPlaceholder } from "../../es/watchlist-lookup.js";
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import { Collector, isScalar, kindsLabel } from "./collector.js";
import { type FieldCatalog, type FieldInfo, fieldCatalog, RANGE_TYPES } from "./fields.js";
import { ALLOWED_CLAUSES, type EsQuery, LIMITS, type ValidationResult } from "./plan.js";
import { queryStringClause } from "./query-string.js";

const ALLOWED = new Set<string>(ALLOWED_CLAUSES);
const BOOL_OCCURS = new Set(["filter", "must", "must_not", "should"]);
const RANGE_BOUNDS = new Set(["gte", "gt", "lte", "lt"]);
const SCORE_MODES = new Set(["avg", "sum", "min", "max", "none"]);
const MSM = /^-?\d+%?$/;
/** A date format of a date range (a built-in name such as epoch_millis, or a pattern such as yyyy-MM-dd, `||` alternatives). */
export const DATE_FORMAT = /^[A-Za-z0-9_|:.' /+-]{1,128}$/;
const TIME_ZONE = /^(?:[+-]\d{2}:\d{2}|[A-Za-z][A-Za-z0-9_+\-/]{0,63})$/;

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
    case "query_string":
    case "simple_query_string":
      return queryStringClause(ctx.out, (f, fp) => checkField(ctx, f, fp, nested) !== undefined, body, p, name === "simple_query_string");
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
    if (isJsonObject(values) && "watchlist" in values) return watchlistTerms(ctx, field, values, fp, nested);
    if (isJsonObject(values) && ("index" in values || "id" in values || "path" in values)) {
      ctx.out.add(
        "CS_QUERY_UNSUPPORTED_CLAUSE",
        'terms lookup ({index, id, path}) is not supported; list the values, or name a watchlist: {"watchlist": "<id>"}',
        fp,
      );
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

/**
 * `{"terms": {field: {"watchlist": "<id>"}}}` (api/search/watchlist-terms.ts): a keyword field and
 * a watchlist id; the placeholder is expanded into the list's members after validation.
 */
function watchlistTerms(ctx: QueryContext, field: string, value: Record<string, unknown>, fp: string, nested: string | undefined) {
  const id = value.watchlist;
  if (Object.keys(value).length !== 1 || typeof id !== "string" || !/^[0-9a-f-]{36}$/.test(id)) {
    ctx.out.add("CS_QUERY_INVALID", 'a watchlist lookup is {"watchlist": "<watchlist id>"} (a uuid) and nothing else', fp);
    return undefined;
  }
  const info = checkField(ctx, field, fp, nested);
  if (!info) return undefined;
  if (info.type !== "keyword") {
    ctx.out.add("CS_QUERY_INVALID", `a watchlist lookup needs a keyword field (an address, a hash); ${field} is ${info.type}`, fp);
    return undefined;
  }
  return watchlistPlaceholder(field, id, jsonPath(fp, "watchlist"));
}

/** The legacy bounds of `range` (Elasticsearch still takes them; Grafana's annotation query sends them) and their flags. */
const LEGACY_RANGE_KEYS = new Set(["from", "to", "include_lower", "include_upper"]);

/**
 * The options of a `range` spec with the legacy `from` / `to` bounds translated as Elasticsearch
 * does (https://github.com/elastic/elasticsearch/blob/8.19/server/src/main/java/org/elasticsearch/index/query/RangeQueryBuilder.java):
 * `from` is `gte` (`gt` with `include_lower: false`), `to` is `lte` (`lt` with `include_upper: false`),
 * a `null` bound is no bound. Each entry is `[key, value, path]`, the path the key given.
 * @returns the entries, or undefined after a `CS_QUERY_INVALID` problem (a flag that is not a
 *   boolean, a bound given both ways).
 */
export function legacyRangeBounds(
  ctx: { out: Collector },
  spec: Record<string, unknown>,
  fp: string,
): Array<[string, unknown, string]> | undefined {
  const entries: Array<[string, unknown, string]> = [];
  for (const [k, v] of Object.entries(spec)) if (!LEGACY_RANGE_KEYS.has(k)) entries.push([k, v, jsonPath(fp, k)]);
  for (const flag of ["include_lower", "include_upper"]) {
    if (spec[flag] !== undefined && typeof spec[flag] !== "boolean") {
      ctx.out.add("CS_QUERY_INVALID", `${flag} must be true or false`, jsonPath(fp, flag));
      return undefined;
    }
  }
  const pairs = [
    ["from", spec.include_lower === false ? "gt" : "gte", ["gte", "gt"]],
    ["to", spec.include_upper === false ? "lt" : "lte", ["lte", "lt"]],
  ] as const;
  for (const [legacy, key, modern] of pairs) {
    const v = spec[legacy];
    if (v === undefined || v === null) continue;
    if (modern.some((m) => spec[m] !== undefined)) {
      ctx.out.add("CS_QUERY_INVALID", `give either ${legacy} or ${modern.join("/")}, not both`, jsonPath(fp, legacy));
      return undefined;
    }
    entries.push([key, v, jsonPath(fp, legacy)]);
  }
  if (entries.every(([k]) => k === "format" || k === "time_zone")) {
    ctx.out.add("CS_QUERY_INVALID", "range takes {<field>: {gte?, gt?, lte?, lt?}} with at least one bound", fp);
    return undefined;
  }
  return entries;
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
  const legacy = legacyRangeBounds(ctx, spec, fp);
  if (!legacy) return undefined;
  for (const [k, v, kp] of legacy) {
    if ((k === "format" || k === "time_zone") && info.type === "date") {
      if (typeof v === "string" && (k === "format" ? DATE_FORMAT : TIME_ZONE).test(v)) out[k] = v;
      else {
        ctx.out.add(
          "CS_QUERY_INVALID",
          k === "format" ? "format must be a date format such as epoch_millis" : "time_zone must be an offset (+01:00) or a zone id",
          kp,
        );
        ok = false;
      }
    } else if (!RANGE_BOUNDS.has(k)) {
      const extra = info.type === "date" ? ", format, time_zone" : "";
      ctx.out.add("CS_QUERY_INVALID", `unknown range option ${k}; allowed: gte, gt, lte, lt${extra}`, kp);
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
  // Every document has an _id: eland counts a DataFrame's rows with exists on _id (as ES, match all).
  if (field === "_id" && nested === undefined) return { exists: { field } };
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

/**
 * One query clause validated in a nested scope, into a collector shared with the caller: the
 * `filter`/`filters` aggregations (./aggs-bucket.ts), whose clauses under a `nested` aggregation
 * may name only fields of its path.
 * @param nested - the nested path the clause's documents are in (undefined: the root documents).
 * @returns the sanitized clause, or undefined when refused (problems in `out`).
 */
export function clauseInto(
  query: unknown,
  catalog: FieldCatalog,
  out: Collector,
  path: string,
  nested: string | undefined,
): EsQuery | undefined {
  const ctx: QueryContext = { catalog, out, clauses: 0, aborted: false };
  return clause(ctx, query, path, 1, nested);
}

/**
 * The query of a body into a collector shared with the other parts (./validate.ts).
 * @returns the sanitized ES query, undefined for `{}` (match all) or when refused (problems in `out`).
 */
export function queryInto(query: unknown, catalog: FieldCatalog, out: Collector, path: string): EsQuery | undefined {
  if (isJsonObject(query) && Object.keys(query).length === 0) return undefined;
  const ctx: QueryContext = { catalog, out, clauses: 0, aborted: false };
  return clause(ctx, query, path, 1, undefined);
}
