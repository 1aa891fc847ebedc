/**
 * Unit tests of `terms` lookups by watchlist in the search DSL evaluator (es/evaluate.ts with
 * es/watchlist-lookup.ts) and in the match stage's saved-search index (pipeline/match/search-index.ts):
 * the predicate asks the {@link WatchlistLookup} for every indexed value of the field (lower-cased by
 * the `lowercase_address` normalizer) with the search's account; without a lookup it never holds;
 * `must_not` and `bool` around a lookup are answered exactly once the memberships are prefetched
 * (lib/match/watchlist-membership.ts `runEach`, over test/support/watchlists.ts's in-memory list);
 * the index counts the searches that use a list and {@link matchSearches} prefetches only then; a
 * saved-search backtest reads memberships only for a query with a lookup, and refuses one where no
 * store is reachable (the CLI).
 */
import { describe, expect, it } from "vitest";
import { searchBacktestWatchlists } from "../../../api/backtest/search-tester.js";
import { compileSearchQuery } from "../../../api/dsl/saved-search.js";
import { ApiError } from "../../../api/errors.js";
import { compileEsQuery, type EsQuery } from "../../../es/evaluate.js";
import { watchlistClauses } from "../../../es/watchlist-lookup.js";
import type { WatchlistLookup } from "../../../lib/match/evaluate.js";
import { createWatchlistMembership } from "../../../lib/match/watchlist-membership.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { createSearchIndex, matchSearches, type SearchTopic } from "../../../pipeline/match/search-index.js";
import { memoryListStore } from "../../support/watchlists.js";

const LIST = "11111111-1111-4111-8111-111111111111";
const A1 = "0x1111111111111111111111111111111111111111";
const A2 = "0xabcdef000000000000000000000000000000abcd";
const A3 = "0x3333333333333333333333333333333333333333";

/** The sanitized query (with its watchlist placeholder) the API stores as a saved search's `esQuery`. */
function esQuery(query: unknown, path = "query"): EsQuery {
  const c = compileSearchQuery(query, "tx", path);
  if (!c.ok) throw new Error(JSON.stringify(c.errors));
  return c.value.query as EsQuery;
}

/** A lookup that records its questions and answers from fixed members of account `acc`. */
function recording(members: string[]) {
  const asked: [string, string, string][] = [];
  const lookup: WatchlistLookup = {
    has(accountId, id, value) {
      asked.push([accountId, id, value]);
      return accountId === "acc" && id === LIST && members.includes(value);
    },
  };
  return { asked, lookup };
}

function predicate(query: unknown, lookup?: WatchlistLookup) {
  const compiled = compileEsQuery(esQuery(query), "tx", "query", lookup && { accountId: "acc", watchlists: lookup });
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.errors));
  return (doc: Record<string, unknown>) => compiled.value(doc, String(doc.hash));
}

const byFrom = { terms: { from: { watchlist: LIST } } };

describe("terms by watchlist in the evaluator", () => {
  it("keeps the lookup in the saved search's query (no refusal) at its path", () => {
    const q = esQuery({ bool: { filter: [byFrom] } });
    expect(watchlistClauses(q)).toEqual([{ field: "from", id: LIST, path: "query.bool.filter[0].terms.from.watchlist" }]);
  });

  it("asks the search's account's list for the field's value, lower-cased by the address normalizer", () => {
    const { asked, lookup } = recording([A2]);
    const matches = predicate(byFrom, lookup);
    expect(matches({ hash: "0x1", from: `0x${A2.slice(2).toUpperCase()}` })).toBe(true);
    expect(matches({ hash: "0x2", from: A1 })).toBe(false);
    expect(matches({ hash: "0x3" })).toBe(false);
    expect(asked).toEqual([
      ["acc", LIST, A2],
      ["acc", LIST, A1],
    ]);
  });

  it("never holds without a lookup", () => {
    expect(predicate(byFrom)({ hash: "0x1", from: A1 })).toBe(false);
    expect(predicate({ bool: { must_not: [byFrom] } })({ hash: "0x1", from: A1 })).toBe(true);
  });

  it("answers must_not and should around lookups exactly once memberships are prefetched", async () => {
    const store = memoryListStore("acc", LIST, [A1]);
    const m = createWatchlistMembership(store);
    const notListed = predicate({ bool: { must_not: [byFrom] } }, m.lookup);
    const listedOrTo = predicate({ bool: { should: [byFrom, { term: { to: A3 } }] } }, m.lookup);
    const docs = [
      { hash: "0x1", from: A1, to: A2 },
      { hash: "0x2", from: A2, to: A2 },
      { hash: "0x3", from: A2, to: A3 },
    ];
    expect(await m.runEach(docs, (d) => [notListed(d), listedOrTo(d)])).toEqual([
      [false, true],
      [true, false],
      [true, true],
    ]);
    // One read (of the distinct values asked).
    expect(store.reads).toBe(1);
  });
});

