/**
 * State conditions in the match stage (issue 34 part 1; docs/rules.md, "State conditions"). A rule
 * carrying `stateCondition` is triggered by readings, not by records: on every block record of the
 * one-partition `blocks` topic, {@link StateEvaluator.onBlock} reads the subject of every state rule
 * due at that block (`every.blocks`, or `every: "log"` when the header's `logsBloom` may hold a log of
 * the subject's contract: lib/chain/logs-bloom.ts) through the chain's one JSON-RPC client at the block *hash*
 * (lib/chain/state-reads.ts: one batch per block, identical calls of several rules read once, at most
 * `maxReadsPerBlock` calls), applies each reading to the rule's memory of the block's parent
 * (lib/match/state.ts `applyBlockReading`, kept in Redis per rule version), and fires a crossing as a
 * match of the rule with the entity {@link stateEntity} (`state:<block number>`, the read block's hash
 * and number). From there it is an ordinary match: confirmations count from the read block, a reorg
 * that orphans it gives `removed` (the confirmation tracker), and the new branch's block is read on
 * its own hash starting from the fork point's memory, so it fires again only if it crosses too.
 *
 * Faults: a read the node answers with an error, `null` or not at all is retried `readAttempts` times
 * (backoff from `readRetryMs`); still failing, {@link StateEvaluator.onBlock} throws a
 * {@link RetryableError}, so the consumer re-consumes the block record (nothing committed, nothing
 * skipped). Re-applying a block is idempotent: the memory is taken from the parent's entry, and the
 * tracker emits an alert id once. A block more than `reorgDepth` below the head whose state the node
 * does not hold (`unavailable`: a pruned node catching up) is reported (log, counter) and skipped
 * rather than guessed or retried forever; so is a subject past the read budget (`over_budget`).
 * Per-record matches of a state rule's `config.targetMap` are not alerts ({@link StateEvaluator.recordMatches}).
 * @module
 */
import { createHash } from "node:crypto";
import { readStates, type StateReading, type StateSubject, stateCall } from "../../../lib/chain/state-reads.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { StateReadsConfig } from "../../../lib/config/state.js";
import { RetryableError } from "../../../lib/errors.js";
import type { Logger } from "../../../lib/logger.js";
import type { RuleIndex } from "../../../lib/match/rule-index.js";
import { applyBlockReading, emptyLedger, memoryBase, type StateLedger } from "../../../lib/match/state.js";
import { stateDue, stateEntity } from "../../../lib/match/state-backtest.js";
import type { RpcClient } from "../../../lib/rpc/client.js";
import type { Rule } from "../../../lib/rules/model.js";
import { ruleStateCondition, type StateCondition } from "../../../lib/rules/schema-state.js";
import type { MatchInput } from "../confirmations/decide.js";
import { chainKeyPrefix } from "../keys.js";

/** The Redis calls the evaluator makes (a node-redis client). */
export interface StateRedis {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options: { EX: number }): Promise<unknown>;
}

/** Dependencies of {@link createStateEvaluator}. */
export interface StateEvaluatorDeps {
  redis: StateRedis;
  /** config `redisKeyPrefix`. */
  keyPrefix: string;
  chain: ChainId;
  logger: Logger;
  /** The chain's one JSON-RPC client (lib/chain-context.ts `client`); absent: state rules are reported and not evaluated. */
  rpc: RpcClient | undefined;
  /** config `stateReads` (lib/config/state.ts). */
  settings: StateReadsConfig;
  /** Blocks below the head a reorg can change (ingest's reorg window); default 128. */
  reorgDepth?: number;
  /** Records firings as matches (the stage's confirmation trackers and publisher). */
  fire(matches: readonly MatchInput[]): Promise<void>;
  /** Counts readings that were reported instead of applied, by kind (`unavailable`, `over_budget`, `error`). Optional. */
  onSkipped?(kind: string, count: number): void;
}

