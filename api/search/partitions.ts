/**
 * Partition pruning of the searches (issue 22): the backing indices a search names instead of each
 * kind's alias when its query constrains the block number (es/pruning.ts, exact semantics), so that
 * Elasticsearch searches only the partitions that can hold matches. Used by every search path: the
 * contract's searches (sizes ≥ 0 and the `size: -1` stream), the Elasticsearch-compatible `_search`,
 * `_count` and `_msearch` ({@link prunedTarget}).
 *
 * Each alias's layout (blocks per partition, the migrated index's last block) is read from its
 * backing indices' mapping `_meta` (es/partitions.ts `readLayout`), cached per client for
 * {@link LAYOUT_TTL_MS}. The layout of an alias never changes while it exists (the index stage
 * refuses another N: es/partitions.ts `ensureAlias`), so the cache only risks staleness when an
 * alias is deleted and made again within that time. A name that does not exist (a partition not
 * created yet) is skipped by Elasticsearch (`ignore_unavailable`). Whenever pruning is not exact
 * (no layout, a query that does not constrain the block number, an interval unbounded above, more
 * than {@link MAX_PARTITIONS} partitions, no partition at all) the alias is searched, and
 * Elasticsearch's can-match phase (`pre_filter_shard_size: 1`) still skips the shards a range misses.
 * Hits' `_index` is the alias either way (api/search/envelope.ts).
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import { partitionIndexName, readLayout } from "../../es/partitions.js";
import { BLOCK_FIELD, blockIntervalsOf, type PartitionLayout, partitionsOfIntervals } from "../../es/pruning.js";
import type { SearchTarget } from "./search.js";

/** How long a read layout is used before it is read again, in milliseconds. */
export const LAYOUT_TTL_MS = 10_000;
/** Most backing indices named for one kind; more: the alias. */
export const MAX_PARTITIONS = 32;
/** Most characters of the index list (it goes in the request line, which Elasticsearch caps at 4 KB); longer: the aliases. */
export const MAX_INDEX_CHARS = 2_500;

type Layouts = Map<string, { at: number; layout: Promise<PartitionLayout | undefined> }>;
const caches = new WeakMap<Client, Layouts>();

/** The cached layout of an alias (undefined: not partitioned, or unknown); a failed read is not cached. */
function layoutOf(es: Client, alias: string, now = Date.now()): Promise<PartitionLayout | undefined> {
  let cache = caches.get(es);
  if (!cache) {
    cache = new Map();
    caches.set(es, cache);
  }
  const hit = cache.get(alias);
  if (hit && now - hit.at < LAYOUT_TTL_MS) return hit.layout;
  if (cache.size > 1000) cache.clear();
  const layout = readLayout(es, alias).catch(() => {
    cache.delete(alias);
    return undefined;
  });
  cache.set(alias, { at: now, layout });
  return layout;
}

/**
 * The indices a search over `target` names for `query`: per kind, the backing indices of the
 * partitions that can hold matches, or the alias (module notes). Never empty when `target.indices`
 * is not.
 * @param es - the client (its layouts are cached with it).
 * @param target - the kinds and their aliases.
 * @param query - the validated query (undefined: match all).
 */
export async function searchIndices(es: Client, target: SearchTarget, query: unknown): Promise<string[]> {
  const out = await Promise.all(
    target.kinds.map(async (kind, i) => {
      const alias = target.indices[i] as string;
      const intervals = blockIntervalsOf(query, BLOCK_FIELD[kind]);
      if (!intervals) return [alias];
      const layout = await layoutOf(es, alias);
      const parts = layout && partitionsOfIntervals(intervals, layout, MAX_PARTITIONS);
      return parts && parts.length > 0 ? parts.map((p) => partitionIndexName(alias, p)) : [alias];
    }),
  );
  const names = out.flat();
  return names.join(",").length > MAX_INDEX_CHARS ? [...target.indices] : names;
}

/** `target` with the indices {@link searchIndices} names for `query`. */
export async function prunedTarget(es: Client, target: SearchTarget, query: unknown): Promise<SearchTarget> {
  return { ...target, indices: await searchIndices(es, target, query) };
}
