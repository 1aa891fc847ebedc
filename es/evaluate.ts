/**
 * The one evaluator of the search DSL in TypeScript: a saved search's query, compiled once, answers
 * for one record (the document the index stage stores, with its `_id`) whether Elasticsearch would
 * return it for the same query — without asking Elasticsearch (the match stage evaluates every new
 * record; the integ-test-zip distribution has no percolator).
 *
 * The query is first checked and sanitized by the search API's own validator (`validateQuery` of
 * api/dsl/validate.ts, via `compileSearchQuery` of api/dsl/saved-search.ts: the same allowlist, the
 * same field catalog, the same rewrites, e.g. a `term` on the text field `event` becomes a
 * case-insensitive term on `event.raw`); this module compiles the sanitized query against the
 * mapping of the record kind (./mappings.ts) with Elasticsearch's semantics:
 *
 * | clause | semantics |
 * |---|---|
 * | `term`/`terms` on `keyword` | exact string equality with any value of the field; the `lowercase_address` normalizer lower-cases both sides; values longer than `ignore_above` are not indexed |
 * | `term`/`terms` on `text` | equality with any token of the field (the query value is not analyzed) |
 * | `term`/`terms`/`range` on `long`/`integer`/`double` | numeric comparison (a doc value of a `long` field is truncated as ES coerces it) |
 * | `term`/`range` on `date` | milliseconds since the epoch; a value without zone is UTC |
 * | `term` on `boolean` | `true`/`false` (or the strings) |
 * | `range` | some value of a multi-valued field lies within every bound |
 * | `match` | the `standard` analyzer (./analyze.ts) on both sides; `operator` `or` (default, with `minimum_should_match`) or `and`; a query without tokens matches nothing; a single token is a plain term |
 * | `exists` | the field (or, for an object path, any searchable leaf below it) has a non-null indexed value |
 * | `ids`, `term`/`terms` on `_id` | the record's `_id` (lib/records.ts `recordId`, `callId`) |
 * | `nested` | some element of the nested array matches the inner query |
 * | `bool` | `must` and `filter` all match, no `must_not` matches; `should`: `minimum_should_match` (ES's arithmetic: integer, negative, percentage rounded toward zero), default 1 without `must`/`filter` and 0 with them; no clause at all matches every record |
 * | `match_all`, `{}` | every record |
 * | `terms` by watchlist (./watchlist-lookup.ts) | some indexed value of the keyword field (as for `terms`) is a member of the search account's list, as the {@link WatchlistLookup} of {@link EsCompileOptions} answers (the match stage's normalises the value by the list's kind, as for `In watchlist`); without a lookup, never |
 *
 * What the evaluator cannot answer exactly is refused at compile time with `CS_SEARCH_INEXACT`
 * naming the clause's JSON path: a keyword value that is a non-integer number, a numeric value that
 * is not a plain decimal (`0x10`, ` 5`), an integer beyond ±2^53 for `long` (±2^31 for `integer`), a
 * date that is not a full ISO 8601 date-time (date math such as `now-1d` and partial dates like
 * `2024-01` are rounded by ES), a `match` text with non-ASCII characters.
 * The evaluator and a real Elasticsearch are compared over the same documents for many query shapes
 * in test/integration/searches/evaluate-es.test.ts.
 * @module
 */

import type { WatchlistLookup } from "../lib/match/evaluate.js";
import type { RecordKind } from "../lib/records.js";
import { jsonPath } from "../lib/validation/path.js";
import { isJsonObject, type Problem, type ValidationResult } from "../lib/validation/problems.js";
import { standardTokens } from "./analyze.js";
import { MAPPINGS, mappedFields } from "./mappings.js";
import { watchlistClauseOf } from "./watchlist-lookup.js";

/** A query clause of the search DSL, as the search API's validator (api/dsl/validate.ts) sanitizes it. */
export type EsQuery = Record<string, unknown>;

/** A compiled query: whether a document (an indexed record's `_source`) with that `_id` matches. */
export type DocPredicate = (doc: Record<string, unknown>, id: string) => boolean;

/** A problem of {@link compileEsQuery} (`CS_SEARCH_INEXACT`), or of the API's `compileSearchQuery` (also the search API's `CS_QUERY_*` codes). */
export type SearchCompileProblem = Problem<string, string | null>;