/** A block record as {@link StateEvaluator.onBlock} reads it. */
export interface StateBlock {
  number: number;
  /** Block hash (any case). */
  hash: string;
  parentHash: string;
  /** The header's `logsBloom` (`0x` + 512 hex digits), null when the node gave none: `every: "log"` rules are read at every block then. */
  logsBloom?: string | null;
}

/** See the module doc. */
export interface StateEvaluator {
  /** The state rules held (enabled, on the chain). */
  rules(): Rule[];
  /** Wraps the stage's rule index so that its upserts and removals keep {@link StateEvaluator.rules}. */
  watch(index: RuleIndex): RuleIndex;
  /** The matches that are not per-record matches of a state rule (those are not alerts). */
  recordMatches(matches: readonly MatchInput[]): MatchInput[];
  /**
   * Reads and evaluates every state rule due at `block` (module doc).
   * @param headNumber the canonical head's number, to tell a past block's missing state from a lagging node.
   * @param canonical the canonical hash at a height, when known: a block no longer canonical is not read.
   * @throws {RetryableError} when reads still fail after `readAttempts` tries (the block record is re-consumed).
   */
  onBlock(block: StateBlock, headNumber: number, canonical?: (n: number) => string | undefined): Promise<void>;
}

export { stateEntity };

/** How long a rule's memory outlives its last reading (a deleted rule's key expires). */
const LEDGER_TTL_SECONDS = 7 * 24 * 3600;

/** Identity of a rule's condition: a changed condition starts from a fresh memory. */
function conditionKey(rule: Rule, condition: StateCondition): string {
  return `${rule.id}:${createHash("sha1").update(JSON.stringify(condition)).digest("hex").slice(0, 12)}`;
}

