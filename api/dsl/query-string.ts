/**
 * The `query_string` and `simple_query_string` clauses (ES,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-query-string-query.html and
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/query-dsl-simple-query-string-query.html),
 * as Grafana and Kibana send them: `"*"`, `field:value`, `field:"a phrase"`, `AND`/`OR`/`NOT`,
 * ranges `blockNumber.num:[1 TO 5]`, trailing wildcards, `default_field`, `fields`,
 * `analyze_wildcard`.
 *
 * The Lucene syntax of a `query_string` is parsed with the `lucene` package (a PEG grammar of the
 * classic Lucene query parser); every field it names (`field:…`, `_exists_:field`), its
 * `default_field` and `fields` must be known fields of the kinds in the clause's nested scope, as
 * for the other clauses (./query.ts). Refused: terms that start with a wildcard
 * (`CS_QUERY_LEADING_WILDCARD`; Elasticsearch gets `allow_leading_wildcard: false` too, a second
 * guard), regular expressions (`/re/`, and any `/` outside a quoted phrase, which Elasticsearch
 * would read as one: `CS_QUERY_REGEXP`), phrase proximity above {@link QUERY_STRING_LIMITS.maxSlop}
 * (`CS_QUERY_SLOP_TOO_LARGE`), field wildcards, a query that does not parse and options not listed
 * (`CS_QUERY_INVALID`). Fuzzy terms (`foo~`) are accepted: Elasticsearch bounds them (at most 2
 * edits, 50 expansions). `simple_query_string` has no field syntax, no regular expressions and only
 * trailing wildcards: its `fields` and its proximity are checked.
 * @module
 */
import { type AST, type Node, type NodeTerm, parse } from "lucene";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import type { Collector } from "./collector.js";
import type { EsQuery } from "./plan.js";

/** Caps of the query-string clauses. */
export const QUERY_STRING_LIMITS = {
  /** Longest `query` string, in characters. `CS_QUERY_INVALID`. */
  maxLength: 4096,
  /** Most entries of `fields`. `CS_QUERY_INVALID`. */
  maxFields: 32,
  /** Largest phrase proximity (`"a b"~N`) and `phrase_slop`. `CS_QUERY_SLOP_TOO_LARGE`. */
  maxSlop: 10,
} as const;

/** Checks one field name in the clause's scope (./query.ts `checkField`); reports and returns false when refused. */
export type FieldCheck = (field: string, path: string) => boolean;

type Ast = AST | Node;
const isBool = (v: unknown): boolean => typeof v === "boolean";
const MSM = /^-?\d+%?$/;
const OPERATORS = new Set(["AND", "OR", "and", "or"]);
const TYPES = new Set(["best_fields", "most_fields", "cross_fields", "phrase", "phrase_prefix", "bool_prefix"]);
const TIME_ZONE = /^(?:[+-]\d{2}:\d{2}|[A-Za-z][A-Za-z0-9_+\-/]{0,63})$/;
const SIMPLE_FLAGS =
  /^(?:ALL|NONE|AND|ESCAPE|FUZZY|NEAR|NOT|OR|PHRASE|PRECEDENCE|PREFIX|SLOP|WHITESPACE)(?:\|(?:ALL|NONE|AND|ESCAPE|FUZZY|NEAR|NOT|OR|PHRASE|PRECEDENCE|PREFIX|SLOP|WHITESPACE))*$/;

/** Options accepted besides `query`, `default_field` and `fields`: name → [check, what it must be]. */
const OPTIONS: Readonly<Record<string, [(v: unknown) => boolean, string]>> = {
  default_operator: [(v) => typeof v === "string" && OPERATORS.has(v), "AND or OR"],
  analyze_wildcard: [isBool, "a boolean"],
  lenient: [isBool, "a boolean"],
  auto_generate_synonyms_phrase_query: [isBool, "a boolean"],
  minimum_should_match: [
    (v) => (typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && MSM.test(v)),
    'an integer or "50%"',
  ],
  time_zone: [(v) => typeof v === "string" && TIME_ZONE.test(v), "an offset (+01:00) or a zone id (Europe/Paris)"],
  type: [(v) => typeof v === "string" && TYPES.has(v), [...TYPES].join(", ")],
  phrase_slop: [(v) => typeof v === "number" && Number.isInteger(v) && v >= 0, "an integer >= 0"],
  flags: [(v) => typeof v === "string" && SIMPLE_FLAGS.test(v), "flags such as ALL or AND|OR|PREFIX (no REGEXP)"],
};
const QS_OPTIONS = [
  "default_operator",
  "analyze_wildcard",
  "lenient",
  "auto_generate_synonyms_phrase_query",
  "minimum_should_match",
  "time_zone",
  "type",
  "phrase_slop",
];
const SIMPLE_OPTIONS = [
  "default_operator",
  "analyze_wildcard",
  "lenient",
  "auto_generate_synonyms_phrase_query",
  "minimum_should_match",
  "flags",
];

