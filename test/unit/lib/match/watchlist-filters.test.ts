/**
 * Unit tests of the match process's watchlist Bloom filters (lib/match/watchlist-filters.ts)
 * over an in-memory store that keeps a revision and a change log as lib/watchlists/store.ts does:
 * a filter is built once in the background, catches up from the log in place, and is dropped for a
 * rebuild when the log does not reach back, the list outgrows its capacity, or its revision went back
 * (a deleted list), and dropped when no batch consulted it for a while; with the membership (lib/match/watchlist-membership.ts) a filter's "no" is not asked.
 */
import { describe, expect, it } from "vitest";
import { createWatchlistFilters, mayHold } from "../../../../lib/match/watchlist-filters.js";
import { createWatchlistMembership } from "../../../../lib/match/watchlist-membership.js";
import { MEMBER_FILTER_MIN_CAPACITY } from "../../../../lib/watchlists/bloom.js";
import { changePayload, changesSince } from "../../../../lib/watchlists/changes.js";
import type { Watchlist } from "../../../../lib/watchlists/store.js";

const addr = (n: number) => `0x${n.toString(16).padStart(40, "e")}`;

function memoryStore() {
  const members = new Set<string>();
  let rev = 0;
  let log: string[] = [];
  let exists = true;
  const asked: string[] = [];
  return {
    asked,
    add(ms: string[], logLimit = 64) {
      rev++;
      log = [...log, `${rev} ${changePayload(ms)}`].slice(-logLimit);
      for (const m of ms) members.add(m);
    },
    remove: (m: string) => members.delete(m),
    drop() {
      exists = false;
      members.clear();
      rev = 0;
      log = [];
    },
    async get(accountId: string, id: string): Promise<Watchlist | null> {
      return exists ? { id, accountId, name: id, kind: "address", createdAt: "" } : null;
    },
    count: async () => members.size,
    revision: async () => rev,
    changesSince: async (_a: string, _id: string, since: number, to: number) => changesSince(log, since, to),
    async *scanMembers() {
      yield [...members];
    },
    async contains(_a: string, _id: string, ms: string[]) {
      asked.push(...ms);
      return ms.map((m) => members.has(m));
    },
  };
}

describe("watchlist filters", () => {
  it("builds once, catches up in place from the log, rebuilds past the log or the capacity", async () => {
    const store = memoryStore();
    store.add([addr(1), addr(2)]);
    const filters = createWatchlistFilters({ store });
    expect(filters.get("acc", "w")).toBeUndefined();
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    const f = filters.get("acc", "w");
    expect(f).toMatchObject({ rev: 1, size: 2, capacity: MEMBER_FILTER_MIN_CAPACITY, kind: "address" });
    if (!f) return;
    expect(await filters.refresh(f)).toBe(false);

    store.add([addr(3)]);
    expect(mayHold(f, addr(3))).toBe(false);
    expect(await filters.refresh(f)).toBe(true);
    expect(filters.get("acc", "w")).toBe(f);
    expect(f.rev).toBe(2);
    // In any letter case.
    expect(mayHold(f, addr(3).toUpperCase().replace("0X", "0x"))).toBe(true);

    // Two adds while the log keeps one: the filter cannot catch up and is rebuilt.
    store.add([addr(4)], 1);
    store.add([addr(5)], 1);
    expect(await filters.refresh(f)).toBe(true);
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    const g = filters.get("acc", "w");
    expect(g).toMatchObject({ rev: 4, size: 5 });
    if (!g) return;

    // 5 + 1,000 members fit its capacity of 1,024; 1,000 more do not.
    store.add(Array.from({ length: 1000 }, (_, i) => addr(1000 + i)));
    expect(await filters.refresh(g)).toBe(true);
    expect(filters.get("acc", "w")).toBe(g);
    store.add(Array.from({ length: 1000 }, (_, i) => addr(5000 + i)));
    expect(await filters.refresh(g)).toBe(true);
    expect(filters.get("acc", "w")).toBeUndefined();
    await filters.settled();
    expect(filters.get("acc", "w")?.capacity).toBe(2 * 2005);
  });

  it("a deleted list's filter is rebuilt empty; the membership does not ask Redis for a filter's 'no'", async () => {
    const store = memoryStore();
    store.add([addr(1)]);
    const filters = createWatchlistFilters({ store });
    const m = createWatchlistMembership(store, filters);
    const has = (v: string) => m.lookup.has("acc", "w", v);
    // No filter yet: every value is asked.
    expect(await m.runEach([addr(1), addr(9)], has)).toEqual([true, false]);
    expect(store.asked).toEqual([addr(1), addr(9)]);
    await filters.settled();
    store.asked.length = 0;
    const others = Array.from({ length: 100 }, (_, i) => addr(100 + i));
    expect((await m.runEach([addr(1), ...others], has)).filter(Boolean)).toEqual([true]);
    expect(store.asked).toContain(addr(1));
    expect(store.asked.length).toBeLessThan(5);

    store.remove(addr(1));
    expect(await m.runEach([addr(1)], has)).toEqual([false]);
    store.drop();
    expect(await m.runEach([addr(1)], has)).toEqual([false]);
    await filters.settled();
    expect(filters.get("acc", "w")).toMatchObject({ rev: 0, size: 0, kind: "string" });
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
