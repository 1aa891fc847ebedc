/**
 * Window arithmetic of alerts over time (issue 33): sliding windows of blocks or of seconds,
 * aggregates (count, sum, distinct) compared with a threshold per group, crossing with a reset
 * band, and absence (silence) as a special window. Pure: the state is plain JSON (numbers,
 * strings, arrays) so that it can live in Redis later; every operation takes a state and returns a
 * new one with the events it caused. Nothing here is reachable from the API or the match stage
 * yet (docs/design/windows.md: what is built, what is planned).
 *
 * The model. The state holds the canonical chain from `fromBlock` on as far as a reorg can reach
 * (`reorgDepth` blocks below the highest head seen), each block with the records that the rule's
 * per-record conditions selected. A window *ends* at every block `n`; it holds the records of:
 * - `{blocks: B}`: the blocks `n − B + 1 … n`;
 * - `{seconds: S}`: the blocks `m ≤ n` whose timestamp is in `(t(n) − S, t(n)]` (timestamps in
 *   seconds; they never decrease along a chain: a block older than its parent is taken at its
 *   parent's timestamp).
 *
 * A window is evaluated only when it is complete, i.e. it starts at or after `fromBlock`
 * (blocks: `n − B + 1 ≥ fromBlock`; seconds: `t(n) − S ≥ t(fromBlock)`), so a rule created
 * mid-traffic does not judge a half-seen window. Per group, a two-state machine runs over the
 * window ends in block order (**crossing, not flooding**): *armed* → *fired* when the aggregate
 * satisfies `operator threshold` (a firing at that end); *fired* → *armed* when the condition no
 * longer holds **and** the aggregate is past the reset level ({@link resetLevel}; default half the
 * threshold's magnitude away from it). A sustained condition is therefore one firing.
 *
 * Exact under reorgs and late records: after every change, the window ends from the changed block
 * up are recomputed from the retained blocks, the machines restarting from the transitions (firings,
 * re-arms) recorded below it, and compared with the previous ones; a firing is identified by
 * (group, end block number, end block hash), so a firing whose window no longer crosses — or
 * whose closing block left the chain — is `retracted`, and one that newly crosses is `fired`.
 * Firings at ends `reorgDepth` or more below the highest head seen are final; changes at or below
 * that height are ignored (a reorg deeper than ingest's window, docs/reorgs.md).
 * @module
 */
import { compareDec, type Dec, parseDecimalString } from "./values.js";

/** An ordering operator of the rule model (lib/rules/model.ts `ORDERING_OPERATORS`). */
export type WindowOperator = "Greater" | "Greater or Equal" | "Less" | "Less or Equal";

/** The length of a window: a number of blocks (≥ 1) or of seconds (≥ 1) of block timestamps. */
export type WindowSpan = { blocks: number } | { seconds: number };

/** What a window computes over its records, per group. */
export type WindowAggregate = "count" | "sum" | "distinct";

/** Default {@link WindowConfig.maxGroups}: 100 groups per rule window. */
export const DEFAULT_MAX_GROUPS = 100;
/** Default {@link WindowConfig.sampleSize}: the first 10 record ids. */
export const DEFAULT_SAMPLE_SIZE = 10;
/** Default {@link WindowConfig.reorgDepth}: 128 blocks, ingest's `reorgWindow` (docs/reorgs.md). */
export const DEFAULT_REORG_DEPTH = 128;

/** A window rule's arithmetic (the rule's `window` extension once the API accepts it). */
export interface WindowConfig {
  /** Length of the window. */
  span: WindowSpan;
  /** `count`: records; `sum`: of {@link WindowRecord.value}; `distinct`: distinct {@link WindowRecord.key}s. */
  aggregate: WindowAggregate;
  /** Comparison of the aggregate with the threshold, `aggregate <operator> threshold`. */
  operator: WindowOperator;
  /** Decimal string (`"20"`, `"1000000.5"`, `"0x10"`, `"1e24"`: lib/match/values.ts grammar). */
  threshold: string;
  /**
   * Aggregate level that re-arms a fired group (decimal string), on the non-firing side of the
   * threshold (≤ it for Greater…, ≥ it for Less…). Default {@link resetLevel}.
   */
  reset?: string;
  /** True when the rule groups by a field: one machine per {@link WindowRecord.group}. Default false (one window). */
  grouped?: boolean;
  /**
   * Cap on the groups evaluated at a window end (≥ 1): the fired groups, then armed groups in order
   * of their first record in the window (block number, then record id), up to the cap; the others
   * are not evaluated at that end. Default {@link DEFAULT_MAX_GROUPS}.
   */
  maxGroups?: number;
  /** How many record ids a firing names (≥ 0). Default {@link DEFAULT_SAMPLE_SIZE}. */
  sampleSize?: number;
  /** Blocks below the highest head seen that a reorg can still change (≥ 1). Default {@link DEFAULT_REORG_DEPTH}. */
  reorgDepth?: number;
}

