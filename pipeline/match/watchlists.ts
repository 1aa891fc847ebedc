/**
 * Watchlist memberships for the match stage's `In watchlist` conditions (docs/rules.md "In
 * watchlist"). Evaluation (lib/match/evaluate.ts) is synchronous, so memberships are prefetched per
 * batch: {@link WatchlistMembership.run} runs the batch's matching synchronously with every
 * membership question it cannot answer yet recorded and answered "no"; when there were such
 * questions it reads them from Redis (per watchlist: HGET of its metadata, for its kind, to
 * normalise the values as the list stores them, then one SMISMEMBER of the distinct values) and runs
 * the matching again, until a run asks nothing new. Usually that is two runs; a rule with two
 * watchlist conditions joined by AND may take a third (the second is asked only once the first holds).
 * "No" while collecting never hides a question: an attribute with several values and an Inspect over
 * an array try every value while the answers are "no".
 *
 * Memberships are read for every batch, so a member added or removed through the API applies to the
 * next batch matched; a deleted (or unknown) watchlist has no members.
 * @module
 */
import type { TypedEntity } from "../../lib/match/entities.js";
import type { WatchlistLookup } from "../../lib/match/evaluate.js";
import type { RuleIndex } from "../../lib/match/rule-index.js";
import type { Rule } from "../../lib/rules/model.js";
import { normalizeMember, type WatchlistStore } from "../../lib/watchlists/store.js";

/** See the module comment. */
export interface WatchlistMembership {
  /** The lookup to compile rules with (RuleIndexOptions `watchlists`); it answers inside {@link run} only ("no" elsewhere). */
  readonly lookup: WatchlistLookup;
  /**
   * Runs `compute` (synchronous matching of one batch) until its membership questions are all
   * answered from Redis; returns the last run's result.
   * @throws when Redis fails (the batch is then retried by the consumer).
   */
  run<T>(compute: () => T): Promise<T>;
}

const SEP = "\u0000";

/** Per list key (`accountId` NUL `id`): value as asked → member or not. */
type Answers = Map<string, Map<string, boolean>>;

/**
 * Creates the prefetcher over the watchlist store (lib/watchlists/store.ts).
 * @param store - reads metadata (`get`) and memberships (`contains`, one SMISMEMBER per list).
 */
export function createWatchlistMembership(store: Pick<WatchlistStore, "get" | "contains">): WatchlistMembership {
  let answers: Answers = new Map();
  let missing: Map<string, Set<string>> = new Map();
  const lookup: WatchlistLookup = {
    has(accountId, id, value) {
      const key = `${accountId}${SEP}${id}`;
      const known = answers.get(key)?.get(value);
      if (known !== undefined) return known;
      let set = missing.get(key);
      if (!set) {
        set = new Set();
        missing.set(key, set);
      }
      set.add(value);
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
    const list = await store.get(accountId, id);
    if (!list) return;
    const byMember = new Map<string, string[]>();
    for (const v of values) {
      const m = normalizeMember(list.kind, v);
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
  const once = <T>(batch: Answers, compute: () => T): { result: T; asked: Map<string, Set<string>> } => {
    const asked = new Map<string, Set<string>>();
    answers = batch;
    missing = asked;
    try {
      return { result: compute(), asked };
    } finally {
      answers = new Map();
      missing = new Map();
    }
  };
  return {
    lookup,
    async run(compute) {
      const batch: Answers = new Map();
      for (;;) {
        const { result, asked } = once(batch, compute);
        if (asked.size === 0) return result;
        await Promise.all([...asked].map(([key, values]) => read(key, values, batch)));
      }
    },
  };
}

/**
 * The rules each entity of a batch matches, in order: one synchronous pass when no held rule uses a
 * watchlist, else {@link WatchlistMembership.run} (see the module comment).
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
  const compute = () => entities.map(({ type, entity }) => index.match(type, entity));
  return index.watchlistRules() === 0 ? compute() : membership.run(compute);
}
