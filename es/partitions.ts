/**
 * Indices partitioned by block range behind one alias per chain and kind (issue 22).
 *
 * Lucene caps a shard at 2,147,483,519 documents, nested documents included (an event is 4.16
 * Lucene documents, its `args` are nested), and one shard lives on one node. So each kind's records
 * are spread over **backing indices** of N blocks each (N per kind, {@link KindPartitioning}):
 * - the **alias** is today's index name, `indexName(chain, kind, prefix)` (es/mappings.ts): every
 *   search, the Elasticsearch-compatible routes and users' tooling keep using it;
 * - backing index `<alias>-p<partition, zero-padded to 6 digits>` holds the blocks
 *   `partition × N … partition × N + N − 1` ({@link partitionIndexName}); partition =
 *   `floor(blockNumber / N)`;
 * - the index stage writes each document to its backing index by block number (an alias over
 *   several indices takes no writes without `is_write_index`, and range routing needs the concrete
 *   index anyway), creating the partition, and the next one ahead of need once its last tenth of
 *   blocks is reached ({@link PartitionRouter});
 * - hits name the alias in `_index` ({@link aliasOfIndex}), not the backing index;
 * - every backing index records N in its mapping `_meta` ({@link BLOCKS_META}): the API reads the
 *   layout back ({@link readLayout}) to search only the partitions a query's block filter can match
 *   (es/pruning.ts, api/search/partitions.ts).
 *
 * The Elasticsearch the tests run (integ-test-zip 8.19) has no ILM nor data streams, hence a layout
 * chainsift manages itself with the core index, alias and clone APIs.
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import type { ChainId } from "../lib/config/index.js";
import { ConfigError } from "../lib/config/parse.js";
import type { KindPartitioning, Partitioning } from "../lib/partitioning.js";
import { RECORD_KINDS, type RecordKind } from "../lib/records.js";
import { INDEX_SETTINGS, indexName, MAPPINGS } from "./mappings.js";
import type { PartitionLayout } from "./pruning.js";

export { DEFAULT_PARTITIONING, type KindPartitioning, type Partitioning, uniformPartitioning } from "../lib/partitioning.js";

/** Digits of the zero-padded partition number in a backing index name. */
const PAD = 6;
const BACKING = /-p\d+$/;

/** Partition of a block: `floor(blockNumber / blocks)`. */
export function partitionOf(blockNumber: number, blocks: number): number {
  return Math.floor(blockNumber / blocks);
}

/** Backing index of a partition: `<alias>-p<partition zero-padded to 6 digits>` (more digits past 999,999). */
export function partitionIndexName(alias: string, partition: number): string {
  return `${alias}-p${String(partition).padStart(PAD, "0")}`;
}

/** The alias of a backing index name (the name itself when it is not one), e.g. for a hit's `_index`. */
export function aliasOfIndex(index: string): string {
  return index.replace(BACKING, "");
}

/** The partition number of a backing index name, or undefined. */
export function partitionOfIndex(index: string): number | undefined {
  const m = /-p(\d+)$/.exec(index);
  return m ? Number(m[1]) : undefined;
}

/** Settings of a backing index of a kind: {@link INDEX_SETTINGS} with the kind's primaries and replicas. */
export function partitionSettings(p: KindPartitioning): Record<string, unknown> {
  return { ...INDEX_SETTINGS, number_of_shards: p.shards, number_of_replicas: p.replicas };
}

const errorType = (err: unknown) => (err as { body?: { error?: { type?: string } } }).body?.error?.type;

/**
 * Mapping `_meta` key of every backing index: its kind's blocks per partition (N). It makes the
 * layout self-describing: the API prunes by it ({@link readLayout}) and the index stage refuses to
 * start with another N for an alias that has partitions ({@link ensureAlias}).
 */
export const BLOCKS_META = "chainsift_partition_blocks";

/**
 * Creates a backing index (explicit mapping with `_meta` {@link BLOCKS_META}, the kind's settings,
 * member of the alias) unless it exists.
 * @throws the client's error for anything but `resource_already_exists_exception`.
 */
