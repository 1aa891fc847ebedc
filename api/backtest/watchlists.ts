/**
 * `In watchlist` conditions in rule backtests (docs/alerting.md "Test a rule on history"): the memberships
 * are read from the watchlist store (lib/watchlists/store.ts) of the caller's account, as the match stage
 * reads them (lib/match/watchlist-membership.ts), so a backtest sees the lists' members *today*, not those
 * they had at each block's time (membership history is not kept).
 * @module
 */
import { type AnyDefinition, watchlistIds } from "../../lib/match/evaluate.js";
import { createWatchlistMembership, type WatchlistMembership } from "../../lib/match/watchlist-membership.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { ruleSequence } from "../../lib/rules/schema-sequence.js";
import type { WatchlistStore } from "../../lib/watchlists/store.js";
import { apiError } from "../errors.js";

/** The store calls a backtest's membership reads make. */
export type BacktestWatchlists = Pick<WatchlistStore, "get" | "contains">;

/** The watchlist ids a rule's `In watchlist` conditions name: its targetMap's and its sequence's `followedBy.targetMap`'s. */
export function ruleWatchlistIds(rule: RuleInput): Set<string> {
  const ids = watchlistIds(rule.config.targetMap as readonly AnyDefinition[]);
  return watchlistIds(ruleSequence(rule)?.followedBy.targetMap as readonly AnyDefinition[] | undefined, ids);
}

/**
 * The `watchlists` option of a rule's backtester (lib/match/backtest.ts `createBacktester`, lib/match/window-backtest.ts
 * `createWindowBacktester`, lib/match/sequence-backtest.ts `createSequenceBacktester`): a fresh membership reader
 * when the rule has an `In watchlist` condition ({@link ruleWatchlistIds}), else none.
 * @param store - the watchlist store; undefined where none is reachable (the CLI: no account owns lists there).
 * @throws `ApiError` 400 `CS_RULE_NOT_SUPPORTED` (path `rule.config.targetMap`, or `rule.sequence.followedBy.targetMap` when
 *   only those conditions name a list) when the rule needs lists and there is no store.
 */
export function backtestWatchlists(store: BacktestWatchlists | undefined, rule: RuleInput): { watchlists?: WatchlistMembership } {
  if (ruleWatchlistIds(rule).size === 0) return {};
  if (!store)
    throw apiError(
      "CS_RULE_NOT_SUPPORTED",
      "In watchlist conditions are evaluated by POST /alerting/rules/test/ only (the lists belong to the caller's account)",
      watchlistIds(rule.config.targetMap).size > 0 ? "rule.config.targetMap" : "rule.sequence.followedBy.targetMap",
    );
  return { watchlists: createWatchlistMembership(store) };
}
