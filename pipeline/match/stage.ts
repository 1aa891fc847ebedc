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
 * | `state/evaluator.ts` | state conditions: subjects read at each block record, crossings recorded as matches |
 * | `settled.ts` | the settled height: windows, absence and sequences judged at a block once its records are consumed |
 *
 * Entity sources: Event ← events; Token ← first Transfer of a contract (events); Log ← logs;
 * Transaction, Method and Contract ← transactions; Trace, Call and Contract (factory-created too)
 * ← traces, which ingest produces when `CHAINSIFT_INGEST_TRACES` is on and the node has a debug API.
 * @module
 */

import { Registry } from "prom-client";
import type { Alert } from "../../lib/alerting/alert.js";
import { finalizedKey, readFinalized } from "../../lib/chain/finality.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import { createRedisChainState } from "../../lib/chain/state.js";
import type { Config } from "../../lib/config/index.js";
import { type StateReadsConfig, stateReadsOf } from "../../lib/config/state.js";
import { DEFAULT_WATCHLISTS_CONFIG, type WatchlistCopiesConfig, watchlistCopiesOf } from "../../lib/config/watchlists.js";
import type { Logger } from "../../lib/logger.js";
import { entitiesOf, type TypedEntity } from "../../lib/match/entities.js";
import { createRuleIndex, type RuleIndex } from "../../lib/match/rule-index.js";
import { createWatchlistFilters } from "../../lib/match/watchlist-filters.js";
import { createWatchlistMembership, matchEntities } from "../../lib/match/watchlist-membership.js";
import { type RedisClient, sharedOrConnect } from "../../lib/redis.js";
import type { RpcClient } from "../../lib/rpc/client.js";
import type { Rule } from "../../lib/rules/model.js";
import { connectRuleStore, type RuleStore } from "../../lib/rules/store.js";
import { searchKeyPrefix } from "../../lib/searches/model.js";
import { startRevisionFeed } from "../../lib/watchlists/revision-feed.js";
import { createWatchlistStore } from "../../lib/watchlists/store.js";
import { REDECODE_HEADER, type TopicKind } from "../../topics/index.js";
import { type Bus, createRecordProducer, messageSeq } from "../kafka/bus.js";
import { type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { createChainView } from "./chain-view.js";
import type { MatchedEntity, MatchInput } from "./confirmations/decide.js";
import { createConfirmationTracker } from "./confirmations/tracker.js";
import { confirmationKeys } from "./keys.js";
import { countAlerts, matchMetricsOf } from "./metrics.js";
import { createAlertPublisher } from "./publisher.js";
import { startRuleSync } from "./rule-sync.js";
import { createSearchIndex, matchSearches, type SearchIndex } from "./search-index.js";
import { createSequenceEvaluator, withFollowedBy } from "./sequences/evaluator.js";
import { withFollowedBySearches } from "./sequences/searches.js";
import { createSettledHeight } from "./settled.js";
import { createStateEvaluator } from "./state/evaluator.js";
import { createTokenTracker, type TokenMetadataSource, tokenListMetadataSource } from "./tokens.js";
import { createWindowEvaluator } from "./windows/evaluator.js";

/** The topics whose records give entities (lib/match/entities.ts `entitiesOf`). */
type EntityTopic = "transactions" | "logs" | "events" | "traces";
const ENTITY_TOPICS: ReadonlySet<TopicKind> = new Set<EntityTopic>(["transactions", "logs", "events", "traces"]);
const isEntityTopic = (kind: TopicKind): kind is EntityTopic => ENTITY_TOPICS.has(kind);

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
  /** The saved searches' store (a rule store under `searchKeyPrefix`); connected from config when absent (and closed on stop). */
  searches?: RuleStore;
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
  /** The chain's one JSON-RPC client, for state conditions' reads (state/evaluator.ts); absent: state rules are logged, not evaluated. */
  rpc?: RpcClient;
  /** config `stateReads`; default the defaults of lib/config/state.ts. */
  stateReads?: StateReadsConfig;
  /** config `watchlistCopies`; default the defaults of lib/config/watchlists.ts. */
  watchlistCopies?: WatchlistCopiesConfig;
}

