/**
 * Unit tests of the match process's watchlist copies (lib/match/watchlist-filters.ts) over an
 * in-memory store that keeps a revision and a change log as lib/watchlists/store.ts does: a copy is
 * built once in the background (an exact set for an address list, a Bloom filter otherwise),
 * catches up from the log in place (adds and removes, in order), and is dropped for a rebuild when
 * the log does not reach back, a Bloom filter outgrows its capacity, or the revision went back (a
 * deleted list), and dropped when no batch consulted it for a while; with the membership
 * (lib/match/watchlist-membership.ts) a Bloom filter's "no" and an exact copy's answers are not
 * asked in Redis; with a change feed the revision is read only when the feed cannot vouch for it.
 */
import { describe, expect, it } from "vitest";
import { createWatchlistFilters, mayHold } from "../../../../lib/match/watchlist-filters.js";
import { createWatchlistMembership } from "../../../../lib/match/watchlist-membership.js";
import { addressSetBytes } from "../../../../lib/watchlists/address-set.js";
import { MEMBER_FILTER_MIN_CAPACITY } from "../../../../lib/watchlists/bloom.js";
import { changePayload, changesSince } from "../../../../lib/watchlists/changes.js";
import type { Watchlist, WatchlistKind } from "../../../../lib/watchlists/store.js";

const addr = (n: number) => `0x${n.toString(16).padStart(40, "e")}`;
const str = (n: number) => `value-${n}`;

function memoryStore(kind: WatchlistKind = "address") {
  const members = new Set<string>();
  let rev = 0;
  let log: string[] = [];
  let exists = true;
  const asked: string[] = [];
  const revisionReads = { n: 0 };
  return {
    asked,
    revisionReads,
    add(ms: string[], logLimit = 64) {
      rev++;
      log = [...log, `${rev} ${changePayload(ms)}`].slice(-logLimit);
      for (const m of ms) members.add(m);
    },
    remove(ms: string[]) {
      rev++;
      log = [...log, `${rev} -${changePayload(ms)}`].slice(-64);
      for (const m of ms) members.delete(m);
    },
    drop() {
      exists = false;
      members.clear();
      rev = 0;
      log = [];
    },
    async get(accountId: string, id: string): Promise<Watchlist | null> {
      return exists ? { id, accountId, name: id, kind, createdAt: "" } : null;
    },
    count: async () => members.size,
    async revision() {
      revisionReads.n++;
      return rev;
    },
    changesSince: async (_a: string, _id: string, since: number, to: number) => changesSince(log, since, to),
    /** Called between the two halves of a scan (changes made while a copy is being built). */
    duringScan: undefined as (() => void) | undefined,
    async *scanMembers() {
      // SSCAN's guarantee: members there for the whole scan are returned; others may or may not be.
      const all = [...members];
      const half = Math.ceil(all.length / 2);
      yield all.slice(0, half);
      this.duringScan?.();
      yield all.slice(half);
    },
    async contains(_a: string, _id: string, ms: string[]) {
      asked.push(...ms);
      return ms.map((m) => members.has(m));
    },
  };
}