export async function createPartition(es: Client, alias: string, kind: RecordKind, partition: number, p: KindPartitioning): Promise<void> {
  try {
    await es.indices.create({
      index: partitionIndexName(alias, partition),
      settings: partitionSettings(p) as never,
      mappings: { ...MAPPINGS[kind], _meta: { [BLOCKS_META]: p.blocks } } as never,
      aliases: { [alias]: {} },
    });
  } catch (err) {
    if (errorType(err) !== "resource_already_exists_exception") throw err;
  }
}

/**
 * Makes one kind's alias ready: a concrete index under the alias name (the layout before
 * partitioning) is migrated in place ({@link migrateToAlias}); a missing alias gets partition 0
 * (so a single-partition deployment, and tools that bulk-write to the alias name while it has one
 * index, keep working); existing backing indices get the fields a newer chainsift maps.
 * @throws {ConfigError} (CHAINSIFT_INDEX_PARTITION_BLOCKS) when the alias's partitions were made
 *   with another number of blocks per partition: N cannot change once an alias has partitions (a
 *   replay would write a record into another backing index than its first copy, and the API's
 *   pruning reads N from the indices).
 * @throws the client's error when Elasticsearch refuses (e.g. a conflicting mapping).
 */
export async function ensureAlias(es: Client, chain: ChainId, kind: RecordKind, prefix: string, p: KindPartitioning): Promise<void> {
  const alias = indexName(chain, kind, prefix);
  if (await es.indices.exists({ index: alias })) {
    const concrete = !(await es.indices.existsAlias({ name: alias }));
    if (concrete) await migrateToAlias(es, alias, p.blocks);
    const made = (await readMetas(es, alias)).map((m) => m.meta?.[BLOCKS_META]).filter((n) => n !== undefined && n !== p.blocks);
    if (made.length > 0)
      throw new ConfigError(
        "CHAINSIFT_INDEX_PARTITION_BLOCKS",
        `${kind}: ${p.blocks} blocks per partition, but the partitions of ${alias} were made with ${made[0]}; N cannot change once an alias has partitions (reindex into new aliases to change it)`,
      );
    // PUT _mapping adds fields and never changes existing ones (nor `_meta` when it names none).
    await es.indices.putMapping({ index: alias, ...(MAPPINGS[kind] as object) });
    return;
  }
  await createPartition(es, alias, kind, 0, p);
}

/**
 * Deletes the indices behind some aliases (their backing indices) or concrete indices of those
 * names; missing ones are skipped. DELETE refuses an alias name, hence the lookup of concrete names.
 * @throws the client's error when Elasticsearch refuses.
 */
export async function deleteIndicesOf(es: Client, names: readonly string[]): Promise<void> {
  const found = Object.keys(await es.indices.get({ index: names.join(","), ignore_unavailable: true, allow_no_indices: true }));
  // In chunks: hundreds of names do not fit one request line.
  for (let i = 0; i < found.length; i += 20) await es.indices.delete({ index: found.slice(i, i + 20).join(",") });
}

/** Mapping `_meta` key of the migrated index: the highest block it held when it was migrated. */
export const LEGACY_META = "chainsift_legacy_through_block";

/**
 * Migrates a concrete index named like the alias, in place, without a moment where searches miss
 * the name: (1) `index.blocks.write` on it (clone requires it; writes meanwhile are refused and
 * retried by the index stage), (2) refresh, read its highest block number, (3) `_clone` it to
 * `<alias>-p000000` (hard-linked segments: seconds, whatever its size) with writes allowed again,
 * recording the highest block in the clone's mapping `_meta` ({@link LEGACY_META}, with
 * {@link BLOCKS_META}), (4) one atomic
 * `_aliases` call: add the alias to the clone and remove the old index. Blocks up to that height
 * stay in the clone ({@link PartitionRouter}), so a replay overwrites them instead of duplicating
 * them in their range partition. Safe to run again after a crash at any step (a clone already made
 * is reused).
 * @throws the client's error when a step fails.
 */
