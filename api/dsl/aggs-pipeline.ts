/**
 * The parent pipeline aggregations of the allowlist (./aggs.ts): `bucket_sort`, `cumulative_sum`,
 * `derivative` (ES pipeline aggregations,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations-pipeline.html),
 * and the check of their `buckets_path` against the sibling aggregations. Pure.
 *
 * A `buckets_path` (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations-pipeline.html#buckets-path-syntax)
 * is `_count`, or `[<single-bucket agg>>]*<metric>[.<value>|[<value>]]` naming aggregations of the
 * same `aggs` map as the pipeline: single-bucket aggregations (`nested`, `reverse_nested`, `filter`,
 * `missing`) lead down with `>` (ending there with `>_count` is their document count), then a
 * single-value metric (or another `cumulative_sum`/`derivative`), or a multi-value one with its
 * value (`stats.avg`, `percentiles[99]`). Anything else is `CS_AGG_BUCKETS_PATH`.
 * @module
 */
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import { MULTI_BUCKET_AGGS, SINGLE_BUCKET_AGGS } from "./aggs-bucket.js";
import {
  type AggEnv,
  type Checked,
  type Ctx,
  copyOptional,
  isInt,
  isShortString,
  type OptionChecks,
  onlyKeys,
  sortItems,
} from "./aggs-common.js";
import { MULTI_VALUE_KEYS, SINGLE_VALUE_METRICS } from "./aggs-metric.js";

/** The pipeline aggregation types. */
export const PIPELINE_AGGS = ["bucket_sort", "cumulative_sum", "derivative"] as const;

/** Bucket aggregations whose buckets are ordered intervals (parents of `cumulative_sum` and `derivative`). */
const HISTOGRAMS: ReadonlySet<string> = new Set(["histogram", "date_histogram"]);
/** Bucket aggregations with many buckets (parents of `bucket_sort`). */
const MULTI_BUCKET: ReadonlySet<string> = new Set(MULTI_BUCKET_AGGS);
const GAP_POLICIES = ["skip", "insert_zeros", "keep_values"];
const isGapPolicy = (v: unknown): boolean => typeof v === "string" && GAP_POLICIES.includes(v);

/** The type key and sub-aggregations of a raw aggregation object (not yet validated), or undefined. */
function rawAgg(node: unknown): { type: string; subs: Record<string, unknown> } | undefined {
  if (!isJsonObject(node)) return undefined;
  const type = Object.keys(node).find((k) => k !== "aggs" && k !== "aggregations");
  if (type === undefined) return undefined;
  const subs = node.aggs ?? node.aggregations;
  return { type, subs: isJsonObject(subs) ? subs : {} };
}

/** Why `path` does not name a value among `siblings`, or undefined when it does. */
function pathProblem(path: string, siblings: Record<string, unknown>): string | undefined {
  if (path === "_count") return undefined;
  const steps = path.split(">");
  let level = siblings;
  for (const [i, step] of steps.entries()) {
    const last = i === steps.length - 1;
    if (last && step === "_count" && i > 0) return undefined;
    const m = /^([A-Za-z0-9_-]+)(?:\.([A-Za-z0-9_.]+)|\[([A-Za-z0-9_.]+)\])?$/.exec(step);
    const name = m?.[1];
    const key = m?.[2] ?? m?.[3];
    const agg = name !== undefined && Object.hasOwn(level, name) ? rawAgg(level[name]) : undefined;
    if (!agg) return `${JSON.stringify(step)} is not a sibling aggregation (${Object.keys(level).join(", ") || "none"})`;
    if (!last) {
      if (!SINGLE_BUCKET_AGGS.has(agg.type) || key !== undefined)
        return `${name} is a ${agg.type}; only single-bucket aggregations (nested, reverse_nested, filter, missing) lead on with >`;
      level = agg.subs;
      continue;
    }
    if (SINGLE_VALUE_METRICS.has(agg.type) || agg.type === "cumulative_sum" || agg.type === "derivative")
      return key === undefined || key === "value" ? undefined : `${name} (${agg.type}) has one value; drop .${key}`;
    const keys = MULTI_VALUE_KEYS[agg.type];
    if (keys) return key !== undefined && keys.includes(key) ? undefined : `name a value of ${name} (${agg.type}): ${keys.join(", ")}`;
    if (agg.type === "percentiles")
      return key !== undefined && Number.isFinite(Number(key)) ? undefined : `name a percent of ${name}, e.g. ${name}[99.0]`;
    return `${name} is a ${agg.type}; a buckets_path ends at a metric (or with >_count after a single-bucket aggregation)`;
  }
  return "empty buckets_path";
}

