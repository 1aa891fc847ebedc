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
 * - Alerts of a tracked match are built from a snapshot of the rule (version, name, actions,
 *   payload) and entity taken at first sight.
 * - Transactional outbox: the script that decides to emit an alert (guard + sequence) also stores
 *   the alert, byte for byte as returned, in the outbox, atomically. The caller publishes the
 *   returned alerts and then {@link ConfirmationTracker.ack}s them. If the process dies in between,
 *   the alert stays in the outbox: {@link ConfirmationTracker.claimUnacked} hands it (identical id,
 *   sequence, emittedAt, payload) to a later sweep, so an emitted alert is never lost.
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
 * | `outbox` | hash | alert id → outbox record `{"s":status,"q":sequence,"c":confirmations,"at":emittedAt,"t":template}` |
 * | `outbox:order` | sorted set | alert ids of the outbox, score = emission number (from `outbox:n`) |
 * | `outbox:n` | string | emission counter of the outbox |
 * | `outbox:vis` | sorted set | alert ids of the outbox, score = Redis time (ms) from which a sweep may claim them |
 *
 * Delivery: at least once. An alert left in the outbox is re-published by a sweep once its
 * visibility window has passed; it is published twice only when the process died (or Redis failed)
 * after publishing it and before acknowledging it, or when publishing took longer than the window
 * (then a sweep of another instance may claim it). Receivers deduplicate by the alert id.
 * @module
 */
import { type Alert, type AlertStatus, alertId } from "../../lib/alerting/alert.js";
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

/**
 * An alert as the tracker emits it: the {@link Alert} plus the rule's name at first sight of the
 * match (what the alerts topic carries as `ruleName`), so that a re-publication from the outbox is
 * identical to the first one.
 */
export interface EmittedAlert extends Alert {
  /** The rule's name in the snapshot; null in templates stored before names were snapshotted. */
  ruleName: string | null;
}

/** The fields of an {@link EmittedAlert} fixed at first sight of a match. */
export type AlertTemplate = Omit<EmittedAlert, "id" | "sequence" | "status" | "confirmations" | "emittedAt">;

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
  /**
   * How long an emitted alert stays invisible to {@link ConfirmationTracker.claimUnacked} (its
   * emitter is expected to publish and ack it within that time); default 10000 ms. Measured on the
   * Redis server's clock.
   */
  outboxVisibilityMs?: number;
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
  onMatch(rule: Rule, entity: MatchedEntity, head: number | ChainHead): Promise<EmittedAlert[]>;
  /** {@link ConfirmationTracker.onMatch} for many matches with one Redis call per `batchSize`; alerts in input order. */
  onMatches(matches: readonly MatchInput[], head: number | ChainHead): Promise<EmittedAlert[]>;
  /**
   * Processes a new head: drops tracked matches whose block is not canonical any more
   * (`removed` alerts where `pending` went out), then confirms tracked matches that reached their
   * threshold. Alerts are ordered removals first, then confirmations, each by block number.
   * @param canonical canonical hash by height; `head.hash` is used for `head.number` when it answers undefined.
   */
  onHead(head: ChainHead, canonical: CanonicalLookup): Promise<EmittedAlert[]>;
  /** Forgets every tracked match of a rule (deleted or disabled rule) without emitting anything; returns how many. */
  dropRule(ruleId: string): Promise<number>;
  /** Number of tracked (not yet confirmed or dropped) matches. */
  trackedCount(): Promise<number>;
  /**
   * Removes published alerts from the outbox (every alert returned by `onMatch(es)`/`onHead` is in
   * it until acked). Unknown ids are ignored.
   */
  ack(alertIds: readonly string[]): Promise<void>;
  /**
   * The outbox: emitted alerts not acked yet, in emission order, identical to what was returned
   * when they were emitted. Read only (claims nothing).
   * @param limit at most this many (the oldest); default all.
   */
  unacked(limit?: number): Promise<EmittedAlert[]>;
  /**
   * Outbox alerts whose visibility window (`outboxVisibilityMs` after emission, or `leaseMs` after
   * an earlier claim) has passed, in emission order: alerts whose emitter died or failed before
   * publishing or acking them. Atomically hides each claimed alert for `leaseMs`, so concurrent
   * sweeps (instances) do not claim the same alert; the claimer publishes and then acks them.
   * @param opts.limit at most this many per call (default 500); opts.leaseMs default `outboxVisibilityMs`.
   */
  claimUnacked(opts?: { limit?: number; leaseMs?: number }): Promise<EmittedAlert[]>;
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
 * Lua shared by the emitting scripts. KEYS[3..6]: outbox, outbox:order, outbox:n, outbox:vis;
 * ARGV[2] emittedAt, ARGV[3] visibility ms. `emit` guards nothing itself: it increases the rule's
 * sequence, stores the outbox record (the template JSON is embedded verbatim, never re-encoded, so
 * numbers keep their exact text) and returns it.
 */