/** Blocks whose readings {@link createStateEvaluator} keeps in memory. */
const CACHED_BLOCKS = 256;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Creates the stage's {@link StateEvaluator}. */
export function createStateEvaluator(deps: StateEvaluatorDeps): StateEvaluator {
  const held = new Map<string, { rule: Rule; condition: StateCondition }>();
  const reorgDepth = deps.reorgDepth ?? 128;
  const base = `${chainKeyPrefix(deps.keyPrefix, deps.chain)}state:`;
  let warnedNoClient = false;
  const skipped = (kind: string, count: number) => deps.onSkipped?.(kind, count);
  /** Successful readings by block hash and call (a block re-consumed after a failure re-reads only what failed); the newest {@link CACHED_BLOCKS} blocks. */
  const cache = new Map<string, Map<string, StateReading>>();

  /** Reads the distinct calls of `subjects` at `hash`, retrying failed ones; the readings by call key. */
  const readAll = async (hash: string, subjects: StateSubject[], rpc: RpcClient): Promise<Map<string, StateReading>> => {
    const byKey = new Map<string, StateSubject>();
    for (const s of subjects) byKey.set(JSON.stringify(stateCall(s, hash)), s);
    const keys = [...byKey.keys()];
    const out = cache.get(hash) ?? new Map<string, StateReading>();
    cache.delete(hash);
    cache.set(hash, out);
    for (const old of [...cache.keys()].slice(0, Math.max(0, cache.size - CACHED_BLOCKS))) cache.delete(old);
    let pending = keys.filter((k) => out.get(k)?.ok !== true);
    const cached = keys.length - pending.length;
    let lastError = "";
    for (let attempt = 1; attempt <= deps.settings.readAttempts && pending.length > 0; attempt++) {
      if (attempt > 1) await sleep(deps.settings.readRetryMs * 2 ** (attempt - 2));
      const budget = deps.settings.maxReadsPerBlock - cached;
      const readings = await readStates(
        rpc,
        hash,
        pending.map((k) => byKey.get(k) as StateSubject),
        budget,
      ).catch((err: unknown) => {
        if (!(err instanceof RetryableError)) throw err;
        lastError = err.message;
        return null;
      });
      if (readings === null) continue;
      const failed: string[] = [];
      pending.forEach((k, i) => {
        const r = readings[i] as StateReading;
        out.set(k, r);
        if (!r.ok && r.kind !== "over_budget") {
          failed.push(k);
          lastError = r.message;
        }
      });
      pending = failed;
    }
    const result = new Map(out);
    for (const k of pending) if (!result.has(k)) result.set(k, { ok: false, kind: "error", message: lastError });
    for (const [k, r] of out) if (!r.ok) out.delete(k);
    return result;
  };

  return {
    rules: () => [...held.values()].map((h) => h.rule),
    watch(index) {
      return {
        ...index,
        upsert(rule) {
          index.upsert(rule);
          const got = index.get(rule.id);
          const condition = got === undefined ? null : ruleStateCondition(got);
          if (got !== undefined && condition !== null) held.set(got.id, { rule: got, condition });
          else held.delete(rule.id);
        },
        remove(id) {
          held.delete(id);
          return index.remove(id);
        },
      };
    },
    recordMatches: (matches) => matches.filter((m) => !held.has(m.rule.id) || ruleStateCondition(m.rule) === null),
    async onBlock(block, headNumber, canonical) {
      const hash = block.hash.toLowerCase();
      const due = [...held.values()].filter((h) => stateDue(h.condition, block));
      if (due.length === 0) return;
      const known = canonical?.(block.number);
      if (known !== undefined && known.toLowerCase() !== hash) return; // orphaned before it was read: its replacement is read
      const rpc = deps.rpc;
      if (rpc === undefined) {
        if (!warnedNoClient) deps.logger.error({ rules: due.length }, "no JSON-RPC client: state rules are not evaluated");
        warnedNoClient = true;
        skipped("error", due.length);
        return;
      }
      const readings = await readAll(
        hash,
        due.map((h) => h.condition.subject),
        rpc,
      );
      const fired: MatchInput[] = [];
      const saves: Array<[string, StateLedger]> = [];
      const failures: string[] = [];
      // One round trip for every due rule's ledger (node-redis sends concurrent commands in one pipeline).
      const stored = await Promise.all(due.map((d) => deps.redis.get(`${base}${conditionKey(d.rule, d.condition)}`)));
      for (const [i, { rule, condition }] of due.entries()) {
        const r = readings.get(JSON.stringify(stateCall(condition.subject, hash)));
        if (r === undefined || !r.ok) {
          const kind = r?.kind ?? "error";
          const message = r === undefined ? "not read" : r.message;
          const past = headNumber - block.number > reorgDepth;
          if (kind === "over_budget" || (kind === "unavailable" && past)) {
            deps.logger.warn({ ruleId: rule.id, block: block.number, kind, message }, "state condition not evaluated at this block");
            skipped(kind, 1);
          } else failures.push(`${rule.id}: ${message}`);
          continue;
        }
        const key = `${base}${conditionKey(rule, condition)}`;
        const raw = stored[i] ?? null;
        const ledger = raw === null ? emptyLedger() : (JSON.parse(raw) as StateLedger);
        const step = applyBlockReading(
          condition.comparison,
          ledger,
          { hash, number: block.number, parentHash: memoryBase(ledger, block, canonical, reorgDepth) },
          r.value,
          condition.decimals ?? 0,
          reorgDepth,
        );
        if (step.fired) fired.push({ rule, entity: stateEntity({ number: block.number, hash }, condition, r.value) });
        saves.push([key, step.ledger]);
      }
      // Fire before saving: a crash in between re-applies the block from the parent's memory, and the tracker emits once.
      if (fired.length > 0) await deps.fire(fired);
      await Promise.all(saves.map(([key, ledger]) => deps.redis.set(key, JSON.stringify(ledger), { EX: LEDGER_TTL_SECONDS })));
      if (failures.length > 0) {
        skipped("error", failures.length);
        throw new RetryableError(`state reads of block ${block.number} failed: ${failures.slice(0, 3).join("; ")}`);
      }
    },
  };
}
