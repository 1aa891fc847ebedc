/**
 * The field allowlist of the query language, derived from the index mappings
 * (pipeline/index/mappings.ts): a field can be queried exactly when {@link mappedFields} lists it
 * for one of the requested record kinds and it is searchable.
 * @module
 */

import { MAPPINGS, type MappedField, mappedFields } from "../../es/mappings.js";
import type { RecordKind } from "../../lib/records.js";

/** ES field types that have doc values and can be sorted on (text and nested cannot). */
export const SORTABLE_TYPES: ReadonlySet<string> = new Set(["keyword", "long", "integer", "double", "date", "boolean"]);

/** ES field types a `range` clause accepts. */
export const RANGE_TYPES: ReadonlySet<string> = new Set(["long", "integer", "double", "date"]);

/** What the query language knows about one field path, merged over the requested kinds. */
export interface FieldInfo {
  /** Dotted path, e.g. `blockNumber.num`, `address.raw`, `args.value.hex`. */
  path: string;
  /** ES type (the first kind's when kinds disagree; they do not in the current mappings). */
  type: string;
  /** Enclosing nested path (e.g. `args`), if any. */
  nestedPath?: string;
  /** Whether any requested kind indexes the field (`index: false` fields are not searchable). */
  searchable: boolean;
  /** Whether the field can be sorted on: searchable, doc values, a {@link SORTABLE_TYPES} type, not nested. */
  sortable: boolean;
  /**
   * Whether the field can be aggregated on: searchable, doc values, a {@link SORTABLE_TYPES} type
   * (nested fields too, under a `nested` aggregation of their path).
   */
  aggregatable: boolean;
  /** The kinds (of the requested ones) that map the field. */
  kinds: RecordKind[];
  /** For a `text` field with a `raw` keyword sub-field (e.g. `event`): that sub-field's path. */
  rawKeyword?: string;
}

/** The merged allowlist of one set of record kinds. */
export interface FieldCatalog {
  /** The requested kinds, in request order. */
  kinds: readonly RecordKind[];
  /** Leaf fields (including multi-fields such as `address.raw`) by path. */
  fields: ReadonlyMap<string, FieldInfo>;
  /** Paths of `nested` objects (e.g. `args`). */
  nestedPaths: ReadonlySet<string>;
  /** Paths that exist in `_source`: leaves and their enclosing objects (no multi-fields). */
  sourcePaths: ReadonlySet<string>;
  /** Object paths (enclosing objects such as `blockNumber` or `args.value`). */
  objectPaths: ReadonlySet<string>;
}

type Mapping = Record<string, unknown>;

/** Walks a mapping's `properties` (not multi-`fields`): source paths, object paths, fields without doc values. */
function walkSource(
  props: Record<string, Mapping>,
  prefix: string,
  out: { source: Set<string>; objects: Set<string>; noDocValues: Set<string> },
): void {
  for (const [name, def] of Object.entries(props)) {
    const path = prefix + name;
    out.source.add(path);
    if (def.properties) {
      out.objects.add(path);
      walkSource(def.properties as Record<string, Mapping>, `${path}.`, out);
    } else if (def.doc_values === false) {
      out.noDocValues.add(path);
    }
  }
}

const cache = new Map<string, FieldCatalog>();

/**
 * The merged field allowlist of one or more record kinds (for `block,tx`, a field valid in any of
 * them). Memoized per kind list.
 * @param kinds - one or more distinct record kinds.
 */
export function fieldCatalog(kinds: readonly RecordKind[]): FieldCatalog {
  const key = kinds.join(",");
  const hit = cache.get(key);
  if (hit) return hit;
  const fields = new Map<string, FieldInfo>();
  const nestedPaths = new Set<string>();
  const walked = { source: new Set<string>(), objects: new Set<string>(), noDocValues: new Set<string>() };
  for (const kind of kinds) {
    const props = (MAPPINGS[kind] as { properties: Record<string, Mapping> }).properties;
    const noDocValues = new Set<string>();
    walkSource(props, "", { source: walked.source, objects: walked.objects, noDocValues });
    const all: MappedField[] = mappedFields(kind);
    for (const f of all) {
      if (f.type === "nested") {
        nestedPaths.add(f.path);
        continue;
      }
      const aggregatable = f.searchable && SORTABLE_TYPES.has(f.type) && !noDocValues.has(f.path);
      const sortable = aggregatable && f.nestedPath === undefined;
      const prev = fields.get(f.path);
      if (prev) {
        prev.searchable ||= f.searchable;
        prev.sortable ||= sortable;
        prev.aggregatable ||= aggregatable;
        prev.kinds.push(kind);
        continue;
      }
      const info: FieldInfo = { path: f.path, type: f.type, searchable: f.searchable, sortable, aggregatable, kinds: [kind] };
      if (f.nestedPath !== undefined) info.nestedPath = f.nestedPath;
      fields.set(f.path, info);
    }
  }
  for (const info of fields.values()) {
    const raw = fields.get(`${info.path}.raw`);
    if (info.type === "text" && raw?.type === "keyword") info.rawKeyword = raw.path;
  }
  const catalog: FieldCatalog = { kinds: [...kinds], fields, nestedPaths, sourcePaths: walked.source, objectPaths: walked.objects };
  cache.set(key, catalog);
  return catalog;
}
