/**
 * The parts of an Elasticsearch `_search` request that the Elasticsearch-compatible routes
 * (api/routes/es/) take beyond the contract's body (api/dsl/validate.ts): pure functions that split
 * them off the body and the query string before the body is validated.
 *
 * - Body keys handled here: `track_total_hits` (true, false or a number: the shape of `hits.total`,
 *   api/search/es-shape.ts `esTotal`), `stored_fields: "_none_"` (hits without `_source`),
 *   `docvalue_fields` (field names, or `{field}`), `pit` (`{id, keep_alive?}`), `fields` and
 *   `highlight` (checked by api/dsl/hit-parts.ts once the kinds are known), `script_fields: {}`
 *   (empty: dropped; any script is refused).
 * - Query-string parameters merged into the body when the body does not have them (Elasticsearch
 *   takes both): `size`, `from`, `sort` (`field`, `field:asc`, comma list), `_source` (`true`,
 *   `false`, a comma list), `_source_includes`, `_source_excludes`, `track_total_hits`,
 *   `stored_fields`, `docvalue_fields`.
 * Source: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-search.html
 * @module
 */

import type { RecordKind } from "../../../lib/records.js";
import { isJsonObject } from "../../../lib/validation/problems.js";
import { fieldCatalog } from "../../dsl/fields.js";
import { apiError } from "../../errors.js";

/** The query string of a search route (every value a string, as Fastify parses it). */
export type EsSearchQuery = Record<string, string | undefined>;

/** A `_search` request split into the contract's body and what is answered or searched differently here. */
export interface EsSearchRequest {
  /** The body for api/dsl/validate.ts (query, sort, size, from, _source, search_after, aggs). */
  body: Record<string, unknown>;
  /** `track_total_hits` (default true). */
  trackTotalHits: boolean | number;
  /** `stored_fields: "_none_"`: hits with only their metadata. */
  metadataOnly: boolean;
  /** `docvalue_fields` names (checked by {@link checkDocvalueFields}). */
  docvalueFields: string[];
  /** `pit`: the point in time to search, as the client gave it. */
  pit?: { id: unknown; keepAlive?: unknown };
  /** `fields`, as the client gave it (checked by api/dsl/hit-parts.ts `validateFields`). */
  fields?: unknown;
  /** `highlight`, as the client gave it (checked by api/dsl/hit-parts.ts `validateHighlight`). */
  highlight?: unknown;
}

/** A query-string number (`"10"`), or the text itself (refused by the validator as not an integer). */
const numberOf = (v: string): number | string => (/^-?\d+$/.test(v) ? Number(v) : v);
const list = (v: string): string[] =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/**
 * `track_total_hits` of the body or query string: true, false or an integer >= 0.
 * @throws {ApiError} 400 CS_BODY_INVALID (body) or CS_BAD_REQUEST (query string) otherwise.
 */
function trackTotalHitsOf(value: unknown, where: "body" | "querystring"): boolean | number {
  if (value === undefined) return true;
  let v = value;
  if (typeof v === "string") v = v === "" || v === "true" ? true : v === "false" ? false : numberOf(v);
  if (typeof v === "boolean" || (typeof v === "number" && Number.isInteger(v) && v >= 0)) return v;
  throw apiError(
    where === "body" ? "CS_BODY_INVALID" : "CS_BAD_REQUEST",
    "track_total_hits must be true, false or an integer >= 0",
    where === "body" ? "track_total_hits" : "querystring.track_total_hits",
  );
}

/** `sort` of the query string (`a,b:desc`) as a body sort. */
function sortOf(value: string): Array<string | Record<string, string>> {
  return list(value).map((item) => {
    const at = item.lastIndexOf(":");
    return at > 0 ? { [item.slice(0, at)]: item.slice(at + 1) } : item;
  });
}

/**
 * Splits a `_search` body and query string (see the module notes). Body values win over query-string ones.
 * @throws {ApiError} 400 CS_BODY_INVALID for a bad `track_total_hits`, `stored_fields` other than
 *   `_none_`, a non-empty `script_fields`, a malformed `docvalue_fields` or `pit`; CS_BAD_REQUEST for a bad query-string value.
 */
