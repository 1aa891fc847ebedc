/**
 * The rule index: which enabled rules of the served chain can possibly match an entity, without
 * looking at every rule.
 *
 * Each rule is filed under one target type and, when it has one, under one equality condition of
 * its targetMap (a "bucket"); the other rules of the type are "unbucketed" and are candidates for
 * every entity. Bucketable conditions are top-level `Equals`, `Equals (ignore case)`, `Equals any`
 * and `Equals any (ignore case)` (without `useScaledValue`) on these attributes:
 *
 * | target type | attributes |
 * |---|---|
 * | Event | `address`, `event`, and `args` (see below) |
 * | Log | `address`, `topic0`…`topic3` |
 * | Transaction | `to`, `from`, `methodId`, `hash` |
 * | Method | `to`, `address`, `from`, `methodId`, `name`, `args` |
 * | Call | `to`, `from`, `methodId`, `name`, `args` |
 * | Trace | `to`, `from`, `methodId`, `type` |
 * | Contract | `address`, `creator`, `transactionFrom` |
 * | Token | `address`, `symbol`, `name`, `standard` |
 *
 * `args`: a top-level `Inspect` of `args` whose nested definitions include an equality on `value`
 * (without `useScaledValue`), optionally with an equality on `name`, is bucketed by (argument name, value),
 * e.g. "Transfer to my wallet" rules are found by the wallet address.
 *
 * When a rule has several bucketable conditions, it goes to the one with the lowest expected cost:
 * the number of rules already in its buckets, times 64 for attributes with few distinct values
 * (`event`, `name`, `methodId`, `topic0`, `type`, `symbol`, `standard`, which most entities hit);
 * ties go by the order of the table. This keeps buckets small even when many rules share a popular
 * contract or event name. Bucket keys use the equality semantics of `evaluate.ts` (numeric values
 * by number, so hex case and leading zeros do not matter; strings lower-cased), so a bucket never
 * misses a rule that would match. Candidates are evaluated in full, except for the bucketing
 * condition itself when a key hit already proves it (ignore-case operators, numeric values).
 *
 * Cost of one lookup: a few map lookups per indexed attribute of the entity plus one per argument,
 * plus the rules of the hit buckets and the unbucketed rules of the type; independent of the number
 * of rules filed under other buckets.
 * @module
 */
import type { ChainId } from "../config/index.js";
import type { Rule, TargetDefinition, TargetType } from "../rules/model.js";
import { type AnyDefinition, compileDefinitions, type EntityPredicate, type WatchlistLookup, watchlistIds } from "./evaluate.js";
import { targetTable } from "./targets.js";
import { attributeKeys, numericKey, stringKey, valueKey } from "./values.js";

/**
 * Attributes usable as buckets, per target type, in tie-break order. `args` is the composite argument
 * bucket. Derived from `lib/match/targets.ts` (`TargetDescriptor.indexedAttributes`).
 */
export const INDEXED_ATTRIBUTES: Readonly<Record<TargetType, readonly string[]>> = targetTable((t) => t.indexedAttributes);

const EQUALITY = new Set(["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"]);
const SEP = "\u0000";

/** Options of {@link createRuleIndex}. */
export interface RuleIndexOptions {
  /**
   * The chain served: only rules whose technology, blockchain and network equal it (compared
   * case-insensitively, trimmed) are indexed. Default: no chain filter.
   */
  chain?: ChainId;
  /** What `In watchlist` definitions consult (evaluate.ts); without it they never hold. */
  watchlists?: WatchlistLookup;
}

/** Counts describing an index, for logs and benchmarks. */
export interface RuleIndexStats {
  /** Rules held (enabled, on the served chain). */
  rules: number;
  /** Of those, rules filed under a bucket. */
  bucketed: number;
  /** Of those, rules evaluated for every entity of their type. */
  unbucketed: number;
  /** Number of distinct buckets. */
  buckets: number;
  /** Size of the largest bucket. */
  largestBucket: number;
}