/** A running match stage. */
export interface MatchStage extends RunningConsumer {
  /** The enabled rules of the served chain, as the stage matches them. */
  index: RuleIndex;
  /** The enabled saved searches of the served chain. */
  searchIndex: SearchIndex;
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
  const connectedSearches = deps.searches
    ? undefined
    : await connectRuleStore({ ...config, redisKeyPrefix: searchKeyPrefix(config.redisKeyPrefix) });
  const searches = deps.searches ?? (connectedSearches?.store as RuleStore);
  const keyed = { redis, keyPrefix: config.redisKeyPrefix, chain: config.chain };
  const overTime = {
    ...keyed,
    logger: log,
    fire: (matches: readonly MatchInput[]) => track([...matches]),
    retract: async (matches: readonly MatchInput[]) => {
      for (const [p, t] of [
        [publisher, tracker],
        [finalPublisher, finalTracker],
      ] as const)
        await emitAndPublish(p, () => t.retract(matches));
    },
  };
  const watchlistStore = createWatchlistStore({ redis, keyPrefix: config.redisKeyPrefix, limits: DEFAULT_WATCHLISTS_CONFIG });
  // Tells the lists' in-process copies when a list changed, so a batch need not ask (lib/watchlists/revision-feed.ts).
  const feed = await startRevisionFeed({ redis, channel: watchlistStore.changesChannel, logger: log });
  const watchlistCopies = createWatchlistFilters({
    store: watchlistStore,
    feed,
    exactMaxBytes: (deps.watchlistCopies ?? watchlistCopiesOf({})).copyMaxBytes,
    onBuildError: (err, _a, id) => log.warn({ err, watchlist: id }, "watchlist copy build failed"),
  });
  const membership = createWatchlistMembership(watchlistStore, watchlistCopies);
  const windows = createWindowEvaluator(overTime);
  const sequences = createSequenceEvaluator({ ...overTime, watchlists: membership.lookup, decode: deps.decode });
  const states = createStateEvaluator({
    ...keyed,
    logger: log,
    rpc: deps.rpc,
    settings: deps.stateReads ?? stateReadsOf({}),
    fire: overTime.fire,
    onSkipped: (kind, n) => metrics.stateUnread.inc({ kind }, n),
  });
  const outboxVisibilityMs = Math.max(0, deps.outboxGraceMs ?? 10_000);
  const tracker = createConfirmationTracker({ ...keyed, outboxVisibilityMs });
  // Confirm on finality (docs/rules.md): a tracker of its own whose head is the node's finalized block, one confirmation.
  const finalTracker = createConfirmationTracker({
    ...keyed,
    keyPrefix: `${config.redisKeyPrefix}final:`,
    outboxVisibilityMs,
    threshold: () => 1,
    strictHead: true,
  });
  const tokens = createTokenTracker({ ...keyed, metadata: deps.tokens ?? tokenListMetadataSource(1) });
  const chain = createChainView(createRedisChainState(redis, config.redisKeyPrefix, config.chain));
  const registry = deps.registry ?? new Registry();
  // Windows, absence and sequences are judged at a block once its records are consumed (settled.ts).
  const settled = createSettledHeight({
    ...keyed,
    bus,
    logger: log,
    registry,
    head: () => chain.head(),
    canonical: (n) => chain.canonical(n),
    evaluate: async (view) => {
      await windows.onHead(view);
      await sequences.onHead(view);
    },
  });
  const index = settled.watch(
    states.watch(sequences.watch(windows.watch(createRuleIndex({ chain: config.chain, watchlists: membership.lookup })))),
  );
  const searchIndex = withFollowedBySearches(
    settled.watch(sequences.watch(windows.watch(createSearchIndex(config.chain, deps.decode, membership.lookup)))),
    sequences,
  );
  const producer = await createRecordProducer(bus, { metrics: { registry, stage: "match" } });
  const metrics = matchMetricsOf(registry);
  const outboxKey = confirmationKeys(config.redisKeyPrefix, config.chain).outbox;
  const unwatch = metrics.watch({
    rules: () => index.stats().rules,
    outboxSize: () => redis.hLen(outboxKey),
    watchlistCopies: () => watchlistCopies.stats(),
  });
  const bothTrackers = { dropRule: async (id: string) => (await tracker.dropRule(id)) + (await finalTracker.dropRule(id)) };
  const sync = await startRuleSync({ rules, index, tracker: bothTrackers, logger: log, reloadIntervalMs: deps.reloadIntervalMs });
  const searchSync = await startRuleSync({
    rules: searches,
    index: searchIndex,
    tracker: bothTrackers,
    logger: log.child({ store: "searches" }),
    reloadIntervalMs: deps.reloadIntervalMs,
  });
  const publisherOf = (t: typeof tracker) =>
    createAlertPublisher({
      tracker: t,
      producer,
      ruleName: (id) => index.get(id)?.name ?? searchIndex.get(id)?.name,
      logger: log,
      beforePublish: deps.beforePublish,
    });
  const publisher = publisherOf(tracker);
  const finalPublisher = publisherOf(finalTracker);
  // Alerts a previous process emitted but did not publish, before consuming anything.
  for (const p of [publisher, finalPublisher]) {
    await p.sweep().catch((err) => log.warn({ err }, "outbox sweep failed; retried periodically"));
    p.startSweeping(deps.outboxSweepIntervalMs ?? 5_000);
  }
  // The node's finalized block as ingest last published it (lib/chain/finality.ts), read at most once a second.
  const finalKey = finalizedKey(config.redisKeyPrefix, config.chain);
  let finalized: { at: number; value: number | null } = { at: 0, value: null };
  let finalHead = -1;
  const finalizedNow = async (): Promise<number | null> => {
    if (Date.now() - finalized.at >= 1000) finalized = { at: Date.now(), value: await readFinalized(redis, finalKey) };
    return finalized.value;
  };
  /** Records matches with the right tracker: `confirmOn: "finalized"` on a chain with a finalized block goes to the finality tracker, the rest (and the fallback) by count. */
  const track = async (matches: MatchInput[]): Promise<void> => {
    if (matches.length === 0) return;
    const wantsFinal = matches.some((m) => (m.rule as Rule).confirmOn === "finalized");
    const f = wantsFinal ? await finalizedNow() : null;
    const byCount = f === null ? matches : matches.filter((m) => m.rule.confirmOn !== "finalized");
    const byFinal = f === null ? [] : matches.filter((m) => m.rule.confirmOn === "finalized");
    if (byCount.length > 0) await emitAndPublish(publisher, () => tracker.onMatches(byCount, chain.head() ?? 0));
    if (byFinal.length > 0 && f !== null) await emitAndPublish(finalPublisher, () => finalTracker.onMatches(byFinal, f));
  };
  /** Moves the finality tracker's head to the finalized block when it advanced and its hash is known. */
  const advanceFinal = async (): Promise<void> => {
    const f = await finalizedNow();
    if (f === null || f <= finalHead) return;
    await chain.learn([f]);
    const hash = chain.canonical(f);
    if (hash === undefined) return;
    finalHead = f;
    await emitAndPublish(finalPublisher, () => finalTracker.onHead({ number: f, hash }, chain.canonical));
  };

