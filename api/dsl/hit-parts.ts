/**
 * The parts of a hit the Elasticsearch-compatible routes (api/routes/es/) add on request, besides
 * `_source`: the body keys `fields` (values read through the mappings, e.g. eland's `to_pandas`,
 * Grafana's raw data and logs) and `highlight` (Grafana's logs). Pure allowlist checks over the
 * kinds' field catalogue (./fields.ts), each problem with a stable code and the JSON path.
 *
 * Sources: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-fields.html#search-fields-param
 * and https://www.elastic.co/guide/en/elasticsearch/reference/8.19/highlighting.html.
 * @module
 */
import type { RecordKind } from "../../lib/records.js";
import { jsonPath } from "../../lib/validation/path.js";
import { isJsonObject } from "../../lib/validation/problems.js";
import { Collector, kindsLabel } from "./collector.js";
import { type FieldCatalog, fieldCatalog } from "./fields.js";
import type { ValidationResult } from "./plan.js";
import { DATE_FORMAT } from "./query.js";

/** Most items of `fields` and of `highlight.fields`. */
export const MAX_HIT_FIELDS = 100;

/** One sanitized item of `fields`: a field name or `*` pattern, and a date format. */
export interface EsFieldAndFormat {
  field: string;
  format?: string;
}

/** A field name or a `*` pattern (letters, digits, `_`, `.`, `@`, `-`, `*`). */
const FIELD_PATTERN = /^[A-Za-z0-9_.@*-]{1,256}$/;

