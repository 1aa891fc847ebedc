/**
 * Aggregations: an extension beyond the query contract. A pure, allowlist-based validator of the
 * body's `aggs` (or `aggregations`) map that returns the sanitized Elasticsearch aggregations or
 * every problem found, each with a stable code and the JSON path of the offending part.
 *
 * Allowed (ES aggregations, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations.html):
 * - bucket aggregations, which may hold sub-aggregations under `aggs`/`aggregations`:
 *   `terms` (aggregatable field: keyword, numeric, date, boolean; `size` ≤ {@link AGG_LIMITS.maxTermsSize}),
 *   `histogram` (numeric field, `interval` > 0), `date_histogram` (date field, `calendar_interval` or
 *   `fixed_interval`);
 * - metric aggregations: `sum`, `avg` (numeric fields), `min`, `max` (numeric or date fields),
 *   `cardinality` (any aggregatable field).
 * Everything else (`scripted_metric`, `top_hits`, `composite`, `significant_terms`, …) is refused
 * with `CS_AGG_UNSUPPORTED`; scripts, `include`/`exclude` patterns, `meta`, fields of the nested
 * `args` and text fields are refused with `CS_AGG_INVALID`.
 *
 * Bucket caps: a `terms` aggregation returns at most {@link AGG_LIMITS.maxTermsSize} buckets; the
 * bucket count that can be computed before searching (terms sizes, histograms with `hard_bounds`,
 * multiplied through the nesting) must stay within {@link AGG_LIMITS.maxBuckets}; empty buckets
 * (`min_doc_count: 0`) need `hard_bounds` on histograms. Histograms without `hard_bounds` are
 * capped after the search: {@link countBuckets} of the response must stay within the same limit
 * (see api/search/search.ts). All failures of the caps are `CS_AGG_TOO_MANY_BUCKETS`.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject, ProblemCollector, type ValidationResult } from "../../lib/validation/problems.js";
import type { ApiErrorDetail, ErrorCode } from "../errors.js";
import { type FieldCatalog, type FieldInfo, fieldCatalog } from "./fields.js";

/** Caps of the aggregation extension. */
export const AGG_LIMITS = {
  /** Most buckets one search may return, over all (nested) bucket aggregations. */
  maxBuckets: 10_000,
  /** Largest `terms.size`. */
  maxTermsSize: 1000,
  /** Most aggregations in one body (all levels). */
  maxAggs: 20,
  /** Deepest nesting (top-level aggregations are depth 1). */
  maxDepth: 3,
  /** Largest `cardinality.precision_threshold` (the ES maximum). */
  maxPrecisionThreshold: 40_000,
} as const;

/** Bucket aggregation types (may have sub-aggregations). */
export const BUCKET_AGGS = ["terms", "histogram", "date_histogram"] as const;
/** Metric aggregation types (single value, no sub-aggregations). */
export const METRIC_AGGS = ["sum", "avg", "min", "max", "cardinality"] as const;
/** Every accepted aggregation type. */
export const ALLOWED_AGGS: readonly string[] = [...BUCKET_AGGS, ...METRIC_AGGS];

/** A sanitized ES aggregations map, `{name: {<type>: {…}, aggs?: {…}}}`. */
export type EsAggs = Record<string, Record<string, unknown>>;

/** Result of {@link validateAggs}: the sanitized aggregations, or every problem found. */
export type AggsResult = ValidationResult<EsAggs, ApiErrorDetail>;

/** `calendar_interval` values ES accepts, with the shortest length of one interval in ms (DST days are 23 h). */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CALENDAR_INTERVALS: Readonly<Record<string, number>> = {
  minute: 60_000,
  "1m": 60_000,
  hour: HOUR,
  "1h": HOUR,
  day: DAY - HOUR,
  "1d": DAY - HOUR,
  week: 7 * DAY - HOUR,
  "1w": 7 * DAY - HOUR,
  month: 28 * DAY - HOUR,
  "1M": 28 * DAY - HOUR,
  quarter: 89 * DAY - HOUR,
  "1q": 89 * DAY - HOUR,
  year: 365 * DAY - HOUR,
  "1y": 365 * DAY - HOUR,
};
const FIXED_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: HOUR, d: DAY };
const FIXED_INTERVAL = /^([1-9]\d{0,8})(ms|s|m|h|d)$/;
const DATE_OFFSET = /^[+-]?\d{1,9}(ms|s|m|h|d)$/;
const TIME_ZONE = /^(?:[+-]\d{2}:\d{2}|[A-Za-z][A-Za-z0-9_+\-/]{0,63})$/;
const AGG_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const NUMERIC = new Set(["long", "integer", "double"]);
/** Most problems one `aggs` value reports. */
const MAX_PROBLEMS = 50;

