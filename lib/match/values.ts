/**
 * The value algebra of rule matching: how an entity attribute is split into comparable scalars and
 * how two scalars compare. Shared by {@link ../evaluate.ts} (operators) and {@link ../index.ts}
 * (equality buckets), so a rule lands in exactly the bucket that its `Equals` can match.
 *
 * Numbers:
 * - A string is numeric when it is a decimal integer (`-12`), a `0x` hex integer (`0xff`, `-0x10`,
 *   any letter case, leading zeros ignored) or a finite decimal (`1.5`, `-2e-3`, `1e18`; exponent
 *   at most ±400). JS numbers and bigints are numeric. Everything else is a string.
 * - Numbers compare exactly: a value is held as `m × 10^e` with a bigint mantissa, so uint256
 *   amounts (`0x…` or 78-digit decimals) and fractional token amounts compare without rounding.
 *   A JS number (e.g. `value.scaled`) is taken as its shortest decimal rendering (`String(n)`).
 * @module
 */
import type { Quantity } from "../records.js";

/** An exact decimal `m × 10^e`. */
export interface Dec {
  m: bigint;
  e: number;
}

/** The source of a scalar's numeric reading: a string to parse, a number, a bigint, or null (not numeric). */
export type NumSource = string | number | bigint | null;

/**
 * Visitor of one scalar of an attribute: `s` is the string form used by string comparisons (for a
 * number or bigint scalar, the value itself: its string form is `String(s)`, rendered only when a
 * comparison needs it), `num` the source of the numeric form. Returns true to stop the walk (a
 * match was found).
 */
export type ScalarVisitor = (s: string | number | bigint, num: NumSource) => boolean;

const MAX_EXPONENT = 400;
const HEX = /^([-+]?)0[xX]([0-9a-fA-F]+)$/;
const DEC_INT = /^[-+]?[0-9]+$/;
const DECIMAL = /^([-+]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?$/;

const pow10Cache: bigint[] = [1n];
/** 10^n as a bigint (n ≥ 0), memoised. */
function pow10(n: number): bigint {
  for (let i = pow10Cache.length; i <= n; i++) pow10Cache.push((pow10Cache[i - 1] as bigint) * 10n);
  return pow10Cache[n] as bigint;
}

/** Cheap pre-check: a numeric string starts with a digit, a sign or a dot and ends with a (hex) digit or a dot. */
function mayBeNumeric(s: string): boolean {
  if (s.length === 0) return false;
  const f = s.charCodeAt(0);
  if (!((f >= 48 && f <= 57) || f === 45 || f === 43 || f === 46)) return false;
  const c = s.charCodeAt(s.length - 1);
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70) || c === 46;
}

/** Parses a numeric string (see module doc) into an exact decimal; null when it is not numeric. */
export function parseDecimalString(s: string): Dec | null {
  if (!mayBeNumeric(s)) return null;
  const hex = HEX.exec(s);
  if (hex) {
    const v = BigInt(`0x${hex[2]}`);
    return { m: hex[1] === "-" ? -v : v, e: 0 };
  }
  if (DEC_INT.test(s)) return { m: BigInt(s), e: 0 };
  const d = DECIMAL.exec(s);
  if (!d) return null;
  const int = d[2] ?? "";
  const frac = d[3] ?? "";
  if (int.length === 0 && frac.length === 0) return null;
  const exp = d[4] === undefined ? 0 : Number(d[4]);
  if (!Number.isSafeInteger(exp) || Math.abs(exp) > MAX_EXPONENT) return null;
  const m = BigInt(`${int}${frac}` || "0");
  return { m: d[1] === "-" ? -m : m, e: exp - frac.length };
}

/** The exact numeric value of a source, or null when it is not numeric (NaN and ±Infinity are not). */
export function toDec(src: NumSource): Dec | null {
  if (src === null) return null;
  if (typeof src === "string") return parseDecimalString(src);
  if (typeof src === "bigint") return { m: src, e: 0 };
  if (!Number.isFinite(src)) return null;
  if (Number.isSafeInteger(src)) return { m: BigInt(src), e: 0 };
  return parseDecimalString(String(src));
}

