/**
 * Unit tests of `In watchlist` evaluation with prefetched memberships (lib/match/watchlist-membership.ts
 * over lib/match/evaluate.ts), with an in-memory watchlist store that counts its reads: the
 * questions of multi-valued attributes and of two AND-ed watchlist conditions are all fetched, each
 * list once per round; values are normalised by the list's kind; without a lookup the operator
 * never holds.
 */
import { describe, expect, it } from "vitest";
import { compileDefinitions, evaluate, watchlistIds } from "../../../../lib/match/evaluate.js";
import { createWatchlistMembership } from "../../../../lib/match/watchlist-membership.js";
import { normalizeMember, type Watchlist } from "../../../../lib/watchlists/store.js";

const A1 = "0x1111111111111111111111111111111111111111";
const A2 = "0xabcdef000000000000000000000000000000abcd";

function memoryStore(lists: Record<string, { kind: Watchlist["kind"]; members: string[] }>) {
  const calls: { id: string; members: string[] }[] = [];
  return {
    calls,
    async get(accountId: string, id: string): Promise<Watchlist | null> {
      const l = lists[id];
      return l && accountId === "acc" ? { id, accountId, name: id, kind: l.kind, createdAt: "" } : null;
    },
    async contains(_accountId: string, id: string, members: string[]): Promise<boolean[]> {
      calls.push({ id, members });
      const l = lists[id];
      return members.map((m) => l?.members.map((x) => normalizeMember(l.kind, x)).includes(m) ?? false);
    },
  };
}

describe("In watchlist with prefetched memberships", () => {
  it("asks every value of a multi-valued attribute and answers in any letter case", async () => {
    const store = memoryStore({ w: { kind: "address", members: [A2] } });
    const m = createWatchlistMembership(store);
    const pred = compileDefinitions([{ name: "owners", operator: "In watchlist", value: "w" }], { accountId: "acc", watchlists: m.lookup });
    const results = await m.runEach([{ owners: [A1, `0x${A2.slice(2).toUpperCase()}`] }, { owners: [A1] }], pred);
    expect(results).toEqual([true, false]);
    expect(store.calls).toEqual([{ id: "w", members: [A1, A2] }]);
  });

  it("fetches the second of two AND-ed lists once the first holds (one read per list per round)", async () => {
    const store = memoryStore({ a: { kind: "address", members: [A1] }, b: { kind: "string", members: ["Transfer"] } });
    const m = createWatchlistMembership(store);
    const pred = compileDefinitions(
      [
        { name: "from", operator: "In watchlist", value: "a" },
        { name: "event", operator: "In watchlist", value: "b" },
      ],
      { accountId: "acc", watchlists: m.lookup },
    );
    const entities = [
      { from: A1, event: "Transfer" },
      { from: A1, event: "Approval" },
      { from: A2, event: "Transfer" },
    ];
    expect(await m.runEach(entities, pred)).toEqual([true, false, false]);
    expect(store.calls.map((c) => c.id)).toEqual(["a", "b"]);
    // Only the entities with a listed sender are matched again, so only their events are asked.
    expect(store.calls[1]?.members).toEqual(["Transfer", "Approval"]);
  });

  it("an unknown list, another account and a value not of the list's kind never hold; nothing is asked outside run", async () => {
    const store = memoryStore({ w: { kind: "address", members: [A1] } });
    const m = createWatchlistMembership(store);
    const lookup = m.lookup;
    const def = (id: string) => [{ name: "from", operator: "In watchlist", value: id }];
    const mine = compileDefinitions(def("w"), { accountId: "acc", watchlists: lookup });
    const theirs = compileDefinitions(def("w"), { accountId: "other", watchlists: lookup });
    const unknown = compileDefinitions(def("nope"), { accountId: "acc", watchlists: lookup });
    const cases = [
      () => mine({ from: A1 }),
      () => theirs({ from: A1 }),
      () => unknown({ from: A1 }),
      () => mine({ from: "not an address" }),
    ];
    expect(await m.runEach(cases, (f) => f())).toEqual([true, false, false, false]);
    expect(mine({ from: A1 })).toBe(false);
    expect(evaluate([{ name: "from", operator: "In watchlist", value: "w" }], { from: A1 })).toBe(false);
  });

  it("watchlistIds lists the ids at every level once", () => {
    const ids = watchlistIds([
      { name: "from", operator: "In watchlist", value: "a" },
      { name: "args", operator: "Inspect", operatorParameters: [{ name: "value", operator: "In watchlist", value: "b" }] },
      { name: "to", operator: "In watchlist", value: "a" },
    ]);
    expect([...ids]).toEqual(["a", "b"]);
  });
});
