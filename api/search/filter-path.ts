/**
 * Elasticsearch's `filter_path` response filtering, as a pure function over a JSON value
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#common-options-response-filtering):
 * - a comma-separated list of dotted paths (`took,hits.hits._id`); arrays are crossed transparently
 *   (`hits.hits._source` keeps `_source` of every hit);
 * - `*` inside a segment matches any characters of one key (`hits.hits._sou*`, `*.total`);
 * - `**` matches any number of keys, none included (`**._id`, `hits.**.num`);
 * - a path starting with `-` excludes what it matches. With inclusions and exclusions, the
 *   inclusions are applied first, then the exclusions.
 * Objects and arrays left empty by inclusion are dropped (ES does not write them); a response of
 * which nothing matches is `{}`.
 * No npm library implements these semantics (json-mask, the closest, has another syntax and no
 * `**` nor exclusions), hence this module.
 * @module
 */

/** A parsed `filter_path`: the segments of each inclusion and exclusion. */
export interface FilterPath {
  includes: string[][];
  excludes: string[][];
}

/**
 * Parses a `filter_path` value (comma list; blank items are ignored).
 * @returns the inclusions and exclusions; both empty for an empty value (no filtering).
 */
export function parseFilterPath(value: string): FilterPath {
  const out: FilterPath = { includes: [], excludes: [] };
  for (const raw of value.split(",")) {
    const item = raw.trim();
    if (item === "" || item === "-") continue;
    if (item.startsWith("-")) out.excludes.push(item.slice(1).split("."));
    else out.includes.push(item.split("."));
  }
  return out;
}

const globs = new Map<string, RegExp>();
/** Whether a segment pattern (with `*` wildcards) matches a key. */
function segmentMatches(pattern: string, key: string): boolean {
  if (!pattern.includes("*")) return pattern === key;
  let re = globs.get(pattern);
  if (!re) {
    if (globs.size > 1000) globs.clear();
    re = new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`, "s");
    globs.set(pattern, re);
  }
  return re.test(key);
}
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether a pattern is used up (matches the value it reached as a whole): empty, or only `**`. */
const done = (p: readonly string[]): boolean => p.every((s) => s === "**");

/** The rest of each pattern after matching `key` (a `**` may consume it and stay, or match nothing). */
function advance(patterns: readonly (readonly string[])[], key: string): string[][] {
  const out: string[][] = [];
  const add = (p: readonly string[]): void => {
    if (p.length === 0) return;
    const [head, ...rest] = p as [string, ...string[]];
    if (head === "**") {
      out.push([...p]); // ** takes this key and may take more
      add(rest); // ** takes no key: the rest must match this one
    } else if (segmentMatches(head, key)) out.push(rest);
  };
  for (const p of patterns) add(p);
  return out;
}

function include(value: unknown, patterns: readonly (readonly string[])[]): unknown {
  if (patterns.some(done)) return value;
  if (Array.isArray(value)) {
    const kept = value.map((v) => include(v, patterns)).filter((v) => v !== undefined);
    return kept.length > 0 ? kept : undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [key, v] of Object.entries(value)) {
    const next = advance(patterns, key);
    if (next.length === 0) continue;
    const kept = include(v, next);
    if (kept !== undefined) {
      out[key] = kept;
      any = true;
    }
  }
  return any ? out : undefined;
}

function exclude(value: unknown, patterns: readonly (readonly string[])[]): unknown {
  if (patterns.some(done)) return undefined;
  if (Array.isArray(value)) return value.map((v) => exclude(v, patterns)).filter((v) => v !== undefined);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const next = advance(patterns, key);
    if (next.length === 0) out[key] = v;
    else {
      const kept = exclude(v, next);
      if (kept !== undefined) out[key] = kept;
    }
  }
  return out;
}

/**
 * Applies a `filter_path` to a response body (see the module notes). Pure: `body` is not changed.
 * @param body - the response (a JSON value).
 * @param filter - the parsed filter ({@link parseFilterPath}) or the raw `filter_path` string.
 * @returns the filtered response; `body` itself when the filter is empty; `{}` when nothing is included.
 */
export function applyFilterPath(body: unknown, filter: FilterPath | string): unknown {
  const f = typeof filter === "string" ? parseFilterPath(filter) : filter;
  let out = body;
  if (f.includes.length > 0) out = include(out, f.includes) ?? {};
  if (f.excludes.length > 0) out = exclude(out, f.excludes) ?? {};
  return out;
}
