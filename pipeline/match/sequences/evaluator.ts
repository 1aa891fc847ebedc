/**
 * Sequence rules in the match stage (issue 33; docs/alerting.md, "Sequences"; the arithmetic in
 * lib/match/sequences.ts). The same two roles, Redis scripts and guarantees as windowed rules
 * (`../windows/evaluator.ts`), under keys of their own (`seq:` instead of `win:`):
 *
 * - **Adding records (every member).** A record the rule's own conditions select (role `first`),
 *   or its `sequence.followedBy` conditions select ({@link SequenceEvaluator.followedByMatches},
 *   role `followedBy`), does not go to the confirmation tracker: {@link SequenceEvaluator.addMatches}
 *   writes it with its correlate value and position to the rule's record hash of its block
 *   (`HSETNX` by role and id) and marks the (rule, block) dirty.
 * - **Evaluating (the member that consumes the `blocks` topic).** At every block and reorg record,
 *   {@link SequenceEvaluator.onHead} loads each sequence rule's state, drops the blocks that left the
 *   canonical chain, applies the new block with its records, adds the late ones, emits the events
 *   and saves the state with compare-and-set on its revision.
 *
 * A firing is a match of the rule with the entity {@link sequenceEntity}: entity id
 * `sequence:<first id>:<followedBy id>`, the followedBy record's block (confirmations count from
 * it; a reorg of it gives `removed` through the tracker), and `sequenceMatch` carrying both
 * records and a search body that finds them. A retraction whose followedBy block is still
 * canonical (a late record re-paired it) goes to {@link SequenceEvaluatorDeps.retract}. Alerts are
 * emitted before the state is saved; a crash in between replays the same events, which the
 * tracker's guards emit once.
 *
 * Saved searches with `sequence` (lib/searches/sequence.ts) are held alike (`watch` of the stage's
 * search index): their query's matches are first records, and the matches of their second query
 * (`followedBy.kind`, `followedBy.query`; ./searches.ts) followedBy records.
 * @module
 */
import type { DecodeMethodOptions } from "../../../lib/chain/methods.js";
import type { WatchlistLookup } from "../../../lib/match/evaluate.js";
import { createRuleIndex, type RuleIndex } from "../../../lib/match/rule-index.js";
import {
  correlateValue,
  followedByRule,
  type SequenceMatch,
  sequenceEntity,
  sequenceRecordOf,
} from "../../../lib/match/sequence-records.js";
import {
  addSequenceRecords,
  applySequenceBlock,
  createSequenceState,
  orphanSequenceBlocks,
  type SequenceConfig,
  type SequenceEvent,
  type SequenceRecord,
  type SequenceState,
} from "../../../lib/match/sequences.js";
import type { Rule, TargetType } from "../../../lib/rules/model.js";
import { type RuleSequence, ruleSequence, sequenceConfigOf } from "../../../lib/rules/schema-sequence.js";
import { isSearchSequence, type SearchSequence } from "../../../lib/searches/sequence.js";
import type { InputRecord } from "../../kafka/consumer.js";
import type { MatchedEntity, MatchInput } from "../confirmations/decide.js";
import { chainKeyPrefix } from "../keys.js";
import { runLua } from "../lua.js";
import type { SearchTopic } from "../search-index.js";
import { watchIndex } from "../watch-index.js";
import type { HeadView, WatchedIndex, WindowEvaluatorDeps } from "../windows/evaluator.js";
import * as scripts from "../windows/scripts.js";
import { createFollowedBySearches } from "./searches.js";

/** The entity helpers live in lib/match/sequence-records.ts (shared with backtests); re-exported for the stage's users. */
export { correlateValue, type SequenceMatch, sequenceEntity, sequenceRecordOf };

