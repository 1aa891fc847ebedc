/**
 * The match stage's Kafka shell: a stateful consumer of blocks (chain heads), reorgs,
 * transactions, logs, events and traces. Per batch it turns records into entities
 * ({@link entitiesOf}, pure), asks the {@link RuleIndex} for the rules that match them, records the
 * matches with the confirmation tracker and publishes the alerts it emits, before the consumed
 * offsets are committed. Blocks and reorgs move the chain head, which confirms or removes tracked
 * matches. The parts:
 *
 * | module | what |
 * |---|---|
 * | `lib/match/entities.ts` | entities per record (`entitiesOf`); Token entities need Redis (`tokens.ts`) |
 * | `lib/match/rule-index.ts`, `rule-sync.ts` | the enabled rules, kept equal to the rule store |
 * | `chain-view.ts` | the canonical chain (blocks and reorgs topics, ingest's durable map) |
 * | `confirmations/` | pending / confirmed / removed, exactly once, in Redis |
 * | `publisher.ts` | publish and ack emitted alerts; the outbox sweep (crash safety) |
 *
 * Entity sources: Event ← events; Token ← first Transfer of a contract (events); Log ← logs;
 * Transaction, Method and Contract ← transactions; Trace, Call and Contract (factory-created too)
 * ← traces, which ingest produces when `CHAINSIFT_INGEST_TRACES` is on and the node has a debug API.
 * @module
 */

