/**
 * The match stage's Kafka shell: a stateful consumer of blocks (chain heads), transactions, logs
 * and events. It keeps every enabled rule in a {@link RuleIndex} (full load from the rule store at
 * start, the store's change feed, and a periodic full reload), turns records into entities of each
 * target type, evaluates them, tracks confirmations in Redis and publishes alerts to the alerts
 * topic (keyed by rule id). Alerts are published before the consumed offsets are committed.
 *
 * Crash safety (transactional outbox, see confirmations.ts): the tracker stores every alert it
 * emits in a Redis outbox in the same atomic script that records it as emitted. The stage
 * publishes the returned alerts, then acks them (removes them from the outbox). An outbox sweep,
 * once before consuming and then every `outboxSweepIntervalMs`, re-publishes alerts left
 * unacknowledged for `outboxGraceMs` (their emitter died, or its publish failed, in between) and
 * acks them. Nothing emitted is lost; an alert id is published twice only when a process dies
 * after publishing and before acking (or a publish outlives the grace period and another
 * instance's sweep claims it); the notify stage's delivery log then sends each action once.
 *
 * Entity sources: Event ← events; Token ← first Transfer of a contract (events); Log ← logs;
 * Transaction, Method and Contract ← transactions; Trace, Call and Contract (factory-created too)
 * ← traces, which ingest produces when `CHAINSIFT_INGEST_TRACES` is on and the node has a debug API.
 * @module
 */

