/**
 * What the match stage knows of the canonical chain: the {@link CanonicalView} built from the
 * blocks and reorgs topics (`canon.ts`), completed by ingest's durable canonical map
 * (`lib/chain/state.ts`, the one the index stage checks too) for heights this process has not
 * seen: a restarted instance does not consume again the blocks and reorgs records its predecessor
 * committed. What the view knows wins.
 * @module
 */
import type { CanonicalReader } from "../../lib/chain/state.js";
import type { BlockRecord, ReorgRecord } from "../../lib/records.js";
import { createCanonicalView } from "./canon.js";
import type { CanonicalLookup, ChainHead } from "./confirmations/decide.js";

/** Default of how many recent canonical block hashes are kept in memory. */
export const CANON_WINDOW = 1024;
/**
 * Default of how many heights below each head are looked up in the durable map when this process
 * has not seen them: at least the deepest confirmation threshold in use.
 */
export const LEARN_DEPTH = 256;

/** The canonical chain as the match stage knows it (module doc). */
export interface ChainView {
  /** A block record, with its ingest sequence number (`chainsift-seq` header). */
  observeBlock(block: BlockRecord, seq: number | undefined): void;
  /** A reorg record: its orphaned block's tracked matches are dropped by the next head. */
  observeReorg(reorg: ReorgRecord, seq: number | undefined): void;
  /** The newest canonical block, or undefined before any block record. */
  head(): ChainHead | undefined;
  /** The canonical hash at a height (lower-case from the durable map), or undefined when unknown. */
  canonical: CanonicalLookup;
  /**
   * Reads from the durable map the heights (of `heights`, or the `learnDepth` heights up to the head
   * when absent) that neither the view nor an earlier read knows.
   * @throws Redis errors (transient: the stage retries the batch).
   */
  learn(heights?: Iterable<number>): Promise<void>;
  /** True when a record's block (`blockNumber.num`, `blockHash`) is known not to be canonical: a record of an orphaned block matches nothing. */
  isOrphaned(record: { blockNumber?: { num: number }; blockHash?: string }): boolean;
}

/** Creates an empty {@link ChainView} over ingest's durable map. */
export function createChainView(durable: CanonicalReader, window = CANON_WINDOW, learnDepth = LEARN_DEPTH): ChainView {
  const view = createCanonicalView(window);
  const learned = new Map<number, string>();
  const canonical = (n: number) => view.hashAt(n) ?? learned.get(n);
  return {
    observeBlock: (b, seq) => view.observeBlock(b.number.num, b.hash, seq),
    observeReorg: (r, seq) => view.observeReorg(r.number, r.orphanedHash, r.replacedBy, seq),
    head: () => view.head(),
    canonical,
    async learn(heights) {
      const head = view.head();
      const wanted = heights ?? (head ? Array.from({ length: learnDepth }, (_, i) => head.number - i) : []);
      const unknown = [...new Set(wanted)].filter((n) => n >= 0 && view.hashAt(n) === undefined && !learned.has(n));
      if (unknown.length === 0) return;
      for (const [n, h] of await durable.hashesAt(unknown)) if (h !== undefined) learned.set(n, h.toLowerCase());
      const top = view.head()?.number;
      if (top !== undefined) for (const n of learned.keys()) if (n < top - window) learned.delete(n);
    },
    isOrphaned({ blockNumber, blockHash }) {
      if (!blockNumber || !blockHash) return false;
      const c = canonical(blockNumber.num);
      return c !== undefined && c !== blockHash.toLowerCase();
    },
  };
}
