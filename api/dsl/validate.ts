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
 * Split (pure move): ./plan.ts (caps, keys, types, the problem collector), ./query.ts (the `query`
 * clauses), here the sort, size, `_source`, `search_after` and the whole body.
 *
 * JSON paths, problems and results: the validation kit of lib/validation (`jsonPath`,
 * `ProblemCollector`, `ValidationResult`); e.g. `query.bool.filter[1].term["blockNumber.num"]`.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import { type EsAggs, validateAggs } from "./aggs.js";
import { Collector, kindsLabel } from "./collector.js";
import { type FieldCatalog, type FieldInfo, fieldCatalog, RANGE_TYPES } from "./fields.js";
import {
  BODY_KEYS,
  type EsQuery,
  type EsSortClause,
  LIMITS,
  MAX_SORT_KEYS,
  type SearchPlan,
  type SortOrder,
  unknownKeyMessage,
  type ValidateOptions,
  type ValidationResult,
} from "./plan.js";
import { queryInto } from "./query.js";

// The language's caps, keys and types (./plan.ts) and the query validator (./query.ts), where they were before the split.
export * from "./plan.js";
export { validateQuery } from "./query.js";

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
