/**
 * The bucket aggregations of the allowlist (./aggs.ts): `terms`, `significant_terms`, `histogram`,
 * `date_histogram`, `range`, `date_range`, `missing`, `composite`, `nested`, `reverse_nested`,
 * `filter`, `filters` (ES bucket aggregations,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations-bucket.html).
 * Each returns its sanitized body and its bucket count when known before searching. Pure.
 * @module
 */
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import {
  AGG_LIMITS,
  type AggEnv,
  aggField,
  bounds,
  type Checked,
  type Ctx,
  copyOptional,
  isBool,
  isInt,
  isNum,
  isShortString,
  type OptionChecks,
  onlyKeys,
  order,
} from "./aggs-common.js";
import { isScalar } from "./collector.js";
import { clauseInto } from "./query.js";

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
const isTimeZone = (v: unknown): boolean => typeof v === "string" && TIME_ZONE.test(v);
const isOffset = (v: unknown): boolean => typeof v === "string" && DATE_OFFSET.test(v);

/** Bucket aggregations with many buckets (`bucket_sort` may sort them). */
export const MULTI_BUCKET_AGGS = [
  "terms",
  "significant_terms",
  "histogram",
  "date_histogram",
  "range",
  "date_range",
  "filters",
  "composite",
] as const;
/** Bucket aggregations with exactly one bucket (a `buckets_path` may go through them with `>`). */
export const SINGLE_BUCKET_AGG_TYPES = ["missing", "nested", "reverse_nested", "filter"] as const;
/** {@link SINGLE_BUCKET_AGG_TYPES} as a set. */
export const SINGLE_BUCKET_AGGS: ReadonlySet<string> = new Set(SINGLE_BUCKET_AGG_TYPES);

function minDocCount(ctx: Ctx, spec: Record<string, unknown>, body: Record<string, unknown>, p: string): boolean {
  if (spec.min_doc_count === undefined) return true;
  if (!isInt(spec.min_doc_count, 0)) {
    ctx.out.fail("CS_AGG_INVALID", "min_doc_count must be an integer >= 0", jsonPath(p, "min_doc_count"));
    return false;
  }
  body.min_doc_count = spec.min_doc_count;
  return true;
}