function isInt(v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
}

interface Ctx {
  catalog: FieldCatalog;
  /** The problems found (at most {@link MAX_PROBLEMS}). */
  out: ProblemCollector<ErrorCode, string | null>;
  count: number;
}

/** One validated aggregation: its ES body and the number of buckets it returns, if known before searching (0 for metrics). */
interface Checked {
  body: Record<string, unknown>;
  /** Buckets of this aggregation alone (undefined: unknown before searching). */
  buckets: number | undefined;
}

type FieldNeed = "aggregatable" | "numeric" | "numericOrDate" | "date";

const NEED_TEXT: Record<FieldNeed, string> = {
  aggregatable: "an aggregatable field (keyword, numeric, date or boolean)",
  numeric: "a numeric field",
  numericOrDate: "a numeric or date field",
  date: "a date field",
};

/** Checks `field` of an aggregation; reports and returns undefined when refused. */
function aggField(ctx: Ctx, value: unknown, need: FieldNeed, p: string): FieldInfo | undefined {
  if (typeof value !== "string") return ctx.out.fail("CS_AGG_INVALID", "field must be a string naming a mapped field", p);
  const info = ctx.catalog.fields.get(value);
  if (!info) {
    const why = ctx.catalog.objectPaths.has(value)
      ? `${value} is an object, name one of its leaf fields`
      : `unknown field ${JSON.stringify(value)}`;
    return ctx.out.fail("CS_AGG_INVALID", `${why} for ${ctx.catalog.kinds.join(",")}`, p);
  }
  if (info.nestedPath !== undefined)
    return ctx.out.fail(
      "CS_AGG_INVALID",
      `${value} is inside the nested path ${info.nestedPath}; aggregations on nested fields are not supported`,
      p,
    );
  if (!info.sortable) {
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

/** Checks that `spec` has only `allowed` keys; reports the first unknown one. */
function onlyKeys(ctx: Ctx, spec: Record<string, unknown>, allowed: readonly string[], type: string, p: string): boolean {
  const bad = Object.keys(spec).find((k) => !allowed.includes(k));
  if (bad === undefined) return true;
  const what = bad === "script" ? "scripts are not supported" : `unknown ${type} option ${bad}; allowed: ${allowed.join(", ")}`;
  ctx.out.fail("CS_AGG_INVALID", what, jsonPath(p, bad));
  return false;
}

/** `order` of a bucket aggregation: `{key: "asc"|"desc"}` or an array of such, keys from `keys` (or metric sub-aggregations). */
function order(ctx: Ctx, value: unknown, keys: readonly string[], metricNames: ReadonlySet<string>, p: string): unknown {
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
function bounds(
  ctx: Ctx,
  value: unknown,
  date: boolean,
  p: string,
): { body: Record<string, unknown>; min: number; max: number } | undefined {
  if (!isJsonObject(value) || !onlyKeys(ctx, value, ["min", "max"], "bounds", p) || value.min === undefined || value.max === undefined)
    return ctx.out.fail("CS_AGG_INVALID", "bounds take {min, max}", p);
  const num = (v: unknown): number =>
    typeof v === "number" && Number.isFinite(v) ? v : date && typeof v === "string" ? Date.parse(v) : Number.NaN;
  const min = num(value.min);
  const max = num(value.max);
  const kind = date ? "dates (ISO 8601 or epoch milliseconds)" : "finite numbers";
  if (Number.isNaN(min)) return ctx.out.fail("CS_AGG_INVALID", `min must be one of ${kind}`, jsonPath(p, "min"));
  if (Number.isNaN(max)) return ctx.out.fail("CS_AGG_INVALID", `max must be one of ${kind}`, jsonPath(p, "max"));
  if (min > max) return ctx.out.fail("CS_AGG_INVALID", "min must not be greater than max", p);
  return { body: { min: value.min, max: value.max }, min, max };
}

function termsAgg(ctx: Ctx, spec: Record<string, unknown>, metricNames: ReadonlySet<string>, p: string): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["field", "size", "min_doc_count", "order", "missing"], "terms", p)) return undefined;
  if (!aggField(ctx, spec.field, "aggregatable", jsonPath(p, "field"))) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  let size = 10;
  if (spec.size !== undefined) {
    if (!isInt(spec.size, 1)) return ctx.out.fail("CS_AGG_INVALID", "terms.size must be a positive integer", jsonPath(p, "size"));
    if (spec.size > AGG_LIMITS.maxTermsSize)
      return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `terms.size is at most ${AGG_LIMITS.maxTermsSize}`, jsonPath(p, "size"));
    size = spec.size;
    body.size = size;
  }
  if (spec.min_doc_count !== undefined) {
    if (!isInt(spec.min_doc_count, 0))
      return ctx.out.fail("CS_AGG_INVALID", "min_doc_count must be an integer >= 0", jsonPath(p, "min_doc_count"));
    body.min_doc_count = spec.min_doc_count;
  }
  if (spec.order !== undefined) {
    const o = order(ctx, spec.order, ["_count", "_key"], metricNames, jsonPath(p, "order"));
    if (o === undefined) return undefined;
    body.order = o;
  }
  if (spec.missing !== undefined) {
    const m = spec.missing;
    if (!(typeof m === "string" || typeof m === "boolean" || (typeof m === "number" && Number.isFinite(m))))
      return ctx.out.fail("CS_AGG_INVALID", "missing must be a string, number or boolean", jsonPath(p, "missing"));
    body.missing = m;
  }
  return { body, buckets: size };
}

