/**
 * The alert: what the match stage emits when a rule matched an entity, and what the notify stage
 * delivers. {@link Alert} is the one shape; its wire formats are derived from it:
 *
 * | shape | where | module |
 * |---|---|---|
 * | {@link Alert} | in memory (match and notify stages, renderers, delivery log) | this one |
 * | `AlertAvro` | the alerts topic (`topics/schemas.ts` alertSchema) and the delivery queue | `avro.ts` |
 * | `WebhookBody` | the JSON body of `Webhook (POST)` (version 1) | `webhook.ts` |
 * @module
 */
import { createHash } from "node:crypto";
import type { ChainId } from "../config/index.js";
import type { AlertDefinition, TargetType } from "../rules/model.js";
import type { AlertStatus } from "./status.js";

/** The alert status (defined in ./status.ts, which imports no Node module). */
export type { AlertStatus };

/**
 * The block that took a reorganised-away block's place, as the match stage knew it when it emitted
 * a `removed` alert: the height (always known: the one the match was at) and the new canonical
 * block's hash there, or null when no block was known at that height yet (the new branch is shorter
 * so far, e.g. ingest found the reorg before it produced the new branch's block at that height).
 */
export interface ReplacingBlock {
  /** Height of the replacing block: the removed alert's `blockNumber`. */
  number: number;
  /** Hash of the new canonical block at that height, lower-case hex, or null when none was known yet. */
  hash: string | null;
}

/** One alert: a rule matched an entity in a block, in a given status. */
export interface Alert {
  /** Stable idempotency key: hex SHA-256 of `ruleId|entityId|blockHash|status` ({@link alertId}). Receivers deduplicate by it. */
  id: string;
  ruleId: string;
  ruleVersion: number;
  /**
   * The rule's name when the match was first seen (the match stage's snapshot), for e-mail subjects
   * and chat messages (webhooks never send it); null or absent when unknown (the rule id stands in).
   */
  ruleName?: string | null;
  accountId: string;
  /** Per-rule sequence number, strictly increasing in the order the match stage emits alerts of the rule. */
  sequence: number;
  status: AlertStatus;
  /** head − block + 1 when the alert was emitted (0 for `removed`). */
  confirmations: number;
  maxConfirmationCount: number;
  chain: ChainId;
  targetType: TargetType;
  /** Id of the matched entity (e.g. the event `_id`, a transaction hash). */
  entityId: string;
  /** Hash of the block of the entity, lower-case hex. */
  blockHash: string;
  blockNumber: number;
  /** The fields selected by the rule's payload items, or the documented default payload. */
  payload: Record<string, unknown>;
  /** The whole matched entity (used for URL templating). */
  entity: Record<string, unknown>;
  /** The rule's alert actions at the time of the match. */
  actions: AlertDefinition[];
  /** ISO 8601 UTC time the match stage emitted the alert. */
  emittedAt: string;
  /**
   * Only on `removed` alerts: the block that replaced `blockHash` at `blockNumber` ({@link ReplacingBlock}).
   * Absent on other statuses and on `removed` alerts emitted before the field existed.
   */
  replacedBy?: ReplacingBlock | null;
}

/**
 * The idempotency key of an alert ({@link Alert.id}): hex SHA-256 of `ruleId|entityId|blockHash|status`.
 * @param blockHash - as the alert carries it (lower-case hex).
 */
export function alertId(ruleId: string, entityId: string, blockHash: string, status: AlertStatus): string {
  return createHash("sha256").update(`${ruleId}|${entityId}|${blockHash}|${status}`).digest("hex");
}

/**
 * The match key: hex SHA-256 of `ruleId|entityId|blockHash` (block hash lower-cased), the same for
 * a match's `pending`, `confirmed` and `removed` alerts. Keys what a retraction changes: the
 * posted-message store (pipeline/notify/messages.ts) and the incident tools' dedup key and alias
 * (lib/alerting/incident.ts).
 */
export function matchKey(alert: Pick<Alert, "ruleId" | "entityId" | "blockHash">): string {
  return createHash("sha256").update(`${alert.ruleId}|${alert.entityId}|${alert.blockHash.toLowerCase()}`).digest("hex");
}
