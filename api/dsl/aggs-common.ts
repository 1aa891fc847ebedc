/**
 * Shared parts of the aggregation validator (./aggs.ts and its type modules ./aggs-bucket.ts,
 * ./aggs-metric.ts, ./aggs-pipeline.ts): the caps, the validation context, the field check (with
 * the nested scope) and small option checks. Pure.
 * @module
 */
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import type { Collector } from "./collector.js";
import type { FieldCatalog, FieldInfo } from "./fields.js";

/** Caps of the aggregation extension (the codes are in api/errors.ts and docs/api.md). */
export const AGG_LIMITS = {
  /**
   * Most buckets one search may return, over all (nested) bucket aggregations (the idea of
   * Elasticsearch's `search.max_buckets`). `CS_AGG_TOO_MANY_BUCKETS`.
   */
  maxBuckets: 10_000,
  /** Largest `terms.size` and `significant_terms.size`. `CS_AGG_TOO_MANY_BUCKETS`. */
  maxTermsSize: 1000,
  /** Most aggregations in one body (all levels). `CS_AGG_TOO_MANY_BUCKETS`. */
  maxAggs: 30,
  /** Deepest nesting (top-level aggregations are depth 1). `CS_AGG_TOO_DEEP`. */
  maxDepth: 5,
  /** Largest `cardinality.precision_threshold` (the ES maximum). */
  maxPrecisionThreshold: 40_000,
  /** Largest `composite.size` (one page of composite buckets). `CS_AGG_SIZE_TOO_LARGE`. */
  maxCompositeSize: 1000,
  /** Most `composite.sources`. `CS_AGG_INVALID`. */
  maxCompositeSources: 10,
  /** Largest `top_hits.size` (hits per bucket). `CS_AGG_SIZE_TOO_LARGE`. */
  maxTopHitsSize: 100,
  /** Most `percentiles.percents` / `percentile_ranks.values`. `CS_AGG_SIZE_TOO_LARGE`. */
  maxPercents: 20,
  /** Most ranges of `range`/`date_range`, filters of `filters`. `CS_AGG_TOO_MANY_BUCKETS`. */
  maxRanges: 100,
} as const;

/** The validation state of one `aggs` value. */
export interface Ctx {
  catalog: FieldCatalog;
  /** The problems found (at most 50, shared with the query validator for `filter`/`filters`). */
  out: Collector;
  /** Aggregations seen so far (all levels). */
  count: number;
}

/** Where an aggregation sits: the nested path its documents are in (undefined: the root documents) and its parent's type. */
export interface AggEnv {
  /** The nested path of the enclosing `nested` aggregation (undefined at the root or after `reverse_nested`). */
  scope: string | undefined;
  /** The type of the enclosing aggregation (undefined at the top level). */
  parent: string | undefined;
  /** The raw sibling aggregations (the `aggs` map this one is in), for `buckets_path`. */
  siblings: Record<string, unknown>;
}

/** One validated aggregation: its ES body and the number of buckets it returns, if known before searching (0 for metrics). */
export interface Checked {
  body: Record<string, unknown>;
  /** Buckets of this aggregation alone (undefined: unknown before searching). */
  buckets: number | undefined;
}

/** What an aggregation needs of its field. */
export type FieldNeed = "aggregatable" | "numeric" | "numericOrDate" | "date";

const NEED_TEXT: Record<FieldNeed, string> = {
  aggregatable: "an aggregatable field (keyword, numeric, date or boolean)",
  numeric: "a numeric field",
  numericOrDate: "a numeric or date field",
  date: "a date field",
};

/** ES numeric field types of the mappings. */
export const NUMERIC: ReadonlySet<string> = new Set(["long", "integer", "double"]);

/** Whether `v` is an integer in `min..max`. */
export function isInt(v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
}

