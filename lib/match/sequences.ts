/**
 * Sequence arithmetic of alerts over time (issue 33; docs/alerting.md, "Sequences"): a record the
 * rule's own conditions select (a *first* record) opens a pending step keyed by its correlate value;
 * a later record the `followedBy` conditions select (a *followedBy* record) with the same correlate value,
 * within the span (`blocks` or `seconds` after the first record's block), closes the step and fires
 * once, carrying both records. Pure: the state is plain JSON so that it lives in Redis
 * (pipeline/match/sequences/evaluator.ts); every operation takes a state and returns a new one with
 * the events it caused.
 *
 * The semantics, as a function of the canonical chain. Records are taken in chain order: block
 * number, then transaction index, then log index (a transaction before its logs), then id, and a
 * record's `followedBy` role before its `first` role (a record that both conditions select cannot pair
 * with itself). A first record opens the step of its key, replacing an open one (the most recent
 * first record is the one paired, the closest to the followedBy record); a followedBy record whose key has an
 * open step within the span fires with it and closes it; a step beyond the span is dropped
 * (expired). At most `maxPending` steps are open: opening one more drops the oldest.
 *
 * Exact under reorgs and late records, as the window arithmetic (lib/match/windows.ts): the state
 * holds the steps open after the final height (`base`, `reorgDepth` below the highest head seen) and
 * the blocks above it with their records; after every change the firings above the base are
 * recomputed and compared with those last announced: a firing (identified by both records' ids and
 * block hashes) that no longer holds is `retracted`, a new one `fired`.
 * @module
 */

/** The span of a sequence: the followedBy record's block at most `blocks` after the first record's, or at most `seconds` later. */
export type SequenceSpan = { blocks: number } | { seconds: number };

/** Default {@link SequenceConfig.maxPending}: 1,000 open steps per rule. */
export const DEFAULT_MAX_PENDING = 1_000;
/** Default {@link SequenceConfig.reorgDepth}: 128 blocks, ingest's `reorgWindow` (docs/reorgs.md). */
export const DEFAULT_SEQUENCE_REORG_DEPTH = 128;

/** A sequence rule's arithmetic (the rule's `sequence` extension, lib/rules/schema-sequence.ts). */
export interface SequenceConfig {
  span: SequenceSpan;
  /** Most open steps; opening one more drops the oldest. Default {@link DEFAULT_MAX_PENDING}. */
  maxPending?: number;
  /** Blocks below the highest head a reorg can change. Default {@link DEFAULT_SEQUENCE_REORG_DEPTH}. */
  reorgDepth?: number;
}

/** A selected record of a block: its role, correlate value and position in the block. */
export interface SequenceRecord {
  /** The entity id (unique per block and role). */
  id: string;
  /** `first`: the rule's own conditions selected it; `followedBy`: the `sequence.followedBy` conditions did. */
  role: "first" | "followedBy";
  /** The correlate value (`correlate.first` of a first record, `correlate.followedBy` of a followedBy record). */
  key: string;
  /** Transaction index and log index in the block (-1 when the entity has none). */
  pos: [number, number];
}

/** A canonical block with its selected records. */
export interface SequenceBlock {
  number: number;
  hash: string;
  /** Unix seconds. */
  timestamp: number;
  records: SequenceRecord[];
}

/** One record of a firing. */
export interface SequenceRecordRef {
  id: string;
  blockNumber: number;
  blockHash: string;
  /** The block's timestamp, unix seconds. */
  timestamp: number;
}

/** A step closed: what the alert says. */
export interface SequenceFiring {
  /** The correlate value both records share. */
  key: string;
  first: SequenceRecordRef;
  /** The closing record; confirmations count from its block. */
  followedBy: SequenceRecordRef;
}

/** An open step. */
export interface PendingStep {
  key: string;
  first: SequenceRecordRef;
}

/** A new firing, or one that no longer holds (the alert's `removed`). */
export type SequenceEvent = { type: "fired"; firing: SequenceFiring } | { type: "retracted"; firing: SequenceFiring };

