/**
 * From matched entities to the window arithmetic's records (lib/match/windows.ts): what a windowed
 * rule (lib/rules/schema-window.ts) reads from each entity its per-record conditions selected —
 * the group (`groupBy`), the summed value (`sum`), the distinct key (`distinct`). Pure.
 *
 * Attribute paths are dot-separated; a segment applied to an array of named items (an event's or
 * a method's decoded `args`) picks the item of that `name` and continues in its `value`. Values:
 * - a decoded argument (`{hex, num, scaled, type}`): an integer type (`uint…`, `int…`) gives its
 *   exact hex (`"0x…"`, raw units); with `useScaledValue`, the exact decimal `<raw>e-<decimals>`
 *   where the decimals are those of its `scaled` value (`num / scaled` is a power of ten); other
 *   types give their hex as group and distinct keys and nothing to a sum;
 * - a {@link Quantity} (`{num, raw}`): its `raw` hex;
 * - a string or finite number: itself (`String(v)`); anything else: absent.
 * @module
 */
import { type RuleWindow, ruleWindow } from "../rules/schema-window.js";
import type { MatchedEntity } from "./alert-template.js";
import type { WindowBlock, WindowFiring, WindowRecord } from "./windows.js";

interface ArgValue {
  hex: string;
  num: number | null;
  scaled: number | null;
  type: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isArg = (v: unknown): v is ArgValue => isObj(v) && typeof v.hex === "string" && typeof v.type === "string";

/** The value at a dot path of an entity (named array items by `name`, then their `value`), or undefined. */
export function fieldAt(entity: unknown, path: string): unknown {
  let cur: unknown = entity;
  for (const segment of path.split(".")) {
    if (Array.isArray(cur)) {
      const item = cur.find((x) => isObj(x) && x.name === segment) as Record<string, unknown> | undefined;
      cur = item?.value;
    } else if (isObj(cur) && Object.hasOwn(cur, segment)) cur = cur[segment];
    else return undefined;
  }
  return cur;
}

/** Decimals of an argument from its raw and scaled values (`num / scaled` = 10^d), or null when they do not say. */
function decimalsOf(a: ArgValue): number | null {
  if (a.num === null || a.scaled === null || a.num === 0 || a.scaled === 0) return null;
  const d = Math.round(Math.log10(Math.abs(a.num / a.scaled)));
  return Number.isFinite(d) && d >= 0 && d <= 77 ? d : null;
}

/** The text of a value as group or distinct key (see module doc), or undefined. */
export function keyOf(v: unknown): string | undefined {
  if (isArg(v)) return v.hex;
  if (isObj(v) && typeof v.raw === "string") return v.raw;
  if (typeof v === "string") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v === "boolean") return String(v);
  return undefined;
}

/** The summed value of a value as a decimal string (see module doc), or undefined when it is not a number. */
export function numberOf(v: unknown, scaled: boolean): string | undefined {
  if (isArg(v)) {
    if (!/^u?int/.test(v.type)) return undefined;
    if (!scaled) return v.hex;
    if (v.num === 0) return "0";
    const d = decimalsOf(v);
    if (d === null) return undefined;
    const neg = v.hex.startsWith("-");
    const raw = BigInt(neg ? v.hex.slice(1) : v.hex);
    return `${neg ? "-" : ""}${raw.toString()}e-${d}`;
  }
  if (isObj(v) && typeof v.raw === "string") return v.raw;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v === "string") return v;
  return undefined;
}

/**
 * The window record of a matched entity for a windowed rule.
 * @param entity - the matched entity (`entityId` is the record id).
 */
export function windowRecordOf(win: RuleWindow, entity: { entityId: string } & Record<string, unknown>): WindowRecord {
  const record: WindowRecord = { id: entity.entityId };
  if (typeof win.groupBy === "string") {
    const g = keyOf(fieldAt(entity, win.groupBy));
    if (g !== undefined) record.group = g;
  }
  const agg = win.aggregate;
  if (agg.fn === "sum") {
    const v = numberOf(fieldAt(entity, agg.field), agg.useScaledValue === true);
    if (v !== undefined) record.value = v;
  } else if (agg.fn === "distinct") {
    const k = keyOf(fieldAt(entity, agg.field));
    if (k !== undefined) record.key = k;
  }
  return record;
}

/**
 * The entity of a window firing: what the alert carries (live: pipeline/match/windows/evaluator.ts; backtests: lib/match/window-backtest.ts) (`entity.window`; `entity.absence` true for
 * an absence rule's silence) and its identity (`window:<end>[:<group>]`, `absence:<end>`).
 */
export function firingEntity(f: WindowFiring, absence = false, search?: WindowSearch): MatchedEntity {
  return {
    entityId: `${absence ? "absence" : "window"}:${f.end.number}${f.group === null ? "" : `:${f.group}`}`,
    blockHash: f.end.hash,
    blockNumber: f.end.number,
    window: search === undefined ? f : { ...f, ...search },
    ...(absence ? { absence: true } : {}),
  };
}

/** Most record ids a window alert's {@link WindowSearch} lists (about 70 bytes each in the webhook JSON). */
export const WINDOW_SEARCH_MAX_IDS = 1000;

/** What a window alert carries to find its records: a search body and whether it lists them all. */
export interface WindowSearch {
  /**
   * A search body (`ids` query, `size` = the ids listed) for the search API of the rule's record kind
   * (`POST /<technology>/<blockchain>/<network>/es/<kind>/search/`): the window's records of the
   * firing's group, block order then id, at most {@link WINDOW_SEARCH_MAX_IDS}.
   */
  search: { query: { ids: { values: string[] } }; size: number };
  /** False when the window holds more records than the body lists. */
  searchComplete: boolean;
}

/**
 * The {@link WindowSearch} of a firing, from the window state's retained blocks (pure; live and in
 * backtests): every record of the blocks `firing.window.fromBlock`–`toBlock` in the firing's group
 * (every record when the rule does not group).
 * @param blocks - the state's canonical blocks (lib/match/windows.ts `WindowState.blocks`), ascending, records sorted by id.
 * @param max - most ids listed; default {@link WINDOW_SEARCH_MAX_IDS}.
 */
export function windowSearch(blocks: readonly WindowBlock[], firing: WindowFiring, max: number = WINDOW_SEARCH_MAX_IDS): WindowSearch {
  const values: string[] = [];
  let total = 0;
  for (const b of blocks) {
    if (b.number < firing.window.fromBlock || b.number > firing.window.toBlock) continue;
    for (const r of b.records) {
      if (firing.group !== null && (r.group ?? "") !== firing.group) continue;
      total++;
      if (values.length < max) values.push(r.id);
    }
  }
  return { search: { query: { ids: { values } }, size: values.length }, searchComplete: values.length === total };
}

/**
 * The window record of an entity a windowed rule selected: {@link windowRecordOf} for a `window`
 * rule, the bare id for an `absence` rule (only presence counts). Live (the match stage) and in backtests.
 */
export function windowRecordOfRule(rule: object, entity: { entityId: string } & Record<string, unknown>): WindowRecord {
  const w = ruleWindow(rule);
  return w === null ? { id: entity.entityId } : windowRecordOf(w, entity);
}
