/**
 * Aggregations: an extension beyond the query contract. A pure, allowlist-based validator of the
 * body's `aggs` (or `aggregations`) map that returns the sanitized Elasticsearch aggregations or
 * every problem found, each with a stable code and the JSON path of the offending part.
 *
 * Allowed (ES aggregations, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-aggregations.html):
 * - bucket aggregations (./aggs-bucket.ts), which may hold sub-aggregations under `aggs`/`aggregations`:
 *   `terms`, `significant_terms`, `histogram`, `date_histogram`, `range`, `date_range`, `missing`,
 *   `composite`, `nested`, `reverse_nested`, `filter`, `filters`;
 * - metric aggregations (./aggs-metric.ts): `sum`, `avg`, `min`, `max`, `cardinality`, `value_count`,
 *   `stats`, `extended_stats`, `percentiles`, `percentile_ranks`, `top_hits`;
 * - parent pipeline aggregations (./aggs-pipeline.ts): `bucket_sort`, `cumulative_sum`, `derivative`.
 * Everything else (`scripted_metric`, `bucket_script`, `geo_*`, …) is refused with
 * `CS_AGG_UNSUPPORTED`; scripts, `include`/`exclude` patterns, `meta`, text fields and unknown
 * options with `CS_AGG_INVALID`.
 *
 * Fields are those of the kinds' catalogue (./fields.ts). Fields of a nested path (`args.*`) only
 * under a `nested` aggregation of that path; root fields there only after `reverse_nested`.
 *
 * Caps ({@link AGG_LIMITS}): the bucket count that can be computed before searching (terms sizes,
 * histograms with `hard_bounds`, ranges, filters, composite pages, multiplied through the nesting)
 * must stay within {@link AGG_LIMITS.maxBuckets} (`CS_AGG_TOO_MANY_BUCKETS`); histograms without
 * `hard_bounds` are capped after the search: {@link countBuckets} of the response must stay within
 * the same limit (api/search/search.ts). Nesting depth: `CS_AGG_TOO_DEEP`; `top_hits`/`composite`
 * sizes and percent counts: `CS_AGG_SIZE_TOO_LARGE`; a `buckets_path` not naming a sibling
 * aggregation: `CS_AGG_BUCKETS_PATH`.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject, type ValidationResult } from "../../lib/validation/problems.js";
import type { ApiErrorDetail } from "../errors.js";
import {
  compositeAgg,
  dateHistogramAgg,
  filterAgg,
  filtersAgg,
  histogramAgg,
  MULTI_BUCKET_AGGS,
  missingAgg,
  nestedAgg,
  rangeAgg,
  reverseNestedAgg,
  SINGLE_BUCKET_AGG_TYPES,
  termsAgg,
} from "./aggs-bucket.js";
import { AGG_LIMITS, type AggEnv, type Checked, type Ctx } from "./aggs-common.js";
import { metricAgg, SINGLE_VALUE_METRICS, topHitsAgg } from "./aggs-metric.js";
import { PIPELINE_AGGS, pipelineAgg } from "./aggs-pipeline.js";
import { Collector } from "./collector.js";
import { fieldCatalog } from "./fields.js";

export { AGG_LIMITS } from "./aggs-common.js";

/** Bucket aggregation types (may have sub-aggregations). */
export const BUCKET_AGGS = [...MULTI_BUCKET_AGGS, ...SINGLE_BUCKET_AGG_TYPES] as const;
/** Metric aggregation types (no sub-aggregations). */
export const METRIC_AGGS = [
  "sum",
  "avg",
  "min",
  "max",
  "cardinality",
  "value_count",
  "stats",
  "extended_stats",
  "percentiles",
  "percentile_ranks",
  "top_hits",
] as const;
export { PIPELINE_AGGS } from "./aggs-pipeline.js";
/** Every accepted aggregation type. */
export const ALLOWED_AGGS: readonly string[] = [...BUCKET_AGGS, ...METRIC_AGGS, ...PIPELINE_AGGS];

/** A sanitized ES aggregations map, `{name: {<type>: {…}, aggs?: {…}}}`. */
export type EsAggs = Record<string, Record<string, unknown>>;

/** Result of {@link validateAggs}: the sanitized aggregations, or every problem found. */
export type AggsResult = ValidationResult<EsAggs, ApiErrorDetail>;

/**
 * Aggregation names: 1-64 of A-Z, a-z, 0-9, `_`, `-` and `.` (eland names its aggregations
 * `<op>_<field>`, e.g. `sum_gasUsed.num`). Elasticsearch forbids `[`, `]` and `>` (buckets_path
 * syntax); `#` is refused here too, as it separates type and name under `typed_keys`.
 */
const AGG_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const BUCKET_SET: ReadonlySet<string> = new Set(BUCKET_AGGS);

/** The sub-aggregations key of an aggregation object (`aggs` or `aggregations`), or undefined. */
function subKey(node: Record<string, unknown>): "aggs" | "aggregations" | undefined {
  if ("aggs" in node) return "aggs";
  if ("aggregations" in node) return "aggregations";
  return undefined;
}

/** Where the children of an aggregation of `type` with body `spec` sit: its nested scope. */
function childScope(type: string, spec: Record<string, unknown>, scope: string | undefined): string | undefined {
  if (type === "nested") return typeof spec.path === "string" ? spec.path : scope;
  if (type === "reverse_nested") return typeof spec.path === "string" ? spec.path : undefined;
  return scope;
}

