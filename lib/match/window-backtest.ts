/**
 * Backtests of windowed rules (`window` or `absence`, lib/rules/schema-window.ts; docs/alerting.md
 * "Test a rule on history"), the pure part: every block of the range, in ascending order, with its
 * records; the rule's per-record conditions select entities as in any backtest ({@link ruleSelector}),
 * the selected entities become window records as the match stage writes them
 * ({@link windowRecordOfRule}), and the window arithmetic the stage runs (lib/match/windows.ts
 * `applyBlock`) decides the firings — same crossing and reset band, same bounds, aggregate and
 * first record ids. A firing is reported as a match of the entity the stage alerts on
 * ({@link firingEntity}: `window:<end>[:<group>]`, `absence:<end>`) with its alerts rendered
 * ({@link alertEmitter}, confirmations counted from the block that closed the window). `In watchlist`
 * conditions are answered by `blockWithLists` from `options.watchlists` (today's members, read under the
 * match stage's membership prefetch: lib/match/watchlist-membership.ts `runEach`).
 *
 * The window starts at the first block fed (the range's `from`), as a live window starts at the
 * first block after the rule is stored: the windows ending before `from + span − 1` are
 * incomplete and judge nothing. A missing block (a gap in the index) restarts the window, as the
 * stage does. Retractions do not occur: the index holds the canonical chain, and a block's records
 * arrive with it.
 * @module
 */
import type { Rule } from "../rules/model.js";
import { absenceConfigOf, ruleAbsence, ruleWindow, windowConfigOf } from "../rules/schema-window.js";
import type { MatchedEntity } from "./alert-template.js";
import {
  type AlertEmitterOptions,
  alertEmitter,
  type BacktestAlert,
  type BacktestBlock,
  type BacktesterOptions,
  type BlockSelection,
  backtestRule,
  type IndexedRecord,
  pushMatch,
  ruleSelector,
  selectWithLists,
} from "./backtest.js";
import { firingEntity, windowRecordOfRule, windowSearch } from "./window-records.js";
import { applyBlock, createWindowState, type WindowConfig, type WindowState } from "./windows.js";

/** A block of the range as the window sees it: number, hash and timestamp (unix seconds). */
export interface WindowBlockHeader {
  number: number;
  hash: string;
  timestamp: number;
}

/** The result of one block: {@link BacktestBlock} (its `matches` are the firings) and how many entities the conditions selected. */
export interface WindowBacktestBlock extends BacktestBlock {
  /** Entities the per-record conditions selected (they entered the window). */
  selected: number;
}

/** A windowed-rule backtest in progress: feed it every block of the range in ascending order. */
export interface WindowBacktester {
  /** The rule as evaluated. */
  readonly rule: Rule;
  /** Applies one block with its records (none for a block without records of the scanned kinds); `In watchlist` conditions never hold. */
  block(header: WindowBlockHeader, records: readonly IndexedRecord[]): WindowBacktestBlock;
  /**
   * {@link WindowBacktester.block} with `In watchlist` conditions answered from `options.watchlists`
   * (today's members; backtest.ts `selectWithLists`). A rule's backtester has it when given `watchlists`.
   * @throws what the membership store throws (Redis unreachable).
   */
  blockWithLists?(header: WindowBlockHeader, records: readonly IndexedRecord[]): Promise<WindowBacktestBlock>;
}

/**
 * Adds a window's or sequence's firing to a block's result, under the rule's target type ({@link pushMatch}).
 * Shared by window and sequence backtests (lib/match/sequence-backtest.ts).
 */
export function pushFiring(
  result: BacktestBlock,
  rule: Rule,
  entity: MatchedEntity,
  alertsOf: (entity: MatchedEntity) => BacktestAlert[],
): void {
  pushMatch(result, rule.config.targetType, entity, alertsOf);
}

/** Whether a rule body is windowed (carries `window` or `absence`). */
export function isWindowedRule(rule: object): boolean {
  return ruleWindow(rule) !== null || ruleAbsence(rule) !== null;
}

/** The arithmetic's configuration of a windowed rule (validated bodies only). */
function configOf(rule: Rule): WindowConfig {
  const w = ruleWindow(rule);
  if (w !== null) return windowConfigOf(w);
  const a = ruleAbsence(rule);
  if (a === null) throw new TypeError("not a windowed rule");
  return absenceConfigOf(a);
}

/**
 * Starts a backtest of a windowed rule (see the module notes).
 * @throws {TypeError} when the rule has neither `window` nor `absence`; RangeError (lib/match/windows.ts) on a window validation refuses.
 */
export function createWindowBacktester(options: BacktesterOptions): WindowBacktester {
  const now = options.now ?? (() => new Date());
  const rule = backtestRule(options, now);
  return windowBacktesterOf(rule, ruleSelector(rule, options.chain, options.decode, options.watchlists?.lookup), { ...options, now });
}

/**
 * The window replay of {@link createWindowBacktester} for any rule-shaped snapshot and per-record
 * selection: a rule's targetMap ({@link ruleSelector}), or a saved search's query
 * (api/backtest/search-tester.ts `createSearchWindowBacktester`).
 * @param rule - the snapshot as evaluated (its `window` or `absence`, its alerts).
 * @param select - the entities of one block's records that enter the window (compiled with
 *   `options.watchlists.lookup` when given: then the backtester has {@link WindowBacktester.blockWithLists}).
 * @throws as {@link createWindowBacktester}.
 */
export function windowBacktesterOf(
  rule: Rule,
  select: (records: readonly IndexedRecord[]) => BlockSelection,
  options: Omit<BacktesterOptions, "rule" | "decode">,
): WindowBacktester {
  const now = options.now ?? (() => new Date());
  const config = configOf(rule);
  const absence = ruleAbsence(rule) !== null;
  const emitter: AlertEmitterOptions = { chain: options.chain, head: options.head, rule, now };
  const alertsOf = alertEmitter(options.explorers ? { ...emitter, explorers: options.explorers } : emitter);
  let state: WindowState | null = null;
  let top = -1;

  const apply = (header: WindowBlockHeader, selection: BlockSelection): WindowBacktestBlock => {
    const { records: count, entities, selected } = selection;
    const hash = header.hash.toLowerCase();
    // The first block, or one after a gap: the window starts (again) there.
    if (state === null || header.number !== top + 1) state = createWindowState(header.number);
    top = header.number;
    const step = applyBlock(config, state, {
      number: header.number,
      hash,
      timestamp: header.timestamp,
      records: selected.map((s) => windowRecordOfRule(rule, s.entity)),
    });
    state = step.state;
    const result: WindowBacktestBlock = {
      blockNumber: header.number,
      blockHash: hash,
      records: count,
      entities,
      selected: selected.length,
      matches: [],
      alerts: 0,
    };
    for (const e of step.events)
      if (e.type === "fired")
        pushFiring(result, rule, firingEntity(e.firing, absence, absence ? undefined : windowSearch(state.blocks, e.firing)), alertsOf);
    return result;
  };
  const membership = options.watchlists;
  return {
    rule,
    block: (header, records) => apply(header, select(records)),
    ...(membership ? { blockWithLists: async (header, records) => apply(header, await selectWithLists(membership, select, records)) } : {}),
  };
}
