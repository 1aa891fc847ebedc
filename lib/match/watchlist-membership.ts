/**
 * Watchlist memberships for the match stage's (and rule backtests', lib/match/backtest.ts) `In watchlist` conditions (docs/rules.md "In
 * watchlist"). Evaluation (lib/match/evaluate.ts) is synchronous, so memberships are prefetched per
 * batch: {@link WatchlistMembership.runEach} matches the batch's entities synchronously with every
 * membership question it cannot answer yet recorded and answered "no"; when there were such
 * questions it reads them from Redis (per watchlist: one SMISMEMBER of the distinct values, normalised
 * by the list's kind, which is read once with HGET of its metadata and then remembered) and runs
 * the matching again for the entities that got a "yes", until a run asks nothing new (an entity
 * whose questions were all "no" was already matched right). Usually that is two runs, the second
 * over the few entities with a member; a rule with two watchlist conditions joined by AND may take a
 * third (the second is asked only once the first holds).
 * "No" while collecting never hides a question: an attribute with several values and an Inspect over
 * an array try every value while the answers are "no".
 *
 * Memberships are read for every batch, so a member added or removed through the API applies to the
 * next batch matched; a deleted (or unknown) watchlist has no members.
 *
 * With {@link WatchlistFilters} (lib/match/watchlist-filters.ts), a list's in-process copy is asked
 * first: an exact copy (address lists) answers at once, a Bloom filter's "no" answers at once and
 * only its "maybe"s become questions. Each copy consulted in a batch is checked against the list's
 * revision (in the same round trip as the questions, or not at all while the change feed says the
 * list did not change); when the copy changed after the batch first consulted it — caught up by
 * this batch's check or by a batch matched concurrently (the stage matches the partitions of its
 * topics in parallel) — the whole batch is matched again with it (its earlier answers may be stale).
 * @module
 */

import type { Rule } from "../rules/model.js";
import { normalizeMember, type WatchlistKind, type WatchlistStore } from "../watchlists/store.js";
import type { TypedEntity } from "./entities.js";
import type { WatchlistLookup } from "./evaluate.js";
import type { RuleIndex } from "./rule-index.js";
import { mayHold, type WatchlistFilter, type WatchlistFilters } from "./watchlist-filters.js";

/** See the module comment. */
export interface WatchlistMembership {
  /** The lookup to compile rules with (RuleIndexOptions `watchlists`); it answers inside {@link runEach} only ("no" elsewhere). */
  readonly lookup: WatchlistLookup;
  /**
   * Applies `each` (synchronous matching of one entity) to every item until the membership
   * questions are all answered from Redis; returns the results in order.
   * @throws when Redis fails (the batch is then retried by the consumer).
   */
  runEach<T, R>(items: readonly T[], each: (item: T) => R): Promise<R[]>;
}

const SEP = "\u0000";
/** Most watchlist kinds remembered (then the cache starts over). */
const KIND_CACHE_MAX = 10_000;

/** Per list key (`accountId` NUL `id`): value as asked → member or not. */
type Answers = Map<string, Map<string, boolean>>;

/**
 * Creates the prefetcher over the watchlist store (lib/watchlists/store.ts).
 * @param store - reads metadata (`get`) and memberships (`contains`, one SMISMEMBER per list).
 * @param filters - Bloom filters asked before Redis; without them every value is asked.
 */
