/**
 * From matched entities to the sequence arithmetic's records (lib/match/sequences.ts) and from its
 * firings back to alert entities: what a sequence rule (lib/rules/schema-sequence.ts) reads from each
 * entity its first-step or `followedBy` conditions selected (the correlate value, the position in
 * the block), and the entity a firing alerts on. Pure; shared by the match stage
 * (pipeline/match/sequences/evaluator.ts) and sequence backtests (lib/match/sequence-backtest.ts).
 * @module
 */
import type { Rule } from "../rules/model.js";
import type { RuleSequence } from "../rules/schema-sequence.js";
import type { MatchedEntity } from "./alert-template.js";
import type { SequenceFiring, SequenceRecord } from "./sequences.js";
import { fieldAt, keyOf } from "./window-records.js";

/** What a sequence alert carries as `entity.sequenceMatch` (and the webhook JSON as `sequenceMatch`). */
export interface SequenceMatch extends SequenceFiring {
  /** A search body (`POST /<index>/_search`) that finds both records: an `ids` query. */
  search: { query: { ids: { values: string[] } } };
}

/**
 * The entity of a sequence firing: entity id `sequence:<first id>:<followedBy id>`, the followedBy
 * record's block (confirmations count from it), and `sequenceMatch` carrying both records and a
 * search body that finds them.
 */
export function sequenceEntity(f: SequenceFiring): MatchedEntity {
  const sequenceMatch: SequenceMatch = { ...f, search: { query: { ids: { values: [f.first.id, f.followedBy.id] } } } };
  return {
    entityId: `sequence:${f.first.id}:${f.followedBy.id}`,
    blockHash: f.followedBy.blockHash,
    blockNumber: f.followedBy.blockNumber,
    sequenceMatch,
  };
}

/** The correlate value of an entity at a path: its key text, hex lowercased; undefined when absent. */
export function correlateValue(entity: object, path: string): string | undefined {
  const k = keyOf(fieldAt(entity, path));
  return k !== undefined && /^0x[0-9a-fA-F]*$/.test(k) ? k.toLowerCase() : k;
}

const indexOf = (v: unknown): number => {
  const n = typeof v === "object" && v !== null ? (v as { num?: unknown }).num : v;
  return typeof n === "number" && Number.isSafeInteger(n) ? n : -1;
};

/** The sequence record of a matched entity, or undefined when it has no correlate value. */
export function sequenceRecordOf(
  seq: Pick<RuleSequence, "correlate">,
  role: SequenceRecord["role"],
  entity: MatchedEntity,
): SequenceRecord | undefined {
  const key = correlateValue(entity, role === "first" ? seq.correlate.first : seq.correlate.followedBy);
  if (key === undefined) return undefined;
  return { id: entity.entityId, role, key, pos: [indexOf(entity.transactionIndex), indexOf(entity.logIndex)] };
}

/** The rule whose conditions are its `followedBy` ones (same id: it lives in a rule index of its own). */
export const followedByRule = (rule: Rule, seq: RuleSequence): Rule => ({
  ...rule,
  config: { ...rule.config, targetType: seq.followedBy.targetType, targetMap: seq.followedBy.targetMap as Rule["config"]["targetMap"] },
});
