/**
 * Pure parts of the introspection routes (api/routes/es/introspect.ts): the public mapping of a
 * record kind, `_field_caps` computed from it, and `_cat` tables. Everything is derived from the
 * explicit mappings of es/mappings.ts, so the answers cannot drift from what is indexed (an
 * integration test compares them with what Elasticsearch reports for the same indices).
 *
 * Sources (Elasticsearch 8.19):
 * - mapping: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-get-mapping.html
 * - field caps: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/search-field-caps.html
 * - cat: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/cat.html and
 *   https://www.elastic.co/guide/en/elasticsearch/reference/8.19/cat-indices.html
 * and the answers of the Elasticsearch 8.19.4 the stack runs, for an index with the same mapping.
 * @module
 */
import { MAPPINGS } from "../../../es/mappings.js";
import type { RecordKind } from "../../../lib/records.js";
import { apiError } from "../../errors.js";
import { wildcardMatcher } from "./indices.js";

type Mapping = Record<string, unknown>;

/** Sorts the `properties` (and multi-`fields`) of a mapping by name, as Elasticsearch returns them; other keys keep their order. */
function sortedMapping(def: Mapping): Mapping {
  const out: Mapping = {};
  for (const [key, value] of Object.entries(def)) {
    if ((key === "properties" || key === "fields") && typeof value === "object" && value !== null) {
      const props = value as Record<string, Mapping>;
      out[key] = Object.fromEntries(
        Object.keys(props)
          .sort()
          .map((name) => [name, sortedMapping(props[name] as Mapping)]),
      );
    } else out[key] = value;
  }
  return out;
}

/**
 * The mapping of a kind as `GET /<index>/_mapping` answers it: the explicit mapping of
 * es/mappings.ts (`dynamic: strict` and every property; none of them is internal: each is a field
 * of the record a search returns), properties sorted by name as Elasticsearch writes them. The
 * backing indices' `_meta` (their partition size, es/partitions.ts) is not shown.
 */
export function publicMapping(kind: RecordKind): Mapping {
  return sortedMapping(MAPPINGS[kind]);
}

/** The capabilities of one field in one index, as `_field_caps` reports them per type. */
export interface FieldCap {
  /** Elasticsearch field type: `keyword`, `long`, `object`, `nested`, `_id`, … */
  type: string;
  /** Whether the field is a metadata field (`_id`, `_index`, `_source`). */
  metadata_field: boolean;
  /** Whether the field is indexed for search (false for objects, nested objects, `index: false` fields). */
  searchable: boolean;
  /** Whether the field has doc values for aggregations and sorting (false for text, objects, `doc_values: false`). */
  aggregatable: boolean;
}

/**
 * The metadata fields reported, with Elasticsearch 8.19's capabilities for them: `_id` (the query
 * allowlist takes it in `term`, `terms` and `ids`), `_index` and `_source`. Elasticsearch's other
 * metadata fields (`_seq_no`, `_version`, `_routing`, `_ignored`, `_tier`, …) are internal here
 * and not listed.
 */
export const METADATA_FIELDS: Readonly<Record<string, FieldCap>> = {
  _id: { type: "_id", metadata_field: true, searchable: true, aggregatable: false },
  _index: { type: "_index", metadata_field: true, searchable: true, aggregatable: true },
  _source: { type: "_source", metadata_field: true, searchable: false, aggregatable: false },
};

/** Field types with doc values by default (aggregatable unless `doc_values: false`). */
const DOC_VALUE_TYPES = new Set(["keyword", "long", "integer", "short", "byte", "double", "float", "date", "boolean", "ip"]);

const capsCache = new Map<RecordKind, ReadonlyMap<string, FieldCap>>();

/**
 * Every field of a kind with its capabilities, as Elasticsearch reports them in `_field_caps`:
 * object and nested paths (`blockNumber`, `args`, `args.value`: neither searchable nor
 * aggregatable), leaves and multi-fields (`from.raw`), and {@link METADATA_FIELDS}. Memoized.
 */
