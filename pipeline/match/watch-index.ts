/**
 * The hook the match stage's over-time parts use to follow the rule index (rule sync upserts and
 * removes rules through the wrapped index).
 * @module
 */
import type { Rule } from "../../lib/rules/model.js";
import type { WatchedIndex } from "./windows/evaluator.js";

/**
 * Wraps a rule index so that `hold` learns every change: after an upsert, the rule as the index now
 * holds it (undefined when the index dropped it: disabled, another chain); before a removal, undefined.
 * @param index - the index to wrap (the rule index or the saved-search index; its other methods are passed through).
 * @param hold - called with (rule or undefined, rule id).
 */
export function watchIndex<T extends WatchedIndex>(index: T, hold: (rule: Rule | undefined, id: string) => void): T {
  return {
    ...index,
    upsert(rule) {
      index.upsert(rule);
      hold(index.get(rule.id), rule.id);
    },
    remove(id) {
      hold(undefined, id);
      return index.remove(id);
    },
  };
}