/**
 * Shared part of histogram and date_histogram: min_doc_count, hard_bounds, extended_bounds, order;
 * then the checked aggregation, whose bucket count is bounded by the hard bounds over `interval`
 * (in the field's units: a number, or ms for dates) and unknown without them.
 */
function histogramCommon(
  ctx: Ctx,
  spec: Record<string, unknown>,
  body: Record<string, unknown>,
  date: boolean,
  p: string,
  interval: number,
): Checked | undefined {
  let hard: { min: number; max: number } | undefined;
  if (spec.hard_bounds !== undefined) {
    const b = bounds(ctx, spec.hard_bounds, date, jsonPath(p, "hard_bounds"));
    if (!b) return undefined;
    body.hard_bounds = b.body;
    hard = b;
  }
  if (spec.extended_bounds !== undefined) {
    if (!hard)
      return ctx.out.fail("CS_AGG_INVALID", "extended_bounds needs hard_bounds (which cap the buckets)", jsonPath(p, "extended_bounds"));
    const b = bounds(ctx, spec.extended_bounds, date, jsonPath(p, "extended_bounds"));
    if (!b) return undefined;
    body.extended_bounds = b.body;
  }
  if (spec.min_doc_count !== undefined) {
    if (!isInt(spec.min_doc_count, 0))
      return ctx.out.fail("CS_AGG_INVALID", "min_doc_count must be an integer >= 0", jsonPath(p, "min_doc_count"));
    body.min_doc_count = spec.min_doc_count;
  }
  if (body.min_doc_count === 0 && !hard)
    return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", "min_doc_count 0 (empty buckets) needs hard_bounds", jsonPath(p, "min_doc_count"));
  // ES defaults histograms to min_doc_count 0 (empty buckets between the extremes); without hard bounds, only non-empty ones.
  body.min_doc_count ??= hard ? 0 : 1;
  if (spec.order !== undefined) {
    const o = order(ctx, spec.order, ["_count", "_key"], new Set(), jsonPath(p, "order"));
    if (o === undefined) return undefined;
    body.order = o;
  }
  return { body, buckets: hard ? Math.floor((hard.max - hard.min) / interval) + 2 : undefined };
}

