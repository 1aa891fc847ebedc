/**
 * Backtests of sequence rules (`sequence`, lib/rules/schema-sequence.ts; docs/alerting.md "Test a
 * rule on history"), the pure part: every block of the range, in ascending order, with its records.
 * The rule's own conditions select the first-step entities and its `sequence.followedBy` conditions
 * the followedBy entities, as in any backtest ({@link ruleSelector}, once per condition set); the
 * selected entities become sequence records as the match stage writes them ({@link sequenceRecordOf}:
 * correlate value, position in the block), and the arithmetic the stage runs
 * (lib/match/sequences.ts `applySequenceBlock`) pairs them — same order within a block, same span,
 * same replacement of an open step by a newer first record, same `maxPending`. A firing is reported
 * as a match of the entity the stage alerts on ({@link sequenceEntity}: `sequence:<first id>:<followedBy id>`
 * in the followedBy record's block, with `entity.sequenceMatch`), its alerts rendered
 * ({@link alertEmitter}, confirmations counted from the followedBy record's block). `In watchlist`
 * conditions, of either step, are answered by `blockWithLists` from `options.watchlists` (today's
 * members), both condition sets of a block under one membership prefetch.
 *
 * The steps start empty at the first block fed (the range's `from`), as a live sequence starts at
 * the first block after the rule is stored: a first record before `from` opens nothing. A missing
 * block (a gap in the index) restarts them, as the stage does. The reorg depth of the arithmetic is
 * 1 (the index holds the canonical chain, nothing is retracted), which keeps its state at the open
 * steps and one block; the firings do not depend on it. Saved searches with `sequence` replay through
 * the same code ({@link sequenceBacktesterOf}), their two queries selecting (api/backtest/search-sequence.ts).
 * @module
 */
import type { RecordKind } from "../records.js";
import type { Rule, RuleInput } from "../rules/model.js";
import { ruleSequence, sequenceConfigOf } from "../rules/schema-sequence.js";
import {
  alertEmitter,
  BACKTEST_SOURCES,
  type BacktesterOptions,
  type BlockSelection,
  backtestRule,
  type IndexedRecord,
  ruleSelector,
  selectWithLists,
} from "./backtest.js";
import { followedByRule, sequenceEntity, sequenceRecordOf } from "./sequence-records.js";
import { applySequenceBlock, createSequenceState, type SequenceRecord, type SequenceState } from "./sequences.js";
import { pushFiring, type WindowBacktestBlock, type WindowBacktester, type WindowBlockHeader } from "./window-backtest.js";

/**
 * A sequence-rule backtest in progress: the window backtester's interface (api/backtest/window-scan.ts
 * feeds it every block of the range). Its blocks' `selected` counts the first-step selections plus
 * the followedBy selections (an entity both condition sets select counts twice).
 */
export type SequenceBacktester = WindowBacktester;

/** Whether a rule body carries `sequence`. */
export function isSequenceRule(rule: object): boolean {
  return ruleSequence(rule) !== null;
}

/**
 * The indexed record kinds a backtest of a rule reads: those of its target type and, for a sequence
 * rule, of its `followedBy` target type ({@link BACKTEST_SOURCES}), each once.
 */
export function backtestKinds(rule: RuleInput): RecordKind[] {
  const seq = ruleSequence(rule);
  const types = seq === null ? [rule.config.targetType] : [rule.config.targetType, seq.followedBy.targetType];
  return [...new Set(types.flatMap((t) => BACKTEST_SOURCES[t] ?? []))];
}

/**
 * Why a sequence rule's `followedBy` conditions cannot be tested on history (their target type has
 * no backtest sources, {@link BACKTEST_SOURCES}: Token), or null (also for a rule without `sequence`).
 */
export function followedByTargetUnsupported(rule: object): string | null {
  const seq = ruleSequence(rule);
  if (seq === null || BACKTEST_SOURCES[seq.followedBy.targetType] !== null) return null;
  return `${seq.followedBy.targetType} conditions cannot be tested on history: the first sight of a token needs the whole chain's history`;
}

/**
 * Starts a backtest of a sequence rule (see the module notes).
 * @throws {TypeError} when the rule has no `sequence`; RangeError (lib/match/sequences.ts) on a
 *   sequence validation refuses; RuleCompileError (evaluate.ts) on conditions that do not compile.
 */
