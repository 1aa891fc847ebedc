/**
 * The alert status on its own (no Node module imported), so that type-only importers in the browser
 * (the console's deliveries page, through lib/alerting/deliveries.ts) can use it; lib/alerting/alert.ts
 * re-exports it.
 * @module
 */

/**
 * Alert status:
 * - `pending`: first sight of a match, sent only when the rule has sendPendingAlerts;
 * - `confirmed`: confirmations reached maxConfirmationCount (sent exactly once per match);
 * - `removed`: the block left the canonical chain after `pending` was sent.
 */
export type AlertStatus = "pending" | "confirmed" | "removed";