export function createWatchlistMembership(
  store: Pick<WatchlistStore, "get" | "contains">,
  filters?: WatchlistFilters,
): WatchlistMembership {
  let answers: Answers = new Map();
  /**
   * The copies the batch being matched consulted, with their version when first consulted (each
   * batch has its own: batches of several topics are matched concurrently).
   */
  let consulted = new Map<WatchlistFilter, number>();
  // A list's kind never changes; a deleted list's member set is gone, so a cached kind answers "no" for it too.
  const kinds = new Map<string, WatchlistKind>();
  let missing: Map<string, Set<string>> = new Map();
  /** The unanswered questions of the entity being matched. */
  let trail: [string, string][] = [];
  const lookup: WatchlistLookup = {
    has(accountId, id, value) {
      const f = filters?.get(accountId, id);
      if (f) {
        if (!consulted.has(f)) consulted.set(f, f.version);
        // An exact copy answers both ways; a Bloom filter's "maybe" is asked in Redis.
        if (f.exact) return f.exact.has(value);
        if (!mayHold(f, value)) return false;
      }
      const key = `${accountId}${SEP}${id}`;
      const known = answers.get(key)?.get(value);
      if (known !== undefined) return known;
      let set = missing.get(key);
      if (!set) {
        set = new Set();
        missing.set(key, set);
      }
      set.add(value);
      trail.push([key, value]);
      return false;
    },
  };
  const read = async (key: string, values: Set<string>, into: Answers): Promise<void> => {
    const [accountId, id] = key.split(SEP) as [string, string];
    let known = into.get(key);
    if (!known) {
      known = new Map();
      into.set(key, known);
    }
    for (const v of values) known.set(v, false);
    let kind = kinds.get(key);
    if (kind === undefined) {
      const list = await store.get(accountId, id);
      if (!list) return;
      kind = list.kind;
      if (kinds.size >= KIND_CACHE_MAX) kinds.clear();
      kinds.set(key, kind);
    }
    const byMember = new Map<string, string[]>();
    for (const v of values) {
      const m = normalizeMember(kind, v);
      if (m === null) continue;
      const raws = byMember.get(m);
      if (raws) raws.push(v);
      else byMember.set(m, [v]);
    }
    const members = [...byMember.keys()];
    const hits = await store.contains(accountId, id, members);
    members.forEach((m, i) => {
      if (hits[i]) for (const v of byMember.get(m) ?? []) known.set(v, true);
    });
  };
  return {
    lookup,
    async runEach(items, each) {
      const batch: Answers = new Map();
      const out = new Array(items.length);
      const all = items.map((_, i) => i);
      let todo = all;
      /** Copies consulted in this batch → their version when consulted; and those brought up to date in it. */
      const seen = new Map<WatchlistFilter, number>();
      const refreshed = new Set<WatchlistFilter>();
      for (;;) {
        const asked = new Map<string, Set<string>>();
        const questions = new Map<number, [string, string][]>();
        answers = batch;
        missing = asked;
        trail = [];
        consulted = seen;
        try {
          for (const i of todo) {
            out[i] = each(items[i] as (typeof items)[number]);
            if (trail.length > 0) {
              questions.set(i, trail);
              trail = [];
            }
          }
        } finally {
          answers = new Map();
          missing = new Map();
          trail = [];
          consulted = new Map();
        }
        const checking = [...seen.keys()].filter((f) => !refreshed.has(f));
        if (asked.size === 0 && checking.length === 0) return out;
        await Promise.all([
          ...checking.map((f) => (filters as WatchlistFilters).refresh(f)),
          ...[...asked].map(([key, values]) => read(key, values, batch)),
        ]);
        for (const f of checking) refreshed.add(f);
        // A copy that changed since this batch consulted it (by its own refresh or a concurrent batch's):
        // match the whole batch again with the copy as it is now.
        let changed = false;
        for (const [f, version] of seen) {
          if (f.version !== version) {
            changed = true;
            seen.set(f, f.version);
          }
        }
        if (changed) {
          todo = all;
          continue;
        }
        todo = [];
        for (const [i, qs] of questions) if (qs.some(([key, value]) => batch.get(key)?.get(value) === true)) todo.push(i);
        if (todo.length === 0) return out;
      }
    },
  };
}

/**
 * The rules each entity of a batch matches, in order: one synchronous pass when no held rule uses a
 * watchlist, else {@link WatchlistMembership.runEach} (see the module comment).
 * @param index - the rule index, compiled with `membership.lookup`.
 * @param membership - the prefetcher.
 * @param entities - the batch's entities.
 * @throws when Redis fails during the prefetch.
 */
export async function matchEntities(
  index: Pick<RuleIndex, "match" | "watchlistRules">,
  membership: WatchlistMembership,
  entities: readonly TypedEntity[],
): Promise<Rule[][]> {
  const each = ({ type, entity }: TypedEntity) => index.match(type, entity);
  return index.watchlistRules() === 0 ? entities.map(each) : membership.runEach(entities, each);
}
