/**
 * The confirmation tracker: turns matches and chain heads into {@link Alert}s with the right
 * status, exactly once each, with all state in Redis (it survives restarts and is shared by
 * instances of the match stage).
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
 *   A dropped match is never confirmed (unless its block becomes canonical again and the entity is
 *   matched again, which starts a new tracking).
 * - Every alert id is `sha256(ruleId|entityId|blockHash|status)` and is emitted only if a Redis
 *   `SET NX` guard on it succeeds, so processing the same match or head twice (replays, restarts,
 *   two instances) never emits the same alert twice. Guards expire after `guardTtlSeconds`.
 * - `sequence` is a per-rule Redis counter (INCR), increased only for emitted alerts.
 * - Alerts of a tracked match are built from a snapshot of the rule (version, actions, payload)
 *   and entity taken at first sight.
 *
 * Redis keys, under `<keyPrefix>match:<technology>/<blockchain>/<network>:` (`match key` =
 * `<blockHash>|<ruleId>|<entityId>`):
 *
 * | key | type | content |
 * |---|---|---|
 * | `matches` | sorted set | match keys of tracked matches, score = block number |
 * | `due` | sorted set | the same members, score = the head number at which they confirm |
 * | `m:<match key>` | hash | `t` alert template JSON, `bn` block number, `ps` pendingSent 0/1, `cs` confirmedSent 0/1 |
 * | `rule:<ruleId>` | set | match keys of the rule's tracked matches |
 * | `sent:<alert id>` | string | emission guard (TTL) |
 * | `seq:<ruleId>` | string | per-rule sequence counter |
 *
 * Delivery: an alert is recorded as sent before the caller publishes it; if the process dies in
 * between, that alert is lost (at most once). Callers publish the returned alerts before
 * acknowledging their input.
 * @module
 */
import { createHash } from "node:crypto";
import type { Alert, AlertStatus } from "../../lib/alerting/alert.js";
import type { ChainId } from "../../lib/config.js";
import type { Quantity } from "../../lib/records.js";
import type { Rule } from "../../lib/rules/model.js";
import { rulePayload } from "./payload.js";
import { type MatchRedis, runScript, script } from "./redis.js";
import { chainKeyPrefix } from "./tokens.js";

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

/** What the tracker needs of an entity: its id and block. */
export interface MatchedEntity {
  entityId: string;
  blockHash: string;
  /** A {@link Quantity} (as entities carry it) or a plain number. */
  blockNumber: Quantity | number;
  [attribute: string]: unknown;
}

/** The fields of an {@link Alert} fixed at first sight of a match. */
export type AlertTemplate = Omit<Alert, "id" | "sequence" | "status" | "confirmations" | "emittedAt">;