  /** The entities of a record, Token included; none for a trace whose frames are not JSON. */
  const entitiesWithToken = async (input: InputRecord<EntityTopic>) => {
    let entities: TypedEntity[];
    try {
      entities = entitiesOf(input, deps.decode);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      const transactionHash = "transactionHash" in input.record ? input.record.transactionHash : undefined;
      log.warn({ transactionHash }, "trace record with unparsable frameJson skipped");
      return [];
    }
    if (input.topicKind !== "events") return entities;
    const ev = input.record;
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
  const emitAndPublish = async (p: typeof publisher, emit: () => Promise<readonly Alert[]>): Promise<void> => {
    await p.emitAndPublish(async () => {
      const alerts = await emit();
      countAlerts(metrics, alerts);
      return alerts;
    });
  };
  /** The saved searches' matches of a record; none for a trace whose frames are not JSON. */
  const searchMatches = (input: InputRecord<EntityTopic | "blocks">): MatchInput[] => {
    try {
      return searchIndex.matchRecords(input);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      return [];
    }
  };
  /** The saved searches' matches of each record, memberships prefetched when a search uses a watchlist. */
  const searchesOf = (inputs: InputRecord<EntityTopic | "blocks">[]) => matchSearches(searchIndex, membership, inputs, searchMatches);
  const countSearchMatch = (m: MatchInput): MatchInput => {
    metrics.matches.inc({ type: m.rule.config.targetType });
    return m;
  };
  // The finalized block also moves without new blocks (ingest publishes it every finalizedEveryPolls polls).
  let advancing: Promise<void> | undefined;
  const finalTimer = setInterval(() => {
    advancing ??= advanceFinal()
      .catch((err) => log.warn({ err }, "finality confirmations not advanced; retried"))
      .finally(() => {
        advancing = undefined;
      });
  }, 1000);
  finalTimer.unref();
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
          if (input.topicKind === "blocks") chain.observeBlock(input.record, seq);
          else if (input.topicKind === "reorgs") chain.observeReorg(input.record, seq);
          const head = chain.head();
          if (!head) continue;
          await chain.learn();
          // Windows first: a firing that late records retract is forgotten before the head could confirm it.
          const b = input.topicKind === "blocks" ? input.record : undefined;
          const block = b && {
            number: b.number.num,
            hash: b.hash.toLowerCase(),
            timestamp: Math.floor(Date.parse(`${b.timestamp}Z`) / 1000),
          };
          // A block's own saved-search matches enter windowed searches' windows before the block is evaluated.
          const blockMatches =
            input.topicKind === "blocks"
              ? await sequences.addMatches(await windows.addMatches((await searchesOf([input]))[0]?.map(countSearchMatch) ?? []))
              : [];
          await settled.onHead({ head, block, canonical: chain.canonical });
          await emitAndPublish(publisher, () => tracker.onHead(head, chain.canonical));
          if (b)
            await states.onBlock(
              { number: b.number.num, hash: b.hash, parentHash: b.parentHash, logsBloom: b.logsBloom },
              head.number,
              chain.canonical,
            );
          await track(blockMatches);
          await advanceFinal();
        }
        return [];
      }
      // One batch is one partition of one topic: every input is of `kind`.
      const records = inputs.filter((i): i is InputRecord<EntityTopic> => isEntityTopic(i.topicKind));
      if (records.length === 0) return [];
      await chain.learn(records.map((i) => i.record.blockNumber?.num ?? -1));
      const matches: MatchInput[] = [];
      const batch: { input: InputRecord<EntityTopic>; entities: TypedEntity[] }[] = [];
      for (const input of records) {
        // A record of a block known to be orphaned (its partition lagged behind the reorg) matches nothing.
        if (chain.isOrphaned(input.record)) continue;
        // An event re-decoded from history after an ABI registration is for search, not for alerts.
        if (input.topicKind === "events" && input.message.headers?.[REDECODE_HEADER] !== undefined) continue;
        batch.push({ input, entities: await entitiesWithToken(input) });
      }
      const matchedOf = await matchEntities(
        withFollowedBy(index, sequences),
        membership,
        batch.flatMap((b) => b.entities),
      );
      const searched = await searchesOf(batch.map((b) => b.input));
      let k = 0;
      for (const [j, { entities }] of batch.entries()) {
        for (const { type, entity } of entities) {
          metrics.entities.inc({ type });
          const matched = matchedOf[k++] ?? [];
          if (matched.length > 0) metrics.matches.inc({ type }, matched.length);
          for (const rule of matched) matches.push({ rule, entity: entity as unknown as MatchedEntity });
        }
        for (const m of searched[j] ?? []) matches.push(countSearchMatch(m));
      }
      // A head below an entity's block (its block record not consumed yet) counts as that block.
      await track(await sequences.addMatches(await windows.addMatches(states.recordMatches(matches))));
      return [];
    },
  });

  return {
    ...running,
    index,
    searchIndex,
    async reload() {
      await sync.reload();
      await searchSync.reload();
    },
    sweepOutbox: async () => (await publisher.sweep()) + (await finalPublisher.sweep()),
    async stop() {
      unwatch();
      clearInterval(finalTimer);
      await advancing;
      await settled.stop();
      const sweepsStopped = Promise.all([publisher.stop(), finalPublisher.stop()]);
      await running.stop();
      await sweepsStopped;
      await sync.stop();
      await searchSync.stop();
      await producer.disconnect();
      await feed.close();
      await connected?.close();
      await connectedSearches?.close();
      await own.close();
    },
  };
}