const EMIT_LUA = `
local at, visMs = ARGV[2], tonumber(ARGV[3])
local clock = redis.call('TIME')
local visibleAt = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + visMs
local function emit(id, status, seqKey, conf, tpl)
  local q = redis.call('INCR', seqKey)
  local rec = '{"s":"' .. status .. '","q":' .. q .. ',"c":' .. conf .. ',"at":"' .. at .. '","t":' .. tpl .. '}'
  redis.call('HSET', KEYS[3], id, rec)
  redis.call('ZADD', KEYS[4], redis.call('INCR', KEYS[5]), id)
  redis.call('ZADD', KEYS[6], visibleAt, id)
  return rec
end
`;

/**
 * Batched first sight. KEYS: matches, due, outbox, outbox:order, outbox:n, outbox:vis, then per
 * match: state, ruleSet, guardPending, guardConfirmed, seq. ARGV: ttl, emittedAt, visibility ms,
 * then per match: member, bn, dueHead, confirmNow, sendPending, template, confirmations,
 * pendingId, confirmedId. Returns a flat list: match index, outbox record, … for emitted alerts.
 */
const ON_MATCH = script(`${EMIT_LUA}
local ttl = ARGV[1]
local out = {}
local n = (#KEYS - 6) / 5
for i = 0, n - 1 do
  local k = 6 + i * 5
  local a = 3 + i * 9
  local state, ruleSet, gp, gc, seq = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5]
  local member, bn, due, now, pend, tpl = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local conf, idp, idc = ARGV[a + 7], ARGV[a + 8], ARGV[a + 9]
  if redis.call('EXISTS', gc) == 0 then
    if now == '1' then
      if redis.call('SET', gc, '1', 'NX', 'EX', ttl) then
        redis.call('DEL', state)
        redis.call('ZREM', KEYS[1], member)
        redis.call('ZREM', KEYS[2], member)
        redis.call('SREM', ruleSet, member)
        out[#out + 1] = i
        out[#out + 1] = emit(idc, 'confirmed', seq, conf, tpl)
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
        out[#out + 1] = emit(idp, 'pending', seq, conf, tpl)
      end
    end
  end
end
return out
`);

/**
 * Batched confirm ('c') / remove ('r'). KEYS: matches, due, outbox, outbox:order, outbox:n,
 * outbox:vis, then per match: state, ruleSet, guard, seq. ARGV: ttl, emittedAt, visibility ms, then
 * per match: mode, member, alert id, confirmations. A confirm emits unless already guarded; a
 * remove emits only when pending was sent. Either way the tracked state is deleted.
 * Returns a flat list: match index, outbox record, … for emitted alerts.
 */
const FINALIZE = script(`${EMIT_LUA}
local ttl = ARGV[1]
local out = {}
local n = (#KEYS - 6) / 4
for i = 0, n - 1 do
  local k = 6 + i * 4
  local a = 3 + i * 4
  local state, ruleSet, guard, seq = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local mode, member, id, conf = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  if redis.call('EXISTS', state) == 1 then
    local f = redis.call('HMGET', state, 't', 'ps')
    redis.call('DEL', state)
    redis.call('ZREM', KEYS[1], member)
    redis.call('ZREM', KEYS[2], member)
    redis.call('SREM', ruleSet, member)
    if (mode == 'c' or f[2] == '1') and redis.call('SET', guard, '1', 'NX', 'EX', ttl) then
      out[#out + 1] = i
      out[#out + 1] = emit(id, mode == 'c' and 'confirmed' or 'removed', seq, conf, f[1])
    end
  end
end
return out
`);

/** KEYS: outbox, outbox:order, outbox:vis. ARGV: alert ids. Removes them from the outbox. */
const ACK = script(`
for _, id in ipairs(ARGV) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
return #ARGV
`);

/** KEYS: outbox, outbox:order. ARGV: last rank (-1: all). Outbox records in emission order. */
const UNACKED = script(`
local ids = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', KEYS[1], id)
  if rec then out[#out + 1] = rec end
end
return out
`);

/**
 * KEYS: outbox, outbox:order, outbox:vis. ARGV: lease ms, limit. Claims the outbox alerts visible
 * now (Redis time), hiding each for the lease. Returns a flat list: emission number, record, ….
 */