/** An index of rules; not thread-safe across async interleavings only in the sense that it is synchronous. */
export interface RuleIndex {
  /**
   * Adds or replaces a rule (by `id`). A rule that is not `enabled` or is for another chain is
   * removed instead. Last write wins.
   * @throws {import("./evaluate.js").RuleCompileError} when the targetMap cannot be compiled; the index is then unchanged.
   */
  upsert(rule: Rule): void;
  /** Removes a rule; returns whether it was held. */
  remove(id: string): boolean;
  /** The held rule with this id. */
  get(id: string): Rule | undefined;
  /**
   * Rules of `targetType` that may match `entity`: every held rule of the type that matches is in
   * the result (no false negatives); some returned rules may not match. No duplicates; no order.
   */
  candidates(targetType: TargetType, entity: object): Rule[];
  /** The held rules of `targetType` whose targetMap `entity` satisfies (candidates, then evaluated). */
  match(targetType: TargetType, entity: object): Rule[];
  /** Counts (see {@link RuleIndexStats}). */
  stats(): RuleIndexStats;
  /** Number of held rules with an `In watchlist` definition (their matching needs a membership prefetch); O(1). */
  watchlistRules(): number;
}

/**
 * Relative hit rate of one bucket key per attribute, used to pick a rule's bucket: attributes with
 * few distinct values (event names, selectors, frame types) are hit by many entities, so a rule
 * goes there only when the selective alternative is much more crowded.
 */
const LOW_CARDINALITY = new Set(["event", "name", "methodId", "topic0", "type", "symbol", "standard"]);
const LOW_CARDINALITY_WEIGHT = 64;

interface Entry {
  rule: Rule;
  pred: EntityPredicate;
  type: TargetType;
  /** Where the entry is filed (null: unbucketed). */
  placement: Placement | null;
  /** Last lookup that returned this entry (deduplication without a Set per lookup). */
  stamp: number;
  /** Whether the targetMap has an `In watchlist` definition. */
  listed: boolean;
}

/** A bucket choice: a plain attribute and its keys, or `args` and its (name key or null, value key) pairs. */
type Placement =
  | {
      field: string;
      keys: string[];
      /**
       * Index in the targetMap of the definition the keys come from, when a key hit implies that the
       * definition holds (ignore-case operator, or only numeric values): it is then not evaluated again.
       */
      implied: number | null;
    }
  | { field: "args"; pairs: [string | null, string][] };

type Buckets = Map<string, Set<Entry>>;

interface TypeIndex {
  /** Plain attribute → key → entries. */
  fields: Map<string, Buckets>;
  /** The entries of `fields` as an array, for allocation-free iteration in lookups. */
  fieldList: { field: string; map: Buckets }[];
  /** `args` buckets without a name condition: value key → entries. */
  argsAny: Buckets;
  /** `args` buckets with a name condition: name key → value key → entries. */
  argsByName: Map<string, Buckets>;
  unbucketed: Set<Entry>;
}

function definitionValues(def: AnyDefinition): string[] | null {
  const v = def.value;
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string")) return v;
  return null;
}

function isEquality(def: AnyDefinition): boolean {
  return EQUALITY.has(def.operator) && def.useScaledValue !== true;
}

function argsPlacement(def: TargetDefinition): Placement | null {
  const nested = def.operatorParameters;
  if (!Array.isArray(nested)) return null;
  let names: string[] | null = null;
  let values: string[] | null = null;
  for (const d of nested as AnyDefinition[]) {
    if (!isEquality(d)) continue;
    const vs = definitionValues(d);
    if (!vs) continue;
    if (d.name === "name" && names === null) names = vs;
    else if (d.name === "value" && values === null) values = vs;
  }
  if (values === null) return null;
  const seen = new Set<string>();
  const pairs: [string | null, string][] = [];
  for (const v of values) {
    const vk = valueKey(v);
    for (const n of names ?? [null]) {
      const nk = n === null ? null : valueKey(n);
      const id = `${nk}${SEP}${vk}`;
      if (seen.has(id)) continue;
      seen.add(id);
      pairs.push([nk, vk]);
    }
  }
  return { field: "args", pairs };
}

function placementsOf(type: TargetType, targetMap: readonly TargetDefinition[]): Placement[] {
  const fields = INDEXED_ATTRIBUTES[type];
  const out: Placement[] = [];
  targetMap.forEach((def, i) => {
    if (!fields.includes(def.name)) return;
    if (def.name === "args") {
      const p = def.operator === "Inspect" ? argsPlacement(def) : null;
      if (p) out.push(p);
      return;
    }
    if (!isEquality(def)) return;
    const vs = definitionValues(def);
    if (!vs) return;
    // A key hit is the definition itself when string comparison ignores case, or when every value
    // is numeric (numeric keys are exactly numeric equality); a case-sensitive string needs evaluation.
    const implied = def.operator.endsWith("(ignore case)") || vs.every((v) => numericKey(v) !== null);
    out.push({ field: def.name, keys: [...new Set(vs.map(valueKey))], implied: implied ? i : null });
  });
  // Stable tie-break by table order.
  return out.sort((a, b) => fields.indexOf(a.field) - fields.indexOf(b.field));
}

