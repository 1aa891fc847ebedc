/**
 * State-rule backtests, the pure part (issue 34 part 3; docs/alerting.md "Test a rule on history"):
 * the readings of a rule's watched subject at the blocks of a range, oldest first, go through the
 * live path's crossing arithmetic (lib/match/state.ts {@link applyReading}) and each firing becomes
 * a match with the live path's entity ({@link stateEntity}) and the alerts of any backtest
 * (lib/match/backtest.ts {@link alertEmitter}). The blocks read are those the live evaluator
 * (pipeline/match/state/evaluator.ts) reads ({@link stateDue}: every N blocks, or by the header's `logsBloom`). The first reading starts
 * from a fresh memory, as a rule enabled at the range's first block would; a block whose subject
 * could not be read is skipped and the next reading continues from the last one read, as live. The
 * reads themselves (JSON-RPC at each block's hash) are the caller's (api/backtest/state-scan.ts).
 * @module
 */
import { bloomMayContain } from "../chain/logs-bloom.js";
import type { StateReading, StateSubject } from "../chain/state-reads.js";
import type { RuleInput } from "../rules/model.js";
import { ruleStateCondition, type StateCondition } from "../rules/schema-state.js";
import type { MatchedEntity } from "./alert-template.js";
import { alertEmitter, type BacktesterOptions, type BacktestMatch, backtestRule } from "./backtest.js";
import { applyReading, initialMemory, type StateMemory } from "./state.js";

/** The contract whose logs an `every: "log"` subject follows. */
function subjectContract(s: StateSubject): string {
  if (s.type === "call") return s.to;
  if (s.type === "erc20Balance") return s.token;
  return s.address;
}

/**
 * Whether a rule is read at `block` (live and in backtests): every N blocks, or (`"log"`) when the block's
 * `logsBloom` may hold a log of the subject's contract (lib/chain/logs-bloom.ts; no bloom: read).
 */
export function stateDue(condition: StateCondition, block: { number: number; logsBloom?: string | null }): boolean {
  const every = condition.every ?? { blocks: 1 };
  if (every === "log") return !block.logsBloom || bloomMayContain(block.logsBloom, subjectContract(condition.subject));
  return block.number % Math.max(1, every.blocks) === 0;
}

/** What the alert of a state firing carries: its identity and the reading (`entity.state`). Shared with the live evaluator. */
export function stateEntity(block: { number: number; hash: string }, condition: StateCondition, reading: bigint): MatchedEntity {
  return {
    entityId: `state:${block.number}`,
    blockHash: block.hash,
    blockNumber: block.number,
    state: { subject: condition.subject, reading: reading.toString(), decimals: condition.decimals ?? 0, comparison: condition.comparison },
  };
}

/** A firing of a state backtest: the match (entity and alerts) and the reading before it (raw units, null on the first). */
export type StateBacktestMatch = BacktestMatch & { previous: string | null };

/** The outcome of one block of a state backtest. */
export interface StateBacktestStep {
  /** The firing, or null. */
  match: StateBacktestMatch | null;
  /** Alerts of the firing. */
  alerts: number;
}

/** A state backtest in progress: feed it the readings of its due blocks, oldest first. */
export interface StateBacktester {
  /** The rule as evaluated (see lib/match/backtest.ts `backtestRule`). */
  readonly rule: ReturnType<typeof backtestRule>;
  readonly condition: StateCondition;
  /** Whether the live evaluator reads the subject at `block` ({@link stateDue}). */
  due(block: { number: number; logsBloom?: string | null }): boolean;
  /** Applies the reading of one due block (an unread one is skipped: the memory stays). */
  block(block: { number: number; hash: string }, reading: StateReading): StateBacktestStep;
}

/** Options of {@link createStateBacktester}: those of a record backtest but the decoding. */
export type StateBacktesterOptions = Omit<BacktesterOptions, "decode">;

/**
 * Starts a state backtest of `options.rule`.
 * @throws {Error} when the rule has no `stateCondition` (check with `ruleStateCondition` first).
 * @throws {RangeError} (lib/match/state.ts) on a threshold, reset or percent that does not parse; validated rules always parse.
 */
export function createStateBacktester(options: StateBacktesterOptions & { rule: RuleInput }): StateBacktester {
  const condition = ruleStateCondition(options.rule);
  if (condition === null) throw new Error("createStateBacktester: the rule has no stateCondition");
  const now = options.now ?? (() => new Date());
  const rule = backtestRule(options, now);
  const alertsOf = alertEmitter({ ...options, rule, now });
  let memory: StateMemory = initialMemory();
  return {
    rule,
    condition,
    due: (block) => stateDue(condition, block),
    block(block, reading) {
      if (!reading.ok) return { match: null, alerts: 0 };
      const previous = memory.last;
      const step = applyReading(condition.comparison, memory, reading.value, condition.decimals ?? 0);
      memory = step.memory;
      if (!step.fired) return { match: null, alerts: 0 };
      const entity = stateEntity(block, condition, reading.value);
      const alerts = alertsOf(entity);
      const match: StateBacktestMatch = {
        blockNumber: block.number,
        blockHash: block.hash,
        targetType: rule.config.targetType,
        entityId: entity.entityId,
        entity: entity as unknown as Record<string, unknown>,
        alerts,
        previous,
      };
      return { match, alerts: alerts.length };
    },
  };
}