export function kindFieldCaps(kind: RecordKind): ReadonlyMap<string, FieldCap> {
  const hit = capsCache.get(kind);
  if (hit) return hit;
  const out = new Map<string, FieldCap>(Object.entries(METADATA_FIELDS));
  const leaf = (type: string, def: Mapping): FieldCap => ({
    type,
    metadata_field: false,
    searchable: def.index !== false,
    aggregatable: DOC_VALUE_TYPES.has(type) && def.doc_values !== false,
  });
  const walk = (props: Record<string, Mapping>, prefix: string): void => {
    for (const [name, def] of Object.entries(props)) {
      const path = prefix + name;
      const type = (def.type as string | undefined) ?? "object";
      if (def.properties) {
        out.set(path, { type, metadata_field: false, searchable: false, aggregatable: false });
        walk(def.properties as Record<string, Mapping>, `${path}.`);
        continue;
      }
      out.set(path, leaf(type, def));
      for (const [sub, subDef] of Object.entries((def.fields as Record<string, Mapping> | undefined) ?? {}))
        out.set(`${path}.${sub}`, leaf(subDef.type as string, subDef));
    }
  };
  walk((MAPPINGS[kind] as { properties: Record<string, Mapping> }).properties, "");
  capsCache.set(kind, out);
  return out;
}

/** One type entry of a field in the `_field_caps` answer. */
export interface FieldCapsEntry extends FieldCap {
  /** The indices with this type, when the field has several types (or is unmapped in some, with `include_unmapped`). */
  indices?: string[];
  /** When only some indices of this type are searchable: the others. */
  non_searchable_indices?: string[];
  /** When only some indices of this type are aggregatable: the others. */
  non_aggregatable_indices?: string[];
}

/** The `_field_caps` answer. */
export interface FieldCapsResponse {
  /** The indices looked at, sorted. */
  indices: string[];
  /** Field path → type → capabilities. */
  fields: Record<string, Record<string, FieldCapsEntry>>;
}

/**
 * The field names of a `fields` parameter: a comma list (query string) or an array (body) of names
 * and `*` patterns.
 * @throws {ApiError} 400 CS_BAD_REQUEST when there is none (Elasticsearch: "no fields specified").
 */
export function fieldPatterns(fields: unknown, path: string): string[] {
  const list = (Array.isArray(fields) ? fields : typeof fields === "string" ? fields.split(",") : [])
    .filter((f): f is string => typeof f === "string")
    .map((f) => f.trim())
    .filter((f) => f !== "");
  if (list.length === 0) throw apiError("CS_BAD_REQUEST", "no fields specified: give fields=<name or pattern>[,…] (e.g. *)", path);
  return list;
}

/**
 * `_field_caps` over some indices (Elasticsearch 8.19's answer shape, see module notes): the fields
 * matching any pattern, plus the object and nested paths enclosing a matched field (as
 * Elasticsearch adds them); per field, one entry per type, with `indices` when there are several
 * types, `non_searchable_indices` / `non_aggregatable_indices` when the indices of a type disagree,
 * and (with `includeUnmapped`) an `unmapped` entry naming the indices without the field.
 * @param indices - the index names and their kinds.
 * @param patterns - field names and `*` patterns ({@link fieldPatterns}).
 * @param includeUnmapped - `include_unmapped=true`.
 */
