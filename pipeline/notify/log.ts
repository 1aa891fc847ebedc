/**
 * The notify stage's side of the delivery log: the store itself is shared with the API and lives
 * in `lib/alerting/deliveries.ts`; an action's destination, redacted (`describeDestination`, with a
 * webhook URL rendered from the alert's entity), is its channel's (`lib/alerting/channels.ts`);
 * here the log entry of one delivery is built.
 * @module
 */
import { describeDestination } from "../../lib/alerting/channels.js";
import type { DeliveryLogEntry } from "../../lib/alerting/deliveries.js";
import type { AlertStatus } from "../../lib/alerting/status.js";
import type { AlertDefinition } from "../../lib/rules/model.js";

export { describeDestination, redactUrl } from "../../lib/alerting/channels.js";
export * from "../../lib/alerting/deliveries.js";

/**
 * Builds the log entry of one delivery.
 * @param at Completion time (default now).
 */
export function deliveryLogEntry(
  alert: { id: string; sequence: number; status: AlertStatus },
  action: AlertDefinition,
  actionIndex: number,
  result: { ok: boolean; attempts: number; final: boolean; status?: number; error?: string; code?: string; destination?: string },
  at: Date = new Date(),
): DeliveryLogEntry {
  return {
    alertId: alert.id,
    sequence: alert.sequence,
    status: alert.status,
    actionIndex,
    type: action?.type,
    destination: result.destination ?? describeDestination(action),
    ok: result.ok,
    attempts: result.attempts,
    final: result.final,
    ...(result.status === undefined ? {} : { httpStatus: result.status }),
    ...(result.error === undefined ? {} : { error: result.error }),
    ...(result.code === undefined ? {} : { code: result.code }),
    at: at.toISOString(),
  };
}
