/**
 * `terms` by watchlist (api/search/watchlist-terms.ts): validation turns the lookup into a
 * placeholder at its path, expansion replaces it with the members (one `terms`, or `bool.should`
 * of chunks past 65,536), reads each list once, leaves other queries untouched, and refuses
 * unknown and too large lists; saved searches keep the placeholder (the match stage answers it).
 */
import { describe, expect, it } from "vitest";
import { compileSearchQuery } from "../../../../api/dsl/saved-search.js";
import { validateQuery } from "../../../../api/dsl/validate.js";
import { ApiError } from "../../../../api/errors.js";
import {
  expandWatchlists,
  hasWatchlists,
  MAX_SEARCH_MEMBERS,
  TERMS_CHUNK,
  watchlistPaths,
} from "../../../../api/search/watchlist-terms.js";

const ID = "11111111-1111-4111-8111-111111111111";
const lookup = { bool: { filter: [{ terms: { from: { watchlist: ID } } }, { term: { to: "0xabc" } }] } };

function validated(query: unknown) {
  const checked = validateQuery(query, ["tx"]);
  if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
  return checked.value;
}

describe("terms by watchlist", () => {
  it("validates into a placeholder at the lookup's path, and expands it into the members", async () => {
    const q = validated(lookup);
    expect(watchlistPaths(q)).toEqual(["query.bool.filter[0].terms.from.watchlist"]);
    let reads = 0;
    const out = await expandWatchlists(q, async (id) => {
      reads++;
      return id === ID ? ["0x2", "0x1"] : null;
    });
    expect(out).toEqual({ bool: { filter: [{ terms: { from: ["0x1", "0x2"] } }, { term: { to: "0xabc" } }] } });
    expect(reads).toBe(1);
    expect(hasWatchlists(out)).toBe(false);
  });

  it("splits a list longer than one chunk into bool.should of terms chunks, each list read once", async () => {
    const members = Array.from({ length: TERMS_CHUNK * 2 + 1 }, (_, i) => `0x${i.toString(16).padStart(40, "0")}`);
    let reads = 0;
    const q = validated({ bool: { should: [{ terms: { from: { watchlist: ID } } }, { terms: { to: { watchlist: ID } } }] } });
    const out = (await expandWatchlists(q, async () => {
      reads++;
      return [...members];
    })) as { bool: { should: Array<{ bool: { should: Array<{ terms: Record<string, string[]> }>; minimum_should_match: number } }> } };
    expect(reads).toBe(1);
    const chunks = out.bool.should[0]?.bool.should ?? [];
    expect(chunks.map((c) => c.terms.from?.length)).toEqual([TERMS_CHUNK, TERMS_CHUNK, 1]);
    expect(chunks.flatMap((c) => c.terms.from)).toEqual(members);
    expect(out.bool.should[1]?.bool.should[0]?.terms.to).toHaveLength(TERMS_CHUNK);
  });

  it("leaves a query without lookups as it is and reads nothing", async () => {
    const q = validated({ term: { from: "0xabc" } });
    expect(await expandWatchlists(q, async () => Promise.reject(new Error("read")))).toBe(q);
    expect(await expandWatchlists(undefined, async () => Promise.reject(new Error("read")))).toBeUndefined();
  });

  it("refuses an unknown list and one past the cap with their codes at the lookup's path", async () => {
    const q = validated(lookup);
    await expect(expandWatchlists(q, async () => null)).rejects.toSatisfy(
      (e: unknown) =>
        e instanceof ApiError && e.code === "CS_WATCHLIST_NOT_FOUND" && e.path === "query.bool.filter[0].terms.from.watchlist",
    );
    await expect(expandWatchlists(q, async () => new Array<string>(MAX_SEARCH_MEMBERS + 1).fill("0x1"))).rejects.toSatisfy(
      (e: unknown) => e instanceof ApiError && e.code === "CS_QUERY_WATCHLIST_TOO_LARGE",
    );
  });

  it("refuses malformed lookups and text fields in validation; a saved search keeps the lookup", () => {
    for (const bad of [{ watchlist: 7 }, { watchlist: "not-a-uuid" }, { watchlist: ID, x: 1 }]) {
      const r = validateQuery({ terms: { from: bad } }, ["tx"]);
      expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual(["CS_QUERY_INVALID"]);
    }
    const saved = compileSearchQuery(lookup, "tx");
    expect(saved.ok && watchlistPaths(saved.value.query)).toEqual(["query.bool.filter[0].terms.from.watchlist"]);
  });
});
