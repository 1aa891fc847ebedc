/**
 * Crossing arithmetic of state conditions (issue 34 part 1; docs/rules.md, "State
 * conditions"): a reading of a watched subject (a native balance, an ERC-20 `balanceOf`, a view
 * call's numeric result, a storage slot) is compared with a threshold, or with the previous
 * reading as a relative change in percent. Pure: readings are integers in the subject's raw units
 * (wei, token base units), thresholds decimal strings in whole units scaled by `decimals`, and the
 * state is plain JSON (a decimal string and a flag), kept in Redis per rule and block hash by the
 * match stage's state evaluator (pipeline/match/state/evaluator.ts).
 */
import { resetLevel, type WindowOperator } from "./windows.js";

/** Comparison of a reading with a threshold; the operators of window alerts (`lib/match/windows.ts`). */
export type StateOperator = WindowOperator;

/** A threshold comparison: fires when `reading operator threshold` starts to hold (crossing, not flooding). */
export interface ThresholdComparison {
  operator: StateOperator;
  /** Decimal string in whole units (e.g. `"5"` ETH when `decimals` is 18). */
  threshold: string;
  /** Level (whole units) the reading must pass, back on the non-firing side, to re-arm; default half the threshold's magnitude away from it ({@link resetLevel}). */
  reset?: string;
}

/** A relative change against the previous reading: fires when it moved by at least `percent` in `direction`. */
export interface ChangeComparison {
  /** Percent, a positive decimal string (`"20"` is 20 %). */
  percent: string;
  /** `up`, `down` or `any` (default `any`). */
  direction?: "up" | "down" | "any";
}

/**
 * Any change against the previous reading: fires on every reading that differs from the one before
 * (including from or to zero; never on the first reading). For values that are identities rather
 * than amounts, e.g. the EIP-1967 implementation slot of a proxy (`0x360894a1…2bbc`,
 * https://eips.ethereum.org/EIPS/eip-1967): "the implementation changed" is an upgrade.
 */
export interface ChangedComparison {
  changed: true;
}

/** Every comparison a state condition takes. */
export type StateComparison = ThresholdComparison | ChangeComparison | ChangedComparison;

/** What is kept per rule between readings (JSON-safe). */
export interface StateMemory {
  /** The previous reading, raw units as a decimal string; null before the first. */
  last: string | null;
  /** Threshold comparisons only: false after a firing until the reading passes the reset level. */
  armed: boolean;
}

/** The memory of a rule that has not read yet. */
export function initialMemory(): StateMemory {
  return { last: null, armed: true };
}

/**
 * Parses a decimal string in whole units into raw units (`"1.5"` with 18 decimals is 1.5e18).
 * @throws RangeError when `value` is not a plain decimal or has more fractional digits than `decimals`.
 */
export function toRaw(value: string, decimals: number): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(value);
  if (!m) throw new RangeError(`not a plain decimal: ${value}`);
  const frac = m[3] ?? "";
  if (frac.replace(/0+$/, "").length > decimals) throw new RangeError(`${value} has more than ${decimals} decimals`);
  const raw = BigInt((m[2] ?? "0") + frac.padEnd(decimals, "0").slice(0, decimals));
  return m[1] === "-" ? -raw : raw;
}

function holds(op: StateOperator, a: bigint, b: bigint): boolean {
  if (op === "Greater") return a > b;
  if (op === "Greater or Equal") return a >= b;
  if (op === "Less") return a < b;
  return a <= b;
}

/** True when the reading is past the reset level on the non-firing side. */
function pastReset(c: ThresholdComparison, reading: bigint, decimals: number): boolean {
  const level = toRaw(resetLevel(c), decimals);
  return c.operator.startsWith("Greater") ? reading <= level : reading >= level;
}

/** The outcome of one reading: whether it fires, and the memory to keep. */
export interface StateStep {
  fired: boolean;
  memory: StateMemory;
}

/**
 * Applies one reading (raw units) to a rule's memory.
 * - threshold: fires when armed and the condition holds, then disarms; re-arms once the reading is past the reset level.
 * - change: fires when |reading − last| / |last| ≥ percent in the direction (never on the first reading, nor when last is 0).
 * - changed: fires when the reading differs from last (never on the first reading).
 * @param decimals scale of the threshold/reset (0 for raw values such as a storage slot).
 * @throws RangeError on an unparsable threshold, reset or percent.
 */