/** `terms` and `significant_terms`: a bucket per value, at most {@link AGG_LIMITS.maxTermsSize}. */
export function termsAgg(
  ctx: Ctx,
  type: "terms" | "significant_terms",
  spec: Record<string, unknown>,
  metricNames: ReadonlySet<string>,
  p: string,
  env: AggEnv,
): Checked | undefined {
  const allowed = type === "terms" ? ["field", "size", "min_doc_count", "order", "missing"] : ["field", "size", "min_doc_count"];
  if (!onlyKeys(ctx, spec, allowed, type, p)) return undefined;
  if (!aggField(ctx, spec.field, "aggregatable", jsonPath(p, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  let size = 10;
  if (spec.size !== undefined) {
    if (!isInt(spec.size, 1)) return ctx.out.fail("CS_AGG_INVALID", `${type}.size must be a positive integer`, jsonPath(p, "size"));
    if (spec.size > AGG_LIMITS.maxTermsSize)
      return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `${type}.size is at most ${AGG_LIMITS.maxTermsSize}`, jsonPath(p, "size"));
    size = spec.size;
    body.size = size;
  }
  if (!minDocCount(ctx, spec, body, p)) return undefined;
  if (spec.order !== undefined) {
    const o = order(ctx, spec.order, ["_count", "_key"], metricNames, jsonPath(p, "order"));
    if (o === undefined) return undefined;
    body.order = o;
  }
  if (spec.missing !== undefined) {
    if (!isScalar(spec.missing))
      return ctx.out.fail("CS_AGG_INVALID", "missing must be a string, number or boolean", jsonPath(p, "missing"));
    body.missing = spec.missing;
  }
  return { body, buckets: size };
}

/**
 * Shared part of histogram and date_histogram: min_doc_count, hard_bounds, extended_bounds, order,
 * keyed; then the checked aggregation, whose bucket count is bounded by the hard bounds over
 * `interval` (in the field's units: a number, or ms for dates) and unknown without them. Empty
 * buckets (`min_doc_count: 0`) need `hard_bounds` or `extended_bounds`; extended bounds alone
 * already spanning more than {@link AGG_LIMITS.maxBuckets} intervals are refused.
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
  let extended: { min: number; max: number } | undefined;
  if (spec.extended_bounds !== undefined) {
    const b = bounds(ctx, spec.extended_bounds, date, jsonPath(p, "extended_bounds"));
    if (!b) return undefined;
    body.extended_bounds = b.body;
    extended = b;
    const spans = Math.floor((b.max - b.min) / interval) + 1;
    if (!hard && spans > AGG_LIMITS.maxBuckets)
      return ctx.out.fail(
        "CS_AGG_TOO_MANY_BUCKETS",
        `extended_bounds span ${spans} intervals; the cap is ${AGG_LIMITS.maxBuckets} buckets`,
        jsonPath(p, "extended_bounds"),
      );
  }
  if (!minDocCount(ctx, spec, body, p)) return undefined;
  if (body.min_doc_count === 0 && !hard && !extended)
    return ctx.out.fail(
      "CS_AGG_TOO_MANY_BUCKETS",
      "min_doc_count 0 (empty buckets) needs hard_bounds or extended_bounds",
      jsonPath(p, "min_doc_count"),
    );
  // ES defaults histograms to min_doc_count 0 (empty buckets between the extremes); without bounds, only non-empty ones.
  body.min_doc_count ??= hard ? 0 : 1;
  if (spec.order !== undefined) {
    const o = order(ctx, spec.order, ["_count", "_key"], new Set(), jsonPath(p, "order"));
    if (o === undefined) return undefined;
    body.order = o;
  }
  if (!copyOptional(ctx, spec, body, { keyed: [isBool, "a boolean"] }, p)) return undefined;
  return { body, buckets: hard ? Math.floor((hard.max - hard.min) / interval) + 2 : undefined };
}

export function histogramAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  const allowed = ["field", "interval", "offset", "min_doc_count", "hard_bounds", "extended_bounds", "order", "keyed"];
  if (!onlyKeys(ctx, spec, allowed, "histogram", p)) return undefined;
  if (!aggField(ctx, spec.field, "numeric", jsonPath(p, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const interval = spec.interval;
  if (!isNum(interval) || interval <= 0)
    return ctx.out.fail("CS_AGG_INVALID", "histogram.interval must be a number > 0", jsonPath(p, "interval"));
  body.interval = interval;
  if (!copyOptional(ctx, spec, body, { offset: [isNum, "a finite number"] }, p)) return undefined;
  return histogramCommon(ctx, spec, body, false, p, interval);
}

/**
 * The interval of a date histogram (or a composite's date_histogram source): exactly one of
 * `calendar_interval` and `fixed_interval`, copied to `body`; then `time_zone`, `offset` and
 * `format`. Returns the shortest length of one interval in ms.
 */
function dateInterval(ctx: Ctx, spec: Record<string, unknown>, body: Record<string, unknown>, p: string): number | undefined {
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
  const ok = copyOptional(
    ctx,
    spec,
    body,
    {
      time_zone: [isTimeZone, "an offset (+01:00) or a zone id (Europe/Paris, UTC)"],
      offset: [isOffset, "a duration such as +6h or -30m"],
      format: [isShortString, "a date format (e.g. epoch_millis, yyyy-MM-dd)"],
    },
    p,
  );
  return ok ? intervalMs : undefined;
}

export function dateHistogramAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  const allowed = [
    "field",
    "calendar_interval",
    "fixed_interval",
    "time_zone",
    "offset",
    "format",
    "min_doc_count",
    "hard_bounds",
    "extended_bounds",
    "order",
    "keyed",
  ];
  if (!onlyKeys(ctx, spec, allowed, "date_histogram", p)) return undefined;
  if (!aggField(ctx, spec.field, "date", jsonPath(p, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const intervalMs = dateInterval(ctx, spec, body, p);
  if (intervalMs === undefined) return undefined;
  return histogramCommon(ctx, spec, body, true, p, intervalMs);
}

/** `range` (numeric field, numeric bounds) and `date_range` (date field, dates, epoch ms or date math). */
export function rangeAgg(
  ctx: Ctx,
  type: "range" | "date_range",
  spec: Record<string, unknown>,
  p: string,
  env: AggEnv,
): Checked | undefined {
  const date = type === "date_range";
  const allowed = date ? ["field", "ranges", "keyed", "format", "time_zone"] : ["field", "ranges", "keyed"];
  if (!onlyKeys(ctx, spec, allowed, type, p)) return undefined;
  if (!aggField(ctx, spec.field, date ? "date" : "numeric", jsonPath(p, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const rp = jsonPath(p, "ranges");
  const ranges = spec.ranges;
  if (!Array.isArray(ranges) || ranges.length === 0)
    return ctx.out.fail("CS_AGG_INVALID", `${type}.ranges is a non-empty array of {from?, to?, key?}`, rp);
  if (ranges.length > AGG_LIMITS.maxRanges)
    return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `${type} takes at most ${AGG_LIMITS.maxRanges} ranges`, rp);
  const bound = (v: unknown): boolean => isNum(v) || (date && typeof v === "string" && v.length > 0 && v.length <= 64);
  const what = date ? "a date (ISO 8601, epoch ms or date math such as now-1d)" : "a finite number";
  const out: Array<Record<string, unknown>> = [];
  for (const [i, r] of ranges.entries()) {
    const ip = jsonPath(rp, i);
    if (!isJsonObject(r) || !onlyKeys(ctx, r, ["from", "to", "key"], "range", ip)) {
      if (!isJsonObject(r)) ctx.out.fail("CS_AGG_INVALID", "a range is {from?, to?, key?}", ip);
      return undefined;
    }
    if (r.from === undefined && r.to === undefined) return ctx.out.fail("CS_AGG_INVALID", "a range needs from or to", ip);
    const checked: Record<string, unknown> = {};
    if (!copyOptional(ctx, r, checked, { from: [bound, what], to: [bound, what], key: [isShortString, "a string"] }, ip)) return undefined;
    out.push(checked);
  }
  body.ranges = out;
  const extra: OptionChecks = { keyed: [isBool, "a boolean"] };
  if (date) {
    extra.format = [isShortString, "a date format"];
    extra.time_zone = [isTimeZone, "an offset (+01:00) or a zone id"];
  }
  if (!copyOptional(ctx, spec, body, extra, p)) return undefined;
  return { body, buckets: out.length };
}

/** `missing`: one bucket of the documents without a value. */
export function missingAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["field"], "missing", p)) return undefined;
  if (!aggField(ctx, spec.field, "aggregatable", jsonPath(p, "field"), env.scope)) return undefined;
  return { body: { field: spec.field }, buckets: 1 };
}

/** `nested`: one bucket of the nested documents at `path` (a nested path of the kinds, below the current scope). */
export function nestedAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["path"], "nested", p)) return undefined;
  const pp = jsonPath(p, "path");
  const path = spec.path;
  const paths = [...ctx.catalog.nestedPaths].join(", ") || "none";
  if (typeof path !== "string" || !ctx.catalog.nestedPaths.has(path))
    return ctx.out.fail("CS_AGG_INVALID", `nested.path must name a nested path of ${ctx.catalog.kinds.join(",")} (${paths})`, pp);
  if (env.scope !== undefined && !path.startsWith(`${env.scope}.`))
    return ctx.out.fail("CS_AGG_INVALID", `nested path ${path} is not below the enclosing nested path ${env.scope}`, pp);
  return { body: { path }, buckets: 1 };
}