/** Compares two exact decimals: negative, zero or positive like `a − b`. */
export function compareDec(a: Dec, b: Dec): number {
  let am = a.m;
  let bm = b.m;
  if (a.e > b.e) am *= pow10(a.e - b.e);
  else if (b.e > a.e) bm *= pow10(b.e - a.e);
  return am < bm ? -1 : am > bm ? 1 : 0;
}

/** Canonical key of an exact decimal: equal numbers give equal keys (minimal lower-case `0x` hex for integers). */
function decKey(d: Dec): string {
  let { m, e } = d;
  if (m === 0n) return "0x0";
  while (e < 0 && m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  if (e > 0) {
    m *= pow10(e);
    e = 0;
  }
  if (e === 0) return m < 0n ? `-0x${(-m).toString(16)}` : `0x${m.toString(16)}`;
  return `d:${m}e${e}`;
}

/**
 * Canonical numeric key of a source: two sources are numerically equal exactly when their keys
 * are equal (`"0x10"`, `"16"`, `16`, `"1.6e1"` all give `0x10`). Integers key as minimal lower-case
 * `0x` hex (`-0x…` when negative), so an already canonical hex string is its own key (no
 * allocation); fractions as `d:<mantissa>e<exponent>`. Null when not numeric.
 * Hex strings take a fast path (lower-case, leading zeros stripped) without bigint parsing.
 */
export function numericKey(src: NumSource): string | null {
  if (src === null) return null;
  if (typeof src === "string") {
    if (!mayBeNumeric(src)) return null;
    const hex = hexKey(src);
    if (hex !== undefined) return hex;
  } else if (typeof src === "number" && Number.isSafeInteger(src)) {
    return src < 0 ? `-0x${(-src).toString(16)}` : `0x${src.toString(16)}`;
  }
  const d = toDec(src);
  return d === null ? null : decKey(d);
}

/** {@link numericKey} of a `0x` hex string by a character scan (no regex, no bigint); undefined when not hex. */
function hexKey(s: string): string | undefined {
  let i = 0;
  const c0 = s.charCodeAt(0);
  if (c0 === 45 /* - */ || c0 === 43 /* + */) i = 1;
  if (s.charCodeAt(i) !== 48 /* 0 */) return undefined;
  const x = s.charCodeAt(i + 1);
  if (x !== 120 && x !== 88) return undefined;
  const start = i + 2;
  if (start >= s.length) return undefined;
  let firstNonZero = -1;
  let upper = x === 88;
  for (let j = start; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c >= 48 && c <= 57) {
      if (c !== 48 && firstNonZero < 0) firstNonZero = j;
    } else if (c >= 97 && c <= 102) {
      if (firstNonZero < 0) firstNonZero = j;
    } else if (c >= 65 && c <= 70) {
      if (firstNonZero < 0) firstNonZero = j;
      upper = true;
    } else {
      return undefined;
    }
  }
  if (firstNonZero < 0) return "0x0";
  // Already canonical (lower case, no sign, no leading zeros): the string is its own key.
  if (i === 0 && !upper && firstNonZero === start) return s;
  if (i === 0 && firstNonZero === start) return s.toLowerCase(); // e.g. a checksummed address: one allocation
  let digits = s.slice(firstNonZero);
  if (upper) digits = digits.toLowerCase();
  return c0 === 45 ? `-0x${digits}` : `0x${digits}`;
}

/** Whether a value is a {@link Quantity} (`{num, raw}` with a hex `raw`). */
function isQuantity(o: object): o is Quantity {
  return typeof (o as Quantity).raw === "string" && "num" in o;
}

/** A typed argument value as event and method args carry it: `{hex, num, scaled, type}`. */
interface TypedValue {
  hex: string;
  type: string;
}
function isTypedValue(o: object): o is TypedValue {
  return typeof (o as TypedValue).hex === "string" && typeof (o as TypedValue).type === "string";
}