describe("watchlist filters", () => {
  it("a Bloom filter (a list of strings) builds once, catches up in place from the log, rebuilds past the log or the capacity", async () => {
    const store = memoryStore("string");
    store.add([str(1), str(2)]);
    const filters = createWatchlistFilters({ store });
    expect(filters.get("acc", "w")).toBeUndefined();
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    const f = filters.get("acc", "w");
    expect(f).toMatchObject({ rev: 1, size: 2, capacity: MEMBER_FILTER_MIN_CAPACITY, kind: "string" });
    if (!f) return;
    expect(await filters.refresh(f)).toBe(false);

    store.add([str(3)]);
    expect(mayHold(f, str(3))).toBe(false);
    expect(await filters.refresh(f)).toBe(true);
    expect(filters.get("acc", "w")).toBe(f);
    expect(f.rev).toBe(2);
    expect(mayHold(f, ` ${str(3)}`)).toBe(true);
    // A remove is logged; the filter keeps the member (its "maybe" goes to the set) and follows the revision.
    store.remove([str(3)]);
    expect(await filters.refresh(f)).toBe(true);
    expect(f).toMatchObject({ rev: 3, size: 3 });
    expect(mayHold(f, str(3))).toBe(true);

    // Two adds while the log keeps one: the filter cannot catch up and is rebuilt.
    store.add([str(4)], 1);
    store.add([str(5)], 1);
    expect(await filters.refresh(f)).toBe(true);
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    const g = filters.get("acc", "w");
    expect(g).toMatchObject({ rev: 5, size: 4 });
    if (!g) return;

    // 4 + 1,000 members fit its capacity of 1,024; 1,000 more do not.
    store.add(Array.from({ length: 1000 }, (_, i) => str(1000 + i)));
    expect(await filters.refresh(g)).toBe(true);
    expect(filters.get("acc", "w")).toBe(g);
    store.add(Array.from({ length: 1000 }, (_, i) => str(5000 + i)));
    expect(await filters.refresh(g)).toBe(true);
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    expect(filters.get("acc", "w")?.capacity).toBe(2 * 2004);
  });

  it("an address list's exact copy answers without Redis, follows adds and removes in order, and a deleted list is rebuilt empty", async () => {
    const store = memoryStore();
    store.add([addr(1), addr(2)]);
    const filters = createWatchlistFilters({ store });
    const m = createWatchlistMembership(store, filters);
    const has = (v: string) => m.lookup.has("acc", "w", v);
    // No copy yet: every value is asked.
    expect(await m.runEach([addr(1), addr(9)], has)).toEqual([true, false]);
    expect(store.asked).toEqual([addr(1), addr(9)]);
    await filters.settled();
    expect(filters.get("acc", "w")).toMatchObject({ rev: 1, size: 2, kind: "address", capacity: Number.POSITIVE_INFINITY });
    store.asked.length = 0;
    const others = Array.from({ length: 100 }, (_, i) => addr(100 + i));
    const upper = addr(2).toUpperCase().replace("0X", "0x");
    expect(await m.runEach([addr(1), upper, ...others], has)).toEqual([true, true, ...others.map(() => false)]);
    expect(store.asked).toEqual([]);

    // Removed, added back, added and removed: the copy replays the log in order.
    store.remove([addr(1)]);
    expect(await m.runEach([addr(1), addr(2)], has)).toEqual([false, true]);
    store.add([addr(1), addr(3)]);
    store.remove([addr(3), addr(2)]);
    expect(await m.runEach([addr(1), addr(2), addr(3)], has)).toEqual([true, false, false]);
    expect(filters.get("acc", "w")).toMatchObject({ rev: 4, size: 1 });
    expect(store.asked).toEqual([]);

    store.drop();
    expect(await m.runEach([addr(1)], has)).toEqual([false]);
    await filters.settled();
    expect(filters.get("acc", "w")).toMatchObject({ rev: 0, size: 0, kind: "string" });
  });

  it("an exact copy built while the list changes ends equal to the list once it caught up", async () => {
    const store = memoryStore();
    store.add(Array.from({ length: 10 }, (_, i) => addr(i)));
    // During the scan: addr(0) (already returned) is removed, addr(20) added and removed, addr(3) removed and added back.
    store.duringScan = () => {
      store.remove([addr(0)]);
      store.add([addr(20)]);
      store.remove([addr(20), addr(3)]);
      store.add([addr(3)]);
    };
    const filters = createWatchlistFilters({ store });
    const m = createWatchlistMembership(store, filters);
    filters.get("acc", "w");
    await filters.settled();
    const asked = [0, 1, 3, 9, 20].map(addr);
    expect(await m.runEach(asked, (v) => m.lookup.has("acc", "w", v))).toEqual([false, true, true, true, false]);
    expect(filters.get("acc", "w")).toMatchObject({ rev: 5, size: 9 });
  });

  it("with a change feed, reads a revision only when the feed cannot vouch for it", async () => {
    const store = memoryStore();
    store.add([addr(1)]);
    let t = 1_000_000;
    let epoch: number | undefined = 1;
    const heard = new Set<string>();
    const feed = {
      epoch: () => epoch,
      takeChanged: (_a: string, id: string) => heard.delete(id),
      drain: async () => {},
    };
    const filters = createWatchlistFilters({ store, feed, recheckMs: 1_000, now: () => t });
    const m = createWatchlistMembership(store, filters);
    const has = (v: string) => m.lookup.has("acc", "w", v);
    filters.get("acc", "w");
    await filters.settled();
    // The build read it once.
    const built = store.revisionReads.n;
    const reads = () => store.revisionReads.n - built;
    // The first batch of a live period reads it; the next ones trust the feed.
    await m.runEach([addr(1)], has);
    expect(reads()).toBe(1);
    await m.runEach([addr(1)], has);
    await m.runEach([addr(1)], has);
    expect(reads()).toBe(1);
    // A change heard: read, caught up, and the batch matched with it.
    store.add([addr(2)]);
    heard.add("w");
    expect(await m.runEach([addr(2)], has)).toEqual([true]);
    expect(reads()).toBe(2);
    // A change the feed missed (no message): trusted until recheckMs has passed, then read.
    store.remove([addr(2)]);
    t += 500;
    expect(await m.runEach([addr(2)], has)).toEqual([true]);
    t += 600;
    expect(await m.runEach([addr(2)], has)).toEqual([false]);
    expect(reads()).toBe(3);
    // Not live: every batch reads; a new live period reads once more, then trusts.
    epoch = undefined;
    await m.runEach([addr(1)], has);
    await m.runEach([addr(1)], has);
    expect(reads()).toBe(5);
    epoch = 2;
    await m.runEach([addr(1)], has);
    await m.runEach([addr(1)], has);
    expect(reads()).toBe(6);
  });

  it("two batches matched concurrently both see a change, though only one of them reads it", async () => {
    const store = memoryStore();
    store.add([addr(1)]);
    const heard = new Set<string>();
    const feed = { epoch: () => 1, takeChanged: (_a: string, id: string) => heard.delete(id), drain: async () => {} };
    const filters = createWatchlistFilters({ store, feed, recheckMs: 60_000 });
    const m = createWatchlistMembership(store, filters);
    const has = (v: string) => m.lookup.has("acc", "w", v);
    filters.get("acc", "w");
    await filters.settled();
    expect(await m.runEach([addr(1)], has)).toEqual([true]);
    store.remove([addr(1)]);
    heard.add("w");
    // Both match with the copy as it was, then refresh: the first reads the revision and applies the remove,
    // the second finds nothing heard and must still match again.
    expect(await Promise.all([m.runEach([addr(1)], has), m.runEach([addr(1)], has)])).toEqual([[false], [false]]);
  });

  it("gives address lists exact copies while they fit exactMaxBytes, then Bloom filters", async () => {
    const store = memoryStore();
    store.add([addr(1)]);
    const filters = createWatchlistFilters({ store, exactMaxBytes: addressSetBytes(1) });
    filters.get("acc", "a");
    await filters.settled();
    filters.get("acc", "b");
    await filters.settled();
    const a = filters.get("acc", "a");
    const b = filters.get("acc", "b");
    expect(a?.exact?.has(addr(1))).toBe(true);
    expect(b?.exact).toBeUndefined();
    expect(b && mayHold(b, addr(1))).toBe(true);
    expect(filters.stats().bytes).toBe(addressSetBytes(1) + (b?.bits?.buckets.byteLength ?? Number.NaN));
  });

  it("drops a filter no batch consulted for idleMs, keeps the ones in use", async () => {
    const store = memoryStore();
    store.add([addr(1)]);
    let t = 1_000_000;
    const filters = createWatchlistFilters({ store, idleMs: 600_000, now: () => t });
    filters.get("acc", "a");
    filters.get("acc", "b");
    await filters.settled();
    expect(filters.stats().lists).toBe(2);
    const a = filters.get("acc", "a");
    if (!a) throw new Error("no filter");
    t += 300_000;
    await filters.refresh(a);
    expect(filters.stats().lists).toBe(2);
    t += 400_000;
    await filters.refresh(a);
    expect(filters.stats().lists).toBe(1);
    expect(filters.get("acc", "a")).toBe(a);
  });
});