/** One record the rule's per-record conditions selected. */
export interface WindowRecord {
  /** The record's id (the alert's `entityId`, e.g. `<tx>_e_<logIndex>`); unique within its block. */
  id: string;
  /** The value of the `groupBy` field (read when {@link WindowConfig.grouped}; absent: the group `""`). */
  group?: string;
  /**
   * The summed value as a decimal string: raw integer units (`"1000000"`, `"0x…"`) or a scaled
   * decimal (`"1.5"`). Absent or not numeric: adds nothing. Strings, not numbers: exact beyond
   * 2^53 and for 18-decimal fractions, and JSON-safe (no bigint in JSON).
   */
  value?: string;
  /** The value of the `distinct` field. Absent: not counted by `distinct`. */
  key?: string;
}

/** A canonical block with its selected records (held sorted by id, unique; {@link applyBlock} sorts and de-duplicates its input). */
export interface WindowBlock {
  number: number;
  hash: string;
  /** Unix seconds, never below the parent's. */
  timestamp: number;
  records: WindowRecord[];
}

/** A window end at which a group crossed its threshold: what the alert will say. */
export interface WindowFiring {
  /** The group's value; null when the rule does not group. */
  group: string | null;
  /** The block that closed the window (confirmations will count from it). */
  end: { number: number; hash: string; timestamp: number };
  /** The window's bounds: its first and last block and their timestamps (unix seconds). */
  window: { fromBlock: number; toBlock: number; fromTimestamp: number; toTimestamp: number };
  /** The aggregate that crossed, as a canonical decimal string (`"21"`, `"1000000.25"`, `"-3"`). */
  aggregate: string;
  /** How many of the group's records the window holds. */
  recordCount: number;
  /** The first {@link WindowConfig.sampleSize} of them (block order, then id). */
  recordIds: string[];
}

/** What an operation changed: a new firing, or a firing that no longer holds (the alert's `removed`). */
export type WindowEvent = { type: "fired"; firing: WindowFiring } | { type: "retracted"; firing: WindowFiring };

/** The serialisable state of one rule window (all groups). Create it with {@link createWindowState}. */
export interface WindowState {
  /** Layout version of this JSON. */
  v: 1;
  /** The first block the rule sees; earlier blocks are ignored. */
  fromBlock: number;
  /** Timestamp of block `fromBlock` once seen (seconds windows' completeness), else null. */
  fromTimestamp: number | null;
  /** The retained canonical blocks, ascending and contiguous. */
  blocks: WindowBlock[];
  /** The highest head seen (never lowered by a reorg onto a shorter branch). */
  maxHead: number;
  /** Window ends up to this block are final (`fromBlock − 1` at first). */
  base: number;
  /** The groups fired after the end `base` (`""` for an ungrouped window), sorted. */
  firedAtBase: string[];
  /** The firings at ends above `base`, as last announced (ascending ends). */
  open: WindowFiring[];
  /** The re-arms at ends above `base` (ascending ends): with `open`, the machines' history a reorg can rewind. */
  rearms: WindowRearm[];
}

/** A group re-armed at a window end. */
export interface WindowRearm {
  /** The group (`""` for an ungrouped window). */
  group: string;
  /** The window end's block number. */
  end: number;
}

/** The result of an operation. */
export interface WindowStep {
  state: WindowState;
  /** Retractions first, then firings, each in end-block order. */
  events: WindowEvent[];
}

