/**
 * The per-alert step of the notify stage, for the Kafka shell to call once per alert record:
 * deliver every action of the alert (in parallel; each with its own retries), skipping actions the
 * redelivery guard says were already delivered, record each outcome in the rule's delivery log,
 * and mark successes. The shell dead-letters the alert when {@link AlertDeliveryOutcome.retryLater}
 * is not empty; a replay of that dead letter then re-sends only the actions not yet delivered.
 * @module
 */
import type { Deliverer, DeliveryResult } from "./deliver.js";
import { type DeliveryLog, deliveryLogEntry } from "./log.js";
import type { NotifyAlert } from "./render.js";

/** What happened to one action. */
export interface ActionOutcome {
  actionIndex: number;
  /** true when the guard found the action already delivered (nothing sent, nothing logged). */
  skipped: boolean;
  /** The delivery result (absent when skipped). */
  result?: DeliveryResult;
}

/** What happened to one alert. */
export interface AlertDeliveryOutcome {
  actions: ActionOutcome[];
  /**
   * Indexes of actions that failed but may succeed later (`final: false`, e.g.
   * `CS_DELIVERY_EXHAUSTED`). Non-empty → dead-letter the alert (error code: the first such
   * action's code) so `chainsift alerts replay` can re-send it.
   */
  retryLater: number[];
}

/** Dependencies of {@link deliverAlert}. */
export interface DeliverAlertDeps {
  deliverer: Deliverer;
  log: DeliveryLog;
  /** Clock for the log's `at` (default `() => new Date()`). */
  now?: () => Date;
}

/**
 * Delivers all actions of an alert. Rejects only on infrastructure failures (Redis for the guard,
 * the log or the secrets): the shell should then retry the record without committing, which may
 * re-send actions that had succeeded but were not yet marked (at least once).
 */
export async function deliverAlert(alert: NotifyAlert, deps: DeliverAlertDeps): Promise<AlertDeliveryOutcome> {
  const now = deps.now ?? (() => new Date());
  const actions = await Promise.all(
    (alert.actions ?? []).map(async (action, actionIndex): Promise<ActionOutcome> => {
      if (await deps.log.alreadyDelivered(alert.id, actionIndex)) return { actionIndex, skipped: true };
      const result = await deps.deliverer.deliver(alert, action, actionIndex);
      const at = now();
      await deps.log.record(alert.ruleId, deliveryLogEntry(alert, action, actionIndex, result, at));
      if (result.ok) await deps.log.markDelivered(alert.id, actionIndex, at);
      return { actionIndex, skipped: false, result };
    }),
  );
  return { actions, retryLater: actions.filter((a) => a.result && !a.result.ok && !a.result.final).map((a) => a.actionIndex) };
}