import { createClient } from "redis";
import type { Alert } from "../../lib/alerting/alert.js";
import { alertToAvro } from "../../lib/alerting/avro.js";
import { type CallFrame, callEntity, flattenCallTrace } from "../../lib/chain/calltrace.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import { createRedisChainState } from "../../lib/chain/state.js";
import type { Config } from "../../lib/config.js";
import type { Logger } from "../../lib/logger.js";
import type { BlockRecord, EventRecord, LogRecord, ReorgRecord, TraceRecord, TransactionRecord } from "../../lib/records.js";
import type { TargetType } from "../../lib/rules/model.js";
import { connectRuleStore, type RuleStore } from "../../lib/rules/store.js";
import { type Bus, createRecordProducer, messageSeq } from "../kafka/bus.js";
import { type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { createCanonicalView } from "./canon.js";
import type { MatchedEntity, MatchInput } from "./confirmations/decide.js";
import { createConfirmationTracker } from "./confirmations/tracker.js";
import {
  contractEntitiesFromTrace,
  contractEntity,
  type EntityBase,
  eventEntity,
  logEntity,
  methodEntity,
  transactionEntity,
} from "./entities.js";
import { createRuleIndex, type RuleIndex } from "./rule-index.js";
import { createTokenTracker, type TokenMetadataSource, tokenListMetadataSource } from "./tokens.js";

/** Dependencies of {@link startMatchStage}. */
export interface MatchStageDeps {
  /** Chain id and token decimals for decoded Method/Call arguments' `scaled` values; default mainnet (1) and the bundled token list. */
  decode?: DecodeMethodOptions;
  bus: Bus;
  config: Pick<Config, "chain" | "redisUrl" | "redisKeyPrefix">;
  logger: Logger;
  /** Rule store; connected from config when absent (and closed on stop). */
  rules?: RuleStore;
  /** Token metadata for Token entities. Default: the bundled token list (mainnet, chain id 1). */
  tokens?: TokenMetadataSource;
  /** Full reload of the rules, in case a change notification was missed. Default 30000 ms. */
  reloadIntervalMs?: number;
  /**
   * How long an emitted alert may stay unacknowledged in the outbox before a sweep (of any
   * instance) re-publishes it. Longer than a normal publish + ack; default 10000 ms.
   */
  outboxGraceMs?: number;
  /** Interval of the outbox sweep. Default 5000 ms. */
  outboxSweepIntervalMs?: number;
  /**
   * Test hook: runs after the tracker has recorded alerts and before they are published (not for
   * sweeps). A test makes it hang or throw to simulate a crash between the two.
   */
  beforePublish?: (alerts: readonly Alert[]) => Promise<void>;
}

/** A running match stage. */
export interface MatchStage extends RunningConsumer {
  index: RuleIndex;
  /** Reloads every rule from the store now. */
  reload(): Promise<void>;
  /** Runs one outbox sweep now; returns how many alerts it re-published. */
  sweepOutbox(): Promise<number>;
}

/** How many recent canonical block hashes are kept in memory. */
const CANON_WINDOW = 1024;
/**
 * Heights below each head whose canonical hash is looked up in ingest's durable map when this
 * process has not seen them (after a restart): at least the deepest confirmation threshold in use.
 */
const LEARN_DEPTH = 256;

/** Starts the match stage. */
export async function startMatchStage(deps: MatchStageDeps): Promise<MatchStage> {
  const { bus, config } = deps;
  const log = deps.logger.child({ stage: "match" });
  const redis = createClient({ url: config.redisUrl });
  redis.on("error", (err) => log.warn({ err }, "redis error"));
  await redis.connect();
  const connected = deps.rules ? undefined : await connectRuleStore(config);
  const rules = deps.rules ?? (connected?.store as RuleStore);
  const index = createRuleIndex({ chain: config.chain });
  const outboxGraceMs = Math.max(0, deps.outboxGraceMs ?? 10_000);
  const tracker = createConfirmationTracker({
    redis,
    keyPrefix: config.redisKeyPrefix,
    chain: config.chain,
    outboxVisibilityMs: outboxGraceMs,
  });
  const tokens = createTokenTracker({
    redis,
    keyPrefix: config.redisKeyPrefix,
    chain: config.chain,
    metadata: deps.tokens ?? tokenListMetadataSource(1),
  });
  const producer = await createRecordProducer(bus);

  const upsert = (rule: Parameters<RuleIndex["upsert"]>[0]) => {
    try {
      index.upsert(rule);
    } catch (err) {
      log.error({ err, ruleId: rule.id }, "rule cannot be compiled; ignored");
    }
  };
  const reload = async () => {
    const all = await rules.all();
    const ids = new Set(all.map((r) => r.id));
    for (const r of all) upsert(r);
    // Rules deleted while a notification was missed: drop what the store no longer has.
    for (const held of heldIds) if (!ids.has(held)) index.remove(held);
    heldIds = ids;
  };
  let heldIds = new Set<string>();
  await reload();
  const unsubscribe = await rules.subscribe(
    (change) => {
      void (async () => {
        if (change.op === "delete") {
          index.remove(change.id);
          await tracker.dropRule(change.id);
          return;
        }
        const rule = await rules.getById(change.id);
        if (!rule) return;
        upsert(rule);
        heldIds.add(rule.id);
        if (rule.state !== "enabled") await tracker.dropRule(rule.id);
      })().catch((err) => log.warn({ err, change }, "rule change not applied; the periodic reload will"));
    },
    { onReconnect: () => void reload().catch((err) => log.warn({ err }, "reload failed")) },
  );
  const timer = setInterval(() => void reload().catch((err) => log.warn({ err }, "reload failed")), deps.reloadIntervalMs ?? 30_000);
  timer.unref();

  // Chain state from the blocks and reorgs topics.
  const view = createCanonicalView(CANON_WINDOW);
  // A restarted instance does not consume again the blocks and reorgs records its predecessor
  // committed: heights this process has not seen are answered by ingest's durable canonical map
  // (lib/chain/state.ts), the same one the index stage checks. What the view knows wins.
  const ingestCanon = createRedisChainState(redis, config.redisKeyPrefix, config.chain);
  const durable = new Map<number, string>();
  const learn = async (heights: Iterable<number>) => {
    const unknown = [...new Set(heights)].filter((n) => n >= 0 && view.hashAt(n) === undefined && !durable.has(n));
    if (unknown.length === 0) return;
    for (const [n, h] of await ingestCanon.hashesAt(unknown)) if (h !== undefined) durable.set(n, h.toLowerCase());
    const top = view.head()?.number;
    if (top !== undefined) for (const n of durable.keys()) if (n < top - CANON_WINDOW) durable.delete(n);
  };
  const canonical = (n: number) => view.hashAt(n) ?? durable.get(n);

  const send = async (alerts: readonly Alert[]) => {
    await producer.send(
      alerts.map((a) => ({
        kind: "alerts" as const,
        key: a.ruleId,
        // ruleName is part of the tracker's snapshot; the index only fills it for templates stored without one.
        record: alertToAvro({ ...a, ruleName: a.ruleName ?? index.get(a.ruleId)?.name ?? null }),
      })),
    );
  };
  const ack = async (alerts: readonly Alert[]) => {
    try {
      await tracker.ack(alerts.map((a) => a.id));
    } catch (err) {
      // Published already: failing the batch would not help. The sweep re-publishes them (duplicates).
      log.warn({ err, alerts: alerts.length }, "outbox ack failed; the outbox sweep will publish these alerts again");
    }
  };
  // Alerts this process is publishing: a sweep skips them even when they outlive the grace period.
  const inFlight = new Set<string>();
  const publish = async (alerts: readonly Alert[]) => {
    if (alerts.length === 0) return;
    for (const a of alerts) inFlight.add(a.id);
    try {
      await deps.beforePublish?.(alerts);
      await send(alerts);
      await ack(alerts);
    } finally {
      for (const a of alerts) inFlight.delete(a.id);
    }
  };

  const SWEEP_BATCH = 500;
  let sweeping: Promise<number> | undefined;
  const sweepOnce = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const claimed = await tracker.claimUnacked({ limit: SWEEP_BATCH });
      const orphans = claimed.filter((a) => !inFlight.has(a.id));
      if (orphans.length > 0) {
        await send(orphans);
        await ack(orphans);
        total += orphans.length;
        log.warn(
          { alerts: orphans.length, ids: orphans.slice(0, 10).map((a) => a.id) },
          "re-published alerts left unacknowledged in the outbox",
        );
      }
      if (claimed.length < SWEEP_BATCH) return total;
    }
  };
  const sweepOutbox = (): Promise<number> => {
    sweeping ??= sweepOnce().finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };
  // Alerts a previous process emitted but did not publish, before consuming anything.
  await sweepOutbox().catch((err) => log.warn({ err }, "outbox sweep failed; retried periodically"));

  const matchAll = (type: TargetType, entity: EntityBase, out: MatchInput[]) => {
    for (const rule of index.match(type, entity)) out.push({ rule, entity: entity as unknown as MatchedEntity });
  };

  let stopped = false;
  const sweepTimer = setInterval(() => {
    if (!stopped) void sweepOutbox().catch((err) => log.warn({ err }, "outbox sweep failed; retried periodically"));
  }, deps.outboxSweepIntervalMs ?? 5_000);
  sweepTimer.unref();

  const running = await runConsumer({
    bus,
    logger: deps.logger,
    stage: "match",
    topics: ["blocks", "transactions", "logs", "events", "traces", "reorgs"],
    handler: async (inputs) => {
      const kind = inputs[0]?.topicKind;
      if (kind === "blocks" || kind === "reorgs") {
        for (const input of inputs) {
          const seq = messageSeq(input.message);
          if (kind === "blocks") {
            const b = input.record as BlockRecord;
            view.observeBlock(b.number.num, b.hash, seq);
          } else {
            // An orphaned block: its tracked matches are dropped (removed alerts) by the next onHead.
            const r = input.record as ReorgRecord;
            view.observeReorg(r.number, r.orphanedHash, r.replacedBy, seq);
          }
          const head = view.head();
          if (head) {
            await learn(Array.from({ length: LEARN_DEPTH }, (_, i) => head.number - i));
            await publish(await tracker.onHead(head, canonical));
          }
        }
        return [];
      }
      const matches: MatchInput[] = [];
      const head = view.head();
      await learn(inputs.map((i) => (i.record as { blockNumber?: { num: number } }).blockNumber?.num ?? -1));
      for (const input of inputs) {
        // A record of a block known to be orphaned (its partition lagged behind the reorg) matches nothing.
        const at = input.record as { blockNumber?: { num: number }; blockHash?: string };
        if (at.blockNumber && at.blockHash) {
          const c = canonical(at.blockNumber.num);
          if (c !== undefined && c !== at.blockHash.toLowerCase()) continue;
        }
        if (kind === "transactions") {
          const tx = input.record as TransactionRecord;
          matchAll("Transaction", transactionEntity(tx), matches);
          const method = methodEntity(tx, deps.decode);
          if (method) matchAll("Method", method, matches);
          const contract = contractEntity(tx);
          if (contract) matchAll("Contract", contract, matches);
        } else if (kind === "logs") {
          const l = input.record as LogRecord;
          matchAll("Log", logEntity(l), matches);
        } else if (kind === "traces") {
          const t = input.record as TraceRecord;
          let frame: CallFrame;
          try {
            frame = JSON.parse(t.frameJson) as CallFrame;
          } catch {
            log.warn({ transactionHash: t.transactionHash }, "trace record with unparsable frameJson skipped");
            continue;
          }
          const frames = flattenCallTrace(frame, { ...t, transactionFrom: t.transactionFrom });
          for (const f of frames) {
            matchAll("Trace", f, matches);
            const call = callEntity(f, deps.decode);
            if (call) matchAll("Call", call, matches);
          }
          for (const c of contractEntitiesFromTrace(frames, { transactionFrom: t.transactionFrom })) matchAll("Contract", c, matches);
        } else if (kind === "events") {
          const ev = input.record as EventRecord;
          matchAll("Event", eventEntity(ev), matches);
          const token = await tokens.observe(ev).catch((err) => {
            log.warn({ err, address: ev.address }, "token metadata unavailable; the next Transfer retries");
            return null;
          });
          if (token) matchAll("Token", token, matches);
        }
      }
      // A head below an entity's block (its block record not consumed yet) counts as that block.
      if (matches.length > 0) await publish(await tracker.onMatches(matches, head ?? 0));
      return [];
    },
  });

  return {
    ...running,
    index,
    reload,
    sweepOutbox,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearInterval(sweepTimer);
      await running.stop();
      await sweeping?.catch(() => {});
      await unsubscribe().catch(() => {});
      await producer.disconnect();
      await connected?.close();
      await redis.quit().catch(() => {});
    },
  };
}