/** Dependencies of {@link createConfirmationTracker}. */
export interface ConfirmationTrackerDeps {
  /** A connected Redis client (node-redis v5 or anything with `eval`/`evalSha`); not closed by the tracker. */
  redis: MatchRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`); tests use a unique one. */
  keyPrefix: string;
  /** The chain served: part of every key and of every alert. */
  chain: ChainId;
  /** Clock for `emittedAt`; default `() => new Date()`. */
  now?: () => Date;
  /** Lifetime of the emission guards in seconds; default 2592000 (30 days). */
  guardTtlSeconds?: number;
  /** Matches per Redis script call in batch operations; default 200. */
  batchSize?: number;
}

/** One matched (rule, entity) pair. */
export interface MatchInput {
  rule: Rule;
  entity: MatchedEntity;
}

/** The confirmation tracker (see the module doc). */
export interface ConfirmationTracker {
  /**
   * Records a match seen while the chain head is `head` and returns the alerts to publish now: none,
   * `pending`, or `confirmed`.
   * @param head the current head number (or head); a head below the entity's block counts as the block.
   * @throws {TypeError} when the entity lacks `entityId`, `blockHash` or a block number; Redis errors as thrown by the client.
   */
  onMatch(rule: Rule, entity: MatchedEntity, head: number | ChainHead): Promise<Alert[]>;
  /** {@link ConfirmationTracker.onMatch} for many matches with one Redis call per `batchSize`; alerts in input order. */
  onMatches(matches: readonly MatchInput[], head: number | ChainHead): Promise<Alert[]>;
  /**
   * Processes a new head: drops tracked matches whose block is not canonical any more
   * (`removed` alerts where `pending` went out), then confirms tracked matches that reached their
   * threshold. Alerts are ordered removals first, then confirmations, each by block number.
   * @param canonical canonical hash by height; `head.hash` is used for `head.number` when it answers undefined.
   */
  onHead(head: ChainHead, canonical: CanonicalLookup): Promise<Alert[]>;
  /** Forgets every tracked match of a rule (deleted or disabled rule) without emitting anything; returns how many. */
  dropRule(ruleId: string): Promise<number>;
  /** Number of tracked (not yet confirmed or dropped) matches. */
  trackedCount(): Promise<number>;
}

/** The idempotency key of an alert: hex SHA-256 of `ruleId|entityId|blockHash|status` ({@link Alert.id}). */
export function alertId(ruleId: string, entityId: string, blockHash: string, status: AlertStatus): string {
  return createHash("sha256").update(`${ruleId}|${entityId}|${blockHash}|${status}`).digest("hex");
}

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
 * Batched first sight. KEYS: matches, due, then per match: state, ruleSet, guardPending,
 * guardConfirmed, seq. ARGV: ttl, then per match: member, bn, dueHead, confirmNow, sendPending, template.
 * Returns a flat list: match index, status, sequence, … for emitted alerts.
 */
const ON_MATCH = script(`
local ttl = ARGV[1]
local out = {}
local n = (#KEYS - 2) / 5
for i = 0, n - 1 do
  local k = 2 + i * 5
  local a = 1 + i * 6
  local state, ruleSet, gp, gc, seq = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5]
  local member, bn, due, now, pend, tpl = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  if redis.call('EXISTS', gc) == 0 then
    if now == '1' then
      if redis.call('SET', gc, '1', 'NX', 'EX', ttl) then
        redis.call('DEL', state)
        redis.call('ZREM', KEYS[1], member)
        redis.call('ZREM', KEYS[2], member)
        redis.call('SREM', ruleSet, member)
        out[#out + 1] = i
        out[#out + 1] = 'confirmed'
        out[#out + 1] = redis.call('INCR', seq)
      end
    else
      if redis.call('EXISTS', state) == 0 then
        redis.call('HSET', state, 't', tpl, 'bn', bn, 'ps', '0', 'cs', '0')
        redis.call('ZADD', KEYS[1], bn, member)
        redis.call('ZADD', KEYS[2], due, member)
        redis.call('SADD', ruleSet, member)
      end
      if pend == '1' and redis.call('SET', gp, '1', 'NX', 'EX', ttl) then
        redis.call('HSET', state, 'ps', '1')
        out[#out + 1] = i
        out[#out + 1] = 'pending'
        out[#out + 1] = redis.call('INCR', seq)
      end
    end
  end
end
return out
`);

/**
 * Batched confirm ('c') / remove ('r'). KEYS: matches, due, then per match: state, ruleSet, guard, seq.
 * ARGV: ttl, then per match: mode, member. A confirm emits unless already guarded; a remove emits
 * only when pending was sent. Either way the tracked state is deleted.
 * Returns a flat list: match index, sequence, template JSON, … for emitted alerts.
 */
const FINALIZE = script(`
local ttl = ARGV[1]
local out = {}
local n = (#KEYS - 2) / 4
for i = 0, n - 1 do
  local k = 2 + i * 4
  local state, ruleSet, guard, seq = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local mode, member = ARGV[2 + i * 2], ARGV[3 + i * 2]
  if redis.call('EXISTS', state) == 1 then
    local f = redis.call('HMGET', state, 't', 'ps')
    redis.call('DEL', state)
    redis.call('ZREM', KEYS[1], member)
    redis.call('ZREM', KEYS[2], member)
    redis.call('SREM', ruleSet, member)
    if (mode == 'c' or f[2] == '1') and redis.call('SET', guard, '1', 'NX', 'EX', ttl) then
      out[#out + 1] = i
      out[#out + 1] = redis.call('INCR', seq)
      out[#out + 1] = f[1]
    end
  end
end
return out
`);

/** KEYS: a sorted set. ARGV: max score. Members with score ≤ max, with scores (flat list). */
const RANGE = script(`return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES')`);

/** KEYS: matches, due, ruleSet. ARGV: state key prefix. Drops every tracked match of the rule. */
const DROP_RULE = script(`
local members = redis.call('SMEMBERS', KEYS[3])
for _, m in ipairs(members) do
  redis.call('DEL', ARGV[1] .. m)
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZREM', KEYS[2], m)
end
redis.call('DEL', KEYS[3])
return #members
`);

const CARD = script(`return redis.call('ZCARD', KEYS[1])`);

function blockNumberOf(e: MatchedEntity): number {
  const bn = typeof e.blockNumber === "number" ? e.blockNumber : e.blockNumber?.num;
  if (typeof bn !== "number" || !Number.isSafeInteger(bn) || bn < 0)
    throw new TypeError(`entity ${e.entityId}: blockNumber is not a block number`);
  return bn;
}

function checkEntity(e: MatchedEntity): void {
  if (!e || typeof e.entityId !== "string" || e.entityId === "") throw new TypeError("entity has no entityId");
  if (typeof e.blockHash !== "string" || e.blockHash === "") throw new TypeError(`entity ${e.entityId}: no blockHash`);
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Parses a match key `<blockHash>|<ruleId>|<entityId>`. */
function parseMember(member: string): { blockHash: string; ruleId: string; entityId: string } {
  const a = member.indexOf("|");
  const b = member.indexOf("|", a + 1);
  return { blockHash: member.slice(0, a), ruleId: member.slice(a + 1, b), entityId: member.slice(b + 1) };
}

/**
 * Creates a {@link ConfirmationTracker}.
 * @throws {TypeError} when `keyPrefix` is not a string.
 */
export function createConfirmationTracker(deps: ConfirmationTrackerDeps): ConfirmationTracker {
  if (typeof deps.keyPrefix !== "string") throw new TypeError("keyPrefix must be a string");
  const base = chainKeyPrefix(deps.keyPrefix, deps.chain);
  const kMatches = `${base}matches`;
  const kDue = `${base}due`;
  const kState = (member: string) => `${base}m:${member}`;
  const kRule = (ruleId: string) => `${base}rule:${ruleId}`;
  const kGuard = (id: string) => `${base}sent:${id}`;
  const kSeq = (ruleId: string) => `${base}seq:${ruleId}`;
  const now = deps.now ?? (() => new Date());
  const ttl = String(Math.max(1, Math.floor(deps.guardTtlSeconds ?? 2_592_000)));
  const batchSize = Math.max(1, deps.batchSize ?? 200);
  const chain: ChainId = { technology: deps.chain.technology, blockchain: deps.chain.blockchain, network: deps.chain.network };

  const template = (rule: Rule, entity: MatchedEntity, blockNumber: number): AlertTemplate => ({
    ruleId: rule.id,
    ruleVersion: rule.version,
    accountId: rule.accountId,
    maxConfirmationCount: rule.maxConfirmationCount,
    chain,
    targetType: rule.config.targetType,
    entityId: entity.entityId,
    blockHash: entity.blockHash.toLowerCase(),
    blockNumber,
    payload: rulePayload(rule, entity),
    entity: entity as Record<string, unknown>,
    actions: rule.config.alerts,
  });

  const toAlert = (t: AlertTemplate, status: AlertStatus, sequence: number, confirmations: number, emittedAt: string): Alert => ({
    id: alertId(t.ruleId, t.entityId, t.blockHash, status),
    ruleId: t.ruleId,
    ruleVersion: t.ruleVersion,
    accountId: t.accountId,
    sequence,
    status,
    confirmations,
    maxConfirmationCount: t.maxConfirmationCount,
    chain: t.chain,
    targetType: t.targetType,
    entityId: t.entityId,
    blockHash: t.blockHash,
    blockNumber: t.blockNumber,
    payload: t.payload,
    entity: t.entity,
    actions: t.actions,
    emittedAt,
  });

  const onMatches = async (matches: readonly MatchInput[], head: number | ChainHead): Promise<Alert[]> => {
    const headNumber = typeof head === "number" ? head : head.number;
    const out: Alert[] = [];
    for (const batch of chunks(matches, batchSize)) {
      const keys = [kMatches, kDue];
      const args = [ttl];
      const prepared = batch.map(({ rule, entity }) => {
        checkEntity(entity);
        const bn = blockNumberOf(entity);
        const t = template(rule, entity, bn);
        const threshold = thresholdOf(rule);
        const confirmations = confirmationsAt(headNumber, bn);
        const member = `${t.blockHash}|${rule.id}|${entity.entityId}`;
        keys.push(
          kState(member),
          kRule(rule.id),
          kGuard(alertId(rule.id, entity.entityId, t.blockHash, "pending")),
          kGuard(alertId(rule.id, entity.entityId, t.blockHash, "confirmed")),
          kSeq(rule.id),
        );
        args.push(
          member,
          String(bn),
          String(bn + threshold - 1),
          confirmations >= threshold ? "1" : "0",
          rule.sendPendingAlerts === true ? "1" : "0",
          JSON.stringify(t),
        );
        return { t, confirmations };
      });
      const res = (await runScript(deps.redis, ON_MATCH, keys, args)) as unknown[];
      const at = now().toISOString();
      for (let i = 0; i + 2 < res.length; i += 3) {
        const p = prepared[Number(res[i])];
        if (!p) continue;
        out.push(toAlert(p.t, res[i + 1] as AlertStatus, Number(res[i + 2]), p.confirmations, at));
      }
    }
    return out;
  };

  const finalize = async (items: { member: string; mode: "c" | "r"; confirmations: number }[]): Promise<Alert[]> => {
    const out: Alert[] = [];
    for (const batch of chunks(items, batchSize)) {
      const keys = [kMatches, kDue];
      const args = [ttl];
      for (const it of batch) {
        const { blockHash, ruleId, entityId } = parseMember(it.member);
        keys.push(
          kState(it.member),
          kRule(ruleId),
          kGuard(alertId(ruleId, entityId, blockHash, it.mode === "c" ? "confirmed" : "removed")),
          kSeq(ruleId),
        );
        args.push(it.mode, it.member);
      }
      const res = (await runScript(deps.redis, FINALIZE, keys, args)) as unknown[];
      const at = now().toISOString();
      for (let i = 0; i + 2 < res.length; i += 3) {
        const it = batch[Number(res[i])];
        if (!it) continue;
        const t = JSON.parse(String(res[i + 2])) as AlertTemplate;
        out.push(toAlert(t, it.mode === "c" ? "confirmed" : "removed", Number(res[i + 1]), it.confirmations, at));
      }
    }
    return out;
  };

  const range = async (key: string, max: number): Promise<{ member: string; score: number }[]> => {
    const flat = (await runScript(deps.redis, RANGE, [key], [String(max)])) as unknown[];
    const out: { member: string; score: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: String(flat[i]), score: Number(flat[i + 1]) });
    return out;
  };

  return {
    onMatch: (rule, entity, head) => onMatches([{ rule, entity }], head),
    onMatches,
    async onHead(head, canonical) {
      const lookup = (n: number): string | undefined => {
        const h = canonical(n);
        if (h !== undefined) return h.toLowerCase();
        return n === head.number ? head.hash.toLowerCase() : undefined;
      };
      const tracked = await range(kMatches, head.number);
      const verdict = new Map<string, boolean>(); // `${bn}|${hash}` → still canonical (or unknown)
      const gone = new Set<string>();
      const removals: { member: string; mode: "r"; confirmations: number }[] = [];
      for (const { member, score } of tracked) {
        const { blockHash } = parseMember(member);
        const vk = `${score}|${blockHash}`;
        let ok = verdict.get(vk);
        if (ok === undefined) {
          const h = lookup(score);
          ok = h === undefined || h === blockHash;
          verdict.set(vk, ok);
        }
        if (!ok) {
          gone.add(member);
          removals.push({ member, mode: "r", confirmations: 0 });
        }
      }
      const due = await range(kDue, head.number);
      const confirmations: { member: string; mode: "c"; confirmations: number; bn: number }[] = [];
      if (due.length > 0) {
        const bnOf = new Map(tracked.map((t) => [t.member, t.score]));
        for (const { member } of due) {
          if (gone.has(member)) continue;
          const bn = bnOf.get(member);
          if (bn === undefined) continue; // tracked above the head: cannot be due
          confirmations.push({ member, mode: "c", confirmations: confirmationsAt(head.number, bn), bn });
        }
        confirmations.sort((a, b) => a.bn - b.bn);
      }
      const removed = await finalize(removals);
      const confirmed = await finalize(confirmations);
      return [...removed, ...confirmed];
    },
    async dropRule(ruleId) {
      return Number(await runScript(deps.redis, DROP_RULE, [kMatches, kDue, kRule(ruleId)], [`${base}m:`]));
    },
    async trackedCount() {
      return Number(await runScript(deps.redis, CARD, [kMatches], []));
    },
  };
}