export function fieldCaps(
  indices: ReadonlyArray<{ name: string; kind: RecordKind }>,
  patterns: readonly string[],
  includeUnmapped = false,
): FieldCapsResponse {
  const sorted = [...indices].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const matchers = patterns.map(wildcardMatcher);
  const caps = sorted.map((i) => ({ name: i.name, caps: kindFieldCaps(i.kind) }));
  const paths = new Set<string>();
  for (const { caps: c } of caps)
    for (const path of c.keys()) {
      if (!matchers.some((m) => m(path))) continue;
      paths.add(path);
      if (path.startsWith("_")) continue;
      // Enclosing objects and nested objects, as Elasticsearch adds them.
      const parts = path.split(".");
      for (let n = 1; n < parts.length; n++) {
        const parent = parts.slice(0, n).join(".");
        if (caps.some((x) => ["object", "nested"].includes(x.caps.get(parent)?.type ?? ""))) paths.add(parent);
      }
    }
  const fields: FieldCapsResponse["fields"] = {};
  for (const path of [...paths].sort()) {
    const byType = new Map<string, Array<{ name: string; cap: FieldCap }>>();
    const unmapped: string[] = [];
    for (const { name, caps: c } of caps) {
      const cap = c.get(path);
      if (!cap) {
        unmapped.push(name);
        continue;
      }
      const list = byType.get(cap.type) ?? [];
      list.push({ name, cap });
      byType.set(cap.type, list);
    }
    const several = byType.size > 1 || (includeUnmapped && unmapped.length > 0);
    const entries: Record<string, FieldCapsEntry> = {};
    for (const [type, members] of byType) {
      const first = (members[0] as { cap: FieldCap }).cap;
      const searchable = members.every((m) => m.cap.searchable);
      const aggregatable = members.every((m) => m.cap.aggregatable);
      const entry: FieldCapsEntry = { type, metadata_field: first.metadata_field, searchable, aggregatable };
      if (several) entry.indices = members.map((m) => m.name);
      const notSearchable = members.filter((m) => !m.cap.searchable).map((m) => m.name);
      if (!searchable && notSearchable.length < members.length) entry.non_searchable_indices = notSearchable;
      const notAggregatable = members.filter((m) => !m.cap.aggregatable).map((m) => m.name);
      if (!aggregatable && notAggregatable.length < members.length) entry.non_aggregatable_indices = notAggregatable;
      entries[type] = entry;
    }
    if (includeUnmapped && unmapped.length > 0)
      entries.unmapped = { type: "unmapped", metadata_field: false, searchable: false, aggregatable: false, indices: unmapped };
    fields[path] = entries;
  }
  return { indices: sorted.map((i) => i.name), fields };
}

/** One column of a `_cat` table. */
export interface CatColumn {
  /** The column's name (`docs.count`), the JSON key and the text header. */
  name: string;
  /** Other names `h=` and `s=` take (`dc`, `docsCount`). */
  aliases?: readonly string[];
  /** Right-aligned in text (numbers and sizes, as Elasticsearch aligns them). */
  right?: boolean;
  /** A size in bytes: written with {@link formatBytes} in the `bytes` unit, sorted by value. */
  bytes?: boolean;
  /** A number: sorted by value. */
  numeric?: boolean;
  /** Shown without `h=` (Elasticsearch's default columns). */
  default?: boolean;
}

/** A row of a `_cat` table: column name → raw value (sizes in bytes; null is written `null` in JSON, empty in text). */
export type CatRow = Record<string, string | number | null>;

/** The `_cat` query-string parameters honoured. */
export interface CatOptions {
  /** `format=json` (default text). */
  format?: string | undefined;
  /** `v`: a header line (text). */
  v?: string | undefined;
  /** `h=`: comma list of column names, aliases or `*` patterns. */
  h?: string | undefined;
  /** `s=`: comma list of `column[:asc|:desc]`. */
  s?: string | undefined;
  /** `bytes=`: unit of sizes, `b`, `kb`, `mb`, `gb`, `tb`, `pb`; default human-readable. */
  bytes?: string | undefined;
}

const UNITS = ["b", "kb", "mb", "gb", "tb", "pb"] as const;

/**
 * A size as Elasticsearch's `_cat` writes it (`ByteSizeValue`): with `unit`, the whole number of
 * that unit (rounded down); without, the largest unit the size reaches with at most one decimal,
 * `.0` dropped (`227b`, `1.5kb`, `12mb`).
 * @throws {ApiError} 400 CS_BAD_REQUEST for a unit not in b, kb, mb, gb, tb, pb.
 */
export function formatBytes(bytes: number, unit?: string): string {
  if (unit !== undefined) {
    const i = (UNITS as readonly string[]).indexOf(unit);
    if (i < 0) throw apiError("CS_BAD_REQUEST", `bytes takes ${UNITS.join(", ")}`, "querystring.bytes");
    return String(Math.floor(bytes / 1024 ** i));
  }
  let i = 0;
  while (i < UNITS.length - 1 && bytes >= 1024 ** (i + 1)) i++;
  const v = Math.round((bytes / 1024 ** i) * 10) / 10;
  return `${Number.isInteger(v) ? v.toFixed(0) : v.toFixed(1)}${UNITS[i]}`;
}