/** An empty state: the rule sees blocks from `fromBlock` (≥ 0) on. */
export function createWindowState(fromBlock: number): WindowState {
  return {
    v: 1,
    fromBlock,
    fromTimestamp: null,
    blocks: [],
    maxHead: fromBlock - 1,
    base: fromBlock - 1,
    firedAtBase: [],
    open: [],
    rearms: [],
  };
}

// ---- exact decimals ----

const ZERO: Dec = { m: 0n, e: 0 };

function decOf(s: string, what: string): Dec {
  const d = parseDecimalString(s);
  if (d === null) throw new RangeError(`${what} is not a number: ${JSON.stringify(s)}`);
  return d;
}

function addDec(a: Dec, b: Dec): Dec {
  if (a.e === b.e) return { m: a.m + b.m, e: a.e };
  return a.e > b.e ? { m: a.m * 10n ** BigInt(a.e - b.e) + b.m, e: b.e } : { m: a.m + b.m * 10n ** BigInt(b.e - a.e), e: a.e };
}

/** The plain decimal rendering of an exact decimal: no exponent, no trailing fraction zeros (`"1000"`, `"-0.25"`). */
export function decString(d: Dec): string {
  if (d.e >= 0) return (d.m * 10n ** BigInt(d.e)).toString();
  const neg = d.m < 0n;
  const digits = (neg ? -d.m : d.m).toString().padStart(-d.e + 1, "0");
  const int = digits.slice(0, digits.length + d.e);
  const frac = digits.slice(digits.length + d.e).replace(/0+$/, "");
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}

const upward = (op: WindowOperator) => op === "Greater" || op === "Greater or Equal";

function holds(op: WindowOperator, a: Dec, t: Dec): boolean {
  const c = compareDec(a, t);
  return op === "Greater" ? c > 0 : op === "Greater or Equal" ? c >= 0 : op === "Less" ? c < 0 : c <= 0;
}

/**
 * The aggregate level that re-arms a fired group: `config.reset` when set, else the threshold
 * moved by half its magnitude away from the firing side — `T − |T|/2` for Greater…, `T + |T|/2`
 * for Less… (count > 20 re-arms at ≤ 10; count < 4 at ≥ 6; a zero threshold at 0).
 * @returns a canonical decimal string.
 * @throws RangeError when threshold or reset is not a number, or reset is on the firing side.
 */
export function resetLevel(config: Pick<WindowConfig, "operator" | "threshold" | "reset">): string {
  return decString(resetDec(config));
}

function resetDec(config: Pick<WindowConfig, "operator" | "threshold" | "reset">): Dec {
  const t = decOf(config.threshold, "threshold");
  if (config.reset !== undefined) {
    const r = decOf(config.reset, "reset");
    const c = compareDec(r, t);
    if (upward(config.operator) ? c > 0 : c < 0)
      throw new RangeError(`reset ${config.reset} is on the firing side of ${config.operator} ${config.threshold}`);
    return r;
  }
  const half = { m: (t.m < 0n ? -t.m : t.m) * 5n, e: t.e - 1 };
  return addDec(t, upward(config.operator) ? { m: -half.m, e: half.e } : half);
}

// ---- configuration ----

interface Compiled {
  span: WindowSpan;
  aggregate: WindowAggregate;
  operator: WindowOperator;
  threshold: Dec;
  reset: Dec;
  grouped: boolean;
  maxGroups: number;
  sampleSize: number;
  reorgDepth: number;
}

function positiveInt(v: number, what: string, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`${what} must be an integer ≥ ${min}, got ${v}`);
  return v;
}

function compile(config: WindowConfig): Compiled {
  if ("blocks" in config.span) positiveInt(config.span.blocks, "span.blocks", 1);
  else positiveInt(config.span.seconds, "span.seconds", 1);
  return {
    span: config.span,
    aggregate: config.aggregate,
    operator: config.operator,
    threshold: decOf(config.threshold, "threshold"),
    reset: resetDec(config),
    grouped: config.grouped === true,
    maxGroups: positiveInt(config.maxGroups ?? DEFAULT_MAX_GROUPS, "maxGroups", 1),
    sampleSize: positiveInt(config.sampleSize ?? DEFAULT_SAMPLE_SIZE, "sampleSize", 0),
    reorgDepth: positiveInt(config.reorgDepth ?? DEFAULT_REORG_DEPTH, "reorgDepth", 1),
  };
}