function histogramAgg(ctx: Ctx, spec: Record<string, unknown>, p: string): Checked | undefined {
  const allowed = ["field", "interval", "offset", "min_doc_count", "hard_bounds", "extended_bounds", "order"];
  if (!onlyKeys(ctx, spec, allowed, "histogram", p)) return undefined;
  if (!aggField(ctx, spec.field, "numeric", jsonPath(p, "field"))) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const interval = spec.interval;
  if (typeof interval !== "number" || !Number.isFinite(interval) || interval <= 0)
    return ctx.out.fail("CS_AGG_INVALID", "histogram.interval must be a number > 0", jsonPath(p, "interval"));
  body.interval = interval;
  if (spec.offset !== undefined) {
    if (typeof spec.offset !== "number" || !Number.isFinite(spec.offset))
      return ctx.out.fail("CS_AGG_INVALID", "offset must be a finite number", jsonPath(p, "offset"));
    body.offset = spec.offset;
  }
  return histogramCommon(ctx, spec, body, false, p, interval);
}

function dateHistogramAgg(ctx: Ctx, spec: Record<string, unknown>, p: string): Checked | undefined {
  const allowed = [
    "field",
    "calendar_interval",
    "fixed_interval",
    "time_zone",
    "offset",
    "min_doc_count",
    "hard_bounds",
    "extended_bounds",
    "order",
  ];
  if (!onlyKeys(ctx, spec, allowed, "date_histogram", p)) return undefined;
  if (!aggField(ctx, spec.field, "date", jsonPath(p, "field"))) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const cal = spec.calendar_interval;
  const fixed = spec.fixed_interval;
  let intervalMs: number;
  if ((cal === undefined) === (fixed === undefined))
    return ctx.out.fail("CS_AGG_INVALID", "date_histogram needs exactly one of calendar_interval or fixed_interval", p);
  if (cal !== undefined) {
    const ms = typeof cal === "string" && Object.hasOwn(CALENDAR_INTERVALS, cal) ? CALENDAR_INTERVALS[cal] : undefined;
    if (ms === undefined)
      return ctx.out.fail(
        "CS_AGG_INVALID",
        `calendar_interval must be one of ${Object.keys(CALENDAR_INTERVALS).join(", ")}`,
        jsonPath(p, "calendar_interval"),
      );
    body.calendar_interval = cal;
    intervalMs = ms;
  } else {
    const m = typeof fixed === "string" ? FIXED_INTERVAL.exec(fixed) : null;
    if (!m)
      return ctx.out.fail(
        "CS_AGG_INVALID",
        "fixed_interval must be a positive integer with a unit ms, s, m, h or d (e.g. 30m)",
        jsonPath(p, "fixed_interval"),
      );
    body.fixed_interval = fixed;
    intervalMs = Number(m[1]) * (FIXED_UNITS[m[2] as string] as number);
  }
  if (spec.time_zone !== undefined) {
    if (typeof spec.time_zone !== "string" || !TIME_ZONE.test(spec.time_zone))
      return ctx.out.fail(
        "CS_AGG_INVALID",
        "time_zone must be an offset (+01:00) or a zone id (Europe/Paris, UTC)",
        jsonPath(p, "time_zone"),
      );
    body.time_zone = spec.time_zone;
  }
  if (spec.offset !== undefined) {
    if (typeof spec.offset !== "string" || !DATE_OFFSET.test(spec.offset))
      return ctx.out.fail("CS_AGG_INVALID", "offset must be a duration such as +6h or -30m", jsonPath(p, "offset"));
    body.offset = spec.offset;
  }
  return histogramCommon(ctx, spec, body, true, p, intervalMs);
}

