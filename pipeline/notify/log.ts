/**
 * The notify stage's side of the delivery log: the store itself is shared with the API and lives
 * in `lib/alerting/deliveries.ts`; here the destination of an action is described with its URL
 * rendered from the alert's entity.
 * @module
 */
import { describeDestination as describeAction } from "../../lib/alerting/deliveries.js";
import { renderUrl } from "../../lib/alerting/render.js";
import type { AlertDefinition } from "../../lib/rules/model.js";

export * from "../../lib/alerting/deliveries.js";

/**
 * The redacted destination of an action for the log, with webhook URLs rendered from `entity`
 * (the template when it cannot be rendered); see `describeDestination` of lib/alerting/deliveries.ts.
 */
export function describeDestination(action: AlertDefinition, entity?: Record<string, unknown>): string {
  const p = (action?.parameters ?? {}) as unknown as Record<string, unknown>;
  if (entity && typeof p.url === "string" && (action.type === "Webhook (GET)" || action.type === "Webhook (POST)")) {
    try {
      return describeAction(action, renderUrl(p.url, entity));
    } catch {
      // keep the template
    }
  }
  return describeAction(action);
}
