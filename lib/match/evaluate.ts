/**
 * Pure evaluation of a rule's targetMap against one entity (contract "Operators", "Inspect").
 *
 * Semantics (details and examples in docs/alerting-match.md):
 * - A targetMap holds when every definition holds (AND).
 * - `name` is an attribute of the entity; dotted paths step into objects (`blockNumber.num`) and
 *   fan out over arrays (`args.name` is every argument's name). An attribute with several values
 *   (an array, or a path through an array) satisfies an operator when one of its values does.
 *   A missing or null attribute satisfies no operator that has a value.
 * - An equality operator (`Equals`, `Equals (ignore case)`, `Equals any`, `Equals any (ignore case)`)
 *   without value (absent or null; allowed at the first and second level) holds when the attribute
 *   has no value: it is missing or null, or an array (a path through an array) without any
 *   non-null element. E.g. `{name: "to", operator: "Equals"}` on a Transaction: contract creations.
 *   Ordering operators need a value.
 * - Numbers compare exactly when both sides are numeric (see {@link ./values.ts}): decimal and
 *   `0x` hex integers of any size, finite decimals, `{num, raw}` quantities by `raw`, typed
 *   argument values by `hex`.
 * - `Greater`, `Greater or Equal`, `Less`, `Less or Equal`: numeric only; false when either side
 *   is not numeric.
 * - `Equals`: numeric equality when both sides are numeric (`"0x10"` equals `"16"`; hex letter case
 *   and leading zeros never matter, so a checksummed address equals its lower-case form), else
 *   case-sensitive string equality. `Equals (ignore case)`: the same with a case-insensitive string
 *   comparison. `Equals any` / `Equals any (ignore case)`: one of the listed values is equal.
 * - `Inspect`: on an object, the nested definitions must all hold on it; on an array, one element
 *   must satisfy all nested definitions together (like an Elasticsearch `nested` query); on
 *   anything else, false.
 * - `useScaledValue: true`: the attribute's `scaled` property is compared instead (for an event or
 *   method argument, `value` resolves to `{hex, num, scaled, type}`, so `value` with
 *   `useScaledValue` compares `value.scaled`, the amount in token units). When `scaled` is null or
 *   missing (decimals unknown) the definition never holds, whatever the operator.
 * - Booleans are the strings `"true"`/`"false"`; a `bool` argument also equals `1`/`0`.
 * - `In watchlist` (value: a watchlist id of the rule's account): one of the attribute's values is a
 *   member of that watchlist, as the {@link WatchlistLookup} given at compile time answers (the match
 *   stage prefetches memberships per batch: lib/match/watchlist-membership.ts). Compiled without a lookup
 *   it never holds.
 * @module
 */

import { ChainsiftError } from "../errors.js";
import type { Operator, TargetDefinition } from "../rules/model.js";
import {
  compareDec,
  type Dec,
  exactDouble,
  forEachScalar,
  hexMatchIndex,
  type NumSource,
  numericKey,
  readPath,
  smallNumber,
  toDec,
} from "./values.js";

/** Any level of target definition (top, second or third level), as far as evaluation is concerned. */
export interface AnyDefinition {
  name: string;
  operator: Operator | string;
  value?: string | string[] | null;
  useScaledValue?: boolean;
  operatorParameters?: readonly AnyDefinition[] | null;
}

/**
 * Synchronous watchlist membership for `In watchlist` definitions (lib/match/watchlist-membership.ts
 * answers it from memberships prefetched from Redis for the batch being matched).
 */
export interface WatchlistLookup {
  /**
   * Whether `value` (an attribute value as the entity holds it, not normalised) is a member of the
   * watchlist `id` of account `accountId`; false for an unknown or deleted watchlist.
   */
  has(accountId: string, id: string, value: string): boolean;
}

/** Options of {@link compileDefinitions}: what `In watchlist` definitions consult. */
export interface CompileOptions {
  /** The rule's account: a watchlist id is looked up among its watchlists. */
  accountId: string;
  /** The membership lookup. */
  watchlists: WatchlistLookup;
}

/** A compiled targetMap: true when the entity matches. Pure; safe to call concurrently. */
export type EntityPredicate = (entity: unknown) => boolean;

/** Raised by {@link compileDefinitions} (and so by {@link evaluate}) for a definition it cannot evaluate. */
export class RuleCompileError extends ChainsiftError {
  /** Always `CS_RULE_COMPILE`. */
  readonly code = "CS_RULE_COMPILE";
  constructor(
    /** Dotted position of the offending definition, e.g. `targetMap[1].operatorParameters[0]`. */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "RuleCompileError";
  }
}