function metricAgg(ctx: Ctx, type: string, spec: Record<string, unknown>, p: string): Checked | undefined {
  const allowed = type === "cardinality" ? ["field", "precision_threshold"] : ["field"];
  if (!onlyKeys(ctx, spec, allowed, type, p)) return undefined;
  const need: FieldNeed = type === "cardinality" ? "aggregatable" : type === "min" || type === "max" ? "numericOrDate" : "numeric";
  if (!aggField(ctx, spec.field, need, jsonPath(p, "field"))) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  if (spec.precision_threshold !== undefined) {
    if (!isInt(spec.precision_threshold, 0, AGG_LIMITS.maxPrecisionThreshold))
      return ctx.out.fail(
        "CS_AGG_INVALID",
        `precision_threshold must be an integer 0..${AGG_LIMITS.maxPrecisionThreshold}`,
        jsonPath(p, "precision_threshold"),
      );
    body.precision_threshold = spec.precision_threshold;
  }
  return { body, buckets: 0 };
}

/** The sub-aggregations key of an aggregation object (`aggs` or `aggregations`), or undefined. */
function subKey(node: Record<string, unknown>): "aggs" | "aggregations" | undefined {
  if ("aggs" in node) return "aggs";
  if ("aggregations" in node) return "aggregations";
  return undefined;
}

/**
 * Validates one level of aggregations. Returns the sanitized map and the buckets it returns if
 * known (sum over siblings of buckets × (1 + buckets of the children)); undefined when refused.
 */
function level(ctx: Ctx, aggs: unknown, p: string, depth: number): { value: EsAggs; buckets: number } | undefined {
  if (!isJsonObject(aggs)) return ctx.out.fail("CS_AGG_INVALID", "aggregations must be a map {<name>: {<type>: {…}}}", p);
  const names = Object.keys(aggs);
  if (names.length === 0) return { value: {}, buckets: 0 }; // as in ES: no aggregations
  if (depth > AGG_LIMITS.maxDepth)
    return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `aggregations nest at most ${AGG_LIMITS.maxDepth} levels deep`, p);
  const value: EsAggs = {};
  let buckets = 0;
  let ok = true;
  for (const name of names) {
    const np = jsonPath(p, name);
    ctx.count += 1;
    if (ctx.count > AGG_LIMITS.maxAggs) {
      ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `at most ${AGG_LIMITS.maxAggs} aggregations in one search`, np);
      return undefined;
    }
    if (!AGG_NAME.test(name)) {
      ctx.out.fail("CS_AGG_INVALID", "aggregation names are 1-64 characters of A-Z, a-z, 0-9, _ and -", np);
      ok = false;
      continue;
    }
    const checked = one(ctx, aggs[name], np, depth);
    if (!checked) {
      ok = false;
      continue;
    }
    value[name] = checked.node;
    buckets += checked.buckets;
  }
  return ok ? { value, buckets } : undefined;
}

