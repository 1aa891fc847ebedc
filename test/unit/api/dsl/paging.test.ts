/**
 * The paging parts of the query language (api/dsl/validate.ts): sort given as a string, an array
 * of names and maps, `_doc`; `from` within Elasticsearch's result window; `_source` in all of
 * Elasticsearch's forms; `search_after` with a point in time's tiebreaker.
 */
import { describe, expect, it } from "vitest";
import { LIMITS, validateFrom, validateSearchBody, validateSourceFilter } from "../../../../api/dsl/validate.js";
import type { RecordKind } from "../../../../lib/records.js";

const plan = (body: unknown, kinds: RecordKind[] = ["tx"], pit = false) => {
  const r = validateSearchBody(body, { kinds, maxSize: 10_000, pit });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
};
const codes = (body: unknown, kinds: RecordKind[] = ["tx"], pit = false) => {
  const r = validateSearchBody(body, { kinds, maxSize: 10_000, pit });
  return r.ok ? [] : r.errors.map((e) => [e.code, e.path]);
};

describe("sort forms", () => {
  it("a string, an array of strings, names mixed with maps; _doc and _shard_doc", () => {
    expect(plan({ sort: "_doc" }).sort).toEqual([{ _doc: { order: "asc" } }]);
    expect(plan({ sort: ["_doc"] }).sort).toEqual([{ _doc: { order: "asc" } }]);
    expect(plan({ sort: "blockNumber.num" }).sort).toEqual([{ "blockNumber.num": { order: "asc" } }]);
    expect(plan({ sort: ["blockNumber.num", { "logIndex.num": "desc" }] }, ["log"]).sort).toEqual([
      { "blockNumber.num": { order: "asc" } },
      { "logIndex.num": { order: "desc" } },
    ]);
    expect(plan({ sort: [{ _shard_doc: { order: "desc" } }] }).sort).toEqual([{ _shard_doc: { order: "desc" } }]);
    expect(plan({ sort: "_score" }).sort).toEqual([{ _score: { order: "desc" } }]);
  });
});

describe("from", () => {
  it("pages within the result window, on both paths' plan", () => {
    expect(plan({ from: 20, size: 5 }).from).toBe(20);
    expect(plan({ from: 0 })).not.toHaveProperty("from");
    expect(plan({ from: LIMITS.maxResultWindow - 10 }).from).toBe(LIMITS.maxResultWindow - 10);
  });

  it("past the window, negative, fractional, with size -1: CS_RESULT_WINDOW_TOO_LARGE; with search_after: CS_SEARCH_AFTER_INVALID", () => {
    expect(codes({ from: LIMITS.maxResultWindow - 9 })).toEqual([["CS_RESULT_WINDOW_TOO_LARGE", "from"]]);
    expect(codes({ from: 1, size: LIMITS.maxResultWindow })).toEqual([["CS_RESULT_WINDOW_TOO_LARGE", "from"]]);
    expect(codes({ from: 1.5 })).toEqual([["CS_RESULT_WINDOW_TOO_LARGE", "from"]]);
    expect(codes({ from: "2" })).toEqual([["CS_RESULT_WINDOW_TOO_LARGE", "from"]]);
    expect(codes({ from: 5, size: -1 })).toEqual([["CS_RESULT_WINDOW_TOO_LARGE", "from"]]);
    expect(codes({ from: 5, sort: "hash", search_after: ["0xab"] })).toEqual([["CS_SEARCH_AFTER_INVALID", "from"]]);
    // The message names the ways to page deeper.
    const r = validateFrom(9_999, 10, false);
    expect(r.ok ? "" : r.errors[0]?.message).toMatch(/search_after.*point in time.*scroll/);
  });
});

describe("_source forms", () => {
  it("true, false, a string, an array, {includes, excludes} and the singular spellings", () => {
    expect(validateSourceFilter(true, ["tx"])).toEqual({ ok: true, value: undefined });
    expect(validateSourceFilter(false, ["tx"])).toEqual({ ok: true, value: { none: true } });
    expect(validateSourceFilter("hash", ["tx"])).toEqual({ ok: true, value: { includes: ["hash"] } });
    expect(validateSourceFilter({ includes: "hash", exclude: ["blockNumber.raw"] }, ["tx"])).toEqual({
      ok: true,
      value: { includes: ["hash"], excludes: ["blockNumber.raw"] },
    });
    expect(validateSourceFilter({ includes: [], excludes: [] }, ["tx"])).toEqual({ ok: true, value: undefined });
    const p = plan({ _source: { excludes: ["input"] } });
    expect(p.sourceExcludes).toEqual(["input"]);
    expect(p).not.toHaveProperty("source");
    expect(plan({ _source: false }).noSource).toBe(true);
  });
});

describe("search_after on a point in time", () => {
  it("takes one more value, a number (the _shard_doc tiebreaker), only with pit", () => {
    const body = { sort: [{ "blockNumber.num": "asc" }], search_after: [17, 4294967301] };
    expect(plan(body, ["tx"], true).searchAfter).toEqual([17, 4294967301]);
    expect(codes(body)).toEqual([["CS_SEARCH_AFTER_INVALID", "search_after"]]);
    expect(codes({ ...body, search_after: [17, "x"] }, ["tx"], true)).toEqual([["CS_SEARCH_AFTER_INVALID", "search_after[1]"]]);
  });
});