export async function migrateToAlias(es: Client, alias: string, blocks: number): Promise<void> {
  const clone = partitionIndexName(alias, 0);
  await es.indices.putSettings({ index: alias, settings: { "index.blocks.write": true } });
  await es.indices.refresh({ index: alias });
  const through = await highestBlock(es, alias);
  if (!(await es.indices.exists({ index: clone }))) {
    await es.indices.clone({ index: alias, target: clone, settings: { "index.blocks.write": false } as never, wait_for_active_shards: 1 });
  }
  await es.indices.putMapping({ index: clone, _meta: { [LEGACY_META]: through, [BLOCKS_META]: blocks } });
  await es.indices.updateAliases({ actions: [{ add: { index: clone, alias } }, { remove_index: { index: alias } }] });
}

/** Highest `number.num` / `blockNumber.num` in an index, or -1 when it holds no document. */
async function highestBlock(es: Client, index: string): Promise<number> {
  const res = await es.search({
    index,
    size: 0,
    aggs: { a: { max: { field: "number.num" } }, b: { max: { field: "blockNumber.num" } } },
  });
  const aggs = res.aggregations as Record<string, { value: number | null }> | undefined;
  return Math.max(aggs?.a?.value ?? -1, aggs?.b?.value ?? -1);
}

/**
 * Each index behind a name (an alias's backing indices, or the concrete index of that name) with its
 * mapping `_meta` (undefined when it has none); empty when the name does not exist.
 * @throws the client's error for anything but a missing name.
 */
async function readMetas(es: Client, name: string): Promise<Array<{ index: string; meta: Record<string, unknown> | undefined }>> {
  const res = await es.indices.get({
    index: name,
    ignore_unavailable: true,
    allow_no_indices: true,
    filter_path: ["*.aliases", "*.mappings._meta"],
  });
  return Object.entries(res as Record<string, { mappings?: { _meta?: Record<string, unknown> } }>).map(([index, v]) => ({
    index,
    meta: v.mappings?._meta,
  }));
}

/** The highest block the migrated index of an alias holds, from its mapping `_meta`; -1 when none was migrated. */
async function legacyOf(es: Client, alias: string): Promise<number> {
  let through = -1;
  for (const { meta } of await readMetas(es, alias).catch(() => [])) {
    const v = meta?.[LEGACY_META];
    if (typeof v === "number") through = Math.max(through, v);
  }
  return through;
}

/**
 * How an alias's blocks are laid out, read from its backing indices' mapping `_meta`
 * ({@link BLOCKS_META}, {@link LEGACY_META}), or undefined when pruning by block range would not
 * be exact: the name is missing, is a concrete index (not migrated yet), or has an index that is
 * not a backing index of it, lacks the blocks per partition or disagrees on them.
 * @throws the client's error when Elasticsearch cannot be asked.
 */
export async function readLayout(es: Client, alias: string): Promise<PartitionLayout | undefined> {
  const metas = await readMetas(es, alias);
  let blocks: number | undefined;
  let legacyThrough = -1;
  for (const { index, meta } of metas) {
    const n = meta?.[BLOCKS_META];
    if (aliasOfIndex(index) !== alias || partitionOfIndex(index) === undefined || typeof n !== "number" || !(n >= 1)) return undefined;
    if (blocks !== undefined && n !== blocks) return undefined;
    blocks = n;
    const legacy = meta?.[LEGACY_META];
    if (typeof legacy === "number") legacyThrough = Math.max(legacyThrough, legacy);
  }
  return blocks === undefined ? undefined : { blocks, legacyThrough };
}

/**
 * Routes documents to their backing index by block number and creates partitions ahead of need.
 * One per indexer process; partitions it created or found are cached, so only the first document of
 * a new partition costs a round trip (create it), and the first one in its last tenth of blocks
 * creates the next partition, ahead of need.
 */
export interface PartitionRouter {
  /**
   * The backing index of a kind's block: the migrated index (`-p000000`) for blocks up to the
   * height it held when migrated, else `<alias>-p<floor(height / N)>`. A height that is not a safe
   * integer (a malformed record, refused by the mapping) goes to partition 0.
   * Call {@link PartitionRouter.prepare} first.
   */
  indexOf(kind: RecordKind, height: number): string;
  /**
   * Reads the migrated indices' bounds (once) and creates every partition of these (kind, height)
   * pairs, and the next one for a height in the last tenth (`ceil(N / 10)` blocks) of its partition,
   * when not done yet.
   */
  prepare(docs: Iterable<{ kind: RecordKind; height: number }>): Promise<void>;
}

