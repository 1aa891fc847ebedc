/**
 * The JSON body of `Webhook (POST)`, version 1: the reference layout of every alert
 * (docs/alerting-delivery.md), a fixed selection of {@link Alert} fields in a fixed order. It
 * leaves out what is internal or only for people: `accountId`, `entity`, `actions`, `ruleName`.
 * A `removed` alert that names its replacing block also carries `replacedBy` (`{number, hash}`,
 * hash null when no block was known at that height yet), after `emittedAt`; no other alert has it.
 * An alert of a windowed rule (docs/alerting.md, "Alerts over time") carries `window`, what crossed:
 * `{group, end, window, aggregate, recordCount, recordIds}` (`WindowFiring` of lib/match/windows.ts), last; a
 * sequence rule's alert carries `sequenceMatch`, both records and an ids search body (`SequenceMatch`
 * of pipeline/match/sequences/evaluator.ts), last.
 * @module
 */
import type { Alert, ReplacingBlock } from "./alert.js";

/** The fields of the webhook body, in the order they are written. */
export const WEBHOOK_FIELDS = [
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
] as const satisfies ReadonlyArray<keyof Alert>;

/** JSON body of `Webhook (POST)`; `id` is also its `Idempotency-Key` header. */
export type WebhookBody = Pick<Alert, (typeof WEBHOOK_FIELDS)[number]> & {
  replacedBy?: ReplacingBlock;
  window?: unknown;
  sequenceMatch?: unknown;
  state?: unknown;
};

/** Builds the {@link WebhookBody} of an alert: the {@link WEBHOOK_FIELDS}, in order (`chain` copied field by field). */
export function webhookBody(alert: Alert): WebhookBody {
  const body: Record<string, unknown> = {};
  for (const field of WEBHOOK_FIELDS) body[field] = alert[field];
  const { technology, blockchain, network } = alert.chain;
  body.chain = { technology, blockchain, network };
  if (alert.status === "removed" && alert.replacedBy) body.replacedBy = { number: alert.replacedBy.number, hash: alert.replacedBy.hash };
  if (alert.entity?.window !== undefined) body.window = alert.entity.window;
  if (alert.entity?.sequenceMatch !== undefined) body.sequenceMatch = alert.entity.sequenceMatch;
  if (alert.entity?.state !== undefined) body.state = alert.entity.state;
  return body as WebhookBody;
}

/**
 * The exact bytes sent (and signed) as the body of `Webhook (POST)`: `JSON.stringify` of
 * {@link webhookBody}, with any `bigint` written as a decimal string.
 */
export function webhookJson(alert: Alert): string {
  return JSON.stringify(webhookBody(alert), (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}