const INT_TYPE = /^u?int[0-9]*$/;
/** Argument types whose typed value is the single scalar `hex` (see {@link forEachScalar}). */
const SINGLE_SCALAR_TYPE = /^(?:u?int[0-9]*|address|bytes[0-9]*)$/;

function utf8(hex: string): string | null {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(hex)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(hex.slice(2), "hex"));
  } catch {
    return null;
  }
}

function visitJsonArray(text: string, visit: ScalarVisitor): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return visit(text, text);
  }
  return forEachScalar(parsed, visit);
}

/**
 * Walks the comparable scalars of an attribute value, stopping at the first visit that returns
 * true. Returns whether some visit returned true.
 *
 * - string: itself; number/bigint: decimal rendering, numeric; boolean: `"true"`/`"false"`, not numeric.
 * - {@link Quantity} `{num, raw}`: one scalar, numeric from `raw` (exact even beyond 2^53).
 * - typed argument value `{hex, num, scaled, type}` (event and method args): integers numeric from
 *   `hex` (exact); `bool` as `"true"`/`"false"` with numeric 1/0; `string` as its text and as its
 *   hex; arrays and tuples (`hex` is a JSON array of element renderings) as each element; other
 *   types (address, bytes) as `hex`.
 * - array: each element (multi-valued attribute: one element satisfying the operator suffices).
 * - null, undefined and other objects: no scalars (so no operator matches them).
 */
export function forEachScalar(v: unknown, visit: ScalarVisitor): boolean {
  switch (typeof v) {
    case "string":
      return visit(v, v);
    case "number":
    case "bigint":
      return visit(v, v);
    case "boolean":
      return visit(v ? "true" : "false", null);
    case "object": {
      if (v === null) return false;
      if (Array.isArray(v)) {
        for (const el of v) if (forEachScalar(el, visit)) return true;
        return false;
      }
      if (isQuantity(v)) return visit(v.raw, v.raw);
      if (isTypedValue(v)) {
        const { hex, type } = v;
        if (INT_TYPE.test(type)) return visit(hex, hex);
        if (type === "bool") return visit(hex === "0x0" ? "false" : "true", hex);
        if (type === "string") {
          const text = utf8(hex);
          return (text !== null && visit(text, text)) || visit(hex, hex);
        }
        if (type.endsWith("]") || type.startsWith("tuple") || type.startsWith("(")) return visitJsonArray(hex, visit);
        return visit(hex, hex);
      }
      return false;
    }
    default:
      return false;
  }
}

/**
 * Equality keys of an attribute value for the rule index: for every scalar, its numeric key (when
 * numeric) and `s:<lower-case string form>` (when the string form is not itself numeric: a numeric
 * string can only string-equal a numeric rule value, whose key is numeric). An `Equals` /
 * `Equals (ignore case)` condition can only hold when one of these equals the key of its value
 * ({@link valueKey}).
 */
export function attributeKeys(v: unknown): string[] {
  const out: string[] = [];
  if (typeof v === "string") {
    // The common case (addresses, names): one key.
    out.push(stringKey(v));
    return out;
  }
  if (v !== null && typeof v === "object" && !Array.isArray(v) && isTypedValue(v) && SINGLE_SCALAR_TYPE.test(v.type)) {
    // Typed integer, address or bytes argument: one scalar, `hex`.
    out.push(stringKey(v.hex));
    return out;
  }
  forEachScalar(v, (s, num) => {
    const n = numericKey(num);
    if (n !== null) out.push(n);
    // A numeric string form can only equal a numeric rule value, which the numeric key covers.
    const str = typeof s === "string" ? s : String(s);
    const sNumeric = s === num ? n !== null : numericKey(str) !== null;
    if (!sNumeric) out.push(`s:${str.toLowerCase()}`);
    return false;
  });
  return out;
}

/** The equality key of a string scalar (its string form is its numeric source): numeric key, else `s:<lower case>`. */
export function stringKey(s: string): string {
  return numericKey(s) ?? `s:${s.toLowerCase()}`;
}