const truthy = (v: string | undefined): boolean => v === "" || v === "true";

/**
 * A `_cat` answer: a JSON array of objects (`format=json`; values as strings, as Elasticsearch
 * writes them) or a text table (columns separated by one space and padded to their widest cell,
 * numbers right-aligned, the last column not padded on the right; a header line with `v`).
 * @param columns - every column the endpoint has.
 * @param rows - the rows, unsorted.
 * @param options - the query string ({@link CatOptions}).
 * @returns the body and its media type.
 * @throws {ApiError} 400 CS_BAD_REQUEST for an unknown column in `h` or `s`, a bad sort order, a bad
 *   `bytes` unit or a `format` other than json and text.
 */
export function catTable(
  columns: readonly CatColumn[],
  rows: readonly CatRow[],
  options: CatOptions,
): { body: string | Array<Record<string, string | null>>; type: string } {
  const find = (name: string, param: string): CatColumn => {
    const col = columns.find((c) => c.name === name || c.aliases?.includes(name));
    if (!col) throw apiError("CS_BAD_REQUEST", `unknown column [${name}]; columns: ${columns.map((c) => c.name).join(", ")}`, param);
    return col;
  };
  let shown = columns.filter((c) => c.default);
  if (options.h !== undefined && options.h.trim() !== "") {
    shown = [];
    for (const name of options.h.split(",").map((x) => x.trim())) {
      const picked = name.includes("*")
        ? columns.filter((c) => [c.name, ...(c.aliases ?? [])].some(wildcardMatcher(name)))
        : [find(name, "querystring.h")];
      for (const c of picked) if (!shown.includes(c)) shown.push(c);
    }
  }
  const sorted = [...rows];
  if (options.s !== undefined && options.s.trim() !== "") {
    const keys = options.s.split(",").map((spec) => {
      const [name = "", order = "asc"] = spec.trim().split(":");
      if (order !== "asc" && order !== "desc") throw apiError("CS_BAD_REQUEST", `sort order ${order}: asc or desc`, "querystring.s");
      return { col: find(name, "querystring.s"), sign: order === "desc" ? -1 : 1 };
    });
    sorted.sort((a, b) => {
      for (const { col, sign } of keys) {
        const x = a[col.name] ?? null;
        const y = b[col.name] ?? null;
        const c =
          col.bytes || col.numeric
            ? Number(x ?? Number.NEGATIVE_INFINITY) - Number(y ?? Number.NEGATIVE_INFINITY)
            : String(x ?? "").localeCompare(String(y ?? ""));
        if (c !== 0) return c * sign;
      }
      return 0;
    });
  }
  const cell = (col: CatColumn, row: CatRow): string | null => {
    const v = row[col.name] ?? null;
    if (v === null) return null;
    return col.bytes ? formatBytes(Number(v), options.bytes) : String(v);
  };
  if (options.bytes !== undefined) formatBytes(0, options.bytes);
  const format = options.format ?? "text";
  if (format === "json") {
    return {
      body: sorted.map((row) => Object.fromEntries(shown.map((c) => [c.name, cell(c, row)]))),
      type: "application/json; charset=utf-8",
    };
  }
  if (format !== "text" && format !== "txt")
    throw apiError("CS_BAD_REQUEST", `format ${format} is not served; use json or text`, "querystring.format");
  const lines: string[][] = sorted.map((row) => shown.map((c) => cell(c, row) ?? ""));
  if (truthy(options.v)) lines.unshift(shown.map((c) => c.name));
  const widths = shown.map((_, i) => Math.max(0, ...lines.map((l) => (l[i] as string).length)));
  const text = lines
    .map((l) =>
      l
        .map((v, i) => {
          const col = shown[i] as CatColumn;
          const w = widths[i] as number;
          if (col.right) return v.padStart(w);
          return i === l.length - 1 ? v : v.padEnd(w);
        })
        .join(" "),
    )
    .map((line) => `${line}\n`)
    .join("");
  return { body: text, type: "text/plain; charset=UTF-8" };
}