import { Registry } from "prom-client";
import type { Alert } from "../../lib/alerting/alert.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import { createRedisChainState } from "../../lib/chain/state.js";
import type { Config } from "../../lib/config.js";
import type { Logger } from "../../lib/logger.js";
import { entitiesOf, type TypedEntity } from "../../lib/match/entities.js";
import { createRuleIndex, type RuleIndex } from "../../lib/match/rule-index.js";
import type { BlockRecord, EventRecord, ReorgRecord, TraceRecord } from "../../lib/records.js";
import { type RedisClient, sharedOrConnect } from "../../lib/redis.js";
import { connectRuleStore, type RuleStore } from "../../lib/rules/store.js";
import { REDECODE_HEADER } from "../../topics/index.js";
import { type Bus, createRecordProducer, messageSeq } from "../kafka/bus.js";
import { type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { createChainView } from "./chain-view.js";
import type { MatchedEntity, MatchInput } from "./confirmations/decide.js";
import { createConfirmationTracker } from "./confirmations/tracker.js";
import { confirmationKeys } from "./keys.js";
import { countAlerts, matchMetricsOf } from "./metrics.js";
import { createAlertPublisher } from "./publisher.js";
import { startRuleSync } from "./rule-sync.js";
import { createTokenTracker, type TokenMetadataSource, tokenListMetadataSource } from "./tokens.js";

/** Dependencies of {@link startMatchStage}. */
export interface MatchStageDeps {
  /** Chain id and token decimals for decoded Method/Call arguments' `scaled` values: the chain context's `decode` (lib/chain-context.ts). */
  decode: DecodeMethodOptions;
  bus: Bus;
  config: Pick<Config, "chain" | "redisUrl" | "redisKeyPrefix">;
  logger: Logger;
  /** Registry of the stage's metrics (`chainsift_match_*`, and the shell's), e.g. the process's; default a private one. */
  registry?: Registry;
  /**
   * A connected Redis client for confirmations, tokens and ingest's canonical map, e.g. the
   * process's shared one (lib/common.ts); left open on stop. Default: a client of the stage
   * (`connectRedisClient` on `config.redisUrl`), closed on stop.
   */
  redis?: RedisClient;
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
  /** Interval of the outbox sweep (the first runs before consuming). Default 5000 ms. */
  outboxSweepIntervalMs?: number;
  /**
   * Test hook: runs after the tracker has recorded alerts and before they are published (not for
   * sweeps). A test makes it hang or throw to simulate a crash between the two.
   */
  beforePublish?: (alerts: readonly Alert[]) => Promise<void>;
}

/** A running match stage. */
export interface MatchStage extends RunningConsumer {
  /** The enabled rules of the served chain, as the stage matches them. */
  index: RuleIndex;
  /** Reloads every rule from the store now. */
  reload(): Promise<void>;
  /** Runs one outbox sweep now; returns how many alerts it re-published. */
  sweepOutbox(): Promise<number>;
}

/**
 * Starts the match stage: loads the rules, sweeps the outbox once, then consumes.
 * @param deps - bus, config (`chain`, `redisUrl`, `redisKeyPrefix`), logger, and optionally the
 *   shared Redis client, rule store, token metadata and intervals ({@link MatchStageDeps}).
 * @returns the running stage; `stop()` stops consuming and sweeping and closes what the stage opened.
 * @throws when Redis, the rule store or Kafka cannot be reached at startup.
 */
export async function startMatchStage(deps: MatchStageDeps): Promise<MatchStage> {
  const { bus, config } = deps;
  const log = deps.logger.child({ stage: "match" });
  const own = await sharedOrConnect(deps.redis, config.redisUrl, { logger: log, label: "match" });
  const redis = own.client;
  const connected = deps.rules ? undefined : await connectRuleStore(config);
  const rules = deps.rules ?? (connected?.store as RuleStore);
  const keyed = { redis, keyPrefix: config.redisKeyPrefix, chain: config.chain };
  const index = createRuleIndex({ chain: config.chain });
  const tracker = createConfirmationTracker({ ...keyed, outboxVisibilityMs: Math.max(0, deps.outboxGraceMs ?? 10_000) });
  const tokens = createTokenTracker({ ...keyed, metadata: deps.tokens ?? tokenListMetadataSource(1) });
  const chain = createChainView(createRedisChainState(redis, config.redisKeyPrefix, config.chain));
  const registry = deps.registry ?? new Registry();
  const producer = await createRecordProducer(bus, { metrics: { registry, stage: "match" } });
  const metrics = matchMetricsOf(registry);
  const outboxKey = confirmationKeys(config.redisKeyPrefix, config.chain).outbox;
  const unwatch = metrics.watch({ rules: () => index.stats().rules, outboxSize: () => redis.hLen(outboxKey) });
  const sync = await startRuleSync({ rules, index, tracker, logger: log, reloadIntervalMs: deps.reloadIntervalMs });
  const publisher = createAlertPublisher({
    tracker,
    producer,
    ruleName: (id) => index.get(id)?.name,
    logger: log,
    beforePublish: deps.beforePublish,
  });
  // Alerts a previous process emitted but did not publish, before consuming anything.
  await publisher.sweep().catch((err) => log.warn({ err }, "outbox sweep failed; retried periodically"));
  publisher.startSweeping(deps.outboxSweepIntervalMs ?? 5_000);

  /** The entities of a record, Token included; none for a trace whose frames are not JSON. */
  const entitiesWithToken = async (input: { topicKind: "events" | "transactions" | "logs" | "traces"; record: unknown }) => {
    let entities: TypedEntity[];
    try {
      entities = entitiesOf(input, deps.decode);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      log.warn({ transactionHash: (input.record as TraceRecord).transactionHash }, "trace record with unparsable frameJson skipped");
      return [];
    }
    if (input.topicKind !== "events") return entities;
    const ev = input.record as EventRecord;
    const token = await tokens.observe(ev).catch((err) => {
      log.warn({ err, address: ev.address }, "token metadata unavailable; the next Transfer retries");
      return null;
    });
    return token ? [...entities, { type: "Token" as const, entity: token }] : entities;
  };

  // Emitting (the tracker takes each rule's next `sequence` numbers in Redis) and publishing form one
  // critical section per process, shared with the outbox sweep: partitions are handled concurrently,
  // and a batch that took lower numbers must not reach the alerts topic after one that took higher
  // numbers; across processes the publisher sends a rule's earlier outbox alerts first
  // (publisher.ts, Order; docs/alerting-delivery.md, Ordering).
  const emitAndPublish = async (emit: () => Promise<readonly Alert[]>): Promise<void> => {
    await publisher.emitAndPublish(async () => {
      const alerts = await emit();
      countAlerts(metrics, alerts);
      return alerts;
    });
  };
  const running = await runConsumer({
    bus,
    logger: deps.logger,
    registry,
    stage: "match",
    topics: ["blocks", "transactions", "logs", "events", "traces", "reorgs"],
    handler: async (inputs) => {
      const kind = inputs[0]?.topicKind;
      if (kind === "blocks" || kind === "reorgs") {
        for (const input of inputs) {
          const seq = messageSeq(input.message);
          if (kind === "blocks") chain.observeBlock(input.record as BlockRecord, seq);
          else chain.observeReorg(input.record as ReorgRecord, seq);
          const head = chain.head();
          if (!head) continue;
          await chain.learn();
          await emitAndPublish(() => tracker.onHead(head, chain.canonical));
        }
        return [];
      }
      if (kind !== "transactions" && kind !== "logs" && kind !== "events" && kind !== "traces") return [];
      await chain.learn(inputs.map((i) => (i.record as { blockNumber?: { num: number } }).blockNumber?.num ?? -1));
      const matches: MatchInput[] = [];
      for (const input of inputs) {
        // A record of a block known to be orphaned (its partition lagged behind the reorg) matches nothing.
        if (chain.isOrphaned(input.record)) continue;
        // An event re-decoded from history after an ABI registration is for search, not for alerts.
        if (kind === "events" && input.message.headers?.[REDECODE_HEADER] !== undefined) continue;
        for (const { type, entity } of await entitiesWithToken({ topicKind: kind, record: input.record })) {
          metrics.entities.inc({ type });
          const matched = index.match(type, entity);
          if (matched.length > 0) metrics.matches.inc({ type }, matched.length);
          for (const rule of matched) matches.push({ rule, entity: entity as unknown as MatchedEntity });
        }
      }
      // A head below an entity's block (its block record not consumed yet) counts as that block.
      if (matches.length > 0) await emitAndPublish(() => tracker.onMatches(matches, chain.head() ?? 0));
      return [];
    },
  });

  return {
    ...running,
    index,
    reload: sync.reload,
    sweepOutbox: publisher.sweep,
    async stop() {
      unwatch();
      const sweepsStopped = publisher.stop();
      await running.stop();
      await sweepsStopped;
      await sync.stop();
      await producer.disconnect();
      await connected?.close();
      await own.close();
    },
  };
}