type Mapping = Record<string, unknown>;

/** What the evaluator needs of one mapped field. */
interface FieldSpec {
  /** ES type: keyword, text, long, integer, double, date, boolean. */
  type: string;
  /** Dotted path of the value in `_source` (a multi-field such as `address.raw` reads `address`). */
  source: string;
  lowercase: boolean;
  ignoreAbove: number;
}

const specCache = new Map<string, FieldSpec | null>();

/** The mapping facts of a field path of a kind, or null when the path names no leaf. */
function fieldSpec(kind: RecordKind, path: string): FieldSpec | null {
  const key = `${kind}:${path}`;
  const hit = specCache.get(key);
  if (hit !== undefined) return hit;
  let props = (MAPPINGS[kind] as { properties: Record<string, Mapping> }).properties;
  let def: Mapping | undefined;
  const segs = path.split(".");
  const source: string[] = [];
  let spec: FieldSpec | null = null;
  for (let i = 0; i < segs.length; i += 1) {
    const seg = segs[i] as string;
    const inProps = props?.[seg];
    if (inProps) {
      def = inProps;
      source.push(seg);
      props = def.properties as Record<string, Mapping>;
      continue;
    }
    const sub = (def?.fields as Record<string, Mapping> | undefined)?.[seg];
    if (sub && i === segs.length - 1) def = sub;
    else def = undefined;
    break;
  }
  if (def && typeof def.type === "string" && def.type !== "nested") {
    spec = {
      type: def.type,
      source: source.join("."),
      lowercase: def.normalizer === "lowercase_address",
      ignoreAbove: typeof def.ignore_above === "number" ? def.ignore_above : Number.POSITIVE_INFINITY,
    };
  }
  specCache.set(key, spec);
  return spec;
}

/** Every non-null value at a dotted path, arrays flattened at every level (ES's view of `_source`). */
export function valuesAt(obj: unknown, path: string): unknown[] {
  const out: unknown[] = [];
  const segs = path.split(".");
  const walk = (v: unknown, i: number): void => {
    if (v === null || v === undefined) return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, i);
      return;
    }
    if (i === segs.length) {
      out.push(v);
      return;
    }
    if (typeof v === "object") walk((v as Record<string, unknown>)[segs[i] as string], i + 1);
  };
  walk(obj, 0);
  return out;
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})?$/;
const INT32 = 2 ** 31;

/** Milliseconds of an ISO 8601 date-time (UTC without a zone), or NaN. */
function dateMs(s: string): number {
  const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(s) ? s : `${s}Z`;
  return Date.parse(zoned);
}

/** What a document value of a field indexes as (null: nothing indexed). */
function docTerms(spec: FieldSpec, v: unknown): Array<string | number | boolean> {
  switch (spec.type) {
    case "keyword": {
      const s = typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : null;
      if (s === null || s.length > spec.ignoreAbove) return [];
      return [spec.lowercase ? s.toLowerCase() : s];
    }
    case "text":
      return typeof v === "string" ? standardTokens(v) : [];
    case "long":
    case "integer": {
      const n = typeof v === "number" ? v : typeof v === "string" && DECIMAL.test(v) ? Number(v) : Number.NaN;
      return Number.isFinite(n) ? [Math.trunc(n)] : [];
    }
    case "double": {
      const n = typeof v === "number" ? v : typeof v === "string" && DECIMAL.test(v) ? Number(v) : Number.NaN;
      return Number.isFinite(n) ? [n] : [];
    }
    case "date": {
      const n = typeof v === "string" ? dateMs(v) : typeof v === "number" ? v : Number.NaN;
      return Number.isFinite(n) ? [n] : [];
    }
    case "boolean":
      if (v === true || v === "true") return [true];
      if (v === false || v === "false") return [false];
      return [];
    default:
      return [];
  }
}

function docValues(spec: FieldSpec, doc: unknown): Array<string | number | boolean> {
  return valuesAt(doc, spec.source).flatMap((v) => docTerms(spec, v));
}