/** Dependencies of {@link createSequenceEvaluator}: those of the window evaluator (`fire` records firings, `retract` retracts those that no longer hold). */
export type SequenceEvaluatorDeps = WindowEvaluatorDeps & {
  /** Membership answers for `In watchlist` conditions and watchlist `terms` lookups of `followedBy` (the stage's prefetcher, lib/match/watchlist-membership.ts); absent: they hold for nothing. */
  watchlists?: WatchlistLookup;
  /** The chain's Method/Call decoding for the call documents of saved searches' `followedBy` queries (./searches.ts); default chain id 1. */
  decode?: DecodeMethodOptions;
};

/** See the module doc. */
export interface SequenceEvaluator {
  /**
   * Wraps the stage's rule index, or its saved-search index, so that its upserts and removals keep
   * the sequence rules and searches and their followedBy conditions or queries (ids are UUIDs of
   * either store, so one evaluator holds both).
   */
  watch<T extends WatchedIndex>(index: T): T;
  /** The matches of the sequence searches' `followedBy` queries on one consumed record (./searches.ts `withFollowedBySearches` adds them to the search index's). */
  matchRecords(input: InputRecord<SearchTopic>): MatchInput[];
  /** Held `followedBy` queries that look a field up in a watchlist (./searches.ts; the stage then prefetches memberships). */
  watchlistSearches(): number;
  /** The matches of the sequence rules whose `followedBy` conditions `entity` satisfies. */
  followedByMatches(targetType: TargetType, entity: object): MatchInput[];
  /** The index of the `followedBy` conditions (its matches are told apart by {@link SequenceEvaluator.addMatches}), to match beside the stage's index under one watchlist prefetch. */
  readonly followedByIndex: Pick<RuleIndex, "match" | "watchlistRules">;
  /** Splits matches: those of sequence rules are written as sequence records (returns the others). */
  addMatches(matches: readonly MatchInput[]): Promise<MatchInput[]>;
  /** Evaluates every sequence rule at a new head (module doc). */
  onHead(view: HeadView): Promise<void>;
}

/**
 * The stage's index and the sequences' `followedBy` index as one (their matches concatenated), so a
 * batch is matched under one watchlist prefetch (lib/match/watchlist-membership.ts `matchEntities`):
 * `In watchlist` conditions of `followedBy` are answered like the rules' own.
 */
export function withFollowedBy(
  index: Pick<RuleIndex, "match" | "watchlistRules">,
  sequences: Pick<SequenceEvaluator, "followedByIndex">,
): Pick<RuleIndex, "match" | "watchlistRules"> {
  const followedBy = sequences.followedByIndex;
  return {
    match: (type, entity) => [...index.match(type, entity), ...followedBy.match(type, entity)],
    watchlistRules: () => index.watchlistRules() + followedBy.watchlistRules(),
  };
}