function addTo(m: Buckets, key: string, e: Entry): void {
  let set = m.get(key);
  if (!set) {
    set = new Set();
    m.set(key, set);
  }
  set.add(e);
}

/**
 * The buckets of an argument placement pair's name `nk`: `argsAny` for a pair on any argument
 * name (`null`), else the buckets of that name, created when `create` (absent otherwise).
 */
function argBuckets(ti: TypeIndex, nk: string | null, create: true): Buckets;
function argBuckets(ti: TypeIndex, nk: string | null, create: false): Buckets | undefined;
function argBuckets(ti: TypeIndex, nk: string | null, create: boolean): Buckets | undefined {
  if (nk === null) return ti.argsAny;
  let m = ti.argsByName.get(nk);
  if (!m && create) {
    m = new Map();
    ti.argsByName.set(nk, m);
  }
  return m;
}

function removeFrom(m: Buckets | undefined, key: string, e: Entry): void {
  const set = m?.get(key);
  if (!set) return;
  set.delete(e);
  if (set.size === 0) m?.delete(key);
}

/** Appends the entries of a bucket not yet returned by lookup `stamp`. */
function take(set: Set<Entry> | undefined, stamp: number, out: Entry[]): void {
  if (set === undefined) return;
  for (const e of set) {
    if (e.stamp === stamp) continue;
    e.stamp = stamp;
    out.push(e);
  }
}

function norm(s: unknown): string {
  return typeof s === "string" ? s.trim().toLowerCase() : "";
}

/**
 * Creates an empty {@link RuleIndex}.
 * @param options optional chain filter.
 */