/**
 * Validates one level of aggregations. Returns the sanitized map and the buckets it returns if
 * known (sum over siblings of buckets × (1 + buckets of the children)); undefined when refused.
 */
function level(
  ctx: Ctx,
  aggs: unknown,
  p: string,
  depth: number,
  env: Omit<AggEnv, "siblings">,
): { value: EsAggs; buckets: number } | undefined {
  if (!isJsonObject(aggs)) return ctx.out.fail("CS_AGG_INVALID", "aggregations must be a map {<name>: {<type>: {…}}}", p);
  const names = Object.keys(aggs);
  if (names.length === 0) return { value: {}, buckets: 0 }; // as in ES: no aggregations
  if (depth > AGG_LIMITS.maxDepth)
    return ctx.out.fail("CS_AGG_TOO_DEEP", `aggregations nest at most ${AGG_LIMITS.maxDepth} levels deep`, p);
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
      ctx.out.fail("CS_AGG_INVALID", "aggregation names are 1-64 characters of A-Z, a-z, 0-9, _, - and .", np);
      ok = false;
      continue;
    }
    const checked = one(ctx, aggs[name], np, depth, { ...env, siblings: aggs });
    if (!checked) {
      ok = false;
      continue;
    }
    value[name] = checked.node;
    buckets += checked.buckets;
  }
  return ok ? { value, buckets } : undefined;
}

/** The checker of one aggregation type. */
function checkType(
  ctx: Ctx,
  type: string,
  spec: Record<string, unknown>,
  metricNames: ReadonlySet<string>,
  tp: string,
  env: AggEnv,
): Checked | undefined {
  switch (type) {
    case "terms":
    case "significant_terms":
      return termsAgg(ctx, type, spec, metricNames, tp, env);
    case "histogram":
      return histogramAgg(ctx, spec, tp, env);
    case "date_histogram":
      return dateHistogramAgg(ctx, spec, tp, env);
    case "range":
    case "date_range":
      return rangeAgg(ctx, type, spec, tp, env);
    case "missing":
      return missingAgg(ctx, spec, tp, env);
    case "composite":
      return compositeAgg(ctx, spec, tp, env);
    case "nested":
      return nestedAgg(ctx, spec, tp, env);
    case "reverse_nested":
      return reverseNestedAgg(ctx, spec, tp, env);
    case "filter":
      return filterAgg(ctx, spec, tp, env);
    case "filters":
      return filtersAgg(ctx, spec, tp, env);
    case "top_hits":
      return topHitsAgg(ctx, spec, tp, env);
    case "bucket_sort":
    case "cumulative_sum":
    case "derivative":
      return pipelineAgg(ctx, type, spec, tp, env);
    default:
      return metricAgg(ctx, type, spec, tp, env);
  }
}

/** Validates one aggregation object `{<type>: {…}, aggs?: {…}}`. */
function one(
  ctx: Ctx,
  node: unknown,
  p: string,
  depth: number,
  env: AggEnv,
): { node: Record<string, unknown>; buckets: number } | undefined {
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
  const isBucket = BUCKET_SET.has(type);
  if (sub && !isBucket)
    return ctx.out.fail("CS_AGG_INVALID", `${type} is not a bucket aggregation and cannot have sub-aggregations`, jsonPath(p, sub));
  // Sub-aggregations first: a terms order may name one of their metric aggregations.
  let children: { value: EsAggs; buckets: number } | undefined;
  if (sub) {
    children = level(ctx, node[sub], jsonPath(p, sub), depth + 1, { scope: childScope(type, spec, env.scope), parent: type });
    if (!children) return undefined;
  }
  const metricNames = new Set(
    Object.entries(children?.value ?? {})
      .filter(([, v]) => Object.keys(v).some((k) => SINGLE_VALUE_METRICS.has(k)))
      .map(([k]) => k),
  );
  const checked = checkType(ctx, type, spec, metricNames, tp, env);
  if (!checked) return undefined;
  const ordered = Object.values(children?.value ?? {}).find((c) => "cumulative_sum" in c || "derivative" in c);
  if (ordered && checked.body.min_doc_count !== 0)
    return ctx.out.fail(
      "CS_AGG_INVALID",
      `${Object.keys(ordered)[0]} needs its ${type} to have min_doc_count 0 (with hard_bounds or extended_bounds)`,
      jsonPath(tp, "min_doc_count"),
    );
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
 *   found (`CS_AGG_UNSUPPORTED`, `CS_AGG_INVALID`, `CS_AGG_TOO_MANY_BUCKETS`, `CS_AGG_TOO_DEEP`,
 *   `CS_AGG_SIZE_TOO_LARGE`, `CS_AGG_BUCKETS_PATH`, and the `CS_QUERY_*` codes of `filter`/`filters` clauses).
 */
export function validateAggs(aggs: unknown, kinds: readonly RecordKind[], p = "aggs"): AggsResult {
  const ctx: Ctx = { catalog: fieldCatalog(kinds), out: new Collector(), count: 0 };
  const result = level(ctx, aggs, p, 1, { scope: undefined, parent: undefined });
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