export function createSequenceBacktester(options: BacktesterOptions): SequenceBacktester {
  const now = options.now ?? (() => new Date());
  const rule = backtestRule(options, now);
  const seq = ruleSequence(rule);
  if (seq === null) throw new TypeError("not a sequence rule");
  const followed = followedByRule(rule, seq);
  const lookup = options.watchlists?.lookup;
  const selectFirst = ruleSelector(rule, options.chain, options.decode, lookup);
  const selectFollowedBy = ruleSelector(followed, options.chain, options.decode, lookup);
  const sameType = followed.config.targetType === rule.config.targetType;
  return sequenceBacktesterOf(
    rule,
    (records) => {
      const first = selectFirst(records);
      const followedBy = selectFollowedBy(records);
      return { first, followedBy, records: first.records, entities: first.entities + (sameType ? 0 : followedBy.entities) };
    },
    { ...options, now },
  );
}

/** One block's selections of both steps of a sequence, and the counts its `block` line reports. */
export interface SequenceBlockSelection {
  /** The entities the first step selects (the rule's conditions, the search's query). */
  first: BlockSelection;
  /** The entities `sequence.followedBy` selects. */
  followedBy: BlockSelection;
  /** Records read of the block. */
  records: number;
  /** Entities evaluated (each once). */
  entities: number;
}

/**
 * The sequence replay of {@link createSequenceBacktester} for any rule-shaped snapshot with
 * `sequence` and per-block selection of both steps: a rule's targetMaps ({@link ruleSelector}), or
 * a saved search's two queries (api/backtest/search-sequence.ts).
 * @param rule - the snapshot as evaluated (its `sequence`: `within`, `correlate`, `maxPending`; its alerts).
 * @param select - both steps' selections of one block (compiled with `options.watchlists.lookup`
 *   when given: then the backtester has {@link WindowBacktester.blockWithLists}, both steps under one prefetch).
 * @throws {TypeError} when `rule` has no `sequence`; RangeError (lib/match/sequences.ts) on a sequence validation refuses.
 */
export function sequenceBacktesterOf(
  rule: Rule,
  select: (records: readonly IndexedRecord[]) => SequenceBlockSelection,
  options: Omit<BacktesterOptions, "rule" | "decode">,
): SequenceBacktester {
  const now = options.now ?? (() => new Date());
  const seq = ruleSequence(rule);
  if (seq === null) throw new TypeError("not a sequence rule");
  const config = sequenceConfigOf(seq, 1);
  const membership = options.watchlists;
  const alertsOf = alertEmitter({ ...options, rule, now });
  let state: SequenceState | null = null;
  let top = -1;

  const apply = (header: WindowBlockHeader, selection: SequenceBlockSelection): WindowBacktestBlock => {
    const { first, followedBy: then } = selection;
    const selected: SequenceRecord[] = [];
    for (const s of first.selected) {
      const r = sequenceRecordOf(seq, "first", s.entity);
      if (r !== undefined) selected.push(r);
    }
    for (const s of then.selected) {
      const r = sequenceRecordOf(seq, "followedBy", s.entity);
      if (r !== undefined) selected.push(r);
    }
    const hash = header.hash.toLowerCase();
    // The first block, or one after a gap: the steps start (again) there.
    if (state === null || header.number !== top + 1) state = createSequenceState(header.number);
    top = header.number;
    const step = applySequenceBlock(config, state, { number: header.number, hash, timestamp: header.timestamp, records: selected });
    state = step.state;
    const result: WindowBacktestBlock = {
      blockNumber: header.number,
      blockHash: hash,
      records: selection.records,
      entities: selection.entities,
      selected: first.selected.length + then.selected.length,
      matches: [],
      alerts: 0,
    };
    for (const e of step.events) if (e.type === "fired") pushFiring(result, rule, sequenceEntity(e.firing), alertsOf);
    return result;
  };
  return {
    rule,
    block: (header, records) => apply(header, select(records)),
    ...(membership ? { blockWithLists: async (header, records) => apply(header, await selectWithLists(membership, select, records)) } : {}),
  };
}