/** Creates the stage's {@link SequenceEvaluator}. */
export function createSequenceEvaluator(deps: SequenceEvaluatorDeps): SequenceEvaluator {
  const { redis, logger } = deps;
  const base = `${chainKeyPrefix(deps.keyPrefix, deps.chain)}seq:`;
  const dirtyKey = `${base}dirty`;
  const stateKey = (id: string) => `${base}${id}`;
  const recordsKey = (id: string, blockHash: string) => `${base}${id}:r:${blockHash}`;
  /** The sequence rules held, with their arithmetic. */
  const held = new Map<string, { rule: Rule; seq: RuleSequence | SearchSequence; config: SequenceConfig }>();
  const followed = createRuleIndex({ chain: deps.chain, ...(deps.watchlists ? { watchlists: deps.watchlists } : {}) });
  const followedSearches = createFollowedBySearches(deps.chain, deps.decode ?? { chainId: 1 }, deps.watchlists);
  /** The followedBy rules' objects, to tell their matches from the rule's own. */
  const followedRules = new WeakSet<Rule>();
  /** The last saved state per sequence id with its revision (the window evaluator's cache). */
  const cache = new Map<string, { rev: string; state: SequenceState }>();

  /**
   * Keeps (or forgets) a rule's sequence. The state of a version no longer held (the rule deleted,
   * disabled, changed, or without `sequence` now) is deleted: its open steps are gone, a new
   * version starts empty. Its block record hashes expire on their own.
   */
  const hold = (rule: Rule | undefined, id: string) => {
    const prev = held.get(id);
    if (prev !== undefined && (rule === undefined || ruleSequence(rule) === null || scripts.windowId(prev.rule) !== scripts.windowId(rule)))
      void runLua(redis, scripts.DROP_RECORDS, {}, [{ records: stateKey(scripts.windowId(prev.rule)) }]).catch((err) =>
        logger.warn({ err, ruleId: id }, "state of a former sequence rule version not deleted"),
      );
    followed.remove(id);
    followedSearches.remove(id);
    held.delete(id);
    for (const k of cache.keys()) if (k.startsWith(`${id}:`) && (rule === undefined || k !== scripts.windowId(rule))) cache.delete(k);
    const seq = rule === undefined ? null : ruleSequence(rule);
    if (rule === undefined || seq === null) return;
    try {
      const config = sequenceConfigOf(seq, deps.reorgDepth);
      if (isSearchSequence(seq)) {
        const derived = followedSearches.hold(rule, seq);
        if (derived === undefined) return;
        followedRules.add(derived);
      } else {
        const derived = followedByRule(rule, seq);
        followed.upsert(derived);
        followedRules.add(followed.get(id) ?? derived);
      }
      held.set(id, { rule, seq, config });
    } catch (err) {
      followed.remove(id);
      followedSearches.remove(id);
      logger.error({ err, ruleId: id }, "rule sequence cannot be evaluated; ignored");
    }
  };

  const blockRecords = async (id: string, blockHash: string): Promise<SequenceRecord[]> => {
    const flat = (await runLua(redis, scripts.BLOCK_RECORDS, { records: recordsKey(id, blockHash) })) as unknown[];
    return flat.filter((_, i) => i % 2 === 1).map((json) => JSON.parse(String(json)) as SequenceRecord);
  };

  /** Loads, evaluates, emits and saves one rule's state at a head. */
  const evaluateRule = async (entry: { rule: Rule; config: SequenceConfig }, view: HeadView, dirty: readonly string[]) => {
    const { rule, config } = entry;
    const id = scripts.windowId(rule);
    const known = cache.get(id);
    const [json, rev] = (await runLua(redis, scripts.LOAD_STATE, { state: stateKey(id), known: known?.rev ?? "" })) as [
      string | null,
      string | null,
    ];
    const loaded = json ? (JSON.parse(json) as SequenceState) : known !== undefined && rev === known.rev ? known.state : null;
    if (loaded === null && view.block === undefined) return;
    let state = loaded ?? createSequenceState((view.block as NonNullable<HeadView["block"]>).number);
    const initial = state;
    const events: SequenceEvent[] = [];
    const take = (r: { state: SequenceState; events: SequenceEvent[] }) => {
      state = r.state;
      events.push(...r.events);
    };
    const gone = initial.blocks.find((b) => {
      const c = view.canonical(b.number);
      return b.number > view.head.number || (c !== undefined && c.toLowerCase() !== b.hash);
    });
    if (gone !== undefined) take(orphanSequenceBlocks(config, initial, gone.number));
    const block = view.block;
    if (block !== undefined) {
      const last = state.blocks.at(-1)?.number ?? state.base;
      if (block.number > last + 1 && block.number > state.fromBlock) {
        logger.warn({ ruleId: rule.id, from: last + 1, to: block.number - 1 }, "sequence saw no blocks in a range; it restarts");
        state = createSequenceState(block.number);
      }
      take(applySequenceBlock(config, state, { ...block, records: await blockRecords(id, block.hash) }));
    }
    const consumed = dirty.filter((f) => f.startsWith(`${id}|`));
    for (const field of consumed) {
      const hash = field.slice(id.length + 1);
      if (state.blocks.some((b) => b.hash === hash)) take(addSequenceRecords(config, state, hash, await blockRecords(id, hash)));
    }
    const of = (type: SequenceEvent["type"]) =>
      events.filter((e) => e.type === type).map((e) => ({ rule, entity: sequenceEntity(e.firing), f: e.firing }));
    // A firing whose followedBy block left the chain is the tracker's to remove at this head.
    const retracted = of("retracted").filter(({ f }) => view.canonical(f.followedBy.blockNumber)?.toLowerCase() === f.followedBy.blockHash);
    if (retracted.length > 0) await deps.retract(retracted.map(({ rule, entity }) => ({ rule, entity })));
    const fired = of("fired");
    if (fired.length > 0) await deps.fire(fired.map(({ rule, entity }) => ({ rule, entity })));
    const final: SequenceState = state;
    const items = consumed.map((field) => ({ field, count: dirtyCounts.get(field) ?? "" }));
    const saved = await runLua(
      redis,
      scripts.SAVE_STATE,
      { state: stateKey(id), dirty: dirtyKey, rev: rev ?? "", json: JSON.stringify(final) },
      items,
    );
    if (Number(saved) !== 1) {
      cache.delete(id);
      logger.warn({ ruleId: rule.id }, "sequence state changed concurrently (another owner); not saved");
      return;
    }
    cache.set(id, { rev: String((Number(rev) || 0) + 1), state: final });
    const dropped = initial.blocks.filter((b) => b.number <= final.base && !final.blocks.some((k) => k.hash === b.hash));
    if (dropped.length > 0)
      await runLua(
        redis,
        scripts.DROP_RECORDS,
        {},
        dropped.map((b) => ({ records: recordsKey(id, b.hash) })),
      );
  };
  /** The dirty marks read at the current head: field → counter (cleared by the save only if unchanged). */
  let dirtyCounts = new Map<string, string>();

  return {
    watch: (index) => watchIndex(index, hold),
    matchRecords: (input) => (held.size === 0 ? [] : followedSearches.matchRecords(input)),
    watchlistSearches: () => followedSearches.watchlistSearches(),
    followedByIndex: {
      match: (targetType, entity) => (held.size === 0 ? [] : followed.match(targetType, entity)),
      watchlistRules: () => followed.watchlistRules(),
    },
    followedByMatches(targetType, entity) {
      if (held.size === 0) return [];
      return followed.match(targetType, entity).map((rule) => ({ rule, entity: entity as MatchedEntity }));
    },
    async addMatches(matches) {
      const rest: MatchInput[] = [];
      const items: Array<{ records: string; dirtyField: string; id: string; record: string }> = [];
      for (const m of matches) {
        const entry = held.get(m.rule.id);
        if (entry === undefined) {
          rest.push(m);
          continue;
        }
        const record = sequenceRecordOf(entry.seq, followedRules.has(m.rule) ? "followedBy" : "first", m.entity);
        if (record === undefined) continue;
        const id = scripts.windowId(entry.rule);
        const blockHash = m.entity.blockHash.toLowerCase();
        items.push({
          records: recordsKey(id, blockHash),
          dirtyField: `${id}|${blockHash}`,
          id: `${record.role}|${record.id}`,
          record: JSON.stringify(record),
        });
      }
      for (let i = 0; i < items.length; i += 200)
        await runLua(redis, scripts.ADD_RECORDS, { dirty: dirtyKey, ttl: scripts.RECORD_TTL_SECONDS }, items.slice(i, i + 200));
      return rest;
    },
    async onHead(view) {
      if (held.size === 0) return;
      const flat = (await runLua(redis, scripts.DIRTY, { dirty: dirtyKey })) as unknown[];
      dirtyCounts = new Map();
      for (let i = 0; i + 1 < flat.length; i += 2) dirtyCounts.set(String(flat[i]), String(flat[i + 1]));
      const fields = [...dirtyCounts.keys()];
      for (const entry of [...held.values()]) await evaluateRule(entry, view, fields);
    },
  };
}