describe("the saved-search index with watchlist lookups", () => {
  const CHAIN = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
  const search = (id: string, query: unknown, accountId = "acc") =>
    ({
      id,
      accountId,
      ...CHAIN,
      name: id,
      state: "enabled",
      version: 1,
      maxConfirmationCount: 1,
      sendPendingAlerts: false,
      config: { kind: "tx", query, esQuery: esQuery(query), alerts: [] },
    }) as unknown as Rule;
  const tx = (hash: string, from: string) =>
    ({
      topicKind: "transactions",
      record: { hash, from, blockHash: "0xb", blockNumber: { num: 1 } },
    }) as unknown as InputRecord<SearchTopic>;

  it("counts the searches using a list, and prefetches memberships only then", async () => {
    const store = memoryListStore("acc", LIST, [A1]);
    const m = createWatchlistMembership(store);
    const index = createSearchIndex(CHAIN, { chainId: 1 }, m.lookup);
    index.upsert(search("plain", { term: { to: A3 } }));
    expect(index.watchlistSearches()).toBe(0);
    const inputs = [tx("0x1", A1), tx("0x2", A2)];
    const ids = async () => (await matchSearches(index, m, inputs, index.matchRecords)).map((ms) => ms.map((x) => x.rule.id));
    expect(await ids()).toEqual([[], []]);
    expect(store.reads).toBe(0);
    index.upsert(search("listed", byFrom));
    index.upsert(search("theirs", byFrom, "other"));
    expect(index.watchlistSearches()).toBe(2);
    expect(await ids()).toEqual([["listed"], []]);
    index.remove("listed");
    index.remove("theirs");
    expect(index.watchlistSearches()).toBe(0);
  });
});

describe("saved-search backtests with watchlist lookups", () => {
  const input = (query: unknown) => ({ config: { kind: "tx", query, esQuery: esQuery(query), alerts: [] } }) as never;

  it("read memberships only for a query with a lookup; refuse it without a store at the lookup's path", () => {
    const store = memoryListStore("acc", LIST, []);
    expect(searchBacktestWatchlists(store, input({ term: { to: A3 } }))).toEqual({});
    expect(searchBacktestWatchlists(undefined, input({ term: { to: A3 } }))).toEqual({});
    expect(searchBacktestWatchlists(store, input(byFrom)).watchlists?.lookup).toBeDefined();
    let refused: unknown;
    try {
      searchBacktestWatchlists(undefined, input(byFrom));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).details).toEqual([
      expect.objectContaining({ code: "CS_RULE_NOT_SUPPORTED", path: "search.query.terms.from.watchlist" }),
    ]);
  });

  it("a lookup only in a sequence's followedBy query reads memberships too (refused without a store at its path)", () => {
    const store = memoryListStore("acc", LIST, []);
    const sequenced = {
      ...(input({ term: { to: A3 } }) as object),
      sequence: { within: { blocks: 5 }, followedBy: { kind: "tx", query: byFrom, esQuery: esQuery(byFrom, "sequence.followedBy.query") } },
    } as never;
    expect(searchBacktestWatchlists(store, sequenced).watchlists?.lookup).toBeDefined();
    expect(() => searchBacktestWatchlists(undefined, sequenced)).toThrow(ApiError);
    try {
      searchBacktestWatchlists(undefined, sequenced);
    } catch (err) {
      expect((err as ApiError).details).toEqual([
        expect.objectContaining({ code: "CS_RULE_NOT_SUPPORTED", path: "search.sequence.followedBy.query.terms.from.watchlist" }),
      ]);
    }
  });
});