/** ES's `minimum_should_match` arithmetic (org.elasticsearch.common.lucene.search.Queries). */
export function minShouldMatch(optional: number, spec: string | number): number {
  const s = String(spec).trim();
  let result: number;
  if (s.endsWith("%")) {
    // Java: float calc = (count * percent) * (1 / 100f); the sign is tested before truncation.
    const calc = Math.fround(Math.fround(optional * Number.parseInt(s.slice(0, -1), 10)) * Math.fround(1 / 100));
    result = calc < 0 ? optional + Math.trunc(calc) : Math.trunc(calc);
  } else {
    const calc = Number.parseInt(s, 10);
    result = calc < 0 ? optional + calc : calc;
  }
  return Math.max(0, result);
}

/** Options of {@link compileEsQuery}: what `terms` lookups by watchlist consult. */
export interface EsCompileOptions {
  /** The search's account: a watchlist id is looked up among its lists. */
  accountId: string;
  /** Synchronous membership (the match stage's prefetching lib/match/watchlist-membership.ts `lookup`). */
  watchlists: WatchlistLookup;
}

interface CompileContext {
  kind: RecordKind;
  problems: SearchCompileProblem[];
  options: EsCompileOptions | undefined;
}

function inexact(ctx: CompileContext, path: string, message: string): DocPredicate {
  ctx.problems.push({ code: "CS_SEARCH_INEXACT", message, path });
  return () => false;
}

/** A query value as the field indexes it, or a reason why the evaluator cannot answer exactly. */
function queryTerm(spec: FieldSpec, v: unknown): { ok: true; value: string | number | boolean } | { ok: false; why: string } {
  switch (spec.type) {
    case "keyword":
    case "text": {
      if (typeof v === "number" && !Number.isSafeInteger(v))
        return { ok: false, why: `${v} is not an integer: write the value as a string` };
      const s = String(v);
      return { ok: true, value: spec.lowercase ? s.toLowerCase() : s };
    }
    case "long":
    case "integer": {
      const limit = spec.type === "integer" ? INT32 : 2 ** 53;
      const n = typeof v === "number" ? v : typeof v === "string" && INTEGER.test(v) ? Number(v) : Number.NaN;
      if (!Number.isInteger(n) || Math.abs(n) >= limit)
        return { ok: false, why: `${JSON.stringify(v)} is not an integer within ±${limit}` };
      return { ok: true, value: n };
    }
    case "double": {
      const n = typeof v === "number" ? v : typeof v === "string" && DECIMAL.test(v) ? Number(v) : Number.NaN;
      if (!Number.isFinite(n)) return { ok: false, why: `${JSON.stringify(v)} is not a plain decimal number` };
      return { ok: true, value: n };
    }
    case "date": {
      if (typeof v !== "string" || !ISO_DATE_TIME.test(v) || !Number.isFinite(dateMs(v)))
        return {
          ok: false,
          why: `${JSON.stringify(v)} is not a full ISO 8601 date-time (e.g. 2025-01-31T00:00:00Z); date math and partial dates are not supported`,
        };
      return { ok: true, value: dateMs(v) };
    }
    case "boolean":
      if (v === true || v === "true") return { ok: true, value: true };
      if (v === false || v === "false") return { ok: true, value: false };
      return { ok: false, why: `${JSON.stringify(v)} is not a boolean` };
    default:
      return { ok: false, why: `fields of type ${spec.type} are not supported` };
  }
}

/** A bound of a range as a number (dates in ms), or a reason. */
function rangeBound(spec: FieldSpec, v: unknown): { ok: true; value: number } | { ok: false; why: string } {
  if (spec.type === "date") {
    const t = queryTerm(spec, v);
    return t.ok ? { ok: true, value: t.value as number } : t;
  }
  const n = typeof v === "number" ? v : typeof v === "string" && DECIMAL.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n)) return { ok: false, why: `${JSON.stringify(v)} is not a plain decimal number` };
  const limit = spec.type === "integer" ? INT32 : spec.type === "long" ? 2 ** 53 : Number.POSITIVE_INFINITY;
  if (Math.abs(n) >= limit) return { ok: false, why: `${JSON.stringify(v)} is beyond ±${limit}` };
  return { ok: true, value: n };
}

function fieldOf(ctx: CompileContext, field: string, path: string): FieldSpec | DocPredicate {
  const spec = fieldSpec(ctx.kind, field);
  return spec ?? inexact(ctx, path, `field ${field} cannot be evaluated`);
}