const CLAIM = script(`
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', KEYS[1], id)
  if rec then
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[1]), id)
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], id) or '0'
    out[#out + 1] = rec
  else
    redis.call('ZREM', KEYS[3], id)
    redis.call('ZREM', KEYS[2], id)
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
  const kOutbox = `${base}outbox`;
  const kOrder = `${base}outbox:order`;
  const kOutboxN = `${base}outbox:n`;
  const kVis = `${base}outbox:vis`;
  const emitKeys = () => [kMatches, kDue, kOutbox, kOrder, kOutboxN, kVis];
  const now = deps.now ?? (() => new Date());
  const ttl = String(Math.max(1, Math.floor(deps.guardTtlSeconds ?? 2_592_000)));
  const batchSize = Math.max(1, deps.batchSize ?? 200);
  const visibilityMs = Math.max(0, Math.floor(deps.outboxVisibilityMs ?? 10_000));
  const chain: ChainId = { technology: deps.chain.technology, blockchain: deps.chain.blockchain, network: deps.chain.network };

  const template = (rule: Rule, entity: MatchedEntity, blockNumber: number): AlertTemplate => ({
    ruleId: rule.id,
    ruleVersion: rule.version,
    ruleName: rule.name ?? null,
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

  /**
   * The alert of an outbox record `{"s","q","c","at","t"}`: the one function that builds alerts,
   * for the emitting call and for every later read of the outbox alike, so both are identical.
   */
  const fromRecord = (json: string): EmittedAlert => {
    const r = JSON.parse(json) as { s: AlertStatus; q: number; c: number; at: string; t: AlertTemplate };
    const t = r.t;
    return {
      id: alertId(t.ruleId, t.entityId, t.blockHash, r.s),
      ruleId: t.ruleId,
      ruleVersion: t.ruleVersion,
      ruleName: t.ruleName ?? null,
      accountId: t.accountId,
      sequence: r.q,
      status: r.s,
      confirmations: r.c,
      maxConfirmationCount: t.maxConfirmationCount,
      chain: t.chain,
      targetType: t.targetType,
      entityId: t.entityId,
      blockHash: t.blockHash,
      blockNumber: t.blockNumber,
      payload: t.payload,
      entity: t.entity,
      actions: t.actions,
      emittedAt: r.at,
    };
  };

  const onMatches = async (matches: readonly MatchInput[], head: number | ChainHead): Promise<EmittedAlert[]> => {
    const headNumber = typeof head === "number" ? head : head.number;
    const out: EmittedAlert[] = [];
    for (const batch of chunks(matches, batchSize)) {
      const keys = emitKeys();
      const args = [ttl, now().toISOString(), String(visibilityMs)];
      for (const { rule, entity } of batch) {
        checkEntity(entity);
        const bn = blockNumberOf(entity);
        const t = template(rule, entity, bn);
        const threshold = thresholdOf(rule);
        const confirmations = confirmationsAt(headNumber, bn);
        const member = `${t.blockHash}|${rule.id}|${entity.entityId}`;
        const pendingId = alertId(rule.id, entity.entityId, t.blockHash, "pending");
        const confirmedId = alertId(rule.id, entity.entityId, t.blockHash, "confirmed");
        keys.push(kState(member), kRule(rule.id), kGuard(pendingId), kGuard(confirmedId), kSeq(rule.id));
        args.push(
          member,
          String(bn),
          String(bn + threshold - 1),
          confirmations >= threshold ? "1" : "0",
          rule.sendPendingAlerts === true ? "1" : "0",
          JSON.stringify(t),
          String(confirmations),
          pendingId,
          confirmedId,
        );
      }
      const res = (await runScript(deps.redis, ON_MATCH, keys, args)) as unknown[];
      for (let i = 0; i + 1 < res.length; i += 2) out.push(fromRecord(String(res[i + 1])));
    }
    return out;
  };

  const finalize = async (items: { member: string; mode: "c" | "r"; confirmations: number }[]): Promise<EmittedAlert[]> => {
    const out: EmittedAlert[] = [];
    for (const batch of chunks(items, batchSize)) {
      const keys = emitKeys();
      const args = [ttl, now().toISOString(), String(visibilityMs)];
      for (const it of batch) {
        const { blockHash, ruleId, entityId } = parseMember(it.member);
        const id = alertId(ruleId, entityId, blockHash, it.mode === "c" ? "confirmed" : "removed");
        keys.push(kState(it.member), kRule(ruleId), kGuard(id), kSeq(ruleId));
        args.push(it.mode, it.member, id, String(it.confirmations));
      }
      const res = (await runScript(deps.redis, FINALIZE, keys, args)) as unknown[];
      for (let i = 0; i + 1 < res.length; i += 2) out.push(fromRecord(String(res[i + 1])));
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
    async ack(alertIds) {
      for (const batch of chunks(alertIds, batchSize)) await runScript(deps.redis, ACK, [kOutbox, kOrder, kVis], [...batch]);
    },
    async unacked(limit) {
      if (limit !== undefined && !(limit >= 1)) return [];
      const last = limit === undefined ? -1 : Math.floor(limit) - 1;
      const recs = (await runScript(deps.redis, UNACKED, [kOutbox, kOrder], [String(last)])) as unknown[];
      return recs.map((r) => fromRecord(String(r)));
    },
    async claimUnacked(opts = {}) {
      const limit = Math.max(1, Math.floor(opts.limit ?? 500));
      const lease = Math.max(0, Math.floor(opts.leaseMs ?? visibilityMs));
      const flat = (await runScript(deps.redis, CLAIM, [kOutbox, kOrder, kVis], [String(lease), String(limit)])) as unknown[];
      const claimed: { n: number; alert: EmittedAlert }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) claimed.push({ n: Number(flat[i]), alert: fromRecord(String(flat[i + 1])) });
      return claimed.sort((a, b) => a.n - b.n).map((c) => c.alert);
    },
  };
}
