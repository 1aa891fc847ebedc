/**
 * The alert record the match stage produces and the notify stage delivers.
 * @module
 */
import type { ChainId } from "../config.js";
import type { AlertDefinition, TargetType } from "../rules/model.js";

/**
 * Alert status:
 * - `pending`: first sight of a match, sent only when the rule has sendPendingAlerts;
 * - `confirmed`: confirmations reached maxConfirmationCount (sent exactly once per match);
 * - `removed`: the block left the canonical chain after `pending` was sent.
 */
export type AlertStatus = "pending" | "confirmed" | "removed";

/** One alert: a rule matched an entity in a block, in a given status. */
export interface Alert {
  /** Stable idempotency key: hex SHA-256 of `ruleId|entityId|blockHash|status`. Receivers deduplicate by it. */
  id: string;
  ruleId: string;
  ruleVersion: number;
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
}
