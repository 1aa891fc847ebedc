/**
 * The watchlist change feed (lib/watchlists/revision-feed.ts) with the match process's copies
 * (lib/match/watchlist-filters.ts) against the real Redis: the feed turns live when its hello comes
 * back; while live, batches read no revision until a change is heard, and a member added or removed
 * through the store applies to the next batch; when the feed's connection is killed (CLIENT KILL of
 * that connection only, found by its name) it stops vouching at once, every batch reads the revision
 * (so a change made while it was down, whose message is lost, still applies), and after the client
 * reconnects a new live period begins. Its own key prefix and channel, deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchRule } from "../../../bench/support/rules.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { TypedEntity } from "../../../lib/match/entities.js";
import { createRuleIndex, type RuleIndex } from "../../../lib/match/rule-index.js";
import { createWatchlistFilters, type WatchlistFilters } from "../../../lib/match/watchlist-filters.js";
import { createWatchlistMembership, matchEntities, type WatchlistMembership } from "../../../lib/match/watchlist-membership.js";
import { type RevisionFeed, startRevisionFeed } from "../../../lib/watchlists/revision-feed.js";
import { createWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import { waitFor } from "../../support/harness.js";
import { countingStore } from "../../support/watchlists.js";
import { deleteRedisKeys, redisReachable } from "../api/fixtures.js";

const base = loadConfig();
const up = await redisReachable(base.redisUrl);
const ID = `t${randomBytes(4).toString("hex")}`;
const addr = (n: number) => `0x${n.toString(16).padStart(40, "a")}`;
const tx = (from: string): TypedEntity => ({ type: "Transaction", entity: { from, to: addr(0) } }) as unknown as TypedEntity;

/** Waits (polling every 20 ms, at most `ms`) until `check` holds. */
const until = (check: () => boolean, ms = 10_000) => waitFor(async () => check(), ms, 20);

describe.skipIf(!up)("watchlist change feed (real Redis)", () => {
  const redis = createClient({ url: base.redisUrl });
  const name = `cs-test-feed-${ID}`;
  let store: WatchlistStore;
  let feed: RevisionFeed;
  let filters: WatchlistFilters;
  let membership: WatchlistMembership;
  let index: RuleIndex;
  let reads = { revision: 0 };
  const matched = async (entities: TypedEntity[]) => (await matchEntities(index, membership, entities)).map((rs) => rs.length > 0);

  beforeAll(async () => {
    await redis.connect();
    store = createWatchlistStore({ redis, keyPrefix: `${ID}:`, limits: { maxPerAccount: 10, maxMembers: 10_000 } });
    const counted = countingStore(store);
    reads = counted.reads;
    feed = await startRevisionFeed({ redis, channel: store.changesChannel, connectionName: name, helloMs: 100 });
    filters = createWatchlistFilters({ store: counted.store, feed, recheckMs: 60_000 });
    membership = createWatchlistMembership(counted.store, filters);
    index = createRuleIndex({ watchlists: membership.lookup });
  });

  afterAll(async () => {
    await feed?.close();
    await redis.quit();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("while live, reads no revision until a change is heard; a change applies to the next batch", async () => {
    await until(() => feed.epoch() !== undefined);
    expect(feed.epoch()).toBe(1);
    const w = await store.create("acc", { name: "deposits", kind: "address" });
    await store.add("acc", w.id, [addr(1), addr(2)]);
    index.upsert(benchRule("r1", "Transaction", [{ name: "from", operator: "In watchlist", value: w.id }], { accountId: "acc" }));
    expect(await matched([tx(addr(1)), tx(addr(3))])).toEqual([true, false]);
    await filters.settled();
    await matched([tx(addr(1))]);
    const before = reads.revision;
    for (let i = 0; i < 5; i++) expect(await matched([tx(addr(1)), tx(addr(3))])).toEqual([true, false]);
    expect(reads.revision).toBe(before);

    await store.add("acc", w.id, [addr(3)]);
    expect(await matched([tx(addr(3))])).toEqual([true]);
    expect(reads.revision).toBe(before + 1);
    await store.remove("acc", w.id, [addr(1)]);
    expect(await matched([tx(addr(1)), tx(addr(2))])).toEqual([false, true]);
    expect(reads.revision).toBe(before + 2);
    expect(await matched([tx(addr(2))])).toEqual([true]);
    expect(reads.revision).toBe(before + 2);
  });

  it("a killed feed connection stops vouching at once; a change made meanwhile still applies; it comes back live", async () => {
    const w = await store.create("acc", { name: "second", kind: "address" });
    await store.add("acc", w.id, [addr(10)]);
    index.upsert(benchRule("r2", "Transaction", [{ name: "from", operator: "In watchlist", value: w.id }], { accountId: "acc" }));
    await matched([tx(addr(10))]);
    await filters.settled();
    await matched([tx(addr(10))]);
    const epoch = feed.epoch();
    expect(epoch).toBeDefined();

    const clients = (await redis.sendCommand(["CLIENT", "LIST", "TYPE", "pubsub"])) as string;
    const line = clients.split("\n").find((l) => l.includes(` name=${name} `));
    const id = line?.match(/^id=(\d+) /)?.[1];
    expect(id).toBeDefined();
    await redis.sendCommand(["CLIENT", "KILL", "ID", id as string]);
    // Off at once (the client's error), then live again in a new period after the reconnection: either way
    // the period the copy read its revision in is over.
    await until(() => feed.epoch() !== epoch, 5_000);
    // Changed while the feed may be down: its message can be lost, the revision read is not.
    await store.add("acc", w.id, [addr(11)]);
    const before = reads.revision;
    expect(await matched([tx(addr(11))])).toEqual([true]);
    expect(reads.revision).toBeGreaterThan(before);

    await until(() => feed.epoch() !== undefined && feed.epoch() !== epoch);
    expect(feed.epoch()).toBe((epoch as number) + 1);
    await store.remove("acc", w.id, [addr(10)]);
    expect(await matched([tx(addr(10)), tx(addr(11))])).toEqual([false, true]);
    const after = reads.revision;
    expect(await matched([tx(addr(11))])).toEqual([true]);
    expect(reads.revision).toBe(after);
  });
});
