/**
 * Pure shaping of Elasticsearch search responses into the contract's hits envelope:
 * `{took, timed_out, _shards, hits: {total, max_score, hits: [{_index, _type, _id, _score, _routing?, _parent?, _source}]}}`.
 *
 * - `_index` is the alias (`indexName(chain, kind, prefix)`), not the backing index of the hit's
 *   block range (es/partitions.ts `aliasOfIndex`): the name the searches and the
 *   Elasticsearch-compatible routes take.
 * - `_type` is the record kind, derived from the index name ({@link kindOfIndex}).
 * - `_routing` and `_parent` are the hash of the containing entity ({@link parentOf}): the block
 *   hash for a tx, the transaction hash for a log or event; absent for a block.
 * - Scores: filter-only queries (and sorted searches) make ES report `max_score` 0 or null and
 *   `_score` 0 or null. When that happens and there are hits, the envelope reports `max_score` 1
 *   and `_score` 1 on every hit (the contract: "for boolean filters it is 1 for returned
 *   records"). Real relevance scores (e.g. of `match`) are passed through. With no hits,
 *   `max_score` is null, as ES reports it.
 * - `_source` is restricted to the requested paths (see {@link filterSource}).
 * - Extensions beyond the contract: a sorted search adds each hit's `sort` values (what
 *   `search_after` takes for the next page) after `_source`; a search with aggregations adds
 *   `aggregations` after `hits`, exactly as Elasticsearch returns them.
 * @module
 */
import type { estypes } from "@elastic/elasticsearch";
import { kindOfIndex } from "../../es/mappings.js";
import { aliasOfIndex } from "../../es/partitions.js";
import { PARENT_FIELD, parentOf, type RecordByKind, type RecordKind } from "../../lib/records.js";
import { globRegExp } from "../dsl/hit-parts.js";

/** Shard counts of a search (ES `_shards`, without failure details). */
export interface ShardsInfo {
  total: number;
  successful: number;
  skipped: number;
  failed: number;
}

/** One element of `hits.hits`. */
export interface EnvelopeHit {
  /** ES index name, e.g. `ethereum-ethereum-mainnet-tx`. */
  _index: string;
  /** Record kind: block, tx, log or event. */
  _type: RecordKind;
  /** Record id: block/tx hash, `<txHash>_l_<logIndex>`, `<txHash>_e_<logIndex>`. */
  _id: string;
  /** Relevance score; 1 for filter-only queries (see module notes). */
  _score: number | null;
  /** Hash of the containing block (tx) or transaction (log, event); absent for blocks. */
  _routing?: string;
  /** Same as `_routing`. */
  _parent?: string;
  /** The record, restricted to the requested `_source` paths. */
  _source: Record<string, unknown>;
  /** Extension, sorted searches only: the hit's sort values, to pass as `search_after` for the next page. */
  sort?: unknown[];
  /** Elasticsearch-compatible routes, `docvalue_fields` only: the requested fields' doc values, as Elasticsearch answers them. */
  fields?: Record<string, unknown>;
  /** Elasticsearch-compatible routes, `highlight` only: the highlighted fragments by field, as Elasticsearch answers them. */
  highlight?: Record<string, string[]>;
}

/** The contract's hits envelope. */
export interface HitsEnvelope {
  /** Milliseconds ES spent on the search (of the first request, for a streamed size -1 search). */
  took: number;
  /** Whether ES hit its search timeout (results may be partial). */
  timed_out: boolean;
  _shards: ShardsInfo;
  hits: {
    /** Exact number of matching records (requests use `track_total_hits: true`). */
    total: number;
    /** See module notes; null when there are no hits. */
    max_score: number | null;
    hits: EnvelopeHit[];
  };
  /** Extension, searches with `aggs` only: ES's aggregation results by name. */
  aggregations?: Record<string, unknown>;
}