/** The equality key of a rule value: its numeric key when numeric, else `s:<lower case>`. */
export function valueKey(value: string): string {
  return numericKey(value) ?? `s:${value.toLowerCase()}`;
}

/**
 * Reads a dotted attribute path (`blockNumber.num`, `args.name`) from an entity. Own properties
 * only. When a step meets an array, the rest of the path is read from every element and the
 * results are collected into one array (a multi-valued attribute, like an Elasticsearch field
 * under an array of objects). Returns undefined when the path does not exist.
 */
export function readPath(value: unknown, path: readonly string[], from = 0): unknown {
  let cur = value;
  for (let i = from; i < path.length; i++) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (Array.isArray(cur)) {
      const out: unknown[] = [];
      for (const el of cur) {
        const r = readPath(el, path, i);
        if (r === undefined) continue;
        if (Array.isArray(r)) out.push(...r);
        else out.push(r);
      }
      return out;
    }
    const key = path[i] as string;
    cur = Object.hasOwn(cur, key) ? (cur as Record<string, unknown>)[key] : undefined;
  }
  return cur;
}

/**
 * Whether a string is numerically equal to canonical integer keys, without allocating: returns the
 * index of the first equal key, -1 when the string is hex and equals none, or undefined when the
 * string is not a non-negative `0x` hex integer (then use {@link numericKey}).
 * @param keys canonical keys as {@link numericKey} returns them.
 */
export function hexMatchIndex(s: string, keys: readonly string[]): number | undefined {
  if (s.length < 3 || s.charCodeAt(0) !== 48) return undefined;
  const x = s.charCodeAt(1);
  if (x !== 120 && x !== 88) return undefined;
  let fz = -1;
  for (let j = 2; j < s.length; j++) {
    const c = s.charCodeAt(j);
    const hex = (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
    if (!hex) return undefined;
    if (fz < 0 && c !== 48) fz = j;
  }
  const len = fz < 0 ? 1 : s.length - fz;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    if (key.length !== len + 2 || key.charCodeAt(0) !== 48) continue;
    if (fz < 0) {
      if (key === "0x0") return k;
      continue;
    }
    let equal = true;
    for (let j = 0; j < len; j++) {
      let c = s.charCodeAt(fz + j);
      if (c >= 65 && c <= 70) c += 32;
      if (c !== key.charCodeAt(2 + j)) {
        equal = false;
        break;
      }
    }
    if (equal) return k;
  }
  return -1;
}

/**
 * The value of a source as a double when that is exact and cheap to get: finite numbers, and
 * non-negative decimal (up to 15 digits) or `0x` hex (up to 13 digits) integer strings; else
 * undefined.
 */
export function smallNumber(src: NumSource): number | undefined {
  if (typeof src === "number") return Number.isFinite(src) ? src : undefined;
  if (typeof src !== "string" || src.length === 0) return undefined;
  const c0 = src.charCodeAt(0);
  if (c0 < 48 || c0 > 57) return undefined;
  if (src.length > 2 && c0 === 48 && (src.charCodeAt(1) === 120 || src.charCodeAt(1) === 88)) {
    if (src.length > 15) return undefined;
    for (let j = 2; j < src.length; j++) {
      const c = src.charCodeAt(j);
      if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70))) return undefined;
    }
    return Number.parseInt(src.slice(2), 16);
  }
  if (src.length > 15) return undefined;
  for (let j = 0; j < src.length; j++) {
    const c = src.charCodeAt(j);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(src);
}

/**
 * The double equal to an exact decimal when comparing doubles against it is exact: the decimal's
 * shortest double rendering is the decimal itself (`1000`, `1500.5`, `0.1`); else null.
 */
export function exactDouble(d: Dec): number | null {
  const n = Number(`${d.m}e${d.e}`);
  if (!Number.isFinite(n)) return null;
  const back = toDec(n);
  return back !== null && compareDec(back, d) === 0 ? n : null;
}