/**
 * Checks a configuration without evaluating anything.
 * @throws RangeError naming the field (span, threshold, reset, maxGroups, sampleSize, reorgDepth).
 */
export function checkWindowConfig(config: WindowConfig): void {
  compile(config);
}

// ---- operations ----

const head = (s: WindowState) => (s.blocks.length === 0 ? s.base : (s.blocks[s.blocks.length - 1] as WindowBlock).number);

function sortedRecords(records: readonly WindowRecord[]): WindowRecord[] {
  const byId = new Map<string, WindowRecord>();
  for (const r of records) if (!byId.has(r.id)) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * A block joins the canonical chain at `block.number` with the records selected in it. A block at
 * the next height extends the chain; one at a height already held replaces that block and every
 * block above it (a reorg: their records leave the windows).
 * The block already held (same height and hash, a replay) only adds the records it lacks ({@link addRecords}).
 * Ignored (no events) below `fromBlock` and at or below the final height (`reorgDepth` under the
 * highest head seen).
 * @throws RangeError when it leaves a gap above the head, or on a bad configuration.
 */
export function applyBlock(config: WindowConfig, state: WindowState, block: WindowBlock): WindowStep {
  const c = compile(config);
  if (block.number < state.fromBlock || block.number <= state.base) return { state, events: [] };
  const held = state.blocks.find((b) => b.number === block.number);
  if (held !== undefined && held.hash === block.hash) return addRecords(config, state, block.hash, block.records);
  const top = head(state);
  if (block.number > top + 1) throw new RangeError(`block ${block.number} leaves a gap above the head ${top}`);
  const kept = state.blocks.filter((b) => b.number < block.number);
  const parent = kept[kept.length - 1];
  const timestamp = parent === undefined ? block.timestamp : Math.max(block.timestamp, parent.timestamp);
  const next: WindowState = {
    ...state,
    fromTimestamp: block.number === state.fromBlock ? timestamp : state.fromTimestamp,
    blocks: [...kept, { number: block.number, hash: block.hash, timestamp, records: sortedRecords(block.records) }],
    maxHead: Math.max(state.maxHead, block.number),
  };
  return evaluate(c, next, block.number);
}

/**
 * Blocks from `number` up leave the chain (a reorg onto a shorter branch, the `reorgs` topic's
 * orphaned heights): their records leave the windows. Ignored at or below the final height.
 * @throws RangeError on a bad configuration ({@link checkWindowConfig}).
 */
export function orphanBlocks(config: WindowConfig, state: WindowState, number: number): WindowStep {
  const c = compile(config);
  if (number <= state.base) return { state, events: [] };
  const next: WindowState = {
    ...state,
    fromTimestamp: number <= state.fromBlock ? null : state.fromTimestamp,
    blocks: state.blocks.filter((b) => b.number < number),
  };
  return evaluate(c, next, number);
}

/**
 * Records selected late in a block already held (another topic's records of the same block).
 * Records whose id the block already has are ignored (idempotent replays); so is a block hash
 * the state does not hold (orphaned, or pruned) or holds at or below the final height.
 * @throws RangeError on a bad configuration ({@link checkWindowConfig}).
 */
export function addRecords(config: WindowConfig, state: WindowState, blockHash: string, records: readonly WindowRecord[]): WindowStep {
  const c = compile(config);
  const i = state.blocks.findIndex((b) => b.hash === blockHash);
  const block = state.blocks[i];
  if (block === undefined || block.number <= state.base) return { state, events: [] };
  const blocks = [...state.blocks];
  blocks[i] = { ...block, records: sortedRecords([...block.records, ...records]) };
  return evaluate(c, { ...state, blocks }, block.number);
}

// ---- evaluation ----

/** One group's aggregate in one window. */
interface GroupTally {
  count: number;
  sum: Dec;
  keys: Set<string>;
  ids: string[];
}

/** The key identifying a firing across recomputations. */
export function firingKey(f: Pick<WindowFiring, "group" | "end">): string {
  return `${f.group ?? ""}\u0000${f.end.number}\u0000${f.end.hash}`;
}

/** Index of the first block of the window ending at `blocks[i]`, or -1 when the window is not complete. */
function windowStart(c: Compiled, s: WindowState, i: number): number {
  const end = s.blocks[i] as WindowBlock;
  if ("blocks" in c.span) {
    const first = end.number - c.span.blocks + 1;
    if (first < s.fromBlock) return -1;
    return i - (end.number - first);
  }
  const limit = end.timestamp - c.span.seconds;
  if (s.fromTimestamp === null || limit < s.fromTimestamp) return -1;
  let j = i;
  while (j > 0 && (s.blocks[j - 1] as WindowBlock).timestamp > limit) j--;
  return j;
}

function aggregateOf(c: Compiled, t: GroupTally | undefined): Dec {
  if (t === undefined) return ZERO;
  if (c.aggregate === "count") return { m: BigInt(t.count), e: 0 };
  if (c.aggregate === "distinct") return { m: BigInt(t.keys.size), e: 0 };
  return t.sum;
}

/** A group's machine state change at a window end (a firing is `open`; re-arms are kept in `rearms`). */
interface Transition {
  end: number;
  group: string;
  fired: boolean;
}

/** The fired groups after the end `upTo`: `firedAtBase` with the transitions of ends ≤ `upTo` applied in end order. */
function firedAfter(s: WindowState, open: readonly WindowFiring[], rearms: readonly WindowRearm[], upTo: number): Set<string> {
  const transitions: Transition[] = [
    ...open.filter((f) => f.end.number <= upTo).map((f) => ({ end: f.end.number, group: f.group ?? "", fired: true })),
    ...rearms.filter((r) => r.end <= upTo).map((r) => ({ end: r.end, group: r.group, fired: false })),
  ].sort((a, b) => a.end - b.end);
  const fired = new Set(s.firedAtBase);
  for (const t of transitions) {
    if (t.fired) fired.add(t.group);
    else fired.delete(t.group);
  }
  return fired;
}

/**
 * Recomputes the ends from `fromEnd` up (a change at block `fromEnd` reaches no window ending
 * below it), starting from the machines after `fromEnd − 1` (`firedAtBase` plus the transitions
 * kept below), diffs the firings against the previous ones, then prunes.
 */
function evaluate(c: Compiled, next: WindowState, fromEnd: number): WindowStep {
  const from = Math.max(fromEnd, next.base + 1);
  const keptOpen = next.open.filter((f) => f.end.number < from);
  const keptRearms = next.rearms.filter((r) => r.end < from);
  const fired = firedAfter(next, keptOpen, keptRearms, from - 1);
  const firings: WindowFiring[] = [];
  const rearms: WindowRearm[] = [...keptRearms];
  for (let i = 0; i < next.blocks.length; i++) {
    const end = next.blocks[i] as WindowBlock;
    if (end.number < from) continue;
    const start = windowStart(c, next, i);
    if (start >= 0) evaluateEnd(c, next.blocks, start, i, fired, firings, rearms);
  }
  const before = new Map(next.open.filter((f) => f.end.number >= from).map((f) => [firingKey(f), f]));
  const after = new Map(firings.map((f) => [firingKey(f), f]));
  const events: WindowEvent[] = [];
  for (const [k, f] of before) if (!after.has(k)) events.push({ type: "retracted", firing: f });
  for (const [k, f] of after) {
    const old = before.get(k);
    if (old === undefined) events.push({ type: "fired", firing: f });
    else after.set(k, old);
  }
  return { state: prune(c, { ...next, open: [...keptOpen, ...after.values()], rearms }), events };
}

/** Runs every evaluated group's machine at the window `blocks[start..i]`. */
function evaluateEnd(
  c: Compiled,
  blocks: readonly WindowBlock[],
  start: number,
  i: number,
  fired: Set<string>,
  out: WindowFiring[],
  rearms: WindowRearm[],
): void {
  const tallies = new Map<string, GroupTally>();
  for (let j = start; j <= i; j++) {
    for (const r of (blocks[j] as WindowBlock).records) {
      const g = c.grouped ? (r.group ?? "") : "";
      let t = tallies.get(g);
      if (t === undefined) {
        t = { count: 0, sum: ZERO, keys: new Set(), ids: [] };
        tallies.set(g, t);
      }
      t.count++;
      if (r.value !== undefined) {
        const v = parseDecimalString(r.value);
        if (v !== null) t.sum = addDec(t.sum, v);
      }
      if (r.key !== undefined) t.keys.add(r.key);
      if (t.ids.length < c.sampleSize) t.ids.push(r.id);
    }
  }
  const groups = c.grouped ? [...fired] : [""];
  if (c.grouped) {
    let room = c.maxGroups - fired.size;
    for (const g of tallies.keys()) {
      if (room <= 0) break;
      if (!fired.has(g)) {
        groups.push(g);
        room--;
      }
    }
  }
  const first = blocks[start] as WindowBlock;
  const end = blocks[i] as WindowBlock;
  for (const g of groups) {
    const t = tallies.get(g);
    const a = aggregateOf(c, t);
    const cond = holds(c.operator, a, c.threshold);
    if (fired.has(g)) {
      const past = upward(c.operator) ? compareDec(a, c.reset) <= 0 : compareDec(a, c.reset) >= 0;
      if (!cond && past) {
        fired.delete(g);
        rearms.push({ group: g, end: end.number });
      }
    } else if (cond) {
      fired.add(g);
      out.push({
        group: c.grouped ? g : null,
        end: { number: end.number, hash: end.hash, timestamp: end.timestamp },
        window: { fromBlock: first.number, toBlock: end.number, fromTimestamp: first.timestamp, toTimestamp: end.timestamp },
        aggregate: decString(a),
        recordCount: t?.count ?? 0,
        recordIds: t?.ids ?? [],
      });
    }
  }
}

/** Moves the final height up to `maxHead − reorgDepth` and drops what no window above it can reach. */
function prune(c: Compiled, s: WindowState): WindowState {
  const newBase = Math.max(s.base, s.maxHead - c.reorgDepth);
  if (newBase <= s.base) return s;
  const baseBlock = s.blocks.find((b) => b.number === newBase);
  const span = c.span;
  const keep =
    "blocks" in span
      ? (b: WindowBlock) => b.number >= newBase + 2 - span.blocks
      : (b: WindowBlock) => baseBlock === undefined || b.number > newBase || b.timestamp > baseBlock.timestamp - span.seconds;
  return {
    ...s,
    base: newBase,
    firedAtBase: [...firedAfter(s, s.open, s.rearms, newBase)].sort(),
    blocks: s.blocks.filter(keep),
    open: s.open.filter((f) => f.end.number > newBase),
    rearms: s.rearms.filter((r) => r.end > newBase),
  };
}

// ---- absence ----

/** Silence: no selected record for this many blocks or seconds (the rule's `absence` extension). */
export type AbsenceConfig = WindowSpan;

/**
 * The window an absence rule runs: `count < 1` over the span, re-armed by one record (`reset`
 * 1). So it fires at the first head whose window holds no record — {@link absenceDeadline} — once
 * per silence, and a reorg that brings a record into that window retracts it, exactly as a window.
 * @param options - the other knobs of {@link WindowConfig} (reorgDepth).
 */
export function absenceWindow(absence: AbsenceConfig, options: Pick<WindowConfig, "reorgDepth"> = {}): WindowConfig {
  return { ...options, span: absence, aggregate: "count", operator: "Less", threshold: "1", reset: "1", sampleSize: 0 };
}

/**
 * When silence after `last` becomes an alert: by blocks, the head number `last.number + blocks`
 * (the window `head − blocks + 1 … head` then holds no record); by seconds, the first head whose
 * timestamp is ≥ `last.timestamp + seconds`. `last` is the last selected record's block, or,
 * before any, the block below `fromBlock` (by blocks) / block `fromBlock` (by seconds: the
 * silence is counted from its timestamp).
 */
export function absenceDeadline(
  absence: AbsenceConfig,
  last: { number: number; timestamp: number },
): { block: number } | { timestamp: number } {
  return "blocks" in absence ? { block: last.number + absence.blocks } : { timestamp: last.timestamp + absence.seconds };
}
