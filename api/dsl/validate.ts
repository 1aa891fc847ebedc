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
 * Extensions beyond the query contract: `search_after` (cursor pagination over a sorted search),
 * `from` (pages up to Elasticsearch's result window of 10,000), `_source` in all of Elasticsearch's
 * forms, and `aggs`/`aggregations` (an allowlist of aggregations, validated by api/dsl/aggs.ts).
 * Other Elasticsearch body keys (`highlight`, `script_fields`, `runtime_mappings`, …) are refused
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
 * Validates `sort`: a field name, a map `{field: "asc"|"desc"|{order}}`, or an array of names and
 * such maps (a bare name sorts ascending, `_score` descending), as Elasticsearch takes them
 * (`"_doc"`, `["_doc"]`, `["blockNumber.num", {"logIndex.num": "asc"}]`). Fields must be sortable
 * ({@link FieldInfo.sortable}), `_score`, or an index order key ({@link DOC_ORDER_KEYS}).
 * For several kinds, a field missing from some of them gets `unmapped_type` so ES does not fail.
 * @returns the sanitized ES sort (`undefined` when empty), or `CS_SORT_INVALID` problems.
 */
export function validateSort(sort: unknown, kinds: readonly RecordKind[], path = "sort"): ValidationResult<EsSortClause[] | undefined> {
  const out = new Collector();
  const value = sortInto(sort, fieldCatalog(kinds), out, path);
  return out.result(value);
}

/** Elasticsearch's index-order sort keys: `_doc` (fastest, what scrolls use) and `_shard_doc` (the tiebreaker of a point in time). */
export const DOC_ORDER_KEYS: readonly string[] = ["_doc", "_shard_doc"];

function sortField(catalog: FieldCatalog, out: Collector, field: string, order: SortOrder, path: string): EsSortClause | undefined {
  if (field === "_score" || DOC_ORDER_KEYS.includes(field)) return { [field]: { order } };
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

/**
 * The options of a sort field besides `order`
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/sort-search-results.html):
 * `unmapped_type` is accepted and dropped (over several kinds the validator sets it itself, from
 * the field's own type), `numeric_type` is passed on.
 */
export const SORT_OPTIONS = ["order", "unmapped_type", "numeric_type"] as const;
/** The values of the sort option `numeric_type`. */
const NUMERIC_TYPES = ["long", "double", "date", "date_nanos"];

function sortOrder(out: Collector, spec: unknown, path: string): { order: SortOrder; numericType?: string } | undefined {
  let order: unknown = spec;
  let op = path;
  let numericType: string | undefined;
  if (isJsonObject(spec)) {
    const extra = Object.keys(spec).find((k) => !(SORT_OPTIONS as readonly string[]).includes(k));
    if (extra !== undefined) {
      out.add("CS_SORT_INVALID", `unknown sort option ${extra}; accepted: ${SORT_OPTIONS.join(", ")}`, jsonPath(path, extra));
      return undefined;
    }
    if (spec.unmapped_type !== undefined && typeof spec.unmapped_type !== "string") {
      out.add("CS_SORT_INVALID", "unmapped_type must be a field type name", jsonPath(path, "unmapped_type"));
      return undefined;
    }
    if (spec.numeric_type !== undefined) {
      if (typeof spec.numeric_type !== "string" || !NUMERIC_TYPES.includes(spec.numeric_type)) {
        out.add("CS_SORT_INVALID", `numeric_type must be one of ${NUMERIC_TYPES.join(", ")}`, jsonPath(path, "numeric_type"));
        return undefined;
      }
      numericType = spec.numeric_type;
    }
    order = spec.order ?? "asc";
    op = jsonPath(path, "order");
  }
  if (typeof order === "string" && (order.toLowerCase() === "asc" || order.toLowerCase() === "desc"))
    return { order: order.toLowerCase() as SortOrder, ...(numericType ? { numericType } : {}) };
  out.add("CS_SORT_INVALID", 'sort order must be "asc" or "desc" (or {"order": "asc"|"desc"})', op);
  return undefined;
}

function sortInto(sort: unknown, catalog: FieldCatalog, out: Collector, path: string): EsSortClause[] | undefined {
  const items: Array<[unknown, string]> = Array.isArray(sort) ? sort.map((s, i) => [s, jsonPath(path, i)]) : [[sort, path]];
  if (!Array.isArray(sort) && !isJsonObject(sort) && typeof sort !== "string") {
    out.add("CS_SORT_INVALID", 'sort must be a field name, a map {<field>: "asc"|"desc"}, or an array of names and such maps', path);
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
      const opts = sortOrder(out, spec, fp);
      if (!opts) continue;
      const c = sortField(catalog, out, field, opts.order, fp);
      if (c && opts.numericType) {
        const info = catalog.fields.get(field);
        if (!info || !RANGE_TYPES.has(info.type))
          out.add("CS_SORT_INVALID", "numeric_type needs a numeric or date field", jsonPath(fp, "numeric_type"));
        else (c[field] as { numeric_type?: string }).numeric_type = opts.numericType;
      }
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

/** A validated `_source`: paths to keep, paths to drop, or none at all. */
export interface SourceFilter {
  /** Paths to keep (absent: the whole record). */
  includes?: string[];
  /** Paths to drop after {@link includes}. */
  excludes?: string[];
  /** `_source: false`: no `_source` in the hits. */
  none?: true;
}

/** Checks a list of `_source` paths (a string is a list of one) into `into`; see {@link validateSource}. */
function sourcePaths(value: unknown, catalog: FieldCatalog, out: Collector, path: string): string[] {
  const list: unknown[] = typeof value === "string" ? [value] : Array.isArray(value) ? value : [];
  if (typeof value !== "string" && !Array.isArray(value)) {
    out.add("CS_SOURCE_INVALID", "_source must be true, false, a field path, an array of field paths, or {includes, excludes}", path);
    return [];
  }
  const paths: string[] = [];
  list.forEach((p, i) => {
    const ip = typeof value === "string" ? path : jsonPath(path, i);
    if (typeof p !== "string" || p === "") out.add("CS_SOURCE_INVALID", "_source items must be non-empty strings", ip);
    else if (p.includes("*")) out.add("CS_SOURCE_INVALID", "wildcards are not supported in _source; list the fields", ip);
    else if (!catalog.sourcePaths.has(p)) {
      const multi = catalog.fields.has(p) ? ` (${p} is an index-only sub-field, not part of the record)` : "";
      out.add("CS_SOURCE_INVALID", `unknown _source field ${JSON.stringify(p)} for ${kindsLabel(catalog)}${multi}`, ip);
    } else if (!paths.includes(p)) paths.push(p);
  });
  return paths;
}

/** Keys of the object form of `_source` (Elasticsearch takes the singular spellings too). */
const SOURCE_OBJECT_KEYS: Readonly<Record<string, "includes" | "excludes">> = {
  includes: "includes",
  include: "includes",
  excludes: "excludes",
  exclude: "excludes",
};

/**
 * Validates `_source` in every form Elasticsearch takes
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-fields.html#source-filtering):
 * `true` (the whole record), `false` (no `_source`), a path, an array of paths, or
 * `{includes|include, excludes|exclude}` (each a path or an array of paths). A path is one of the
 * record (a leaf such as `blockNumber.num`) or an enclosing object (`blockNumber`, everything below
 * it). No wildcards; index-only multi-fields such as `address.raw` are refused. Duplicates are dropped.
 * @returns the {@link SourceFilter} (`undefined` for absent, `true`, an empty array or empty includes
 *   and excludes: the whole record), or `CS_SOURCE_INVALID` problems.
 */
export function validateSourceFilter(
  source: unknown,
  kinds: readonly RecordKind[],
  path = "_source",
): ValidationResult<SourceFilter | undefined> {
  if (source === undefined || source === true) return { ok: true, value: undefined };
  if (source === false) return { ok: true, value: { none: true } };
  const out = new Collector();
  const catalog = fieldCatalog(kinds);
  const filter: SourceFilter = {};
  if (isJsonObject(source)) {
    for (const [key, value] of Object.entries(source)) {
      const which = Object.hasOwn(SOURCE_OBJECT_KEYS, key) ? SOURCE_OBJECT_KEYS[key] : undefined;
      if (!which) {
        out.add("CS_SOURCE_INVALID", `unknown _source key ${JSON.stringify(key)}; use includes and excludes`, jsonPath(path, key));
        continue;
      }
      const paths = sourcePaths(value, catalog, out, jsonPath(path, key));
      if (paths.length > 0) filter[which] = [...new Set([...(filter[which] ?? []), ...paths])];
    }
  } else {
    const paths = sourcePaths(source, catalog, out, path);
    if (paths.length > 0) filter.includes = paths;
  }
  return out.result(filter.includes || filter.excludes ? filter : undefined);
}

/**
 * Validates `_source` as the contract has it: an array of `_source` paths of the kinds (see
 * {@link validateSourceFilter}, of which this is the includes).
 * @returns the paths (`undefined` for an absent or empty array: the whole record), or `CS_SOURCE_INVALID` problems.
 */
export function validateSource(source: unknown, kinds: readonly RecordKind[], path = "_source"): ValidationResult<string[] | undefined> {
  if (source !== undefined && !Array.isArray(source))
    return { ok: false, errors: [{ code: "CS_SOURCE_INVALID", message: "_source must be an array of field paths", path }] };
  const checked = validateSourceFilter(source, kinds, path);
  return checked.ok ? { ok: true, value: checked.value?.includes } : checked;
}

/**
 * Validates `from` against the size: an integer ≥ 0 with `from + size` ≤
 * {@link LIMITS.maxResultWindow}; not with `size: -1`, nor (when > 0) with `search_after`.
 * @returns the offset, or a `CS_RESULT_WINDOW_TOO_LARGE` (`CS_SEARCH_AFTER_INVALID` with search_after) problem at `from`.
 */
export function validateFrom(from: unknown, size: number | undefined, searchAfter: boolean): ValidationResult<number> {
  const err = (
    message: string,
    code: "CS_RESULT_WINDOW_TOO_LARGE" | "CS_SEARCH_AFTER_INVALID" = "CS_RESULT_WINDOW_TOO_LARGE",
  ): ValidationResult<number> => ({ ok: false, errors: [{ code, message, path: "from" }] });
  if (from === undefined) return { ok: true, value: 0 };
  const max = LIMITS.maxResultWindow;
  if (typeof from !== "number" || !Number.isInteger(from) || from < 0) return err("from must be an integer >= 0");
  if (from === 0) return { ok: true, value: 0 };
  if (size === -1) return err("from cannot be combined with size -1 (which returns every match)");
  if (searchAfter) return err("from must be 0 with search_after (the cursor says where the page starts)", "CS_SEARCH_AFTER_INVALID");
  if (from + (size ?? LIMITS.defaultSize) > max)
    return err(
      `from + size must be at most ${max} (Elasticsearch's index.max_result_window); page deeper with sort + search_after, or with a point in time (_pit) and search_after, or a scroll`,
    );
  return { ok: true, value: from };
}

/**
 * Validates a whole query body (`{query?, sort?, size?, from?, _source?, search_after?, aggs?|aggregations?}`) for the given kinds.
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
 *   `CS_SIZE_INVALID`, `CS_RESULT_WINDOW_TOO_LARGE`, `CS_SOURCE_INVALID`, `CS_SEARCH_AFTER_INVALID`, `CS_AGG_*`; api/errors.ts).
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
  const source = validateSourceFilter(body._source, opts.kinds);
  if (!source.ok) out.addAll(source.errors);
  let searchAfter: SearchPlan["searchAfter"];
  // With an invalid sort, its own errors say enough: search_after cannot be checked against it.
  if (body.search_after !== undefined && (body.sort === undefined || sort !== undefined)) {
    const sa = validateSearchAfter(body.search_after, sort, size.ok ? size.value : undefined, opts.kinds, opts.pit === true);
    if (sa.ok) searchAfter = sa.value;
    else out.addAll(sa.errors);
  }
  const from = validateFrom(body.from, size.ok ? size.value : undefined, body.search_after !== undefined);
  if (!from.ok) out.addAll(from.errors);
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
  if (from.ok && from.value > 0) plan.from = from.value;
  if (source.ok && source.value?.includes) plan.source = source.value.includes;
  if (source.ok && source.value?.excludes) plan.sourceExcludes = source.value.excludes;
  if (source.ok && source.value?.none) plan.noSource = true;
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
 * @param kinds - the requested kinds (numeric sort keys need numbers).
 * @param pit - the search runs on a point in time: one more value, the `_shard_doc` tiebreaker, is allowed.
 * @returns the values, or `CS_SEARCH_AFTER_INVALID` problems at `search_after[…]`.
 */
export function validateSearchAfter(
  value: unknown,
  sort: readonly EsSortClause[] | undefined,
  size: number | undefined,
  kinds?: readonly RecordKind[],
  pit = false,
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
  // On a point in time, hits' sort values end with the implicit _shard_doc tiebreaker (a number).
  const tiebreaker = pit && value.length === sort.length + 1;
  if (tiebreaker && typeof value[sort.length] !== "number")
    return err("the last search_after value (the point in time's _shard_doc tiebreaker) must be a number", jsonPath(p, sort.length));
  if (value.length !== sort.length && !tiebreaker)
    return err(`search_after has ${value.length} values but the sort has ${sort.length} keys; pass the sort array of the last hit`);
  const catalog = kinds ? fieldCatalog(kinds) : undefined;
  for (let i = 0; i < sort.length; i++) {
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