/** Checks a `buckets_path` string against the siblings; reports `CS_AGG_BUCKETS_PATH`. */
function bucketsPath(ctx: Ctx, value: unknown, p: string, env: AggEnv): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > 256)
    return ctx.out.fail("CS_AGG_BUCKETS_PATH", "buckets_path must be a string naming a sibling aggregation", p);
  const why = pathProblem(value, env.siblings);
  if (why) return ctx.out.fail("CS_AGG_BUCKETS_PATH", `buckets_path ${JSON.stringify(value)}: ${why}`, p);
  return value;
}

/** `bucket_sort.sort`: `_key`, `_count` or buckets paths ({@link sortItems}). */
function bucketSortSort(ctx: Ctx, sort: unknown, p: string, env: AggEnv): unknown[] | undefined {
  const items = sortItems(ctx, sort, p);
  if (!items) return undefined;
  for (const it of items) if (it.key !== "_key" && bucketsPath(ctx, it.key, it.path, env) === undefined) return undefined;
  return items.map((it) => ({ [it.key]: { order: it.dir } }));
}

/**
 * A pipeline aggregation under its parent: `cumulative_sum` and `derivative` under `histogram` or
 * `date_histogram`, `bucket_sort` under any multi-bucket aggregation; never at the top level.
 */
export function pipelineAgg(ctx: Ctx, type: string, spec: Record<string, unknown>, p: string, env: AggEnv): Checked | undefined {
  const parents = type === "bucket_sort" ? MULTI_BUCKET : HISTOGRAMS;
  if (env.parent === undefined || !parents.has(env.parent))
    return ctx.out.fail("CS_AGG_INVALID", `${type} goes in the aggs of a ${[...parents].join(", ")} aggregation`, p);
  const body: Record<string, unknown> = {};
  if (type === "bucket_sort") {
    if (!onlyKeys(ctx, spec, ["sort", "from", "size", "gap_policy"], type, p)) return undefined;
    if (spec.sort !== undefined) {
      const sort = bucketSortSort(ctx, spec.sort, jsonPath(p, "sort"), env);
      if (!sort) return undefined;
      body.sort = sort;
    }
    const isFrom = (v: unknown): boolean => isInt(v, 0, 1_000_000);
    const isSize = (v: unknown): boolean => isInt(v, 1, 1_000_000);
    const checks: OptionChecks = {
      from: [isFrom, "an integer >= 0"],
      size: [isSize, "an integer >= 1"],
      gap_policy: [isGapPolicy, GAP_POLICIES.join(", ")],
    };
    if (!copyOptional(ctx, spec, body, checks, p)) return undefined;
    return { body, buckets: 0 };
  }
  const allowed = type === "derivative" ? ["buckets_path", "gap_policy", "format", "unit"] : ["buckets_path", "format"];
  if (!onlyKeys(ctx, spec, allowed, type, p)) return undefined;
  const path = bucketsPath(ctx, spec.buckets_path, jsonPath(p, "buckets_path"), env);
  if (path === undefined) return undefined;
  body.buckets_path = path;
  const checks: OptionChecks = {
    gap_policy: [isGapPolicy, GAP_POLICIES.join(", ")],
    format: [isShortString, "a number format string"],
    unit: [isShortString, "an interval such as 1d or 1h"],
  };
  if (!copyOptional(ctx, spec, body, checks, p)) return undefined;
  return { body, buckets: 0 };
}
