/**
 * Partition pruning (pure): which block-range partitions (es/partitions.ts) can hold the matches of
 * a query, so that a search names those backing indices instead of the alias and Elasticsearch
 * searches only their shards (no can-match round over every partition).
 *
 * Exact semantics only. A query constrains the block number when, at its top level or through
 * `bool.filter` / `bool.must` clauses (nested `bool`s too), it has a `term`, `terms` or `range` on the
 * kind's block-number field ({@link BLOCK_FIELD}: `number.num` for blocks, `blockNumber.num` for the
 * others); every other clause (`should`, `must_not`, `nested`, `ids`, `match`, …) never narrows, and a
 * shape not understood (e.g. a range with a `format`) leaves the query unconstrained: the alias is
 * searched. Constraints of several required clauses intersect.
 * @module
 */
import type { RecordKind } from "../lib/records.js";

/** The block-number field of each kind's documents (es/mappings.ts: a `long`), the one the index stage routes by. */
export const BLOCK_FIELD: Record<RecordKind, string> = {
  block: "number.num",
  tx: "blockNumber.num",
  log: "blockNumber.num",
  event: "blockNumber.num",
  call: "blockNumber.num",
};

/** An inclusive interval of block numbers; `lo` may be -Infinity, `hi` +Infinity. */
export interface BlockInterval {
  /** Lowest block number, inclusive (-Infinity: unbounded below). */
  lo: number;
  /** Highest block number, inclusive (+Infinity: unbounded above). */
  hi: number;
}

/** Most values of a `terms` clause that are turned into intervals (more: unconstrained). */
const MAX_TERMS = 1024;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A number or a decimal string as Elasticsearch reads it for a `long` field, or undefined. */
function numeric(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(v)) return Number(v);
  return undefined;
}

/** An exact integer value of a term (a value that is not one constrains nothing: exact semantics only). */
function exactInteger(v: unknown): number | undefined {
  const n = numeric(v);
  return n !== undefined && Number.isSafeInteger(n) ? n : undefined;
}

/** Intersection of two unions of intervals. */
function intersect(a: readonly BlockInterval[], b: readonly BlockInterval[]): BlockInterval[] {
  const out: BlockInterval[] = [];
  for (const x of a)
    for (const y of b) {
      const lo = Math.max(x.lo, y.lo);
      const hi = Math.min(x.hi, y.hi);
      if (lo <= hi) out.push({ lo, hi });
    }
  return out;
}

const RANGE_KEYS = new Set(["gte", "gt", "lte", "lt", "boost"]);

/** The interval of a `range` clause's body, or undefined (not understood: unconstrained). */
function rangeInterval(body: unknown): BlockInterval | undefined {
  if (!isObject(body) || Object.keys(body).some((k) => !RANGE_KEYS.has(k))) return undefined;
  let lo = Number.NEGATIVE_INFINITY;
  let hi = Number.POSITIVE_INFINITY;
  for (const [key, raw] of Object.entries(body)) {
    if (key === "boost" || raw === null) continue; // a null bound is an open one
    const v = numeric(raw);
    if (v === undefined || Math.abs(v) > Number.MAX_SAFE_INTEGER) return undefined;
    // Integers exactly; a fractional bound widened to the integers around it (a superset is safe).
    if (key === "gte") lo = Math.max(lo, Math.floor(v));
    else if (key === "gt") lo = Math.max(lo, Number.isInteger(v) ? v + 1 : Math.floor(v));
    else if (key === "lte") hi = Math.min(hi, Math.ceil(v));
    else hi = Math.min(hi, Number.isInteger(v) ? v - 1 : Math.ceil(v));
  }
  return { lo, hi };
}

/** The single `{field: value}` entry of a clause body, when it is on `field`. */
function onField(body: unknown, field: string): { value: unknown } | undefined {
  if (!isObject(body)) return undefined;
  const keys = Object.keys(body);
  return keys.length === 1 && keys[0] === field ? { value: body[field] } : undefined;
}

/**
 * The block numbers a query can match on `field`, as a union of intervals (empty: it matches
 * nothing), or undefined when the query does not constrain them (every block).
 * @param query - a validated query (api/dsl), or undefined (match all).
 * @param field - the kind's block-number field ({@link BLOCK_FIELD}).
 */
export function blockIntervalsOf(query: unknown, field: string): BlockInterval[] | undefined {
  if (!isObject(query)) return undefined;
  const keys = Object.keys(query);
  if (keys.length !== 1) return undefined;
  const clause = keys[0] as string;
  const body = query[clause];
  if (clause === "term") {
    const on = onField(body, field);
    if (!on) return undefined;
    let v = on.value;
    if (isObject(v)) {
      if (Object.keys(v).some((k) => k !== "value" && k !== "boost")) return undefined;
      v = v.value;
    }
    const n = exactInteger(v);
    return n === undefined ? undefined : [{ lo: n, hi: n }];
  }
  if (clause === "terms") {
    if (!isObject(body)) return undefined;
    const entries = Object.entries(body).filter(([k]) => k !== "boost");
    if (entries.length !== 1 || entries[0]?.[0] !== field) return undefined;
    const values = entries[0][1];
    if (!Array.isArray(values) || values.length > MAX_TERMS) return undefined;
    const out: BlockInterval[] = [];
    for (const v of values) {
      const n = exactInteger(v);
      if (n === undefined) return undefined;
      out.push({ lo: n, hi: n });
    }
    return out;
  }
  if (clause === "range") {
    const on = onField(body, field);
    const interval = on ? rangeInterval(on.value) : undefined;
    return interval ? [interval] : undefined;
  }
  if (clause === "bool") {
    if (!isObject(body)) return undefined;
    let out: BlockInterval[] | undefined;
    for (const occur of ["filter", "must"]) {
      const clauses = body[occur];
      for (const c of Array.isArray(clauses) ? clauses : clauses === undefined ? [] : [clauses]) {
        const own = blockIntervalsOf(c, field);
        if (own) out = out ? intersect(out, own) : own;
      }
    }
    return out;
  }
  return undefined;
}

/** Where a kind's blocks are: blocks per partition, and the migrated index's range (es/partitions.ts). */
export interface PartitionLayout {
  /** Blocks per backing index (N ≥ 1): block b is in partition floor(b / N). */
  blocks: number;
  /** Highest block of the migrated index `-p000000` (it holds every block up to it), -1 when none was migrated. */
  legacyThrough: number;
}

/**
 * The partitions that can hold the blocks of some intervals, ascending, or undefined when they are
 * more than `max` or unbounded above (search the alias). A malformed height (negative) is routed to
 * partition 0 by the index stage, so an interval reaching below 0 includes it.
 * @param intervals - from {@link blockIntervalsOf} (empty: none).
 * @param layout - the alias's layout.
 * @param max - most partitions returned. Default 32.
 */
export function partitionsOfIntervals(intervals: readonly BlockInterval[], layout: PartitionLayout, max = 32): number[] | undefined {
  const { blocks, legacyThrough } = layout;
  const out = new Set<number>();
  for (const { lo, hi } of intervals) {
    if (hi < lo) continue;
    if (!Number.isFinite(hi)) return undefined;
    if (lo < 0 || lo <= legacyThrough) out.add(0);
    const from = Math.max(lo, legacyThrough + 1, 0);
    if (hi < from) continue;
    const first = Math.floor(from / blocks);
    const last = Math.floor(hi / blocks);
    if (last - first + 1 + out.size > max) return undefined;
    for (let p = first; p <= last; p++) out.add(p);
    if (out.size > max) return undefined;
  }
  return [...out].sort((a, b) => a - b);
}