/** A `*` pattern as a regular expression over whole names. */
export function globRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\-]/g, "\\$&").replace(/\*/g, ".*")}$`);
}

/** Checks a name or pattern against the catalogue: a known leaf field, or a pattern matching at least one. */
function knownField(catalog: FieldCatalog, out: Collector, name: unknown, path: string, what: string): name is string {
  if (typeof name !== "string" || !FIELD_PATTERN.test(name)) {
    out.add("CS_BODY_INVALID", `${what} takes field names or * patterns`, path);
    return false;
  }
  if (name.includes("*")) {
    const re = globRegExp(name);
    if ([...catalog.fields.keys()].some((f) => re.test(f))) return true;
  } else if (catalog.fields.has(name)) return true;
  out.add("CS_BODY_INVALID", `${what}: ${JSON.stringify(name)} matches no field of ${kindsLabel(catalog)}`, path);
  return false;
}

/**
 * Validates the body key `fields`: an array of field names or `*` patterns, or `{field, format?,
 * include_unmapped?}` objects (`format`: a date format, e.g. `strict_date_optional_time_nanos` or
 * `epoch_millis`, for date fields; `include_unmapped` accepted and dropped). Each name must be a
 * field of the kinds (api/dsl/fields.ts), each pattern match one. Elasticsearch answers the values
 * in each hit's `fields`, as arrays.
 * @returns the items (duplicates dropped), or `CS_BODY_INVALID` problems at `fields[i]…`.
 */
export function validateFields(value: unknown, kinds: readonly RecordKind[], path = "fields"): ValidationResult<EsFieldAndFormat[]> {
  const out = new Collector();
  if (!Array.isArray(value) || value.length > MAX_HIT_FIELDS) {
    out.add("CS_BODY_INVALID", `fields must be an array of at most ${MAX_HIT_FIELDS} field names, * patterns or {field, format}`, path);
    return out.result([]);
  }
  const catalog = fieldCatalog(kinds);
  const items: EsFieldAndFormat[] = [];
  value.forEach((item, i) => {
    const ip = jsonPath(path, i);
    const obj: Record<string, unknown> = isJsonObject(item) ? item : { field: item };
    const extra = Object.keys(obj).find((k) => k !== "field" && k !== "format" && k !== "include_unmapped");
    if (extra !== undefined) {
      out.add("CS_BODY_INVALID", `unknown fields option ${extra}; accepted: field, format, include_unmapped`, jsonPath(ip, extra));
      return;
    }
    if (!knownField(catalog, out, obj.field, isJsonObject(item) ? jsonPath(ip, "field") : ip, "fields")) return;
    const parsed: EsFieldAndFormat = { field: obj.field };
    if (obj.format !== undefined) {
      const type = catalog.fields.get(obj.field)?.type;
      if (typeof obj.format !== "string" || !DATE_FORMAT.test(obj.format) || (type !== undefined && type !== "date")) {
        out.add(
          "CS_BODY_INVALID",
          "format is a date format (e.g. strict_date_optional_time_nanos, epoch_millis) of a date field",
          jsonPath(ip, "format"),
        );
        return;
      }
      parsed.format = obj.format;
    }
    if (!items.some((x) => x.field === parsed.field && x.format === parsed.format)) items.push(parsed);
  });
  return out.result(items);
}

/** A sanitized `highlight`. */
export type EsHighlight = Record<string, unknown> & { fields: Record<string, Record<string, unknown>> };

/** Most tags of `pre_tags` / `post_tags`, and the longest tag. */
const MAX_TAGS = 10;
const MAX_TAG_LENGTH = 256;

/** Options of `highlight` (top level and per field) and their checks. */
const HIGHLIGHT_OPTIONS: Readonly<Record<string, (v: unknown) => boolean>> = {
  pre_tags: (v) =>
    Array.isArray(v) && v.length > 0 && v.length <= MAX_TAGS && v.every((t) => typeof t === "string" && t.length <= MAX_TAG_LENGTH),
  post_tags: (v) =>
    Array.isArray(v) && v.length > 0 && v.length <= MAX_TAGS && v.every((t) => typeof t === "string" && t.length <= MAX_TAG_LENGTH),
  fragment_size: (v) => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 2_147_483_647,
  number_of_fragments: (v) => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 100,
  require_field_match: (v) => typeof v === "boolean",
  encoder: (v) => v === "default" || v === "html",
  order: (v) => v === "none" || v === "score",
  type: (v) => v === "unified" || v === "plain",
  tags_schema: (v) => v === "styled",
  no_match_size: (v) => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 10_000,
};

/** Why an option is refused (the rest: unknown). */
const HIGHLIGHT_REFUSED: Readonly<Record<string, string>> = {
  highlight_query: "highlight_query is not supported: the search's query is highlighted",
  max_analyzed_offset: "max_analyzed_offset is set by the server",
  matched_fields: "matched_fields is not supported",
  boundary_scanner: "boundary_scanner is not supported",
};

function highlightOptions(spec: Record<string, unknown>, out: Collector, path: string, skip: string[] = []): Record<string, unknown> {
  const opts: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (skip.includes(k)) continue;
    const kp = jsonPath(path, k);
    const check = Object.hasOwn(HIGHLIGHT_OPTIONS, k) ? HIGHLIGHT_OPTIONS[k] : undefined;
    if (!check) {
      const why = Object.hasOwn(HIGHLIGHT_REFUSED, k) ? HIGHLIGHT_REFUSED[k] : `unknown highlight option ${k}`;
      out.add("CS_BODY_INVALID", `${why}; accepted: ${Object.keys(HIGHLIGHT_OPTIONS).join(", ")}`, kp);
    } else if (!check(v)) out.add("CS_BODY_INVALID", `highlight option ${k} has an invalid value`, kp);
    else opts[k] = v;
  }
  return opts;
}

/**
 * Validates `highlight` (a bounded allowlist): `fields` (required: a map of field names, or `*`
 * patterns such as `*`, to option maps), and at the top or per field `pre_tags` / `post_tags` (at
 * most 10 strings of at most 256 characters), `fragment_size` (0..2^31-1), `number_of_fragments`
 * (0..100), `require_field_match`, `encoder`, `order`, `type` (`unified` or `plain`),
 * `tags_schema`, `no_match_size`. Refused: `highlight_query` (the search's own query is what is
 * highlighted: no second query outside the allowlist), `max_analyzed_offset`, `matched_fields`,
 * anything else. Elasticsearch answers each hit's `highlight`: `{<field>: [fragment, …]}`.
 * @returns the sanitized highlight, or `CS_BODY_INVALID` problems at `highlight…`.
 */
export function validateHighlight(value: unknown, kinds: readonly RecordKind[], path = "highlight"): ValidationResult<EsHighlight> {
  const out = new Collector();
  if (!isJsonObject(value) || !isJsonObject(value.fields) || Object.keys(value.fields).length === 0) {
    out.add("CS_BODY_INVALID", "highlight must be an object with fields: {<field or * pattern>: {options}}", path);
    return out.result({ fields: {} });
  }
  const catalog = fieldCatalog(kinds);
  const top = highlightOptions(value, out, path, ["fields"]);
  const fields: Record<string, Record<string, unknown>> = {};
  const fp = jsonPath(path, "fields");
  const names = Object.entries(value.fields);
  if (names.length > MAX_HIT_FIELDS) out.add("CS_BODY_INVALID", `highlight.fields has at most ${MAX_HIT_FIELDS} fields`, fp);
  for (const [name, spec] of names.slice(0, MAX_HIT_FIELDS)) {
    const np = jsonPath(fp, name);
    if (!knownField(catalog, out, name, np, "highlight.fields")) continue;
    if (!isJsonObject(spec)) {
      out.add("CS_BODY_INVALID", "a highlight field's options are an object ({} for none)", np);
      continue;
    }
    fields[name] = highlightOptions(spec, out, np);
  }
  return out.result({ ...top, fields });
}
