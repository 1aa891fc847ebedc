/**
 * The confirmation rules as pure functions: what a match seen at a head, and what a new head,
 * mean for alerts. The tracker (`tracker.ts`) applies these decisions in Redis, where the emission
 * guards make each alert go out at most once.
 *
 * Rules (docs/alerting-match.md, "Confirmations"):
 * - A match is keyed by (rule id, entity id, block hash). `confirmations = head − block + 1`
 *   (at least 1: an entity's own block counts).
 * - threshold = max(1, maxConfirmationCount). When a match is first seen with confirmations ≥
 *   threshold (always for maxConfirmationCount 0 or 1), one `confirmed` alert goes out and nothing
 *   is tracked (no `pending` first).
 * - Otherwise the match is tracked; with `sendPendingAlerts` a `pending` alert goes out at once. At
 *   the first head with confirmations ≥ threshold, one `confirmed` alert goes out and the match is
 *   forgotten (later reorgs of that block are not reported).
 * - When a head shows that the block of a tracked match is no longer canonical at its height, the
 *   match is dropped and, only if `pending` went out, a `removed` alert goes out (confirmations 0).
 * - Alerts of a tracked match are built from a snapshot of the rule (version, name, actions,
 *   payload) and entity taken at first sight: the {@link AlertTemplate}.
 * @module
 */
import { type AlertStatus, alertId, type ReplacingBlock } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import { type AlertTemplate, alertTemplate, confirmationsAt, type MatchedEntity, thresholdOf } from "../../../lib/match/alert-template.js";
import type { Rule } from "../../../lib/rules/model.js";
import { matchMember, parseMember } from "../keys.js";

// The pure first-sight parts live in lib/ (rule backtests build the same alerts); re-exported for the stage's modules.
export { type AlertTemplate, alertTemplate, confirmationsAt, type MatchedEntity, thresholdOf };

/** A chain head: number and hash of the newest canonical block. */
export interface ChainHead {
  number: number;
  hash: string;
}

/**
 * The canonical block hash at a height, or undefined when the caller does not know it (then the
 * tracker assumes the tracked block is still canonical: it neither drops nor holds back matches).
 * Callers should answer at least for the heights of the last max(maxConfirmationCount) blocks.
 */
export type CanonicalLookup = (blockNumber: number) => string | undefined;

/** One matched (rule, entity) pair. */
export interface MatchInput {
  rule: Rule;
  entity: MatchedEntity;
}

/** What first sight of a match decides; the tracker emits it unless the guards say it went out already. */
export interface FirstSight {
  /** The match key (`keys.ts`). */
  member: string;
  template: AlertTemplate;
  /** confirmations ≥ threshold: emit `confirmed` now and track nothing. */
  confirmNow: boolean;
  /** Otherwise: emit `pending` now (the rule's sendPendingAlerts). */
  sendPending: boolean;
  /** The head number at which a tracked match confirms: block + threshold − 1. */
  dueHead: number;
  /** Confirmations at the head the match was seen at. */
  confirmations: number;
  pendingId: string;
  confirmedId: string;
}

/**
 * Decides first sight of a match at a head (pure).
 * @param headNumber - the current head; a head below the entity's block counts as the block.
 * @param threshold - confirmations needed; default {@link thresholdOf} the rule (the finality tracker passes 1: its "head" is the finalized block).
 * @param strictHead - a head below the block does not count as the block (the finality tracker); default false.
 * @throws {TypeError} as {@link alertTemplate}.
 */
export function decideMatch(
  rule: Rule,
  entity: MatchedEntity,
  headNumber: number,
  chain: ChainId,
  threshold = thresholdOf(rule),
  strictHead = false,
): FirstSight {
  const template = alertTemplate(rule, entity, chain);
  const { ruleId, entityId, blockHash, blockNumber } = template;
  const confirmations = confirmationsAt(headNumber, blockNumber);
  return {
    member: matchMember({ blockHash, ruleId, entityId }),
    template,
    // The finality tracker's head (the finalized block) below the block means "not final yet", not "the block itself".
    confirmNow: strictHead ? headNumber - blockNumber + 1 >= threshold : confirmations >= threshold,
    sendPending: rule.sendPendingAlerts === true,
    dueHead: blockNumber + threshold - 1,
    confirmations,
    pendingId: alertId(ruleId, entityId, blockHash, "pending"),
    confirmedId: alertId(ruleId, entityId, blockHash, "confirmed"),
  };
}

/** A tracked match and its block number (the score of `matches`) or due head (the score of `due`). */
export interface ScoredMember {
  member: string;
  score: number;
}

/** A tracked match a head finishes: it is forgotten, and its alert goes out (a `removed` one only if `pending` went out). */
export interface Finalization {
  member: string;
  ruleId: string;
  status: Extract<AlertStatus, "confirmed" | "removed">;
  alertId: string;
  confirmations: number;
  /** Only on removals: the block now canonical at the match's height (hash null: none there yet). */
  replacedBy?: ReplacingBlock;
}

/**
 * Decides what a new head does to the tracked matches (pure): those whose block is not canonical
 * at its height any more are removed; those due at the head (and not removed) are confirmed.
 * @param canonical - canonical hash by height; `head.hash` stands for `head.number` when it answers undefined.
 * @param tracked - the members of `matches` with block numbers up to the head.
 * @param due - the members of `due` with due heads up to the head.
 * @returns removals in the order of `tracked`, confirmations by block number.
 */
export function decideHead(
  head: ChainHead,
  canonical: CanonicalLookup,
  tracked: readonly ScoredMember[],
  due: readonly ScoredMember[],
): { removed: Finalization[]; confirmed: Finalization[] } {
  const lookup = (n: number): string | undefined => {
    const h = canonical(n);
    if (h !== undefined) return h.toLowerCase();
    return n === head.number ? head.hash.toLowerCase() : undefined;
  };
  const finalize = (member: string, status: Finalization["status"], confirmations: number): Finalization => {
    const { blockHash, ruleId, entityId } = parseMember(member);
    return { member, ruleId, status, alertId: alertId(ruleId, entityId, blockHash, status), confirmations };
  };
  // `${bn}|${hash}` → the canonical hash there ("" none, undefined unknown) when the match's block left the chain, or true when it did not.
  const verdict = new Map<string, true | string>();
  const removed: Finalization[] = [];
  for (const { member, score } of tracked) {
    const { blockHash } = parseMember(member);
    const vk = `${score}|${blockHash}`;
    let v = verdict.get(vk);
    if (v === undefined) {
      const h = lookup(score);
      v = h === undefined || h === blockHash ? true : h;
      verdict.set(vk, v);
    }
    if (v !== true) removed.push({ ...finalize(member, "removed", 0), replacedBy: { number: score, hash: v === "" ? null : v } });
  }
  const gone = new Set(removed.map((r) => r.member));
  const blockOf = new Map(tracked.map((t) => [t.member, t.score]));
  const confirmed: Array<{ f: Finalization; blockNumber: number }> = [];
  for (const { member } of due) {
    const blockNumber = blockOf.get(member);
    // Removed above, or tracked above the head (cannot be due).
    if (gone.has(member) || blockNumber === undefined) continue;
    confirmed.push({ f: finalize(member, "confirmed", confirmationsAt(head.number, blockNumber)), blockNumber });
  }
  confirmed.sort((a, b) => a.blockNumber - b.blockNumber);
  return { removed, confirmed: confirmed.map((c) => c.f) };
}