/** Options of {@link shapeHit} and {@link shapeEnvelope}. */
export interface ShapeOptions {
  /** `_source` paths to keep (leaf or object paths); absent or empty keeps the whole record. */
  source?: readonly string[];
  /** Report `_score` 1 for every hit (see {@link filterOnlyScores}). Computed by {@link shapeEnvelope}. */
  unitScores?: boolean;
  /** Copy each hit's `sort` values (sorted searches, for `search_after`). */
  sortValues?: boolean;
  /** `_source` paths to drop (after {@link source}); see {@link excludeSource}. */
  sourceExcludes?: readonly string[];
  /** Fields of the hit's `fields` (the request's `docvalue_fields`) to answer as `fields`; absent: none. */
  fields?: readonly string[];
  /** Names or `*` patterns of the request's `fields`: the hit's `fields` they match are answered too. */
  fieldPatterns?: readonly string[];
  /** Copy each hit's `highlight` (a request with `highlight`). */
  highlight?: boolean;
}

/**
 * Whether the scores of a result are those of a filter-only (or sorted) search: `max_score` 0 or
 * null while there are hits. Then the envelope reports 1.
 */
export function filterOnlyScores(maxScore: number | null | undefined, hitCount: number): boolean {
  return hitCount > 0 && (maxScore === null || maxScore === undefined || maxScore === 0);
}

/** `_shards` without failure details (they may reveal internals). Missing counts are 0. */
export function shapeShards(shards: Partial<estypes.ShardStatistics> | undefined): ShardsInfo {
  return {
    total: shards?.total ?? 0,
    successful: shards?.successful ?? 0,
    skipped: shards?.skipped ?? 0,
    failed: shards?.failed ?? 0,
  };
}

/** The exact total of a response: `hits.total.value` (or the bare integer of `rest_total_hits_as_int`). */
export function totalOf(total: estypes.SearchTotalHits | number | undefined): number {
  if (typeof total === "number") return total;
  return total?.value ?? 0;
}

