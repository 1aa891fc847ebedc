/**
 * The documented top-level fields of the `Webhook (POST)` body, in order, copied from
 * docs/alerting-delivery.md ("Webhook (POST)" body, version 1). Deliberately written out here
 * rather than imported from lib/alerting/webhook.ts: the tests compare the code's body with the
 * documented contract, so a change to `WEBHOOK_FIELDS` that the docs do not make fails them.
 * @module
 */

/** The documented webhook body fields, in the order they are written. */
export const DOCUMENTED_WEBHOOK_FIELDS = [
  "id",
  "ruleId",
  "ruleVersion",
  "sequence",
  "status",
  "confirmations",
  "maxConfirmationCount",
  "chain",
  "targetType",
  "entityId",
  "blockHash",
  "blockNumber",
  "payload",
  "emittedAt",
];