/** A rule value prepared once: string form, lower case, numeric key and exact number. */
interface PreparedValue {
  s: string;
  lower: string;
  key: string | null;
  dec: Dec | null;
}

function prepare(value: string): PreparedValue {
  return { s: value, lower: value.toLowerCase(), key: numericKey(value), dec: toDec(value) };
}

type ScalarTest = (s: string | number | bigint, num: NumSource) => boolean;

function valuesOf(def: AnyDefinition, path: string): string[] {
  const v = def.value;
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v;
  throw new RuleCompileError(path, `operator ${JSON.stringify(def.operator)} needs a string or an array of strings as value`);
}

function singleValue(def: AnyDefinition, path: string): string {
  const v = def.value;
  if (typeof v === "string") return v;
  // Lenient: a one-element array is accepted where a string is expected.
  if (Array.isArray(v) && v.length === 1 && typeof v[0] === "string") return v[0];
  throw new RuleCompileError(path, `operator ${JSON.stringify(def.operator)} needs a string value`);
}

function equalsTest(values: PreparedValue[], ignoreCase: boolean): ScalarTest {
  const numericKeys = new Set<string>();
  const strings = new Set<string>();
  for (const v of values) {
    if (v.key !== null) numericKeys.add(v.key);
    strings.add(ignoreCase ? v.lower : v.s);
  }
  const hasNumeric = numericKeys.size > 0;
  const keyList = [...numericKeys];
  const scan = keyList.length <= 4; // compare hex strings in place instead of building their key
  return (s, num) => {
    if (hasNumeric) {
      const fast = scan && typeof num === "string" ? hexMatchIndex(num, keyList) : undefined;
      if (fast !== undefined) {
        if (fast >= 0) return true;
      } else {
        const k = numericKey(num);
        if (k !== null && numericKeys.has(k)) return true;
      }
      // Not numerically equal: it may still string-equal a non-numeric value of an `Equals any` list.
    }
    const str = typeof s === "string" ? s : String(s);
    return strings.has(ignoreCase ? str.toLowerCase() : str);
  };
}

function orderTest(value: PreparedValue, accept: (c: number) => boolean): ScalarTest {
  const ruleDec = value.dec;
  if (ruleDec === null) return () => false;
  // Fast path: when the rule value is exactly a double, doubles and small integers compare as doubles (exact).
  const ruleNum = exactDouble(ruleDec);
  return (_s, num) => {
    if (ruleNum !== null) {
      const x = smallNumber(num);
      if (x !== undefined) return accept(x < ruleNum ? -1 : x > ruleNum ? 1 : 0);
    }
    const d = toDec(num);
    return d !== null && accept(compareDec(d, ruleDec));
  };
}

function watchlistTest(id: string, opts: CompileOptions | undefined): ScalarTest {
  if (!opts) return () => false;
  const { accountId, watchlists } = opts;
  return (s) => watchlists.has(accountId, id, typeof s === "string" ? s : String(s));
}

function scalarTest(def: AnyDefinition, path: string, opts: CompileOptions | undefined): ScalarTest {
  switch (def.operator) {
    case "In watchlist":
      return watchlistTest(singleValue(def, path), opts);
    case "Greater":
      return orderTest(prepare(singleValue(def, path)), (c) => c > 0);
    case "Greater or Equal":
      return orderTest(prepare(singleValue(def, path)), (c) => c >= 0);
    case "Less":
      return orderTest(prepare(singleValue(def, path)), (c) => c < 0);
    case "Less or Equal":
      return orderTest(prepare(singleValue(def, path)), (c) => c <= 0);
    case "Equals":
      return equalsTest([prepare(singleValue(def, path))], false);
    case "Equals (ignore case)":
      return equalsTest([prepare(singleValue(def, path))], true);
    case "Equals any":
      return equalsTest(valuesOf(def, path).map(prepare), false);
    case "Equals any (ignore case)":
      return equalsTest(valuesOf(def, path).map(prepare), true);
    default:
      throw new RuleCompileError(path, `unknown operator ${JSON.stringify(def.operator)}`);
  }
}

/** The `scaled` variant of an attribute, or undefined (never matches) when it has none. */
function scaledOf(v: unknown): unknown {
  if (v === null || typeof v !== "object") return undefined;
  if (Array.isArray(v)) return v.map(scaledOf).filter((x) => x !== undefined);
  const scaled = (v as { scaled?: unknown }).scaled;
  return typeof scaled === "number" || typeof scaled === "string" || typeof scaled === "bigint" ? scaled : undefined;
}