/** Whether `v` is a finite number. */
export function isNum(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

/**
 * Checks the `field` of an aggregation: mapped for the kinds, aggregatable, of the type `need`, and
 * in the aggregation's nested scope (a field of `args` only under a `nested` aggregation on `args`;
 * a root field there only after `reverse_nested`). Reports (`CS_AGG_INVALID`) and returns undefined when refused.
 */
export function aggField(ctx: Ctx, value: unknown, need: FieldNeed, p: string, scope: string | undefined): FieldInfo | undefined {
  if (typeof value !== "string") return ctx.out.fail("CS_AGG_INVALID", "field must be a string naming a mapped field", p);
  const info = ctx.catalog.fields.get(value);
  if (!info) {
    const why =
      ctx.catalog.objectPaths.has(value) || ctx.catalog.nestedPaths.has(value)
        ? `${value} is an object, name one of its leaf fields`
        : `unknown field ${JSON.stringify(value)}`;
    return ctx.out.fail("CS_AGG_INVALID", `${why} for ${ctx.catalog.kinds.join(",")}`, p);
  }
  if (info.nestedPath !== scope) {
    const why =
      info.nestedPath === undefined
        ? `${value} is outside the nested path ${scope}; go back up with a reverse_nested aggregation`
        : `${value} is inside the nested path ${info.nestedPath}; aggregate it under {"nested": {"path": "${info.nestedPath}"}}`;
    return ctx.out.fail("CS_AGG_INVALID", why, p);
  }
  if (!info.aggregatable) {
    const why =
      info.type === "text" ? `${value} is a text field${info.rawKeyword ? `; use ${info.rawKeyword}` : ""}` : `${value} has no doc values`;
    return ctx.out.fail("CS_AGG_INVALID", `cannot aggregate on ${value}: ${why}`, p);
  }
  const ok =
    need === "aggregatable" ||
    (need === "numeric" && NUMERIC.has(info.type)) ||
    (need === "numericOrDate" && (NUMERIC.has(info.type) || info.type === "date")) ||
    (need === "date" && info.type === "date");
  if (!ok) return ctx.out.fail("CS_AGG_INVALID", `this aggregation needs ${NEED_TEXT[need]}; ${value} is ${info.type}`, p);
  return info;
}

/** Checks that `spec` has only `allowed` keys; reports the first unknown one (`CS_AGG_INVALID`). */
export function onlyKeys(ctx: Ctx, spec: Record<string, unknown>, allowed: readonly string[], type: string, p: string): boolean {
  const bad = Object.keys(spec).find((k) => !allowed.includes(k));
  if (bad === undefined) return true;
  const what =
    bad === "script"
      ? "scripts are not supported"
      : `unknown ${type} option ${bad}; allowed: ${allowed.length > 0 ? allowed.join(", ") : "none"}`;
  ctx.out.fail("CS_AGG_INVALID", what, jsonPath(p, bad));
  return false;
}

/** Checks of optional options: option name → [accepts the value, what it must be (for the message)]. */
export type OptionChecks = Record<string, [(v: unknown) => boolean, string]>;

/** Copies the optional options of `checks` present in `spec` to `body` when accepted; reports the first refused one (`CS_AGG_INVALID`). */
export function copyOptional(
  ctx: Ctx,
  spec: Record<string, unknown>,
  body: Record<string, unknown>,
  checks: OptionChecks,
  p: string,
): boolean {
  for (const [key, [check, what]] of Object.entries(checks)) {
    const v = spec[key];
    if (v === undefined) continue;
    if (!check(v)) {
      ctx.out.fail("CS_AGG_INVALID", `${key} must be ${what}`, jsonPath(p, key));
      return false;
    }
    body[key] = v;
  }
  return true;
}

/** A bounded string (formats, keys, time zones' names). */
export const isShortString = (v: unknown): boolean => typeof v === "string" && v.length > 0 && v.length <= 128;
/** A boolean. */
export const isBool = (v: unknown): boolean => typeof v === "boolean";

/**
 * `order` of a bucket aggregation: `{key: "asc"|"desc"}` or an array of one to four such, keys from
 * `keys` or the names of single-value metric sub-aggregations (`metricNames`).
 */
export function order(ctx: Ctx, value: unknown, keys: readonly string[], metricNames: ReadonlySet<string>, p: string): unknown {
  const items: Array<[unknown, string]> = Array.isArray(value) ? value.map((v, i) => [v, jsonPath(p, i)]) : [[value, p]];
  if (items.length === 0 || items.length > 4)
    return ctx.out.fail("CS_AGG_INVALID", 'order takes one to four {<key>: "asc"|"desc"} maps', p);
  const out: Array<Record<string, string>> = [];
  for (const [item, ip] of items) {
    const entries = isJsonObject(item) ? Object.entries(item) : [];
    const entry = entries[0];
    if (entries.length !== 1 || !entry)
      return ctx.out.fail("CS_AGG_INVALID", 'an order item is a map with one key: {"_count": "desc"}', ip);
    const [key, dir] = entry;
    const kp = jsonPath(ip, key);
    if (!keys.includes(key) && !metricNames.has(key)) {
      const subs = metricNames.size > 0 ? ` or a metric sub-aggregation (${[...metricNames].join(", ")})` : "";
      return ctx.out.fail("CS_AGG_INVALID", `cannot order by ${key}; use ${keys.join(" or ")}${subs}`, kp);
    }
    if (dir !== "asc" && dir !== "desc") return ctx.out.fail("CS_AGG_INVALID", 'order direction must be "asc" or "desc"', kp);
    out.push({ [key]: dir });
  }
  return Array.isArray(value) ? out : out[0];
}

/** `{min, max}` bounds; numbers, or for dates also strings `Date.parse` reads. Returns the bounds as numbers (ms for dates). */
export function bounds(
  ctx: Ctx,
  value: unknown,
  date: boolean,
  p: string,
): { body: Record<string, unknown>; min: number; max: number } | undefined {
  if (!isJsonObject(value) || !onlyKeys(ctx, value, ["min", "max"], "bounds", p) || value.min === undefined || value.max === undefined)
    return ctx.out.fail("CS_AGG_INVALID", "bounds take {min, max}", p);
  const num = (v: unknown): number =>
    isNum(v) ? v : date && typeof v === "string" ? (/^\d+$/.test(v) ? Number(v) : Date.parse(v)) : Number.NaN;
  const min = num(value.min);
  const max = num(value.max);
  const kind = date ? "dates (ISO 8601 or epoch milliseconds)" : "finite numbers";
  if (Number.isNaN(min)) return ctx.out.fail("CS_AGG_INVALID", `min must be one of ${kind}`, jsonPath(p, "min"));
  if (Number.isNaN(max)) return ctx.out.fail("CS_AGG_INVALID", `max must be one of ${kind}`, jsonPath(p, "max"));
  if (min > max) return ctx.out.fail("CS_AGG_INVALID", "min must not be greater than max", p);
  return { body: { min: value.min, max: value.max }, min, max };
}

/** One parsed sort item of `top_hits.sort` or `bucket_sort.sort`: the key (a field or a path), its direction and JSON path. */
export interface SortItem {
  key: string;
  dir: "asc" | "desc";
  path: string;
}

/**
 * Parses a sort of `top_hits` or `bucket_sort`: one item or an array of one to four, each
 * `{<key>: "asc"|"desc"}`, `{<key>: {"order": …}}` or a bare key (ascending; `_score` descending).
 * Reports (`CS_AGG_INVALID`) and returns undefined when malformed; the keys are the caller's to check.
 */
export function sortItems(ctx: Ctx, sort: unknown, p: string): SortItem[] | undefined {
  const items: Array<[unknown, string]> = Array.isArray(sort) ? sort.map((s, i) => [s, jsonPath(p, i)]) : [[sort, p]];
  if (items.length === 0 || items.length > 4)
    return ctx.out.fail("CS_AGG_INVALID", 'sort takes one to four {<key>: "asc"|"desc"} items', p);
  const out: SortItem[] = [];
  for (const [item, ip] of items) {
    const entries: Array<[string, unknown]> =
      typeof item === "string" ? [[item, item === "_score" ? "desc" : "asc"]] : isJsonObject(item) ? Object.entries(item) : [];
    const entry = entries[0];
    if (entries.length !== 1 || !entry) return ctx.out.fail("CS_AGG_INVALID", 'a sort item is {<key>: "asc"|"desc"}', ip);
    const [key, spec] = entry;
    const kp = typeof item === "string" ? ip : jsonPath(ip, key);
    const dir = isJsonObject(spec) && Object.keys(spec).length === 1 ? spec.order : spec;
    if (dir !== "asc" && dir !== "desc") return ctx.out.fail("CS_AGG_INVALID", 'sort order must be "asc" or "desc" (or {"order": …})', kp);
    out.push({ key, dir, path: kp });
  }
  return out;
}
