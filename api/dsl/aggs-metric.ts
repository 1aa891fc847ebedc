/**
 * The metric aggregations of the allowlist (./aggs.ts): `sum`, `avg`, `min`, `max`, `cardinality`,
 * `value_count`, `stats`, `extended_stats`, `percentiles`, `percentile_ranks`, `top_hits` (ES metrics
 * aggregations, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations-metrics.html).
 * Metrics have no sub-aggregations and no buckets. Pure.
 * @module
 */
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import {
  AGG_LIMITS,
  type AggEnv,
  aggField,
  type Checked,
  type Ctx,
  copyOptional,
  type FieldNeed,
  isBool,
  isInt,
  isNum,
  onlyKeys,
  sortItems,
} from "./aggs-common.js";

/** Metrics answering one value (`{value}`): a terms `order` or a `buckets_path` may name them without a `.key`. */
export const SINGLE_VALUE_METRICS: ReadonlySet<string> = new Set(["sum", "avg", "min", "max", "cardinality", "value_count"]);

/** The values of the multi-value metrics a `buckets_path` may name as `<agg>.<value>` (percentiles: any percent). */
export const MULTI_VALUE_KEYS: Readonly<Record<string, readonly string[]>> = {
  stats: ["count", "min", "max", "avg", "sum"],
  extended_stats: [
    "count",
    "min",
    "max",
    "avg",
    "sum",
    "sum_of_squares",
    "variance",
    "variance_population",
    "variance_sampling",
    "std_deviation",
    "std_deviation_population",
    "std_deviation_sampling",
    "std_upper",
    "std_lower",
  ],
};

const NEED: Readonly<Record<string, FieldNeed>> = {
  sum: "numeric",
  avg: "numeric",
  min: "numericOrDate",
  max: "numericOrDate",
  cardinality: "aggregatable",
  value_count: "aggregatable",
  stats: "numericOrDate",
  extended_stats: "numeric",
  percentiles: "numericOrDate",
  percentile_ranks: "numeric",
};

/** Numbers `0..100` (percents) or any finite numbers (`percentile_ranks` values), 1..{@link AGG_LIMITS.maxPercents} of them. */
function numberList(ctx: Ctx, value: unknown, percents: boolean, p: string): number[] | undefined {
  const what = percents ? "percents between 0 and 100" : "finite numbers";
  if (!Array.isArray(value) || value.length === 0) return ctx.out.fail("CS_AGG_INVALID", `takes a non-empty array of ${what}`, p);
  if (value.length > AGG_LIMITS.maxPercents)
    return ctx.out.fail("CS_AGG_SIZE_TOO_LARGE", `takes at most ${AGG_LIMITS.maxPercents} values, got ${value.length}`, p);
  const bad = value.findIndex((v) => !isNum(v) || (percents && (v < 0 || v > 100)));
  if (bad >= 0) return ctx.out.fail("CS_AGG_INVALID", `values must be ${what}`, jsonPath(p, bad));
  return value as number[];
}

/** A field metric (every type of this module but `top_hits`). */
export function metricAgg(ctx: Ctx, type: string, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  const extra: Readonly<Record<string, string[]>> = {
    cardinality: ["precision_threshold"],
    extended_stats: ["sigma"],
    percentiles: ["percents", "keyed"],
    percentile_ranks: ["values", "keyed"],
  };
  if (!onlyKeys(ctx, spec, ["field", ...(extra[type] ?? [])], type, p)) return undefined;
  if (!aggField(ctx, spec.field, NEED[type] ?? "numeric", jsonPath(p, "field"), env.scope)) return undefined;
  const body: Record<string, unknown> = { field: spec.field };
  const isThreshold = (v: unknown): boolean => isInt(v, 0, AGG_LIMITS.maxPrecisionThreshold);
  const isSigma = (v: unknown): boolean => isNum(v) && v >= 0 && v <= 10;
  const ok = copyOptional(
    ctx,
    spec,
    body,
    {
      precision_threshold: [isThreshold, `an integer 0..${AGG_LIMITS.maxPrecisionThreshold}`],
      sigma: [isSigma, "a number 0..10"],
      keyed: [isBool, "a boolean"],
    },
    p,
  );
  if (!ok) return undefined;
  if (type === "percentiles" && spec.percents !== undefined) {
    const list = numberList(ctx, spec.percents, true, jsonPath(p, "percents"));
    if (!list) return undefined;
    body.percents = list;
  }
  if (type === "percentile_ranks") {
    const list = numberList(ctx, spec.values, false, jsonPath(p, "values"));
    if (!list) return undefined;
    body.values = list;
  }
  return { body, buckets: 0 };
}

/** `top_hits.sort`: `_score` or aggregatable fields of the scope ({@link sortItems}). */
function topHitsSort(ctx: Ctx, sort: unknown, p: string, env: AggEnv): Array<Record<string, { order: string }>> | undefined {
  const items = sortItems(ctx, sort, p);
  if (!items) return undefined;
  for (const it of items) if (it.key !== "_score" && !aggField(ctx, it.key, "aggregatable", it.path, env.scope)) return undefined;
  return items.map((it) => ({ [it.key]: { order: it.dir } }));
}

/** `top_hits._source`: false, an array of `_source` paths of the kinds, or `{includes: [...]}`; returns the ES value. */
function topHitsSource(ctx: Ctx, value: unknown, p: string): unknown {
  if (value === false) return false;
  const list = isJsonObject(value) && Object.keys(value).length === 1 ? value.includes : value;
  const lp = isJsonObject(value) ? jsonPath(p, "includes") : p;
  if (!Array.isArray(list) || list.length === 0)
    return ctx.out.fail("CS_AGG_INVALID", "_source is false, an array of field paths, or {includes: [paths]}", p);
  for (const [i, path] of list.entries()) {
    if (typeof path !== "string" || !ctx.catalog.sourcePaths.has(path))
      return ctx.out.fail(
        "CS_AGG_INVALID",
        `unknown _source field ${JSON.stringify(path)} for ${ctx.catalog.kinds.join(",")} (no wildcards)`,
        jsonPath(lp, i),
      );
  }
  return { includes: [...list] };
}

/** `top_hits`: the first `size` (at most {@link AGG_LIMITS.maxTopHitsSize}) documents of each bucket, sorted and filtered. */
export function topHitsAgg(ctx: Ctx, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  if (!onlyKeys(ctx, spec, ["size", "sort", "_source"], "top_hits", p)) return undefined;
  const body: Record<string, unknown> = {};
  if (spec.size !== undefined) {
    if (!isInt(spec.size, 0)) return ctx.out.fail("CS_AGG_INVALID", "top_hits.size must be an integer >= 0", jsonPath(p, "size"));
    if (spec.size > AGG_LIMITS.maxTopHitsSize)
      return ctx.out.fail("CS_AGG_SIZE_TOO_LARGE", `top_hits.size is at most ${AGG_LIMITS.maxTopHitsSize}`, jsonPath(p, "size"));
    body.size = spec.size;
  }
  if (spec.sort !== undefined) {
    const sort = topHitsSort(ctx, spec.sort, jsonPath(p, "sort"), env);
    if (!sort) return undefined;
    body.sort = sort;
  }
  if (spec._source !== undefined) {
    const source = topHitsSource(ctx, spec._source, jsonPath(p, "_source"));
    if (source === undefined) return undefined;
    body._source = source;
  }
  return { body, buckets: 0 };
}
