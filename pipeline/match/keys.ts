/**
 * The Redis key space of the match stage: everything lives under
 * `<keyPrefix>match:<technology>/<blockchain>/<network>:` ({@link chainKeyPrefix}).
 *
 * Token sightings (`tokens.ts`): `token:<address lower-case>`, a string holding the first sighting.
 *
 * Confirmation tracking (`confirmations/`), where a match key (member) is
 * `<blockHash>|<ruleId>|<entityId>` ({@link matchMember}):
 *
 * | key | type | content |
 * |---|---|---|
 * | `matches` | sorted set | match keys of tracked matches, score = block number |
 * | `due` | sorted set | the same members, score = the head number at which they confirm |
 * | `m:<match key>` | hash | `t` alert template JSON, `bn` block number, `ps` pendingSent 0/1, `cs` confirmedSent 0/1 |
 * | `rule:<ruleId>` | set | match keys of the rule's tracked matches |
 * | `sent:<alert id>` | string | emission guard (TTL) |
 * | `seq:<ruleId>` | string | per-rule sequence counter |
 * | `outbox` | hash | alert id → outbox record `{"s":status,"q":sequence,"c":confirmations,"at":emittedAt,"t":template}` |
 * | `outbox:order` | sorted set | alert ids of the outbox, score = emission number (from `outbox:n`) |
 * | `outbox:n` | string | emission counter of the outbox |
 * | `outbox:vis` | sorted set | alert ids of the outbox, score = Redis time (ms) from which a sweep may claim them |
 * @module
 */
import type { ChainId } from "../../lib/config/index.js";

/**
 * The key prefix of one chain's match-stage keys: `<keyPrefix>match:<technology>/<blockchain>/<network>:`.
 * @param keyPrefix - config `redisKeyPrefix`, e.g. `cs:`.
 */
export function chainKeyPrefix(keyPrefix: string, chain: ChainId): string {
  return `${keyPrefix}match:${chain.technology}/${chain.blockchain}/${chain.network}:`;
}

/** The keys of the confirmation tracker of one chain (module table). */
export interface ConfirmationKeys {
  matches: string;
  due: string;
  outbox: string;
  outboxOrder: string;
  outboxCount: string;
  outboxVisible: string;
  /** Prefix of the `m:<match key>` state hashes. */
  statePrefix: string;
  /** `m:<match key>`: the state hash of a tracked match. */
  state(member: string): string;
  /** `rule:<ruleId>`: the set of a rule's tracked matches. */
  rule(ruleId: string): string;
  /** `sent:<alert id>`: the emission guard of an alert. */
  guard(alertId: string): string;
  /** `seq:<ruleId>`: the rule's sequence counter. */
  sequence(ruleId: string): string;
}

/**
 * The confirmation tracker's keys of one chain.
 * @param keyPrefix - config `redisKeyPrefix`, e.g. `cs:`.
 */
export function confirmationKeys(keyPrefix: string, chain: ChainId): ConfirmationKeys {
  const base = chainKeyPrefix(keyPrefix, chain);
  const statePrefix = `${base}m:`;
  return {
    matches: `${base}matches`,
    due: `${base}due`,
    outbox: `${base}outbox`,
    outboxOrder: `${base}outbox:order`,
    outboxCount: `${base}outbox:n`,
    outboxVisible: `${base}outbox:vis`,
    statePrefix,
    state: (member) => statePrefix + member,
    rule: (ruleId) => `${base}rule:${ruleId}`,
    guard: (alertId) => `${base}sent:${alertId}`,
    sequence: (ruleId) => `${base}seq:${ruleId}`,
  };
}

/** What a match key names. */
export interface MatchRef {
  blockHash: string;
  ruleId: string;
  entityId: string;
}

/** The match key of a (rule, entity, block): `<blockHash>|<ruleId>|<entityId>`. */
export function matchMember(ref: MatchRef): string {
  return `${ref.blockHash}|${ref.ruleId}|${ref.entityId}`;
}

/** Parses a match key `<blockHash>|<ruleId>|<entityId>` (the entity id may contain `|`). */
export function parseMember(member: string): MatchRef {
  const a = member.indexOf("|");
  const b = member.indexOf("|", a + 1);
  return { blockHash: member.slice(0, a), ruleId: member.slice(a + 1, b), entityId: member.slice(b + 1) };
}
