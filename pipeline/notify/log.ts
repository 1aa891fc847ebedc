/**
 * The notify stage's side of the delivery log: the store itself, and `describeDestination` (an
 * action's destination, redacted, with a webhook URL rendered from the alert's entity), are shared
 * with the API and live in `lib/alerting/deliveries.ts`.
 * @module
 */
export * from "../../lib/alerting/deliveries.js";