/** Compiles one sanitized clause (the output of `validateQuery`). */
function compile(ctx: CompileContext, node: EsQuery, path: string): DocPredicate {
  const [name, body] = Object.entries(node)[0] as [string, unknown];
  const p = jsonPath(path, name);
  const b = body as Record<string, unknown>;
  switch (name) {
    case "match_all":
      return () => true;
    case "bool":
      return compileBool(ctx, b, p);
    case "ids": {
      const ids = new Set(b.values as string[]);
      return (_doc, id) => ids.has(id);
    }
    case "term":
    case "terms": {
      const [field, raw] = Object.entries(b)[0] as [string, unknown];
      const fp = jsonPath(p, field);
      const lookup = watchlistClauseOf(node);
      if (lookup) return watchlistTerms(ctx, lookup.id, fieldOf(ctx, field, fp));
      const list = name === "terms" ? (raw as unknown[]) : [isJsonObject(raw) ? raw.value : raw];
      const insensitive = name === "term" && isJsonObject(raw) && raw.case_insensitive === true;
      if (field === "_id") {
        const ids = new Set(list as string[]);
        return (_doc, id) => ids.has(id);
      }
      const spec = fieldOf(ctx, field, fp);
      if (typeof spec === "function") return spec;
      const wanted = new Set<string | number | boolean>();
      for (const [i, v] of list.entries()) {
        const t = queryTerm(spec, v);
        if (!t.ok) return inexact(ctx, name === "terms" ? jsonPath(fp, i) : fp, `${name} on ${field}: ${t.why}`);
        wanted.add(insensitive && typeof t.value === "string" ? t.value.toLowerCase() : t.value);
      }
      return (doc) => docValues(spec, doc).some((v) => wanted.has(insensitive && typeof v === "string" ? v.toLowerCase() : v));
    }
    case "range": {
      const [field, bounds] = Object.entries(b)[0] as [string, Record<string, unknown>];
      const fp = jsonPath(p, field);
      const spec = fieldOf(ctx, field, fp);
      if (typeof spec === "function") return spec;
      const tests: Array<(n: number) => boolean> = [];
      for (const [op, v] of Object.entries(bounds)) {
        const bound = rangeBound(spec, v);
        if (!bound.ok) return inexact(ctx, jsonPath(fp, op), `range on ${field}: ${bound.why}`);
        const x = bound.value;
        tests.push(op === "gt" ? (n) => n > x : op === "gte" ? (n) => n >= x : op === "lt" ? (n) => n < x : (n) => n <= x);
      }
      return (doc) => docValues(spec, doc).some((v) => typeof v === "number" && tests.every((t) => t(v)));
    }
    case "exists": {
      const field = b.field as string;
      const mapped = mappedFields(ctx.kind).filter((f) => f.type !== "nested");
      const leaves = mapped.some((f) => f.path === field)
        ? [field]
        : mapped.filter((f) => f.path.startsWith(`${field}.`) && f.searchable).map((f) => f.path);
      const specs = leaves.map((l) => fieldSpec(ctx.kind, l)).filter((s): s is FieldSpec => s !== null);
      return (doc) => specs.some((s) => existsIn(s, doc));
    }
    case "nested": {
      const nestedPath = b.path as string;
      const inner = compile(ctx, b.query as EsQuery, jsonPath(p, "query"));
      const prefix = nestedPath.split(".");
      return (doc, id) => {
        // Each element of the nested array is a document of its own, reached at the same full paths.
        const elements = valuesAt(doc, nestedPath).filter(isJsonObject);
        return elements.some((el) => inner(wrapAt(prefix, el), id));
      };
    }
    case "match": {
      const [field, spec0] = Object.entries(b)[0] as [string, Record<string, unknown>];
      const fp = jsonPath(p, field);
      const spec = fieldOf(ctx, field, fp);
      if (typeof spec === "function") return spec;
      const text = spec0.query as string;
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range is the point
      if (/[^\u0000-\u007f]/.test(text))
        return inexact(
          ctx,
          jsonPath(fp, "query"),
          "match: a query text with non-ASCII characters is analyzed by ES in ways the evaluator does not reproduce",
        );
      const tokens = standardTokens(text);
      if (tokens.length === 0) return () => false;
      const first = tokens[0] as string;
      if (tokens.length === 1) return (doc) => docValues(spec, doc).includes(first);
      if (spec0.operator === "and")
        return (doc) => {
          const have = new Set(docValues(spec, doc));
          return tokens.every((t) => have.has(t));
        };
      const need =
        spec0.minimum_should_match === undefined ? 1 : minShouldMatch(tokens.length, spec0.minimum_should_match as string | number);
      return (doc) => {
        const have = new Set(docValues(spec, doc));
        const hits = tokens.filter((t) => have.has(t)).length;
        return hits >= Math.max(1, need);
      };
    }
    default:
      return inexact(ctx, p, `clause ${name} cannot be evaluated`);
  }
}

