/**
 * A saved search's query, checked and compiled: the search API's allowlist and sanitization
 * (`validateQuery`, ./validate.ts, exactly as the search endpoints apply it) followed by the
 * evaluator of es/evaluate.ts (`compileEsQuery`), which refuses with `CS_SEARCH_INEXACT` what it
 * cannot answer exactly as Elasticsearch would. A `terms` lookup by watchlist stays in the query as
 * its placeholder (es/watchlist-lookup.ts): the match stage answers it with the search account's
 * list (pipeline/match/search-index.ts); the routes check that the caller has the list
 * (api/routes/searches/watchlists.ts).
 * @module
 */
import { compileEsQuery, type DocPredicate, type EsQuery, type SearchCompileProblem } from "../../es/evaluate.js";
import type { RecordKind } from "../../lib/records.js";
import type { ValidationResult } from "../../lib/validation/problems.js";
import { validateQuery } from "./validate.js";

/** A saved search's query, compiled for one record kind. */
export interface CompiledSearch {
  kind: RecordKind;
  /** The sanitized query the search API sends to Elasticsearch for the same body (undefined: match all). */
  query: EsQuery | undefined;
  /** Whether a record of {@link CompiledSearch.kind} (its `_source` and `_id`) matches; a watchlist lookup never holds here (no membership lookup). */
  matches: DocPredicate;
}

/**
 * Checks a query against the search API's allowlist for one record kind and compiles it.
 * @param query - the query as a client sends it (any JSON); `{}` or undefined matches every record.
 * @param kind - the record kind the search runs over.
 * @param path - JSON path of the query in the request body (default `query`).
 * @returns the compiled search, or every problem: the search API's `CS_QUERY_*` codes (allowlist)
 *   and `CS_SEARCH_INEXACT` (the evaluator cannot answer exactly; the path names the clause).
 */
export function compileSearchQuery(
  query: unknown,
  kind: RecordKind,
  path = "query",
): ValidationResult<CompiledSearch, SearchCompileProblem> {
  const checked = validateQuery(query ?? {}, [kind], path);
  if (!checked.ok) return { ok: false, errors: checked.errors.map((e) => ({ code: e.code, message: e.message, path: e.path })) };
  const compiled = compileEsQuery(checked.value, kind, path);
  if (!compiled.ok) return compiled;
  return { ok: true, value: { kind, query: checked.value, matches: compiled.value } };
}