/** `reverse_nested`: back from a `nested` aggregation to the root documents (or to an enclosing nested `path`). */
export function reverseNestedAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["path"], "reverse_nested", p)) return undefined;
  if (env.scope === undefined) return ctx.out.fail("CS_AGG_INVALID", "reverse_nested is only allowed under a nested aggregation", p);
  if (spec.path === undefined) return { body: {}, buckets: 1 };
  const path = spec.path;
  if (typeof path !== "string" || !ctx.catalog.nestedPaths.has(path) || !env.scope.startsWith(`${path}.`))
    return ctx.out.fail("CS_AGG_INVALID", `reverse_nested.path must name a nested path enclosing ${env.scope}`, jsonPath(p, "path"));
  return { body: { path }, buckets: 1 };
}

/** `filter`: one bucket of the documents a query clause matches (validated as a query, in the nested scope). */
export function filterAgg(ctx: Ctx, spec: unknown, p: string, env: AggEnv): Checked | undefined {
  const clause = clauseInto(spec, ctx.catalog, ctx.out, p, env.scope);
  return clause ? { body: clause, buckets: 1 } : undefined;
}

/** `filters`: a bucket per clause (keyed `{name: clause}` or anonymous `[clause]`), plus `other_bucket`. */
export function filtersAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["filters", "other_bucket", "other_bucket_key"], "filters", p)) return undefined;
  const fp = jsonPath(p, "filters");
  const list = spec.filters;
  const entries: Array<[string | number, unknown]> = Array.isArray(list)
    ? list.map((c, i) => [i, c])
    : isJsonObject(list)
      ? Object.entries(list)
      : [];
  if (entries.length === 0)
    return ctx.out.fail("CS_AGG_INVALID", "filters.filters is a non-empty map {<name>: <clause>} or array of clauses", fp);
  if (entries.length > AGG_LIMITS.maxRanges)
    return ctx.out.fail("CS_AGG_TOO_MANY_BUCKETS", `filters takes at most ${AGG_LIMITS.maxRanges} filters`, fp);
  let ok = true;
  const keyed: Record<string, unknown> = {};
  const anonymous: unknown[] = [];
  for (const [k, c] of entries) {
    const clause = clauseInto(c, ctx.catalog, ctx.out, jsonPath(fp, k), env.scope);
    if (!clause) ok = false;
    else if (typeof k === "number") anonymous.push(clause);
    else keyed[k] = clause;
  }
  if (!ok) return undefined;
  const body: Record<string, unknown> = { filters: Array.isArray(list) ? anonymous : keyed };
  if (!copyOptional(ctx, spec, body, { other_bucket: [isBool, "a boolean"], other_bucket_key: [isShortString, "a string"] }, p))
    return undefined;
  const other = body.other_bucket === true || body.other_bucket_key !== undefined ? 1 : 0;
  return { body, buckets: entries.length + other };
}