/** Creates a {@link PartitionRouter} for one chain's aliases. */
export function createPartitionRouter(es: Client, chain: ChainId, prefix: string, partitioning: Partitioning): PartitionRouter {
  const aliases = Object.fromEntries(RECORD_KINDS.map((k) => [k, indexName(chain, k, prefix)])) as Record<RecordKind, string>;
  let legacy: Promise<Record<RecordKind, number>> | undefined;
  let legacyThrough: Record<RecordKind, number> | undefined;
  const ready = new Set<string>();
  const partitionOfDoc = (kind: RecordKind, height: number): number =>
    !Number.isSafeInteger(height) || height < 0 || height <= (legacyThrough?.[kind] ?? -1)
      ? 0
      : partitionOf(height, partitioning[kind].blocks);
  return {
    indexOf(kind, height) {
      return partitionIndexName(aliases[kind], partitionOfDoc(kind, height));
    },
    async prepare(docs) {
      if (!legacyThrough) {
        legacy ??= Promise.all(RECORD_KINDS.map(async (k) => [k, await legacyOf(es, aliases[k])] as const)).then(
          (e) => Object.fromEntries(e) as Record<RecordKind, number>,
        );
        try {
          legacyThrough = await legacy;
        } catch (err) {
          legacy = undefined;
          throw err;
        }
      }
      const wanted = new Map<string, { kind: RecordKind; partition: number }>();
      for (const { kind, height } of docs) {
        const p = partitionOfDoc(kind, height);
        // The next one ahead of need from a block in the last tenth of its partition (an empty
        // partition still costs a shard in searches that cannot be pruned), except for a block of
        // the migrated index's range (its next partition may never be used).
        const legacyBlock = p === 0 && height <= (legacyThrough?.[kind] ?? -1);
        const { blocks } = partitioning[kind];
        const ahead = !legacyBlock && Number.isSafeInteger(height) && height - p * blocks >= blocks - Math.ceil(blocks / 10);
        for (const partition of ahead ? [p, p + 1] : [p]) {
          const name = partitionIndexName(aliases[kind], partition);
          if (!ready.has(name)) wanted.set(name, { kind, partition });
        }
      }
      await Promise.all(
        [...wanted].map(async ([name, { kind, partition }]) => {
          await createPartition(es, aliases[kind], kind, partition, partitioning[kind]);
          ready.add(name);
        }),
      );
    },
  };
}

/**
 * Old ranges: force-merges every backing index of a chain whose blocks all lie below `belowBlock`
 * (e.g. the finalized height) to one segment and sets `index.blocks.write` on it (writes refused:
 * a reorg never reaches below finality). The partition holding `belowBlock` and later ones, and a
 * migrated index still taking its range's replays, are left alone unless entirely below.
 * @returns the backing indices sealed by this call (already read-only ones are skipped).
 * @throws the client's error when a step fails.
 */
export async function sealPartitions(
  es: Client,
  chain: ChainId,
  prefix: string,
  partitioning: Partitioning,
  belowBlock: number,
): Promise<string[]> {
  const sealed: string[] = [];
  for (const kind of RECORD_KINDS) {
    const alias = indexName(chain, kind, prefix);
    const through = await legacyOf(es, alias);
    // Every backing index (a `name` filter would leave out the ones without the setting).
    const res = await es.indices
      .getSettings({ index: alias, flat_settings: true, ignore_unavailable: true, allow_no_indices: true })
      .catch(() => ({}));
    for (const [index, s] of Object.entries(res as Record<string, { settings?: Record<string, string> }>)) {
      const p = partitionOfIndex(index);
      if (p === undefined || s.settings?.["index.blocks.write"] === "true") continue;
      const { blocks } = partitioning[kind];
      const last = p === 0 ? Math.max(blocks - 1, through) : (p + 1) * blocks - 1;
      if (last >= belowBlock) continue;
      await es.indices.forcemerge({ index, max_num_segments: 1 });
      await es.indices.putSettings({ index, settings: { "index.blocks.write": true } });
      sealed.push(index);
    }
  }
  return sealed.sort();
}
