/**
 * The match stage's view of the canonical chain, built from the blocks and reorgs topics (pure).
 * The two topics are consumed concurrently, so a block record may arrive after a reorg record that
 * orphaned it: every fact carries its ingest sequence number (`chainsift-seq` header), and at each
 * height the fact with the largest one wins. A fact without a sequence number (records produced
 * before sequence numbers existed) always applies, as the latest.
 * @module
 */
import type { ChainHead } from "./confirmations/decide.js";

/** The canonical chain as the match stage knows it. */
export interface CanonicalView {
  /** A block record: `hash` is canonical at `number` (unless a newer fact says otherwise). */
  observeBlock(number: number, hash: string, seq: number | undefined): void;
  /** A reorg record: `orphanedHash` left the chain at `number`; `replacedBy` (null: no block) took its place. */
  observeReorg(number: number, orphanedHash: string, replacedBy: string | null, seq: number | undefined): void;
  /** The canonical hash at a height: a hash, `""` when there is no block there after a reorg, undefined when unknown. */
  hashAt(number: number): string | undefined;
  /** True when another block than `hash` is known canonical at `number` (or none is). */
  isOrphaned(number: number, hash: string): boolean;
  /** The newest canonical block, or undefined before any block record. */
  head(): ChainHead | undefined;
}

/**
 * Creates an empty view.
 * @param window heights kept below the highest one seen (default 1024).
 */
export function createCanonicalView(window = 1024): CanonicalView {
  const at = new Map<number, { hash: string; seq: number }>();
  let top = -1;
  let head: ChainHead | undefined;
  const apply = (number: number, hash: string, seq: number | undefined): boolean => {
    const cur = at.get(number);
    if (seq !== undefined && cur && cur.seq > seq) return false;
    at.set(number, { hash, seq: seq ?? -1 });
    if (number > top) {
      for (let h = top - window + 1; h <= number - window; h++) at.delete(h);
      top = number;
    }
    return true;
  };
  const recomputeHead = () => {
    for (let h = top; h >= 0 && h > top - window; h--) {
      const e = at.get(h);
      if (e && e.hash !== "") {
        head = { number: h, hash: e.hash };
        return;
      }
    }
    head = undefined;
  };
  return {
    observeBlock(number, hash, seq) {
      if (!apply(number, hash, seq)) return;
      if (!head || number >= head.number) head = { number, hash };
      else if (number <= head.number) recomputeHead();
    },
    observeReorg(number, orphanedHash, replacedBy, seq) {
      const cur = at.get(number);
      // A reorg only says something about the block it orphans: a newer block there stays.
      if (cur && cur.hash !== orphanedHash && (seq === undefined || cur.seq > seq)) return;
      if (!apply(number, replacedBy ?? "", seq)) return;
      recomputeHead();
    },
    hashAt(number) {
      return at.get(number)?.hash;
    },
    isOrphaned(number, hash) {
      const h = at.get(number)?.hash;
      return h !== undefined && h !== hash;
    },
    head: () => head,
  };
}