const SOURCE_TYPES = ["terms", "histogram", "date_histogram"];

/** One `composite` source `{name: {terms|histogram|date_histogram: {…}}}`; returns its name and body. */
function compositeSource(ctx: Ctx, src: unknown, p: string, env: AggEnv): [string, Record<string, unknown>] | undefined {
  const entries = isJsonObject(src) ? Object.entries(src) : [];
  const entry = entries[0];
  if (entries.length !== 1 || !entry)
    return ctx.out.fail("CS_AGG_INVALID", 'a composite source is {<name>: {"terms"|"histogram"|"date_histogram": {…}}}', p);
  const [name, def] = entry;
  const np = jsonPath(p, name);
  const types = isJsonObject(def) ? Object.keys(def) : [];
  const type = types[0];
  if (types.length !== 1 || type === undefined || !SOURCE_TYPES.includes(type) || !isJsonObject(def))
    return ctx.out.fail("CS_AGG_INVALID", `a composite source has one type: ${SOURCE_TYPES.join(", ")}`, np);
  const tp = jsonPath(np, type);
  const spec = def[type];
  if (!isJsonObject(spec)) return ctx.out.fail("CS_AGG_INVALID", `${type} takes an object of options`, tp);
  const common = ["field", "order", "missing_bucket"];
  const allowed =
    type === "terms"
      ? common
      : type === "histogram"
        ? [...common, "interval"]
        : [...common, "calendar_interval", "fixed_interval", "time_zone", "offset", "format"];
  if (!onlyKeys(ctx, spec, allowed, `composite ${type} source`, tp)) return undefined;
  const need = type === "terms" ? "aggregatable" : type === "histogram" ? "numeric" : "date";
  if (!aggField(ctx, spec.field, need, jsonPath(tp, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  if (type === "histogram") {
    if (!isNum(spec.interval) || spec.interval <= 0)
      return ctx.out.fail("CS_AGG_INVALID", "interval must be a number > 0", jsonPath(tp, "interval"));
    body.interval = spec.interval;
  }
  if (type === "date_histogram" && dateInterval(ctx, spec, body, tp) === undefined) return undefined;
  const isDir = (v: unknown): boolean => v === "asc" || v === "desc";
  if (!copyOptional(ctx, spec, body, { order: [isDir, '"asc" or "desc"'], missing_bucket: [isBool, "a boolean"] }, tp)) return undefined;
  return [name, { [type]: body }];
}

/**
 * `composite`: pages of buckets over the combinations of its sources' values, `size` (at most
 * {@link AGG_LIMITS.maxCompositeSize}) per page, the next page after the `after` key (the previous
 * page's `after_key`). Only at the top level or under single-bucket aggregations, as in ES.
 */
export function compositeAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["sources", "size", "after"], "composite", p)) return undefined;
  if (env.parent !== undefined && !SINGLE_BUCKET_AGGS.has(env.parent))
    return ctx.out.fail("CS_AGG_INVALID", `composite cannot be under a multi-bucket aggregation (${env.parent})`, p);
  const sp = jsonPath(p, "sources");
  const sources = spec.sources;
  if (!Array.isArray(sources) || sources.length === 0 || sources.length > AGG_LIMITS.maxCompositeSources)
    return ctx.out.fail("CS_AGG_INVALID", `composite.sources is an array of 1..${AGG_LIMITS.maxCompositeSources} sources`, sp);
  const out: Array<Record<string, unknown>> = [];
  const names: string[] = [];
  for (const [i, src] of sources.entries()) {
    const checked = compositeSource(ctx, src, jsonPath(sp, i), env);
    if (!checked) return undefined;
    if (names.includes(checked[0]))
      return ctx.out.fail("CS_AGG_INVALID", `composite source names must be unique (${checked[0]})`, jsonPath(sp, i));
    names.push(checked[0]);
    out.push({ [checked[0]]: checked[1] });
  }
  const body: Record<string, unknown> = { sources: out };
  let size = 10;
  if (spec.size !== undefined) {
    if (!isInt(spec.size, 1)) return ctx.out.fail("CS_AGG_INVALID", "composite.size must be a positive integer", jsonPath(p, "size"));
    if (spec.size > AGG_LIMITS.maxCompositeSize)
      return ctx.out.fail("CS_AGG_SIZE_TOO_LARGE", `composite.size is at most ${AGG_LIMITS.maxCompositeSize}`, jsonPath(p, "size"));
    size = spec.size;
    body.size = size;
  }
  if (spec.after !== undefined) {
    const ap = jsonPath(p, "after");
    const after = spec.after;
    if (!isJsonObject(after) || Object.keys(after).length !== names.length || names.some((n) => !Object.hasOwn(after, n)))
      return ctx.out.fail("CS_AGG_INVALID", `composite.after is the previous page's after_key: {${names.join(", ")}}`, ap);
    for (const n of names) {
      const v = after[n];
      if (v !== null && !isScalar(v))
        return ctx.out.fail("CS_AGG_INVALID", "after values are strings, numbers, booleans or null", jsonPath(ap, n));
    }
    body.after = after;
  }
  return { body, buckets: size };
}