function pick(value: unknown, parts: readonly string[][]): unknown {
  if (parts.some((p) => p.length === 0)) return value;
  if (Array.isArray(value)) return value.map((v) => pick(v, parts)).filter((v) => v !== undefined);
  if (typeof value !== "object" || value === null) return undefined;
  const out: Record<string, unknown> = {};
  const src = value as Record<string, unknown>;
  const byKey = new Map<string, string[][]>();
  for (const p of parts) {
    const [head, ...rest] = p as [string, ...string[]];
    const list = byKey.get(head) ?? [];
    list.push(rest);
    byKey.set(head, list);
  }
  // In the record's key order, as ES's own `_source` filtering keeps it.
  for (const key of Object.keys(src)) {
    const rests = byKey.get(key);
    if (!rests) continue;
    const v = pick(src[key], rests);
    if (v !== undefined) out[key] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Restricts a record to the given dotted paths, like ES `_source` includes without wildcards
 * (kept keys stay in the record's order, whatever the order of the paths):
 * `blockNumber` keeps the whole object, `blockNumber.num` only `num` inside it, `args.name`
 * keeps `name` in every element of the `args` array. Objects left empty are dropped. Pure.
 * @param source - the full record.
 * @param paths - dotted paths; absent or empty returns `source` unchanged.
 */
export function filterSource(source: Record<string, unknown>, paths?: readonly string[]): Record<string, unknown> {
  if (!paths || paths.length === 0) return source;
  const picked = pick(
    source,
    paths.map((p) => p.split(".")),
  );
  return (picked as Record<string, unknown> | undefined) ?? {};
}

/**
 * Drops the given dotted paths from a record, like ES `_source` excludes without wildcards:
 * `blockNumber` drops the whole object, `blockNumber.raw` only `raw` inside it, `args.value` the
 * `value` of every element of `args`. Objects left empty are dropped. Pure: `source` is not
 * changed (only the objects on the paths are copied).
 * @param source - the record (possibly already restricted by {@link filterSource}).
 * @param paths - dotted paths; absent or empty returns `source` unchanged.
 */
export function excludeSource(source: Record<string, unknown>, paths?: readonly string[]): Record<string, unknown> {
  if (!paths || paths.length === 0) return source;
  const drop = (value: unknown, parts: readonly string[][]): unknown => {
    if (parts.some((p) => p.length === 0)) return undefined;
    if (Array.isArray(value)) return value.map((v) => drop(v, parts)).filter((v) => v !== undefined);
    if (typeof value !== "object" || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const rests = parts.filter((p) => p[0] === key).map((p) => p.slice(1));
      if (rests.length === 0) out[key] = v;
      else {
        const kept = drop(v, rests);
        if (kept !== undefined && !(isEmptyObject(kept) && !isEmptyObject(v))) out[key] = kept;
      }
    }
    return out;
  };
  return drop(
    source,
    paths.map((p) => p.split(".")),
  ) as Record<string, unknown>;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

/**
 * The parent hash carried in a hit's `fields` (the search's `docvalue_fields`, see `parentFields`
 * in api/search/search.ts): the first value of the kind's {@link PARENT_FIELD}.
 */
function parentFromFields(kind: RecordKind, fields: Record<string, unknown> | undefined): string | undefined {
  const name = PARENT_FIELD[kind];
  const v = name && fields ? fields[name] : undefined;
  return Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;
}

/**
 * Shapes one ES hit (`_routing`/`_parent` from its `fields` when the search asked for the parent
 * fields as `docvalue_fields`, else from its `_source`).
 * @throws {Error} when the hit's index is not a chainsift index (no kind suffix).
 */
export function shapeHit(hit: estypes.SearchHit<unknown>, opts: ShapeOptions = {}): EnvelopeHit {
  const kind = kindOfIndex(hit._index);
  if (!kind) throw new Error(`index ${hit._index} is not a record index`);
  const source = (hit._source ?? {}) as Record<string, unknown>;
  const parent = parentFromFields(kind, hit.fields) ?? parentOf(kind, source as unknown as RecordByKind[typeof kind]);
  const score = opts.unitScores ? 1 : (hit._score ?? null);
  const out: EnvelopeHit = { _index: aliasOfIndex(hit._index), _type: kind, _id: hit._id ?? "", _score: score, _source: source };
  if (typeof parent === "string") {
    out._routing = parent;
    out._parent = parent;
  }
  // Keep the contract's key order: _index, _type, _id, _score, _routing?, _parent?, _source, then the sort extension.
  const { _source, ...head } = out;
  const shaped: EnvelopeHit = { ...head, _source: excludeSource(filterSource(_source, opts.source), opts.sourceExcludes) };
  if (opts.sortValues && Array.isArray(hit.sort)) shaped.sort = hit.sort;
  if ((opts.fields && opts.fields.length > 0) || (opts.fieldPatterns && opts.fieldPatterns.length > 0)) {
    const fields: Record<string, unknown> = {};
    for (const name of opts.fields ?? []) if (hit.fields && hit.fields[name] !== undefined) fields[name] = hit.fields[name];
    if (opts.fieldPatterns && hit.fields) {
      const patterns = opts.fieldPatterns.map(globRegExp);
      for (const [name, v] of Object.entries(hit.fields)) if (patterns.some((re) => re.test(name))) fields[name] = v;
    }
    shaped.fields = fields;
  }
  if (opts.highlight && hit.highlight) shaped.highlight = hit.highlight;
  return shaped;
}

/**
 * Shapes an ES search response (made with `track_total_hits: true`) into the hits envelope.
 * @param res - the ES response.
 * @param opts - `source`: paths to keep; `sourceExcludes`: paths to drop; `sortValues`: copy hits'
 *   sort values; `fields`: doc-value fields to answer; `unitScores` is computed here from the response. `aggregations` of the response are passed through when present.
 */
export function shapeEnvelope(res: estypes.SearchResponse<unknown>, opts: Omit<ShapeOptions, "unitScores"> = {}): HitsEnvelope {
  const hits = res.hits.hits;
  const unitScores = filterOnlyScores(res.hits.max_score, hits.length);
  const envelope: HitsEnvelope = {
    took: res.took,
    timed_out: res.timed_out,
    _shards: shapeShards(res._shards),
    hits: {
      total: totalOf(res.hits.total),
      max_score: unitScores ? 1 : hits.length === 0 ? null : (res.hits.max_score ?? null),
      hits: hits.map((h) => shapeHit(h, { ...opts, unitScores })),
    },
  };
  if (res.aggregations) envelope.aggregations = res.aggregations as Record<string, unknown>;
  return envelope;
}
