/**
 * The in-process copies in front of watchlist memberships (lib/match/watchlist-filters.ts with
 * lib/match/watchlist-membership.ts) against the real Redis, for an address list (an exact copy):
 * once it is built, an address added through the store matches from the next batch (the copy caught
 * up from the change log, not rebuilt), a removed one stops (the log's remove), an add too large to
 * log makes it rebuild while the set answers, and a deleted list matches nothing. Once built, no
 * value is asked in Redis. Its own key prefix, deleted afterwards.
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
import { CHANGE_LOG_MEMBERS } from "../../../lib/watchlists/changes.js";
import { createWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import { countingStore } from "../../support/watchlists.js";
import { deleteRedisKeys, redisReachable } from "../api/fixtures.js";

const base = loadConfig();
const up = await redisReachable(base.redisUrl);
const ID = `t${randomBytes(4).toString("hex")}`;
const addr = (n: number) => `0x${n.toString(16).padStart(40, "b")}`;
const tx = (from: string): TypedEntity => ({ type: "Transaction", entity: { from, to: addr(0) } }) as unknown as TypedEntity;

describe.skipIf(!up)("watchlist copies in the match process (real Redis)", () => {
  const redis = createClient({ url: base.redisUrl });
  let store: WatchlistStore;
  let filters: WatchlistFilters;
  let membership: WatchlistMembership;
  let index: RuleIndex;
  /** The values asked in Redis, per SMISMEMBER. */
  let asked: string[][] = [];
  const matched = async (entities: TypedEntity[]) => (await matchEntities(index, membership, entities)).map((rs) => rs.length > 0);

  beforeAll(async () => {
    await redis.connect();
    store = createWatchlistStore({ redis, keyPrefix: `${ID}:`, limits: { maxPerAccount: 10, maxMembers: 10_000 } });
    const counted = countingStore(store);
    asked = counted.asked;
    filters = createWatchlistFilters({ store });
    membership = createWatchlistMembership(counted.store, filters);
    index = createRuleIndex({ watchlists: membership.lookup });
  });

  afterAll(async () => {
    await redis.quit();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("an address added after the filter was built matches from the next batch; a removed one stops", async () => {
    const w = await store.create("acc", { name: "deposits", kind: "address" });
    await store.add(
      "acc",
      w.id,
      Array.from({ length: 100 }, (_, i) => addr(i + 1)),
    );
    index.upsert(benchRule("r1", "Transaction", [{ name: "from", operator: "In watchlist", value: w.id }], { accountId: "acc" }));
    // The first batch asks Redis (no copy yet) and starts the build.
    expect(await matched([tx(addr(1)), tx(addr(500))])).toEqual([true, false]);
    await filters.settled();
    const built = filters.get("acc", w.id);
    expect(built?.rev).toBe(1);
    const unlisted = Array.from({ length: 200 }, (_, i) => tx(addr(1000 + i)));
    asked.length = 0;
    expect((await matched([tx(addr(2)), ...unlisted])).filter(Boolean)).toHaveLength(1);
    // The exact copy answers: nothing reaches Redis.
    expect(asked.flat()).toEqual([]);

    await store.add("acc", w.id, [addr(500)]);
    expect(await matched([tx(addr(500)), tx(addr(501))])).toEqual([true, false]);
    // Caught up from the change log, not rebuilt.
    expect(filters.get("acc", w.id)).toBe(built);
    expect(built?.rev).toBe(2);

    await store.remove("acc", w.id, [addr(1), addr(500)]);
    expect(await matched([tx(addr(1)), tx(addr(500)), tx(addr(3))])).toEqual([false, false, true]);
    expect(filters.get("acc", w.id)).toMatchObject({ rev: 3, size: 99 });
    expect(asked.flat()).toEqual([]);
  });

  it("an add too large for the change log rebuilds the copy while Redis answers; a deleted list matches nothing", async () => {
    const w = await store.create("acc", { name: "bulk", kind: "address" });
    await store.add("acc", w.id, [addr(7001)]);
    index.upsert(benchRule("r2", "Transaction", [{ name: "from", operator: "In watchlist", value: w.id }], { accountId: "acc" }));
    expect(await matched([tx(addr(7001))])).toEqual([true]);
    await filters.settled();
    const before = filters.get("acc", w.id);
    expect(before).toBeDefined();
    const bulk = Array.from({ length: CHANGE_LOG_MEMBERS + 1 }, (_, i) => addr(8000 + i));
    await store.add("acc", w.id, bulk);
    expect(await matched([tx(addr(8000)), tx(addr(7001)), tx(addr(9999))])).toEqual([true, true, false]);
    await filters.settled();
    const after = filters.get("acc", w.id);
    expect(after).not.toBe(before);
    expect(after?.size).toBe(CHANGE_LOG_MEMBERS + 2);
    expect(await matched([tx(addr(8000 + CHANGE_LOG_MEMBERS))])).toEqual([true]);

    await store.delete("acc", w.id);
    expect(await matched([tx(addr(8000)), tx(addr(7001))])).toEqual([false, false]);
    index.remove("r2");
  });
});
