/**
 * The confirmation tracker: turns matches and chain heads into {@link Alert}s with the right
 * status, exactly once each, with all state in Redis (it survives restarts and is shared by
 * instances of the match stage). The parts:
 *
 * | module | what |
 * |---|---|
 * | `decide.ts` | the confirmation rules, pure: first sight of a match, a new head |
 * | `../keys.ts` | the Redis keys (table) and match keys |
 * | `scripts.ts` | the Lua scripts that apply decisions atomically (layouts by name, `../lua.ts`) |
 * | `outbox.ts` | the outbox: records, ack, unacked, claims |
 * | this one | the wiring: batches, script calls, the public {@link ConfirmationTracker} |
 *
 * Exactly once: every alert id is `sha256(ruleId|entityId|blockHash|status)` and is emitted only if
 * a Redis `SET NX` guard on it succeeds, so processing the same match or head twice (replays,
 * restarts, two instances) never emits the same alert twice. Guards expire after
 * `guardTtlSeconds`. `sequence` is a per-rule Redis counter (INCR), increased only for emitted
 * alerts.
 *
 * Delivery: at least once. The script that emits an alert stores it in the outbox; the caller
 * publishes it and then {@link ConfirmationTracker.ack}s it. An alert left in the outbox is
 * re-published by a sweep ({@link ConfirmationTracker.claimUnacked}) once its visibility window
 * has passed; it is published twice only when the process died (or Redis failed) after publishing
 * it and before acknowledging it, or when publishing took longer than the window (then a sweep of
 * another instance may claim it). Receivers deduplicate by the alert id.
 * @module
 */
import { type Alert, alertId } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { Rule } from "../../../lib/rules/model.js";
import { confirmationKeys, matchMember } from "../keys.js";
import { runLua } from "../lua.js";
import type { MatchRedis } from "../redis.js";
import {
  type CanonicalLookup,
  type ChainHead,
  decideHead,
  decideMatch,
  type Finalization,
  type MatchedEntity,
  type MatchInput,
  type ScoredMember,
} from "./decide.js";
import { alertOfRecord, createOutbox } from "./outbox.js";
import { CARD, DROP_RULE, FINALIZE, FIRST_SIGHT, RANGE } from "./scripts.js";

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
  /**
   * Confirmations a rule's match needs; default the rule's own (`thresholdOf`: max(1,
   * maxConfirmationCount)). The match stage's finality tracker answers 1 and is given the node's
   * finalized block as its head (docs/rules.md, "Confirm on finality").
   */
  threshold?: (rule: Rule) => number;
  /** A head below a match's block does not count as the block (the finality tracker: not final yet). Default false. */
  strictHead?: boolean;
}

/** The confirmation tracker (see the module doc and `decide.ts` for the rules). */
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
  /**
   * Retracts tracked matches (a window firing whose window no longer crosses, pipeline/match/windows/):
   * each is forgotten, and a `removed` alert goes out where `pending` went out. Confirmed or unknown matches: nothing.
   */
  retract(matches: readonly MatchInput[]): Promise<Alert[]>;
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
  unacked(limit?: number): Promise<Alert[]>;
  /**
   * Outbox alerts whose visibility window (`outboxVisibilityMs` after emission, or `leaseMs` after
   * an earlier claim) has passed, in emission order: alerts whose emitter died or failed before
   * publishing or acking them. Atomically hides each claimed alert for `leaseMs`, so concurrent
   * sweeps (instances) do not claim the same alert; the claimer publishes and then acks them.
   * @param opts.limit at most this many per call (default 500); opts.leaseMs default `outboxVisibilityMs`.
   */
  claimUnacked(opts?: { limit?: number; leaseMs?: number }): Promise<Alert[]>;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const flag = (b: boolean) => (b ? "1" : "0");

/**
 * Creates a {@link ConfirmationTracker}.
 * @throws {TypeError} when `keyPrefix` is not a string.
 */