/** `terms` by watchlist: some value the field indexes is a member (module table). */
function watchlistTerms(ctx: CompileContext, id: string, spec: FieldSpec | DocPredicate): DocPredicate {
  if (typeof spec === "function") return spec;
  if (!ctx.options) return () => false;
  const { accountId, watchlists } = ctx.options;
  return (doc) => docValues(spec, doc).some((v) => watchlists.has(accountId, id, String(v)));
}

/** `{a: {b: el}}` for the nested path `a.b`, so the inner query reads the element at its full paths. */
function wrapAt(prefix: string[], el: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> = el;
  for (let i = prefix.length - 1; i >= 0; i -= 1) out = { [prefix[i] as string]: out };
  return out;
}

function existsIn(spec: FieldSpec, doc: unknown): boolean {
  // A text field with an empty string is indexed with no token, yet ES counts it as existing (norms).
  if (spec.type === "text") return valuesAt(doc, spec.source).some((v) => typeof v === "string");
  return docValues(spec, doc).length > 0;
}

function compileBool(ctx: CompileContext, b: Record<string, unknown>, p: string): DocPredicate {
  const list = (key: string): DocPredicate[] => {
    const v = b[key];
    if (v === undefined) return [];
    const kp = jsonPath(p, key);
    return Array.isArray(v) ? v.map((c, i) => compile(ctx, c as EsQuery, jsonPath(kp, i))) : [compile(ctx, v as EsQuery, kp)];
  };
  const required = [...list("must"), ...list("filter")];
  const excluded = list("must_not");
  const should = list("should");
  const msm = b.minimum_should_match as string | number | undefined;
  let need: number;
  if (msm !== undefined) {
    need = minShouldMatch(should.length, msm);
    // Lucene: without required clauses at least one should clause must match (msm 0 included).
    if (need === 0 && required.length === 0 && should.length > 0) need = 1;
  } else need = required.length === 0 && should.length > 0 ? 1 : 0;
  return (doc, id) => {
    for (const r of required) if (!r(doc, id)) return false;
    for (const x of excluded) if (x(doc, id)) return false;
    if (need === 0) return true;
    if (need > should.length) return false;
    let hits = 0;
    for (const s of should) if (s(doc, id) && ++hits >= need) return true;
    return false;
  };
}

/**
 * Compiles a query the search API's validator has already checked and sanitized (`validateQuery`
 * of api/dsl/validate.ts; the API's `compileSearchQuery` in api/dsl/saved-search.ts does both).
 * @param query - the sanitized query; undefined matches every record.
 * @param kind - the record kind the search runs over.
 * @param path - JSON path of the query in the request body, for the problems' paths (default `query`).
 * @param options - the account and membership lookup of `terms` lookups by watchlist; without it they never hold.
 * @returns the predicate, or the `CS_SEARCH_INEXACT` problems (the evaluator cannot answer exactly; each path names the clause).
 */
export function compileEsQuery(
  query: EsQuery | undefined,
  kind: RecordKind,
  path = "query",
  options?: EsCompileOptions,
): ValidationResult<DocPredicate, SearchCompileProblem> {
  if (query === undefined || Object.keys(query).length === 0) return { ok: true, value: () => true };
  const ctx: CompileContext = { kind, problems: [], options };
  const matches = compile(ctx, query, path);
  if (ctx.problems.length > 0) return { ok: false, errors: ctx.problems };
  return { ok: true, value: matches };
}