/** Lucene's escaping undone (`args\.name` → `args.name`), as Elasticsearch reads a field name. */
function unescapeLucene(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}

/** A field name of the clause (`default_field`, `fields` items, `field:` of the query): no wildcards, an optional `^boost`. */
function fieldName(out: Collector, check: FieldCheck, raw: string, p: string): boolean {
  const name = unescapeLucene(raw).replace(/\^\d+(\.\d+)?$/, "");
  if (/[*?]/.test(name)) {
    out.add("CS_QUERY_INVALID", `field wildcards (${raw}) are not supported; name the fields`, p);
    return false;
  }
  return check(name, p);
}

/**
 * The first `/` outside quotes and range brackets that is not escaped, or -1 (Elasticsearch starts
 * a regular expression there; inside `[… TO …]` a slash is date-math rounding, `now-1d/d`).
 */
function regexpSlash(q: string): number {
  let quoted = false;
  let range = false;
  for (let i = 0; i < q.length; i++) {
    const c = q[i];
    if (c === "\\") i += 1;
    else if (c === '"' && !range) quoted = !quoted;
    else if (quoted) continue;
    else if (c === "[" || c === "{") range = true;
    else if (c === "]" || c === "}") range = false;
    else if (c === "/" && !range) return i;
  }
  return -1;
}

/** Walks the parsed Lucene query: every field named, leading wildcards, proximity. */
function walk(out: Collector, check: FieldCheck, node: Ast | undefined, p: string): boolean {
  if (!node) return true;
  if ("left" in node) {
    // A group with a field (`from:(a OR b)`): the field applies to every term inside.
    const group = node.field?.replace(/^[+!-]/, "");
    if (group !== undefined && group !== "<implicit>" && !fieldName(out, check, group, p)) return false;
    const ok = walk(out, check, node.left, p);
    return walk(out, check, "right" in node ? node.right : undefined, p) && ok;
  }
  const field = node.field.replace(/^[+!-]/, "");
  if (field === "_exists_" && "term" in node) return fieldName(out, check, node.term, p);
  if (field !== "<implicit>" && !fieldName(out, check, field, p)) return false;
  if ("term_min" in node) return true;
  const term = node as NodeTerm & { proximity?: number | null };
  if (term.regex) {
    out.add("CS_QUERY_REGEXP", `regular expressions (/${term.term}/) are not supported`, p);
    return false;
  }
  if (!term.quoted && /^[*?]/.test(term.term) && term.term !== "*") {
    out.add("CS_QUERY_LEADING_WILDCARD", `${term.term} starts with a wildcard, which scans every term; put the wildcard at the end`, p);
    return false;
  }
  if (typeof term.proximity === "number" && term.proximity > QUERY_STRING_LIMITS.maxSlop) {
    out.add("CS_QUERY_SLOP_TOO_LARGE", `phrase proximity ~${term.proximity} is above ${QUERY_STRING_LIMITS.maxSlop}`, p);
    return false;
  }
  return true;
}

/** Most parsed query texts kept: dashboards send the same few texts again and again, and parsing one costs ~0.1 ms. */
const PARSE_CACHE_SIZE = 256;
const parseCache = new Map<string, AST | string>();

/** The parsed Lucene query of a text, or the parser's message when it does not parse; memoized (least recently used dropped). */
function parsed(q: string): AST | string {
  const hit = parseCache.get(q);
  if (hit !== undefined) {
    parseCache.delete(q);
    parseCache.set(q, hit);
    return hit;
  }
  let result: AST | string;
  try {
    result = parse(q);
  } catch (e) {
    result = (e as Error).message;
  }
  if (parseCache.size >= PARSE_CACHE_SIZE) parseCache.delete(parseCache.keys().next().value as string);
  parseCache.set(q, result);
  return result;
}