export function splitEsSearch(rawBody: unknown, query: EsSearchQuery): EsSearchRequest {
  if (rawBody !== undefined && !isJsonObject(rawBody)) throw apiError("CS_BODY_INVALID", "the body must be a JSON object");
  const { track_total_hits, stored_fields, docvalue_fields, pit, fields, highlight, script_fields, ...body } = (rawBody ?? {}) as Record<
    string,
    unknown
  >;
  // Grafana sends `script_fields: {}` with every raw-data and logs query: no script, nothing to do.
  if (script_fields !== undefined && !(isJsonObject(script_fields) && Object.keys(script_fields).length === 0))
    throw apiError("CS_BODY_INVALID", "script_fields are not supported (scripts); only an empty {} is accepted", "script_fields");
  if (query.size !== undefined && body.size === undefined) body.size = numberOf(query.size);
  if (query.from !== undefined && body.from === undefined) body.from = numberOf(query.from);
  if (query.sort !== undefined && body.sort === undefined) body.sort = sortOf(query.sort);
  if (body._source === undefined) {
    const includes = query._source_includes !== undefined ? list(query._source_includes) : undefined;
    const excludes = query._source_excludes !== undefined ? list(query._source_excludes) : undefined;
    if (query._source === "false") body._source = false;
    else if (includes || excludes) body._source = { ...(includes ? { includes } : {}), ...(excludes ? { excludes } : {}) };
    else if (query._source !== undefined && query._source !== "true" && query._source !== "") body._source = list(query._source);
  }
  const out: EsSearchRequest = {
    body,
    trackTotalHits:
      track_total_hits !== undefined ? trackTotalHitsOf(track_total_hits, "body") : trackTotalHitsOf(query.track_total_hits, "querystring"),
    metadataOnly: false,
    docvalueFields: [],
  };
  const stored = stored_fields ?? (query.stored_fields !== undefined ? list(query.stored_fields) : undefined);
  if (stored !== undefined) {
    const names = typeof stored === "string" ? [stored] : stored;
    if (!Array.isArray(names) || names.length !== 1 || names[0] !== "_none_")
      throw apiError(
        "CS_BODY_INVALID",
        'stored_fields takes only "_none_" (hits without _source): records have no stored fields; use _source or docvalue_fields',
        "stored_fields",
      );
    out.metadataOnly = true;
  }
  const docvalues = docvalue_fields ?? (query.docvalue_fields !== undefined ? list(query.docvalue_fields) : undefined);
  if (docvalues !== undefined) {
    if (!Array.isArray(docvalues))
      throw apiError("CS_BODY_INVALID", "docvalue_fields must be an array of field names or {field}", "docvalue_fields");
    docvalues.forEach((item, i) => {
      const field = isJsonObject(item) ? item.field : item;
      const extra = isJsonObject(item) ? Object.keys(item).find((k) => k !== "field") : undefined;
      if (typeof field !== "string" || field === "" || extra !== undefined)
        throw apiError(
          "CS_BODY_INVALID",
          "a docvalue_fields item is a field name or {field} (format is not supported)",
          `docvalue_fields[${i}]${extra ? `.${extra}` : ""}`,
        );
      if (!out.docvalueFields.includes(field)) out.docvalueFields.push(field);
    });
  }
  if (fields !== undefined) out.fields = fields;
  if (highlight !== undefined) out.highlight = highlight;
  if (pit !== undefined) {
    if (!isJsonObject(pit) || typeof pit.id !== "string" || Object.keys(pit).some((k) => k !== "id" && k !== "keep_alive"))
      throw apiError("CS_BODY_INVALID", "pit must be {id, keep_alive?}: the id answered by _pit", "pit");
    out.pit = pit.keep_alive === undefined ? { id: pit.id } : { id: pit.id, keepAlive: pit.keep_alive };
  }
  return out;
}

/**
 * Checks `docvalue_fields` names against the kinds' fields: each must have doc values (the
 * sortable fields of api/dsl/fields.ts: keyword, numeric, date, boolean, outside nested objects).
 * @throws {ApiError} 400 CS_BODY_INVALID naming the first field that has none.
 */
export function checkDocvalueFields(names: readonly string[], kinds: readonly RecordKind[]): void {
  if (names.length === 0) return;
  const catalog = fieldCatalog(kinds);
  names.forEach((name, i) => {
    if (!catalog.fields.get(name)?.sortable)
      throw apiError(
        "CS_BODY_INVALID",
        `docvalue_fields: ${JSON.stringify(name)} is not a field with doc values of these kinds (keyword, numeric, date or boolean fields outside args)`,
        `docvalue_fields[${i}]`,
      );
  });
}
