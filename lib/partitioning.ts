/**
 * How each record kind's indices are partitioned by block range (the layout itself, the aliases
 * and the routing are es/partitions.ts). Here so that lib/config/index.ts can read it from the environment.
 * @module
 */
import { RECORD_KINDS, type RecordKind } from "./records.js";

/** How one kind's records are partitioned. */
export interface KindPartitioning {
  /** Blocks per backing index (N ≥ 1): partition = floor(blockNumber / N). */
  blocks: number;
  /** Primary shards of each backing index (≥ 1). */
  shards: number;
  /** Replicas of each backing index (≥ 0; 0 lets a single node go green). */
  replicas: number;
}

/** Partitioning of every kind. */
export type Partitioning = Record<RecordKind, KindPartitioning>;

/**
 * Defaults, sized from mainnet's head rate so that a backing index of one primary shard stays well
 * under ~50 GB and ~200 M Lucene documents (arithmetic in docs/operations.md, "Shards and
 * partitions"; per-block figures measured by `npm run bench -- capacity`): block 2,000,000 blocks
 * (~9 GB), tx 150,000 (~38 GB, 20 M Lucene documents), log 250,000 (~40 GB, 83 M), event 150,000
 * (~32 GB, 166 M), call 60,000 (~37 GB, 82 M). One primary, no replica.
 */
export const DEFAULT_PARTITIONING: Partitioning = {
  block: { blocks: 2_000_000, shards: 1, replicas: 0 },
  tx: { blocks: 150_000, shards: 1, replicas: 0 },
  log: { blocks: 250_000, shards: 1, replicas: 0 },
  event: { blocks: 150_000, shards: 1, replicas: 0 },
  call: { blocks: 60_000, shards: 1, replicas: 0 },
};

/** The same partitioning for every kind (tests: e.g. `uniformPartitioning(10)`). */
export function uniformPartitioning(blocks: number, shards = 1, replicas = 0): Partitioning {
  return Object.fromEntries(RECORD_KINDS.map((k) => [k, { blocks, shards, replicas }])) as Partitioning;
}