/** The serialisable state of one sequence rule. Create it with {@link createSequenceState}. */
export interface SequenceState {
  v: 1;
  /** The first block the rule sees. */
  fromBlock: number;
  /** The highest head seen. */
  maxHead: number;
  /** Blocks up to this one are final. */
  base: number;
  /** The steps open after block `base`, oldest first. */
  pendingAtBase: PendingStep[];
  /** The retained blocks above `base`, ascending and contiguous, records sorted. */
  blocks: SequenceBlock[];
  /** The firings closed above `base`, as last announced. */
  open: SequenceFiring[];
}

/** The result of an operation: retractions first, then firings. */
export interface SequenceStep {
  state: SequenceState;
  events: SequenceEvent[];
}

/** An empty state: the rule sees blocks from `fromBlock` on. */
export function createSequenceState(fromBlock: number): SequenceState {
  return { v: 1, fromBlock, maxHead: fromBlock - 1, base: fromBlock - 1, pendingAtBase: [], blocks: [], open: [] };
}

interface Compiled {
  span: SequenceSpan;
  maxPending: number;
  reorgDepth: number;
}

function positiveInt(v: number, what: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${what} must be an integer ≥ 1, got ${v}`);
  return v;
}

function compile(config: SequenceConfig): Compiled {
  if ("blocks" in config.span) positiveInt(config.span.blocks, "span.blocks");
  else positiveInt(config.span.seconds, "span.seconds");
  return {
    span: config.span,
    maxPending: positiveInt(config.maxPending ?? DEFAULT_MAX_PENDING, "maxPending"),
    reorgDepth: positiveInt(config.reorgDepth ?? DEFAULT_SEQUENCE_REORG_DEPTH, "reorgDepth"),
  };
}

/**
 * Checks a configuration without evaluating anything.
 * @throws RangeError naming the field (span, maxPending, reorgDepth).
 */
export function checkSequenceConfig(config: SequenceConfig): void {
  compile(config);
}

/** The order of records in a block (module doc). */
export function compareSequenceRecords(a: SequenceRecord, b: SequenceRecord): number {
  const c = a.pos[0] - b.pos[0] || a.pos[1] - b.pos[1];
  if (c !== 0) return c;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return a.role === b.role ? 0 : a.role === "followedBy" ? -1 : 1;
}

function sortedRecords(records: readonly SequenceRecord[]): SequenceRecord[] {
  const seen = new Map<string, SequenceRecord>();
  for (const r of records) if (!seen.has(`${r.role}|${r.id}`)) seen.set(`${r.role}|${r.id}`, r);
  return [...seen.values()].sort(compareSequenceRecords);
}

/** Whether a step opened by `first` is still within the span at `block`. */
export function withinSpan(
  span: SequenceSpan,
  first: Pick<SequenceRecordRef, "blockNumber" | "timestamp">,
  block: Pick<SequenceBlock, "number" | "timestamp">,
): boolean {
  return "blocks" in span ? block.number - first.blockNumber <= span.blocks : block.timestamp - first.timestamp <= span.seconds;
}

/** The key identifying a firing across recomputations. */
export function sequenceFiringKey(f: SequenceFiring): string {
  return `${f.first.id}\u0000${f.first.blockHash}\u0000${f.followedBy.id}\u0000${f.followedBy.blockHash}`;
}

/** Runs the steps over `blocks` from the open steps `pending` (oldest first); returns the steps open after them and the firings. */
function walk(c: Compiled, pending: readonly PendingStep[], blocks: readonly SequenceBlock[]) {
  // A Map keeps insertion order: re-opening a key deletes it first, so the order is the opening order.
  const open = new Map(pending.map((p) => [p.key, p.first]));
  const firings: SequenceFiring[] = [];
  for (const b of blocks) {
    for (const [key, first] of open) {
      if (withinSpan(c.span, first, b)) break;
      open.delete(key);
    }
    for (const r of b.records) {
      if (r.role === "followedBy") {
        const first = open.get(r.key);
        if (first === undefined) continue;
        open.delete(r.key);
        firings.push({ key: r.key, first, followedBy: { id: r.id, blockNumber: b.number, blockHash: b.hash, timestamp: b.timestamp } });
        continue;
      }
      open.delete(r.key);
      if (open.size >= c.maxPending) {
        const oldest = open.keys().next();
        if (oldest.done !== true) open.delete(oldest.value);
      }
      open.set(r.key, { id: r.id, blockNumber: b.number, blockHash: b.hash, timestamp: b.timestamp });
    }
  }
  return { pending: [...open].map(([key, first]) => ({ key, first })), firings };
}

/** Recomputes the firings above the base, diffs them with the announced ones, then moves the base up. */
function evaluate(c: Compiled, next: SequenceState): SequenceStep {
  const { firings } = walk(c, next.pendingAtBase, next.blocks);
  const before = new Map(next.open.map((f) => [sequenceFiringKey(f), f]));
  const after = new Map(firings.map((f) => [sequenceFiringKey(f), f]));
  const events: SequenceEvent[] = [];
  for (const [k, f] of before) if (!after.has(k)) events.push({ type: "retracted", firing: f });
  for (const [k, f] of after) if (!before.has(k)) events.push({ type: "fired", firing: f });
  const base = Math.max(next.base, next.maxHead - c.reorgDepth);
  const final = next.blocks.filter((b) => b.number <= base);
  if (final.length === 0) return { state: { ...next, open: firings }, events };
  const folded = walk(c, next.pendingAtBase, final);
  const last = final[final.length - 1] as SequenceBlock;
  const state: SequenceState = {
    ...next,
    base,
    pendingAtBase: folded.pending.filter((p) => withinSpan(c.span, p.first, last)),
    blocks: next.blocks.filter((b) => b.number > base),
    open: firings.filter((f) => f.followedBy.blockNumber > base),
  };
  return { state, events };
}

const top = (s: SequenceState) => (s.blocks.length === 0 ? s.base : (s.blocks[s.blocks.length - 1] as SequenceBlock).number);

/**
 * A block joins the canonical chain with its selected records: at the next height it extends the
 * chain; at a height already held it replaces that block and every block above it (a reorg). The
 * block already held (same hash) only adds the records it lacks. Ignored below `fromBlock` and at or
 * below the final height.
 * @throws RangeError when it leaves a gap above the head, or on a bad configuration.
 */
export function applySequenceBlock(config: SequenceConfig, state: SequenceState, block: SequenceBlock): SequenceStep {
  const c = compile(config);
  if (block.number < state.fromBlock || block.number <= state.base) return { state, events: [] };
  const held = state.blocks.find((b) => b.number === block.number);
  if (held !== undefined && held.hash === block.hash) return addSequenceRecords(config, state, block.hash, block.records);
  if (block.number > top(state) + 1) throw new RangeError(`block ${block.number} leaves a gap above the head ${top(state)}`);
  const blocks = [...state.blocks.filter((b) => b.number < block.number), { ...block, records: sortedRecords(block.records) }];
  return evaluate(c, { ...state, blocks, maxHead: Math.max(state.maxHead, block.number) });
}

/**
 * Blocks from `number` up leave the chain: their records leave the steps. Ignored at or below the final height.
 * @throws RangeError on a bad configuration.
 */
export function orphanSequenceBlocks(config: SequenceConfig, state: SequenceState, number: number): SequenceStep {
  const c = compile(config);
  if (number <= state.base) return { state, events: [] };
  return evaluate(c, { ...state, blocks: state.blocks.filter((b) => b.number < number) });
}

/**
 * Records selected late in a block already held (another topic's records of the same block);
 * records already held (same id and role) are ignored, so is a block the state does not hold.
 * @throws RangeError on a bad configuration.
 */
export function addSequenceRecords(
  config: SequenceConfig,
  state: SequenceState,
  blockHash: string,
  records: readonly SequenceRecord[],
): SequenceStep {
  const c = compile(config);
  const i = state.blocks.findIndex((b) => b.hash === blockHash);
  const block = state.blocks[i];
  if (block === undefined) return { state, events: [] };
  const blocks = [...state.blocks];
  blocks[i] = { ...block, records: sortedRecords([...block.records, ...records]) };
  return evaluate(c, { ...state, blocks });
}