/** Validates one aggregation object `{<type>: {…}, aggs?: {…}}`. */
function one(ctx: Ctx, node: unknown, p: string, depth: number): { node: Record<string, unknown>; buckets: number } | undefined {
  if (!isJsonObject(node))
    return ctx.out.fail("CS_AGG_INVALID", 'an aggregation is an object {<type>: {…}}, e.g. {"terms": {"field": "from"}}', p);
  const sub = subKey(node);
  if ("aggs" in node && "aggregations" in node) return ctx.out.fail("CS_AGG_INVALID", "use either aggs or aggregations, not both", p);
  const types = Object.keys(node).filter((k) => k !== sub);
  const type = types[0];
  if (types.length !== 1 || type === undefined) {
    const extra = types.find((t) => t === "meta") ? "meta is not supported; " : "";
    return ctx.out.fail("CS_AGG_INVALID", `${extra}an aggregation has exactly one type key, got ${types.length} (${types.join(", ")})`, p);
  }
  const tp = jsonPath(p, type);
  if (!ALLOWED_AGGS.includes(type))
    return ctx.out.fail("CS_AGG_UNSUPPORTED", `aggregation ${type} is not supported; allowed: ${ALLOWED_AGGS.join(", ")}`, tp);
  const spec = node[type];
  if (!isJsonObject(spec)) return ctx.out.fail("CS_AGG_INVALID", `${type} takes an object of options`, tp);
  const isBucket = (BUCKET_AGGS as readonly string[]).includes(type);
  if (sub && !isBucket)
    return ctx.out.fail("CS_AGG_INVALID", `${type} is a metric aggregation and cannot have sub-aggregations`, jsonPath(p, sub));
  // Sub-aggregations first: a terms order may name one of their metric aggregations.
  let children: { value: EsAggs; buckets: number } | undefined;
  if (sub) {
    children = level(ctx, node[sub], jsonPath(p, sub), depth + 1);
    if (!children) return undefined;
  }
  const metricNames = new Set(
    Object.entries(children?.value ?? {})
      .filter(([, v]) => Object.keys(v).some((k) => (METRIC_AGGS as readonly string[]).includes(k)))
      .map(([k]) => k),
  );
  let checked: Checked | undefined;
  switch (type) {
    case "terms":
      checked = termsAgg(ctx, spec, metricNames, tp);
      break;
    case "histogram":
      checked = histogramAgg(ctx, spec, tp);
      break;
    case "date_histogram":
      checked = dateHistogramAgg(ctx, spec, tp);
      break;
    default:
      checked = metricAgg(ctx, type, spec, tp);
  }
  if (!checked) return undefined;
  // Unknown counts (histograms without hard_bounds) are checked on the response; count them as 1 here.
  const own = checked.buckets ?? (isBucket ? 1 : 0);
  const buckets = isBucket ? own * (1 + (children?.buckets ?? 0)) : 0;
  if (buckets > AGG_LIMITS.maxBuckets) {
    return ctx.out.fail(
      "CS_AGG_TOO_MANY_BUCKETS",
      `this aggregation can return ${buckets} buckets (its own times those of its sub-aggregations); the cap is ${AGG_LIMITS.maxBuckets}`,
      p,
    );
  }
  const out: Record<string, unknown> = { [type]: checked.body };
  if (children && Object.keys(children.value).length > 0) out.aggs = children.value;
  return { node: out, buckets };
}

/**
 * Validates the `aggs`/`aggregations` value of a body for the given kinds.
 * @param aggs - the value (any JSON).
 * @param kinds - requested record kinds; a field of any of them is accepted.
 * @param p - JSON path of the value in the body (`aggs` or `aggregations`).
 * @returns the sanitized aggregations (`{}` for an empty map: no aggregations), or every problem
 *   found (`CS_AGG_UNSUPPORTED`, `CS_AGG_INVALID`, `CS_AGG_TOO_MANY_BUCKETS`).
 */
export function validateAggs(aggs: unknown, kinds: readonly RecordKind[], p = "aggs"): AggsResult {
  const ctx: Ctx = { catalog: fieldCatalog(kinds), out: new ProblemCollector(MAX_PROBLEMS), count: 0 };
  const result = level(ctx, aggs, p, 1);
  if (!result || !ctx.out.ok) {
    if (ctx.out.ok) ctx.out.add("CS_AGG_INVALID", "invalid aggregations", p);
    return { ok: false, errors: ctx.out.problems };
  }
  if (result.buckets > AGG_LIMITS.maxBuckets) {
    return {
      ok: false,
      errors: [
        {
          code: "CS_AGG_TOO_MANY_BUCKETS",
          message: `the aggregations can return ${result.buckets} buckets; the cap is ${AGG_LIMITS.maxBuckets}`,
          path: p,
        },
      ],
    };
  }
  return { ok: true, value: result.value };
}

/**
 * Counts the buckets of an ES aggregations response (every element of every `buckets` array or
 * object, at every level). Used to cap histograms whose bucket count is unknown before searching.
 */
export function countBuckets(aggregations: unknown): number {
  if (Array.isArray(aggregations)) return aggregations.reduce<number>((n, v) => n + countBuckets(v), 0);
  if (!isJsonObject(aggregations)) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(aggregations)) {
    if (k === "buckets") {
      const list = Array.isArray(v) ? v : isJsonObject(v) ? Object.values(v) : [];
      n += list.length + list.reduce<number>((m, b) => m + countBuckets(b), 0);
    } else if (isJsonObject(v) || Array.isArray(v)) n += countBuckets(v);
  }
  return n;
}
