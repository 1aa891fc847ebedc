/**
 * Keeps the match stage's {@link RuleIndex} equal to the rule store: a full load at start, the
 * store's change feed (a deleted or disabled rule's tracked matches are dropped silently), a full
 * reload whenever the feed reconnects (changes published meanwhile are lost), and a periodic full
 * reload in case a change notification was missed.
 * @module
 */
import type { Logger } from "../../lib/logger.js";
import type { RuleIndex } from "../../lib/match/rule-index.js";
import type { Rule } from "../../lib/rules/model.js";
import type { RuleStore } from "../../lib/rules/store.js";
import type { ConfirmationTracker } from "./confirmations/tracker.js";

/** Dependencies of {@link startRuleSync}. */
export interface RuleSyncDeps {
  rules: RuleStore;
  /** The rule index, or the saved-search index (`search-index.ts`): anything that takes rules and drops them by id. */
  index: Pick<RuleIndex, "upsert"> & { remove(id: string): unknown };
  /** Forgets the tracked matches of deleted and disabled rules. */
  tracker: Pick<ConfirmationTracker, "dropRule">;
  logger: Logger;
  /** Interval of the full reload; default 30000 ms. */
  reloadIntervalMs?: number;
}

/** A running rule sync. */
export interface RuleSync {
  /** Reloads every rule from the store now. */
  reload(): Promise<void>;
  /** Stops the periodic reload and the change feed. */
  stop(): Promise<void>;
}

/**
 * Loads every rule into the index, then follows the store (module doc). A rule that cannot be
 * compiled is logged and left out.
 * @throws the store's errors of the first load and of subscribing.
 */
export async function startRuleSync(deps: RuleSyncDeps): Promise<RuleSync> {
  const { rules, index, tracker, logger } = deps;
  const upsert = (rule: Rule) => {
    try {
      index.upsert(rule);
    } catch (err) {
      logger.error({ err, ruleId: rule.id }, "rule cannot be compiled; ignored");
    }
  };
  let heldIds = new Set<string>();
  const reload = async () => {
    const all = await rules.all();
    const ids = new Set(all.map((r) => r.id));
    for (const r of all) upsert(r);
    // Rules deleted while a notification was missed: drop what the store no longer has.
    for (const held of heldIds) if (!ids.has(held)) index.remove(held);
    heldIds = ids;
  };
  const reloadLogged = () => void reload().catch((err) => logger.warn({ err }, "reload failed"));
  await reload();
  const unsubscribe = await rules.subscribe(
    (change) => {
      void (async () => {
        if (change.op === "delete") {
          index.remove(change.id);
          await tracker.dropRule(change.id);
          return;
        }
        const rule = await rules.getById(change.id);
        if (!rule) return;
        upsert(rule);
        heldIds.add(rule.id);
        if (rule.state !== "enabled") await tracker.dropRule(rule.id);
      })().catch((err) => logger.warn({ err, change }, "rule change not applied; the periodic reload will"));
    },
    { onReconnect: reloadLogged },
  );
  const timer = setInterval(reloadLogged, deps.reloadIntervalMs ?? 30_000);
  timer.unref();
  return {
    reload,
    async stop() {
      clearInterval(timer);
      await unsubscribe().catch(() => {});
    },
  };
}
