/**
 * The watchlist store (lib/watchlists/store.ts) against the real Redis with small limits: the
 * per-account limit, the per-list member limit (duplicates of present members do not count), and
 * that nothing is written by a refused upload. Its own key prefix, deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import { createWatchlistStore, type WatchlistStore, WatchlistStoreError } from "../../../lib/watchlists/store.js";
import { deleteRedisKeys, redisReachable } from "../api/fixtures.js";

const base = loadConfig();
const up = await redisReachable(base.redisUrl);
const ID = `t${randomBytes(4).toString("hex")}`;
const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

describe.skipIf(!up)("watchlist store limits (real Redis)", () => {
  const redis = createClient({ url: base.redisUrl });
  let store: WatchlistStore;

  beforeAll(async () => {
    await redis.connect();
    store = createWatchlistStore({ redis, keyPrefix: `${ID}:`, limits: { maxPerAccount: 2, maxMembers: 3 } });
  });

  afterAll(async () => {
    await redis.quit();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("refuses a watchlist past maxPerAccount, per account", async () => {
    await store.create("acc1", { name: "a", kind: "address" });
    await store.create("acc1", { name: "b", kind: "address" });
    await expect(store.create("acc1", { name: "c", kind: "address" })).rejects.toMatchObject({ code: "CS_WATCHLIST_LIMIT_REACHED" });
    await expect(store.create("acc2", { name: "c", kind: "address" })).resolves.toMatchObject({ accountId: "acc2" });
  });

  it("refuses members past maxMembers, counting only new ones, and writes nothing then", async () => {
    const w = await store.create("acc3", { name: "x", kind: "address" });
    expect(await store.add("acc3", w.id, [addr(1), addr(2)])).toEqual({ added: 2, count: 2 });
    // Two present members and one new: 3, at the limit.
    expect(await store.add("acc3", w.id, [addr(1), addr(2), addr(3)])).toEqual({ added: 1, count: 3 });
    const refused = store.add("acc3", w.id, [addr(3), addr(4)]);
    await expect(refused).rejects.toBeInstanceOf(WatchlistStoreError);
    await expect(refused).rejects.toMatchObject({ code: "CS_WATCHLIST_FULL" });
    expect(await store.count("acc3", w.id)).toBe(3);
    expect(await store.contains("acc3", w.id, [addr(3), addr(4)])).toEqual([true, false]);
    expect(await store.delete("acc3", w.id)).toBe(true);
    expect(await store.count("acc3", w.id)).toBe(0);
  });
});