/** Checks a `query_string` query text. */
function checkLucene(out: Collector, check: FieldCheck, q: string, p: string): boolean {
  const slash = regexpSlash(q);
  if (slash >= 0) {
    out.add(
      "CS_QUERY_REGEXP",
      `regular expressions are not supported (an unescaped / at ${slash}; escape it as \\/ or quote the value)`,
      p,
    );
    return false;
  }
  const ast = parsed(q);
  if (typeof ast === "string") {
    out.add("CS_QUERY_INVALID", `query_string does not parse: ${ast}`, p);
    return false;
  }
  return walk(out, check, ast, p);
}

/** Checks a `simple_query_string` query text: only its proximity (it names no fields and has no regular expressions). */
function checkSimple(out: Collector, q: string, p: string): boolean {
  for (const m of q.matchAll(/"~(\d+)/g)) {
    if (Number(m[1]) > QUERY_STRING_LIMITS.maxSlop) {
      out.add("CS_QUERY_SLOP_TOO_LARGE", `phrase proximity ~${m[1]} is above ${QUERY_STRING_LIMITS.maxSlop}`, p);
      return false;
    }
  }
  return true;
}

/**
 * Validates a `query_string` (`simple: false`) or `simple_query_string` (`simple: true`) clause body.
 * @param out - the problems of the body.
 * @param check - the field check in the clause's nested scope.
 * @param body - the clause body (any JSON).
 * @param p - JSON path of the clause body.
 * @returns the sanitized clause (`query_string` with `allow_leading_wildcard: false`), or undefined when refused.
 */
export function queryStringClause(out: Collector, check: FieldCheck, body: unknown, p: string, simple: boolean): EsQuery | undefined {
  const name = simple ? "simple_query_string" : "query_string";
  if (!isJsonObject(body) || typeof body.query !== "string") {
    out.add("CS_QUERY_INVALID", `${name} takes {"query": <text>, …}`, p);
    return undefined;
  }
  const qp = jsonPath(p, "query");
  if (body.query.length > QUERY_STRING_LIMITS.maxLength) {
    out.add("CS_QUERY_INVALID", `${name}.query is longer than ${QUERY_STRING_LIMITS.maxLength} characters`, qp);
    return undefined;
  }
  const options = simple ? SIMPLE_OPTIONS : QS_OPTIONS;
  const result: Record<string, unknown> = { query: body.query };
  let ok = true;
  for (const [k, v] of Object.entries(body)) {
    const kp = jsonPath(p, k);
    if (k === "query") continue;
    if (k === "default_field" && !simple) {
      if (typeof v !== "string" || (v !== "*" && !fieldName(out, check, v, kp))) {
        if (typeof v !== "string") out.add("CS_QUERY_INVALID", "default_field must be a field name", kp);
        ok = false;
      } else result[k] = v;
    } else if (k === "fields") {
      if (!Array.isArray(v) || v.length === 0 || v.length > QUERY_STRING_LIMITS.maxFields || v.some((f) => typeof f !== "string")) {
        out.add("CS_QUERY_INVALID", `fields must be an array of 1..${QUERY_STRING_LIMITS.maxFields} field names`, kp);
        ok = false;
      } else if ((v as string[]).every((f, i) => fieldName(out, check, f, jsonPath(kp, i)))) result[k] = v;
      else ok = false;
    } else if (k === "allow_leading_wildcard" && !simple) {
      if (v !== false) {
        out.add("CS_QUERY_LEADING_WILDCARD", "allow_leading_wildcard can only be false", kp);
        ok = false;
      }
    } else if (options.includes(k)) {
      const [accepts, what] = OPTIONS[k] as [(v: unknown) => boolean, string];
      if (!accepts(v)) {
        out.add("CS_QUERY_INVALID", `${name}.${k} must be ${what}`, kp);
        ok = false;
      } else if (k === "phrase_slop" && (v as number) > QUERY_STRING_LIMITS.maxSlop) {
        out.add("CS_QUERY_SLOP_TOO_LARGE", `phrase_slop is at most ${QUERY_STRING_LIMITS.maxSlop}`, kp);
        ok = false;
      } else result[k] = v;
    } else {
      const why = k === "rewrite" || k === "boost" || k === "_name" ? "not supported" : "unknown";
      out.add(
        "CS_QUERY_INVALID",
        `${name} option ${k} is ${why}; allowed: query, ${simple ? "" : "default_field, "}fields, ${options.join(", ")}`,
        kp,
      );
      ok = false;
    }
  }
  if (!ok) return undefined;
  if (!(simple ? checkSimple(out, body.query, qp) : checkLucene(out, check, body.query, qp))) return undefined;
  if (!simple) result.allow_leading_wildcard = false;
  return { [name]: result };
}