const EQUALITY = new Set<string>(["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"]);

/** Whether an attribute has no value: missing, null, or an array whose elements all have none. */
function isAbsent(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!Array.isArray(v)) return false;
  for (const el of v) if (!isAbsent(el)) return false;
  return true;
}

function compileOne(def: AnyDefinition, path: string, opts: CompileOptions | undefined): EntityPredicate {
  if (def === null || typeof def !== "object" || typeof def.name !== "string" || def.name === "") {
    throw new RuleCompileError(path, "a definition needs a non-empty string name");
  }
  const steps = def.name.split(".");
  const single = steps.length === 1 ? (steps[0] as string) : null;
  const read = single
    ? (o: unknown) => (o !== null && typeof o === "object" && Object.hasOwn(o, single) ? (o as Record<string, unknown>)[single] : undefined)
    : (o: unknown) => readPath(o, steps);
  if (def.operator === "Inspect") {
    const nested = compileList(def.operatorParameters ?? [], `${path}.operatorParameters`, opts);
    return (entity) => {
      const v = read(entity);
      if (v === null || typeof v !== "object") return false;
      if (Array.isArray(v)) {
        for (const el of v) if (el !== null && typeof el === "object" && nested(el)) return true;
        return false;
      }
      return nested(v);
    };
  }
  if ((def.value === undefined || def.value === null) && EQUALITY.has(def.operator)) {
    if (def.useScaledValue === true) {
      throw new RuleCompileError(path, `operator ${JSON.stringify(def.operator)} needs a value when useScaledValue is true`);
    }
    return (entity) => isAbsent(read(entity));
  }
  const test = scalarTest(def, path, opts);
  if (def.useScaledValue === true) return (entity) => forEachScalar(scaledOf(read(entity)), test);
  return (entity) => forEachScalar(read(entity), test);
}

function compileList(defs: readonly AnyDefinition[], path: string, opts: CompileOptions | undefined): EntityPredicate {
  if (!Array.isArray(defs)) throw new RuleCompileError(path, "expected an array of definitions");
  const preds = defs.map((d, i) => compileOne(d, `${path}[${i}]`, opts));
  if (preds.length === 1) return preds[0] as EntityPredicate;
  return (entity) => {
    for (const p of preds) if (!p(entity)) return false;
    return true;
  };
}

/**
 * Compiles a targetMap (or any list of definitions) into a predicate. Rule values are parsed once
 * here, so evaluating a compiled predicate costs only the entity-side work. An empty list holds for
 * every entity.
 * @throws {RuleCompileError} on an unknown operator, a missing name, or a value of the wrong shape
 *   (`Equals any` needs an array of strings; other operators a string; a one-element array is
 *   accepted as a string; only equality operators without `useScaledValue` may have no value).
 *   Rules that passed `lib/rules` validation always compile.
 * @param options - the account and membership lookup of `In watchlist` definitions; without it they never hold.
 */
export function compileDefinitions(definitions: readonly AnyDefinition[], options?: CompileOptions): EntityPredicate {
  return compileList(definitions, "targetMap", options);
}

/** The watchlist ids the `In watchlist` definitions of a list name, at any level, each once. */
export function watchlistIds(definitions: readonly AnyDefinition[] | null | undefined, out = new Set<string>()): Set<string> {
  if (!Array.isArray(definitions)) return out;
  for (const d of definitions) {
    if (d?.operator === "In watchlist" && typeof d.value === "string") out.add(d.value);
    watchlistIds(d?.operatorParameters, out);
  }
  return out;
}

const compiled = new WeakMap<readonly AnyDefinition[], EntityPredicate>();

/**
 * Whether `entity` satisfies every definition of `definitions` (see the module doc for the
 * semantics). Pure. The compiled form is memoised per `definitions` array (by identity), so the
 * array and its items must not be mutated after the first call; replace them instead.
 * @param definitions a rule's `config.targetMap` (or nested definitions).
 * @param entity one entity of the rule's target type (see `entities.ts`), or any plain object.
 * @throws {RuleCompileError} when a definition cannot be compiled (see {@link compileDefinitions}).
 */
export function evaluate(definitions: readonly TargetDefinition[] | readonly AnyDefinition[], entity: unknown): boolean {
  let pred = compiled.get(definitions);
  if (!pred) {
    pred = compileDefinitions(definitions);
    compiled.set(definitions, pred);
  }
  return pred(entity);
}
