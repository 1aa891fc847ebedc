import { describe, expect, it } from "vitest";
import { REFUSED_BODY_KEYS, type SearchPlan, validateSearchBody } from "../../../../api/dsl/validate.js";
import type { ApiErrorDetail } from "../../../../api/errors.js";
import type { RecordKind } from "../../../../lib/records.js";

function check(body: unknown, kinds: RecordKind[] = ["tx"]) {
  return validateSearchBody(body, { kinds, maxSize: 10_000 });
}

function ok(body: unknown, kinds: RecordKind[] = ["tx"]): SearchPlan {
  const r = check(body, kinds);
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

function first(body: unknown, kinds: RecordKind[] = ["tx"]): { code: string; path: string | null } {
  const r = check(body, kinds);
  if (r.ok) throw new Error(`expected errors for ${JSON.stringify(body)}`);
  const e = r.errors[0] as ApiErrorDetail;
  return { code: e.code, path: e.path };
}

describe("refused Elasticsearch features (issue §2): 400 with a code and path each", () => {
  const cases: Array<[string, unknown, string, string]> = [
    ["runtime_mappings", { runtime_mappings: { x: { type: "long", script: "emit(1)" } } }, "CS_BODY_INVALID", "runtime_mappings"],
    ["script_fields", { script_fields: { x: { script: "1" } } }, "CS_BODY_INVALID", "script_fields"],
    ["highlight", { highlight: { fields: { event: {} } } }, "CS_BODY_INVALID", "highlight"],
    ["suggest", { suggest: { s: { text: "x", term: { field: "event" } } } }, "CS_BODY_INVALID", "suggest"],
    ["rescore", { rescore: { window_size: 10 } }, "CS_BODY_INVALID", "rescore"],
    ["profile", { profile: true }, "CS_BODY_INVALID", "profile"],
    ["explain", { explain: true }, "CS_BODY_INVALID", "explain"],
    ["stored_fields", { stored_fields: ["hash"] }, "CS_BODY_INVALID", "stored_fields"],
    ["docvalue_fields", { docvalue_fields: ["hash"] }, "CS_BODY_INVALID", "docvalue_fields"],
    ["from past the result window", { from: 9_991 }, "CS_RESULT_WINDOW_TOO_LARGE", "from"],
    ["_script sort (map)", { sort: { _script: { type: "number", script: "1", order: "asc" } } }, "CS_SORT_INVALID", "sort._script"],
    ["_script sort (array)", { sort: [{ _script: { script: "1" } }] }, "CS_SORT_INVALID", "sort[0]._script"],
    ["script query", { query: { script: { script: "true" } } }, "CS_QUERY_UNSUPPORTED_CLAUSE", "query.script"],
    ["scripted_metric agg", { aggs: { a: { scripted_metric: {} } } }, "CS_AGG_UNSUPPORTED", "aggs.a.scripted_metric"],
  ];
  for (const [name, body, code, path] of cases) {
    it(name, () => {
      expect(first(body)).toEqual({ code, path });
    });
  }

  it("explains why a known feature is refused", () => {
    const r = check({ highlight: {} });
    expect(!r.ok && r.errors[0]?.message).toMatch(/highlight is not supported/);
    expect(REFUSED_BODY_KEYS.runtime_mappings).toBeDefined();
  });
});

describe("search_after (extension)", () => {
  it("takes one value per sort key", () => {
    const plan = ok({ sort: [{ "blockNumber.num": "desc" }, { hash: "asc" }], search_after: [17034871, "0xab"] });
    expect(plan.searchAfter).toEqual([17034871, "0xab"]);
    expect(ok({ sort: { timestamp: "asc" }, search_after: [1681375151000] }).searchAfter).toEqual([1681375151000]);
    expect(ok({ sort: { to: "asc" }, search_after: [null] }).searchAfter).toEqual([null]);
  });

  it("refuses a missing sort, a length mismatch, bad values and size -1", () => {
    expect(first({ search_after: [1] })).toEqual({ code: "CS_SEARCH_AFTER_INVALID", path: "search_after" });
    expect(first({ sort: { hash: "asc" }, search_after: ["a", "b"] })).toEqual({ code: "CS_SEARCH_AFTER_INVALID", path: "search_after" });
    expect(first({ sort: { hash: "asc" }, search_after: [] })).toEqual({ code: "CS_SEARCH_AFTER_INVALID", path: "search_after" });
    expect(first({ sort: { hash: "asc" }, search_after: "0xab" })).toEqual({ code: "CS_SEARCH_AFTER_INVALID", path: "search_after" });
    expect(first({ sort: { hash: "asc" }, search_after: [{ a: 1 }] })).toEqual({
      code: "CS_SEARCH_AFTER_INVALID",
      path: "search_after[0]",
    });
    expect(first({ sort: { "blockNumber.num": "asc" }, search_after: ["x"] })).toEqual({
      code: "CS_SEARCH_AFTER_INVALID",
      path: "search_after[0]",
    });
    expect(first({ sort: { hash: "asc" }, search_after: ["a"], size: -1 })).toEqual({
      code: "CS_SEARCH_AFTER_INVALID",
      path: "search_after",
    });
  });

  it("reports only the sort errors when the sort itself is invalid", () => {
    const r = check({ sort: { input: "asc" }, search_after: [1] });
    expect(!r.ok && r.errors.map((e) => e.code)).toEqual(["CS_SORT_INVALID"]);
  });
});

describe("aggs / aggregations (extension)", () => {
  it("puts the sanitized aggregations in the plan, under either key", () => {
    expect(ok({ size: 0, aggs: { n: { cardinality: { field: "from" } } } }).aggs).toEqual({ n: { cardinality: { field: "from" } } });
    expect(ok({ aggregations: { n: { max: { field: "gas.num" } } } }).aggs).toEqual({ n: { max: { field: "gas.num" } } });
    expect(ok({ aggs: {} })).toEqual({ size: 10 });
  });

  it("refuses both keys at once, and reports agg problems with query problems", () => {
    expect(first({ aggs: { a: { sum: { field: "gas.num" } } }, aggregations: {} })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggregations",
    });
    const r = check({ query: { wildcard: {} }, aggs: { a: { terms: { field: "event" } } } }, ["event"]);
    expect(!r.ok && r.errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_QUERY_UNSUPPORTED_CLAUSE", "query.wildcard"],
      ["CS_AGG_INVALID", "aggs.a.terms.field"],
    ]);
  });
});
