/**
 * Saved searches with a `terms` lookup by watchlist in the match stage's matching path against the
 * real Redis: the API's validation builds the stored search (its `esQuery` keeps the lookup), the
 * stage's search index (pipeline/match/search-index.ts, wrapped with the sequences' followedBy
 * queries as the stage wraps it) is compiled with the prefetcher's lookup
 * (lib/match/watchlist-membership.ts), and batches are matched through `matchSearches`, memberships
 * read from the watchlist store (lib/watchlists/store.ts) — from the Redis sets, and from the
 * in-process copies (lib/match/watchlist-filters.ts) the stage keeps. A listed sender matches, an
 * unlisted one does not; a member added (or removed) through the store applies from the next batch;
 * another account's search does not see the list; a sequence's `followedBy.query` with a lookup is
 * answered the same way. Its own key prefix, deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import { type ChainId, loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { createWatchlistFilters } from "../../../lib/match/watchlist-filters.js";
import { createWatchlistMembership, type WatchlistMembership } from "../../../lib/match/watchlist-membership.js";
import type { Rule } from "../../../lib/rules/model.js";
import { createWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { createSearchIndex, matchSearches, type SearchIndex, type SearchTopic } from "../../../pipeline/match/search-index.js";
import { createSequenceEvaluator } from "../../../pipeline/match/sequences/evaluator.js";
import { withFollowedBySearches } from "../../../pipeline/match/sequences/searches.js";
import { deleteRedisKeys, redisReachable } from "../api/fixtures.js";

const base = loadConfig();
const up = await redisReachable(base.redisUrl);
const ID = `t${randomBytes(4).toString("hex")}`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const addr = (n: number) => `0x${n.toString(16).padStart(40, "a")}`;
const fromList = (id: string) => ({ terms: { from: { watchlist: id } } });

/** A saved search over transactions as the store holds it, built by the API's validation. */
function savedSearch(id: string, accountId: string, extension: Record<string, unknown>): Rule {
  const body = {
    name: id,
    ...CHAIN,
    maxConfirmationCount: 1,
    kind: "tx",
    alerts: [{ type: "Webhook (POST)", parameters: { url: "http://hook/x" } }],
    ...extension,
  };
  const checked = validateSearchInput(body, "create", [CHAIN]);
  if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
  return { ...checked.value, id, accountId, version: 1, state: "enabled", createdAt: "", updatedAt: "" } as unknown as Rule;
}

let n = 0;
/** A transaction record from `from`, as the transactions topic carries it. */
function tx(from: string): InputRecord<SearchTopic> {
  n += 1;
  const hash = `0x${n.toString(16).padStart(64, "0")}`;
  const record = { hash, from, to: addr(99), blockHash: `0x${"b".repeat(64)}`, blockNumber: { num: 100, raw: "0x64" } };
  return { topicKind: "transactions", record } as unknown as InputRecord<SearchTopic>;
}

describe.skipIf(!up).each([
  ["the Redis sets", false],
  ["the in-process copies", true],
])("saved searches with a watchlist lookup, memberships from %s (real Redis)", (_label, copies) => {
  const redis = createClient({ url: base.redisUrl });
  const prefix = `${ID}:${copies ? "c" : "s"}:`;
  let store: WatchlistStore;
  let membership: WatchlistMembership;
  let index: SearchIndex;
  /** The ids of the searches each record matched, matched as the stage matches a batch. */
  const ids = async (...inputs: InputRecord<SearchTopic>[]) =>
    (await matchSearches(index, membership, inputs, index.matchRecords)).map((ms) => ms.map((m) => m.rule.id).sort());

  beforeAll(async () => {
    await redis.connect();
    store = createWatchlistStore({ redis, keyPrefix: prefix, limits: { maxPerAccount: 10, maxMembers: 1000 } });
    membership = createWatchlistMembership(store, copies ? createWatchlistFilters({ store }) : undefined);
    const sequences = createSequenceEvaluator({
      redis,
      keyPrefix: prefix,
      chain: CHAIN,
      logger: createLogger("silent", "test-watchlist-searches"),
      fire: async () => {},
      retract: async () => {},
      watchlists: membership.lookup,
      decode: { chainId: 1 },
    });
    index = withFollowedBySearches(sequences.watch(createSearchIndex(CHAIN, { chainId: 1 }, membership.lookup)), sequences);
  });

  afterAll(async () => {
    await redis.quit();
    await deleteRedisKeys(base.redisUrl, prefix);
  });

  it("matches listed senders only; a member added through the store matches from the next batch, a removed one stops", async () => {
    const w = await store.create("acc", { name: "hot wallets", kind: "address" });
    await store.add("acc", w.id, [addr(1), addr(2)]);
    index.upsert(savedSearch("s1", "acc", { query: fromList(w.id) }));
    expect(index.watchlistSearches()).toBe(1);
    // A checksummed sender is indexed lower-cased (the address normalizer): the member.
    expect(await ids(tx(getAddress(addr(1))), tx(addr(3)), tx(addr(2)))).toEqual([["s1"], [], ["s1"]]);
    await store.add("acc", w.id, [addr(3)]);
    await store.remove("acc", w.id, [addr(1)]);
    expect(await ids(tx(addr(1)), tx(addr(3)))).toEqual([[], ["s1"]]);
    index.remove("s1");
    expect(index.watchlistSearches()).toBe(0);
  });

  it("another account's search does not see the list; a lookup inside bool.must_not excludes members", async () => {
    const w = await store.create("acc", { name: "l", kind: "address" });
    await store.add("acc", w.id, [addr(5)]);
    index.upsert(savedSearch("s2", "other", { query: fromList(w.id) }));
    index.upsert(savedSearch("s3", "acc", { query: { bool: { must_not: [fromList(w.id)] } } }));
    expect(await ids(tx(addr(5)), tx(addr(6)))).toEqual([[], ["s3"]]);
    index.remove("s2");
    index.remove("s3");
  });

  it("a sequence's followedBy query with a lookup is answered from the list", async () => {
    const w = await store.create("acc", { name: "then", kind: "address" });
    await store.add("acc", w.id, [addr(7)]);
    const search = savedSearch("s4", "acc", {
      query: { term: { to: addr(98) } },
      sequence: { followedBy: { kind: "tx", query: fromList(w.id) }, within: { blocks: 5 }, correlate: { first: "to", followedBy: "to" } },
    });
    index.upsert(search);
    expect(index.watchlistSearches()).toBe(1);
    // The followedBy query's matches carry the derived snapshot (same id): the sequence evaluator tells them apart.
    expect(await ids(tx(addr(7)), tx(addr(8)))).toEqual([["s4"], []]);
    index.remove("s4");
    expect(index.watchlistSearches()).toBe(0);
  });
});