export function createConfirmationTracker(deps: ConfirmationTrackerDeps): ConfirmationTracker {
  if (typeof deps.keyPrefix !== "string") throw new TypeError("keyPrefix must be a string");
  const { redis, chain } = deps;
  const keys = confirmationKeys(deps.keyPrefix, chain);
  const now = deps.now ?? (() => new Date());
  const ttl = Math.max(1, Math.floor(deps.guardTtlSeconds ?? 2_592_000));
  const batchSize = Math.max(1, deps.batchSize ?? 200);
  const visibilityMs = Math.max(0, Math.floor(deps.outboxVisibilityMs ?? 10_000));
  const outbox = createOutbox(redis, keys, batchSize);
  /** The fixed values of the emitting scripts: their keys, the guards' TTL, emittedAt and the visibility window. */
  const emitting = () => ({ ...keys, ttl, emittedAt: now().toISOString(), visibilityMs });
  const alertsOf = (records: unknown) => (records as unknown[]).map((r) => alertOfRecord(String(r)));

  const onMatches = async (matches: readonly MatchInput[], head: number | ChainHead): Promise<Alert[]> => {
    const headNumber = typeof head === "number" ? head : head.number;
    const out: Alert[] = [];
    for (const batch of chunks(matches, batchSize)) {
      const items = batch.map(({ rule, entity }) => {
        const d = decideMatch(rule, entity, headNumber, chain, deps.threshold?.(rule), deps.strictHead === true);
        const { ruleId, blockNumber } = d.template;
        return {
          state: keys.state(d.member),
          ruleSet: keys.rule(ruleId),
          pendingGuard: keys.guard(d.pendingId),
          confirmedGuard: keys.guard(d.confirmedId),
          ruleSequence: keys.sequence(ruleId),
          member: d.member,
          blockNumber,
          dueHead: d.dueHead,
          confirmNow: flag(d.confirmNow),
          sendPending: flag(d.sendPending),
          template: JSON.stringify(d.template),
          confirmations: d.confirmations,
          pendingId: d.pendingId,
          confirmedId: d.confirmedId,
        };
      });
      out.push(...alertsOf(await runLua(redis, FIRST_SIGHT, emitting(), items)));
    }
    return out;
  };

  const finalize = async (items: readonly Finalization[]): Promise<Alert[]> => {
    const out: Alert[] = [];
    for (const batch of chunks(items, batchSize)) {
      const values = batch.map((f) => ({
        state: keys.state(f.member),
        ruleSet: keys.rule(f.ruleId),
        guard: keys.guard(f.alertId),
        ruleSequence: keys.sequence(f.ruleId),
        status: f.status,
        member: f.member,
        alertId: f.alertId,
        confirmations: f.confirmations,
        extra: f.replacedBy ? `,"r":${JSON.stringify(f.replacedBy)}` : "",
      }));
      out.push(...alertsOf(await runLua(redis, FINALIZE, emitting(), values)));
    }
    return out;
  };

  const range = async (set: string, maxScore: number): Promise<ScoredMember[]> => {
    const flat = (await runLua(redis, RANGE, { set, maxScore })) as unknown[];
    const out: ScoredMember[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: String(flat[i]), score: Number(flat[i + 1]) });
    return out;
  };

  return {
    onMatch: (rule, entity, head) => onMatches([{ rule, entity }], head),
    onMatches,
    async onHead(head, canonical) {
      const tracked = await range(keys.matches, head.number);
      const due = await range(keys.due, head.number);
      const { removed, confirmed } = decideHead(head, canonical, tracked, due);
      return [...(await finalize(removed)), ...(await finalize(confirmed))];
    },
    retract(matches) {
      return finalize(
        matches.map(({ rule, entity }) => {
          const ref = { blockHash: entity.blockHash.toLowerCase(), ruleId: rule.id, entityId: entity.entityId };
          return {
            member: matchMember(ref),
            ruleId: rule.id,
            status: "removed" as const,
            alertId: alertId(ref.ruleId, ref.entityId, ref.blockHash, "removed"),
            confirmations: 0,
          };
        }),
      );
    },
    async dropRule(ruleId) {
      return Number(await runLua(redis, DROP_RULE, { ...keys, ruleSet: keys.rule(ruleId) }));
    },
    async trackedCount() {
      return Number(await runLua(redis, CARD, { set: keys.matches }));
    },
    ack: (alertIds) => outbox.ack(alertIds),
    unacked: (limit) => outbox.unacked(limit),
    claimUnacked(opts = {}) {
      const limit = Math.max(1, Math.floor(opts.limit ?? 500));
      const leaseMs = Math.max(0, Math.floor(opts.leaseMs ?? visibilityMs));
      return outbox.claim(limit, leaseMs);
    },
  };
}
