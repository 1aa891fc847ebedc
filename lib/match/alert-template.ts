/**
 * The parts of an alert fixed when a rule first matches an entity (the {@link AlertTemplate}: the
 * rule's snapshot, the entity, its payload) and the confirmation arithmetic. Pure. The match
 * stage's confirmation rules (`pipeline/match/confirmations/decide.ts`) and rule backtests
 * (`lib/match/backtest.ts`) both build alerts with these, so a backtest's alert equals the live one.
 * @module
 */
import type { Alert } from "../alerting/alert.js";
import type { ChainId } from "../config/index.js";
import type { Quantity } from "../records.js";
import type { Rule } from "../rules/model.js";
import { rulePayload } from "./payload.js";

/** What the tracker needs of an entity: its id and block. */
export interface MatchedEntity {
  entityId: string;
  blockHash: string;
  /** A {@link Quantity} (as entities carry it) or a plain number. */
  blockNumber: Quantity | number;
  [attribute: string]: unknown;
}

/** The fields of an {@link Alert} fixed at first sight of a match (the rest is set when it is emitted). */
export type AlertTemplate = Omit<Alert, "id" | "sequence" | "status" | "confirmations" | "emittedAt">;

/** `head − block + 1`, at least 1 (a head below the block counts as the block). */
export function confirmationsAt(head: number, blockNumber: number): number {
  return Math.max(head, blockNumber) - blockNumber + 1;
}

/** The confirmation threshold of a rule: max(1, maxConfirmationCount); 1 when the count is not a finite number. */
export function thresholdOf(rule: Pick<Rule, "maxConfirmationCount">): number {
  const n = Number(rule.maxConfirmationCount);
  return Number.isFinite(n) ? Math.max(1, Math.floor(n)) : 1;
}

/**
 * The block number of an entity.
 * @throws {TypeError} when it is not a non-negative safe integer (or a Quantity holding one).
 */
function blockNumberOf(e: MatchedEntity): number {
  const bn = typeof e.blockNumber === "number" ? e.blockNumber : e.blockNumber?.num;
  if (typeof bn !== "number" || !Number.isSafeInteger(bn) || bn < 0)
    throw new TypeError(`entity ${e.entityId}: blockNumber is not a block number`);
  return bn;
}

/**
 * The {@link AlertTemplate} of a match: the rule's snapshot and the entity.
 * @throws {TypeError} when the entity lacks `entityId`, `blockHash` or a block number.
 */
export function alertTemplate(rule: Rule, entity: MatchedEntity, chain: ChainId): AlertTemplate {
  if (!entity || typeof entity.entityId !== "string" || entity.entityId === "") throw new TypeError("entity has no entityId");
  if (typeof entity.blockHash !== "string" || entity.blockHash === "") throw new TypeError(`entity ${entity.entityId}: no blockHash`);
  return {
    ruleId: rule.id,
    ruleVersion: rule.version,
    ruleName: rule.name ?? null,
    accountId: rule.accountId,
    maxConfirmationCount: rule.maxConfirmationCount,
    chain: { technology: chain.technology, blockchain: chain.blockchain, network: chain.network },
    targetType: rule.config.targetType,
    entityId: entity.entityId,
    blockHash: entity.blockHash.toLowerCase(),
    blockNumber: blockNumberOf(entity),
    payload: rulePayload(rule, entity),
    entity: entity as Record<string, unknown>,
    actions: rule.config.alerts,
  };
}