export function applyReading(comparison: StateComparison, memory: StateMemory, reading: bigint, decimals: number): StateStep {
  const last = memory.last === null ? null : BigInt(memory.last);
  const next: StateMemory = { last: reading.toString(), armed: memory.armed };
  if ("changed" in comparison) return { fired: last !== null && reading !== last, memory: next };
  if ("percent" in comparison) {
    if (last === null || last === 0n) return { fired: false, memory: next };
    const pct = toRaw(comparison.percent, 6);
    const delta = reading - last;
    const dir = comparison.direction ?? "any";
    if ((dir === "up" && delta <= 0n) || (dir === "down" && delta >= 0n) || delta === 0n) return { fired: false, memory: next };
    const mag = delta < 0n ? -delta : delta;
    const base = last < 0n ? -last : last;
    // mag / base * 100 >= pct / 1e6  <=>  mag * 100 * 1e6 >= pct * base
    return { fired: mag * 100_000_000n >= pct * base, memory: next };
  }
  const threshold = toRaw(comparison.threshold, decimals);
  if (memory.armed && holds(comparison.operator, reading, threshold)) return { fired: true, memory: { ...next, armed: false } };
  if (!memory.armed && !holds(comparison.operator, reading, threshold) && pastReset(comparison, reading, decimals))
    return { fired: false, memory: { ...next, armed: true } };
  return { fired: false, memory: next };
}

/** A rule's memories by block hash (JSON-safe), so that a block of a new branch starts from its own parent's memory. */
export interface StateLedger {
  /** Block hash (lower case) → the memory after that block's reading. */
  byHash: Record<string, StateMemory>;
  /** Block hashes in the order they were read (oldest first), for pruning. */
  order: string[];
  /** Block hash (lower case) → block number, for the readings that gave one (ledgers saved before it lack it). */
  numbers?: Record<string, number>;
}

/** An empty ledger. */
export function emptyLedger(): StateLedger {
  return { byHash: {}, order: [] };
}

/**
 * Applies the reading of block `hash` (child of `parentHash`): starts from the parent's memory
 * (the initial memory when the parent was never read), so after a reorg the new branch is judged
 * from the fork point, not from the orphaned branch; a firing of an orphaned block is retracted by
 * the confirmation tracker (`removed`), as for any match of that block. Keeps the last `keep`
 * blocks (the reorg window; default 128).
 */
export function applyBlockReading(
  comparison: StateComparison,
  ledger: StateLedger,
  block: { hash: string; parentHash: string; number?: number },
  reading: bigint,
  decimals: number,
  keep = 128,
): { fired: boolean; ledger: StateLedger } {
  const parent = ledger.byHash[block.parentHash.toLowerCase()] ?? initialMemory();
  const step = applyReading(comparison, parent, reading, decimals);
  const hash = block.hash.toLowerCase();
  const order = [...ledger.order.filter((h) => h !== hash), hash];
  const byHash = { ...ledger.byHash, [hash]: step.memory };
  const numbers = { ...ledger.numbers, ...(block.number !== undefined ? { [hash]: block.number } : {}) };
  for (const old of order.splice(0, Math.max(0, order.length - keep))) {
    delete byHash[old];
    delete numbers[old];
  }
  return { fired: step.fired, ledger: { byHash, order, numbers } };
}

/**
 * The hash whose memory a reading of `block` continues (pure):
 * 1. its parent's, when the parent was read;
 * 2. else the highest canonical block below it that the ledger holds, looking back `lookBack` blocks
 *    (`canonical` knows the hashes of the reorg window): a rule read every N blocks, a block skipped;
 * 3. else the highest-numbered reading more than `lookBack` blocks below `block` (final: no reorg
 *    reaches it), for rules read less often than the reorg window (every 500 blocks, `every: "log"`);
 * 4. else the parent (a fresh memory).
 * @param canonical - canonical hash at a height within the reorg window, or undefined when unknown.
 */
export function memoryBase(
  ledger: StateLedger,
  block: { number: number; parentHash: string },
  canonical: ((n: number) => string | undefined) | undefined,
  lookBack: number,
): string {
  const parent = block.parentHash.toLowerCase();
  if (ledger.byHash[parent] !== undefined || canonical === undefined) return parent;
  const floor = Math.max(0, block.number - 1 - lookBack);
  for (let n = block.number - 2; n >= floor; n--) {
    const h = canonical(n)?.toLowerCase();
    if (h !== undefined && ledger.byHash[h] !== undefined) return h;
  }
  let best: string | undefined;
  let bestNumber = -1;
  for (const [h, n] of Object.entries(ledger.numbers ?? {}))
    if (n < floor && n > bestNumber && ledger.byHash[h] !== undefined) {
      best = h;
      bestNumber = n;
    }
  return best ?? parent;
}