export function createRuleIndex(options: RuleIndexOptions = {}): RuleIndex {
  const chain = options.chain;
  const byId = new Map<string, Entry>();
  const byType = new Map<TargetType, TypeIndex>();
  let lookup = 0;
  let listedRules = 0;
  const compile = (rule: Rule, defs: readonly AnyDefinition[]) =>
    compileDefinitions(defs, options.watchlists && { accountId: rule.accountId, watchlists: options.watchlists });

  const typeIndex = (t: TargetType): TypeIndex => {
    let ti = byType.get(t);
    if (!ti) {
      ti = { fields: new Map(), fieldList: [], argsAny: new Map(), argsByName: new Map(), unbucketed: new Set() };
      byType.set(t, ti);
    }
    return ti;
  };

  const onChain = (r: Rule): boolean =>
    !chain ||
    (norm(r.technology) === norm(chain.technology) &&
      norm(r.blockchain) === norm(chain.blockchain) &&
      norm(r.network) === norm(chain.network));

  /** Expected number of candidate evaluations a placement adds (see {@link LOW_CARDINALITY}). */
  const cost = (ti: TypeIndex, p: Placement): number => {
    let c = 0;
    if ("pairs" in p) {
      for (const [nk, vk] of p.pairs) c += 1 + (argBuckets(ti, nk, false)?.get(vk)?.size ?? 0);
      return c;
    }
    const m = ti.fields.get(p.field);
    for (const k of p.keys) c += 1 + (m?.get(k)?.size ?? 0);
    return LOW_CARDINALITY.has(p.field) ? c * LOW_CARDINALITY_WEIGHT : c;
  };

  const attach = (ti: TypeIndex, e: Entry, p: Placement): void => {
    if ("pairs" in p) {
      for (const [nk, vk] of p.pairs) addTo(argBuckets(ti, nk, true), vk, e);
      return;
    }
    let m = ti.fields.get(p.field);
    if (!m) {
      m = new Map();
      ti.fields.set(p.field, m);
      ti.fieldList.push({ field: p.field, map: m });
    }
    for (const k of p.keys) addTo(m, k, e);
  };

  const detach = (e: Entry): void => {
    const ti = typeIndex(e.type);
    const p = e.placement;
    if (p === null) {
      ti.unbucketed.delete(e);
      return;
    }
    if ("pairs" in p) {
      for (const [nk, vk] of p.pairs) {
        const m = argBuckets(ti, nk, false);
        removeFrom(m, vk, e);
        if (nk !== null && m && m.size === 0) ti.argsByName.delete(nk);
      }
      return;
    }
    const m = ti.fields.get(p.field);
    for (const k of p.keys) removeFrom(m, k, e);
    if (m && m.size === 0) {
      ti.fields.delete(p.field);
      ti.fieldList = ti.fieldList.filter((f) => f.field !== p.field);
    }
  };

  const remove = (id: string): boolean => {
    const e = byId.get(id);
    if (!e) return false;
    detach(e);
    byId.delete(id);
    if (e.listed) listedRules--;
    return true;
  };

  /** Appends every candidate entry to `out` once: entries of the buckets hit by the entity's keys, then the unbucketed. */
  const collect = (targetType: TargetType, entity: object, out: Entry[]): void => {
    const ti = byType.get(targetType);
    if (!ti) return;
    const stamp = ++lookup;
    const list = ti.fieldList;
    for (let f = 0; f < list.length; f++) {
      const { field, map } = list[f] as TypeIndex["fieldList"][number];
      const v = (entity as Record<string, unknown>)[field];
      if (v === undefined || v === null) continue;
      if (typeof v === "string") {
        take(map.get(stringKey(v)), stamp, out);
        continue;
      }
      const keys = attributeKeys(v);
      for (let k = 0; k < keys.length; k++) take(map.get(keys[k] as string), stamp, out);
    }
    if (ti.argsAny.size > 0 || ti.argsByName.size > 0) {
      const args = (entity as { args?: unknown }).args;
      const elements = Array.isArray(args) ? args : args !== null && typeof args === "object" ? [args] : [];
      for (const a of elements) {
        if (a === null || typeof a !== "object") continue;
        const vkeys = attributeKeys((a as { value?: unknown }).value);
        if (vkeys.length === 0) continue;
        const name = (a as { name?: unknown }).name;
        const byName =
          ti.argsByName.size === 0
            ? undefined
            : typeof name === "string"
              ? [ti.argsByName.get(stringKey(name))]
              : attributeKeys(name).map((k) => ti.argsByName.get(k));
        for (const vk of vkeys) {
          if (ti.argsAny.size > 0) take(ti.argsAny.get(vk), stamp, out);
          if (byName) for (const m of byName) if (m !== undefined) take(m.get(vk), stamp, out);
        }
      }
    }
    for (const e of ti.unbucketed) out.push(e);
  };
  const scratch: Entry[] = [];

  return {
    upsert(rule) {
      const type = rule?.config?.targetType;
      if (rule.state !== "enabled" || !onChain(rule) || !INDEXED_ATTRIBUTES[type]) {
        remove(rule.id);
        return;
      }
      const targetMap = rule.config.targetMap;
      let pred = compile(rule, targetMap); // throws before anything changes
      remove(rule.id);
      const ti = typeIndex(type);
      let best: Placement | null = null;
      let bestCost = Number.POSITIVE_INFINITY;
      for (const p of placementsOf(type, targetMap)) {
        const c = cost(ti, p);
        if (c < bestCost) {
          best = p;
          bestCost = c;
        }
      }
      // Entries are only ever evaluated after a hit in their bucket: skip a definition the hit implies.
      if (best && "implied" in best && best.implied !== null) {
        const skip = best.implied;
        pred = compile(
          rule,
          targetMap.filter((_, i) => i !== skip),
        );
      }
      const entry: Entry = { rule, pred, type, placement: best, stamp: 0, listed: watchlistIds(targetMap).size > 0 };
      if (entry.listed) listedRules++;
      if (best) attach(ti, entry, best);
      else ti.unbucketed.add(entry);
      byId.set(rule.id, entry);
    },
    remove,
    get: (id) => byId.get(id)?.rule,
    candidates(targetType, entity) {
      const entries: Entry[] = [];
      collect(targetType, entity, entries);
      return entries.map((e) => e.rule);
    },
    match(targetType, entity) {
      scratch.length = 0;
      collect(targetType, entity, scratch);
      const out: Rule[] = [];
      for (let i = 0; i < scratch.length; i++) {
        const e = scratch[i] as Entry;
        if (e.pred(entity)) out.push(e.rule);
      }
      scratch.length = 0;
      return out;
    },
    stats() {
      let bucketed = 0;
      let unbucketed = 0;
      let buckets = 0;
      let largestBucket = 0;
      const count = (m: Buckets) => {
        buckets += m.size;
        for (const set of m.values()) largestBucket = Math.max(largestBucket, set.size);
      };
      for (const ti of byType.values()) {
        unbucketed += ti.unbucketed.size;
        for (const m of ti.fields.values()) count(m);
        count(ti.argsAny);
        for (const m of ti.argsByName.values()) count(m);
      }
      for (const e of byId.values()) if (e.placement !== null) bucketed++;
      return { rules: byId.size, bucketed, unbucketed, buckets, largestBucket };
    },
    watchlistRules: () => listedRules,
  };
}
