import { describe, expect, it } from "vitest";
import {
  LIMITS,
  type SearchPlan,
  validateQuery,
  validateSearchBody,
  validateSize,
  validateSort,
  validateSource,
} from "../../../../api/dsl/validate.js";
import type { ApiErrorDetail } from "../../../../api/errors.js";
import type { RecordKind } from "../../../../lib/records.js";
import { jsonPath } from "../../../../lib/validation/path.js";

const MAX_SIZE = 10_000;

function ok(body: unknown, kinds: RecordKind[] = ["tx"]): SearchPlan {
  const r = validateSearchBody(body, { kinds, maxSize: MAX_SIZE });
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

function fail(body: unknown, kinds: RecordKind[] = ["tx"]): ApiErrorDetail[] {
  const r = validateSearchBody(body, { kinds, maxSize: MAX_SIZE });
  if (r.ok) throw new Error(`expected errors, got ${JSON.stringify(r.value)}`);
  return r.errors;
}

/** The first error's code and path. */
function first(body: unknown, kinds: RecordKind[] = ["tx"]): { code: string; path: string | null } {
  const e = fail(body, kinds)[0] as ApiErrorDetail;
  return { code: e.code, path: e.path };
}

describe("jsonPath", () => {
  it("joins identifiers with dots, quotes other keys, brackets indexes", () => {
    expect(jsonPath("", "query")).toBe("query");
    expect(jsonPath("query", "bool")).toBe("query.bool");
    expect(jsonPath("query.bool.filter", 1)).toBe("query.bool.filter[1]");
    expect(jsonPath("query.term", "number.num")).toBe('query.term["number.num"]');
    expect(jsonPath("query.term", "_id")).toBe("query.term._id");
  });
});

describe("validateSearchBody: defaults", () => {
  it("no body and an empty body mean the first 10 records", () => {
    expect(ok(undefined)).toEqual({ size: 10 });
    expect(ok({})).toEqual({ size: 10 });
    expect(ok({ query: {} })).toEqual({ size: 10 });
  });

  it("refuses a non-object body and unknown top-level keys with their path", () => {
    expect(first([])).toEqual({ code: "CS_BODY_INVALID", path: null });
    expect(first(null)).toEqual({ code: "CS_BODY_INVALID", path: null });
    expect(first({ from: -1 })).toEqual({ code: "CS_RESULT_WINDOW_TOO_LARGE", path: "from" });
    expect(first({ highlight: {} })).toEqual({ code: "CS_BODY_INVALID", path: "highlight" });
    expect(first({ aggs: [] })).toEqual({ code: "CS_AGG_INVALID", path: "aggs" }); // an extension: a map is needed
  });

  it("collects every problem", () => {
    const errors = fail({ foo: 1, size: -2, sort: { input: "asc" }, _source: ["nope"], query: { wildcard: {} } });
    expect(errors.map((e) => e.code).sort()).toEqual(
      ["CS_BODY_INVALID", "CS_QUERY_UNSUPPORTED_CLAUSE", "CS_SIZE_INVALID", "CS_SORT_INVALID", "CS_SOURCE_INVALID"].sort(),
    );
  });
});

describe("validateSearchBody: allowed clauses", () => {
  it("bool with filter (clause or array), should, must, must_not, minimum_should_match", () => {
    const single = ok({ query: { bool: { filter: { term: { blockHash: "0xab" } } } } });
    expect(single.query).toEqual({ bool: { filter: { term: { blockHash: "0xab" } } } });
    /** A bool with every occurrence type (a new object each call, so the input is never the expectation). */
    const everyOccurrence = () => ({
      filter: [{ range: { "blockNumber.num": { gte: 1, lte: 2 } } }],
      should: [{ term: { from: "0xAa" } }, { term: { to: "0xAa" } }],
      must: [{ exists: { field: "to" } }],
      must_not: { term: { status: 0 } },
      minimum_should_match: 1,
    });
    const all = ok({ query: { bool: everyOccurrence() } });
    expect(all.query).toEqual({ bool: everyOccurrence() });
    expect(ok({ query: { bool: { should: [], minimum_should_match: "50%" } } }).query).toEqual({
      bool: { should: [], minimum_should_match: "50%" },
    });
  });

  it("term: {field: value} and {field: {value}}, _id included", () => {
    expect(ok({ query: { term: { "number.num": 17000000 } } }, ["block"]).query).toEqual({ term: { "number.num": 17000000 } });
    expect(ok({ query: { term: { blockHash: { value: "0xab" } } } }).query).toEqual({ term: { blockHash: "0xab" } });
    expect(ok({ query: { term: { _id: "0xab" } } }).query).toEqual({ term: { _id: "0xab" } });
    expect(ok({ query: { term: { "address.raw": "0xAb" } } }, ["log"]).query).toEqual({ term: { "address.raw": "0xAb" } });
  });

  it("term on a text field with a .raw keyword becomes a case-insensitive term on .raw", () => {
    expect(ok({ query: { term: { event: "Transfer" } } }, ["event"]).query).toEqual({
      term: { "event.raw": { value: "Transfer", case_insensitive: true } },
    });
    expect(ok({ query: { term: { "event.raw": "Transfer" } } }, ["event"]).query).toEqual({ term: { "event.raw": "Transfer" } });
  });

  it("terms (array of values, also _id)", () => {
    expect(ok({ query: { terms: { from: ["0xa", "0xb"] } } }).query).toEqual({ terms: { from: ["0xa", "0xb"] } });
    expect(ok({ query: { terms: { _id: ["0xa"] } } }).query).toEqual({ terms: { _id: ["0xa"] } });
  });

  it("range with numeric and date bounds", () => {
    expect(ok({ query: { range: { "blockNumber.num": { gt: 1, lt: "5" } } } }).query).toEqual({
      range: { "blockNumber.num": { gt: 1, lt: "5" } },
    });
    expect(ok({ query: { range: { timestamp: { gte: "2023-04-13T00:00:00", lte: "now" } } } }).query).toEqual({
      range: { timestamp: { gte: "2023-04-13T00:00:00", lte: "now" } },
    });
  });

  it("ids, exists (leaf and object), match_all, match on a text field", () => {
    expect(ok({ query: { ids: { values: ["0xa", "0xb"] } } }).query).toEqual({ ids: { values: ["0xa", "0xb"] } });
    expect(ok({ query: { exists: { field: "to" } } }).query).toEqual({ exists: { field: "to" } });
    expect(ok({ query: { exists: { field: "baseFeePerGas" } } }, ["block"]).query).toEqual({ exists: { field: "baseFeePerGas" } });
    // eland counts a DataFrame's rows with exists on _id; inside a nested clause _id is no field.
    expect(ok({ query: { exists: { field: "_id" } } }, ["tx"]).query).toEqual({ exists: { field: "_id" } });
    expect(fail({ query: { nested: { path: "args", query: { exists: { field: "_id" } } } } }, ["event"])[0]?.code).toBe(
      "CS_QUERY_UNKNOWN_FIELD",
    );
    expect(ok({ query: { match_all: {} } }).query).toEqual({ match_all: {} });
    expect(ok({ query: { match: { event: "transfer" } } }, ["event"]).query).toEqual({ match: { event: { query: "transfer" } } });
    expect(ok({ query: { match: { str: { query: "USDT transfer", operator: "and" } } } }, ["event"]).query).toEqual({
      match: { str: { query: "USDT transfer", operator: "and" } },
    });
  });

  it("nested on args with fields inside the path", () => {
    const q = {
      nested: {
        path: "args",
        query: { bool: { filter: [{ term: { "args.name": "from" } }, { term: { "args.value.hex": "0xab" } }] } },
      },
    };
    // The validator adds ignore_unmapped (kinds without the nested path match nothing instead of failing).
    expect(ok({ query: q }, ["event"]).query).toEqual({ nested: { ...q.nested, ignore_unmapped: true } });
    expect(
      ok({ query: { nested: { path: "args", score_mode: "none", query: { exists: { field: "args.value" } } } } }, ["event"]).query,
    ).toEqual({
      nested: { path: "args", score_mode: "none", query: { exists: { field: "args.value" } }, ignore_unmapped: true },
    });
  });

  it("block,tx accepts a field of either kind", () => {
    expect(
      ok({ query: { bool: { should: [{ term: { "number.num": 1 } }, { term: { "blockNumber.num": 1 } }] } } }, ["block", "tx"]).query,
    ).toBeDefined();
    expect(first({ query: { term: { "number.num": 1 } } }, ["tx"])).toEqual({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: 'query.term["number.num"]',
    });
  });
});

describe("validateSearchBody: refused features", () => {
  const refused: Array<[string, unknown]> = [
    ["script", { script: { source: "true" } }],
    ["script_score", { query: { match_all: {} }, script: { source: "1" } }],
    ["function_score", { query: { match_all: {} } }],
    ["wrapper", { query: "eyJtYXRjaF9hbGwiOnt9fQ==" }],
    ["regexp", { from: "0x.*" }],
    ["wildcard", { from: "0x*" }],
    ["prefix", { from: "0x" }],
    ["fuzzy", { from: "0x" }],
    ["wrapper", { query: "eyJtYXRjaF9hbGwiOnt9fQ==" }],
    ["more_like_this", { fields: ["from"], like: "0x" }],
    ["percolate", { field: "q", document: {} }],
    ["has_child", { type: "tx", query: { match_all: {} } }],
    ["has_parent", { parent_type: "block", query: { match_all: {} } }],
  ];

  for (const [name, body] of refused) {
    it(`${name} → CS_QUERY_UNSUPPORTED_CLAUSE at its path`, () => {
      expect(first({ query: { [name]: body } })).toEqual({ code: "CS_QUERY_UNSUPPORTED_CLAUSE", path: `query.${name}` });
      expect(first({ query: { bool: { filter: [{ term: { blockHash: "0xab" } }, { [name]: body }] } } })).toEqual({
        code: "CS_QUERY_UNSUPPORTED_CLAUSE",
        path: `query.bool.filter[1].${name}`,
      });
    });
  }

  it("terms lookup → CS_QUERY_UNSUPPORTED_CLAUSE at the field", () => {
    expect(first({ query: { terms: { from: { index: "users", id: "1", path: "addresses" } } } })).toEqual({
      code: "CS_QUERY_UNSUPPORTED_CLAUSE",
      path: "query.terms.from",
    });
  });

  it("a refused clause inside nested is reported at its path", () => {
    expect(first({ query: { nested: { path: "args", query: { wildcard: { "args.name": "f*" } } } } }, ["event"])).toEqual({
      code: "CS_QUERY_UNSUPPORTED_CLAUSE",
      path: "query.nested.query.wildcard",
    });
  });
});

describe("validateSearchBody: fields", () => {
  it("unknown field", () => {
    expect(first({ query: { term: { sender: "0xab" } } })).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: "query.term.sender" });
    expect(first({ query: { bool: { filter: [{ range: { "blockNumber.nm": { gte: 1 } } }] } } })).toEqual({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: 'query.bool.filter[0].range["blockNumber.nm"]',
    });
    expect(first({ query: { exists: { field: "nope" } } })).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: "query.exists.field" });
  });

  it("a stored but not searchable field is refused", () => {
    expect(first({ query: { term: { input: "0x" } } })).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: "query.term.input" });
  });

  it("an object path needs a leaf field", () => {
    expect(first({ query: { term: { blockNumber: 1 } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.term.blockNumber" });
  });

  it("nested with a field outside the path", () => {
    expect(first({ query: { nested: { path: "args", query: { term: { address: "0xab" } } } } }, ["event"])).toEqual({
      code: "CS_QUERY_NESTED_FIELD",
      path: "query.nested.query.term.address",
    });
  });

  it("a nested field outside a nested query", () => {
    expect(first({ query: { term: { "args.name": "from" } } }, ["event"])).toEqual({
      code: "CS_QUERY_NESTED_FIELD",
      path: 'query.term["args.name"]',
    });
  });

  it("nested on a path that is not nested", () => {
    expect(first({ query: { nested: { path: "blockNumber", query: { match_all: {} } } } }, ["event"])).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query.nested.path",
    });
    expect(first({ query: { nested: { path: "args", query: { match_all: {} } } } }, ["tx"])).toEqual({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: "query.nested.path",
    });
  });

  it("match only on text fields; range only on numeric/date fields", () => {
    expect(first({ query: { match: { from: "0xab" } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.match.from" });
    expect(first({ query: { range: { from: { gte: "0xa" } } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.range.from" });
  });

  it("obvious value type mistakes", () => {
    expect(first({ query: { term: { "blockNumber.num": "abc" } } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: 'query.term["blockNumber.num"]',
    });
    expect(first({ query: { term: { from: { value: "0xa", boost: 2 } } } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query.term.from.boost",
    });
  });
});

describe("validateSearchBody: shapes and caps", () => {
  it("a clause must have exactly one key", () => {
    expect(first({ query: { term: { from: "0xa" }, range: { "blockNumber.num": { gte: 1 } } } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query",
    });
    expect(first({ query: { bool: { filter: [{}] } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.bool.filter[0]" });
    expect(first({ query: { bool: { filter: ["x"] } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.bool.filter[0]" });
    expect(first({ query: { bool: { boost: 2 } } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.bool.boost" });
    expect(first({ query: "x" })).toEqual({ code: "CS_QUERY_INVALID", path: "query" });
  });

  it("depth cap", () => {
    let q: unknown = { term: { from: "0xa" } };
    for (let i = 0; i < LIMITS.maxDepth - 1; i++) q = { bool: { filter: q } };
    expect(ok({ query: q }).query).toBeDefined(); // depth 8
    const deeper = { bool: { filter: q } }; // depth 9: the innermost term is too deep
    const path = `query${".bool.filter".repeat(LIMITS.maxDepth)}.term`;
    expect(first({ query: deeper })).toEqual({ code: "CS_QUERY_TOO_DEEP", path });
  });

  it("clause cap", () => {
    const filter = Array.from({ length: LIMITS.maxClauses - 1 }, (_, i) => ({ term: { logCount: i } }));
    expect(ok({ query: { bool: { filter } } }).query).toBeDefined(); // 1 bool + 255 terms
    expect(first({ query: { bool: { filter: [...filter, { term: { logCount: 0 } }] } } })).toEqual({
      code: "CS_QUERY_TOO_MANY_CLAUSES",
      path: `query.bool.filter[${LIMITS.maxClauses - 1}].term`,
    });
  });

  it("values cap of terms and ids", () => {
    const values = Array.from({ length: LIMITS.maxValues }, (_, i) => `0x${i.toString(16)}`);
    expect(ok({ query: { terms: { from: values } } }).query).toBeDefined();
    expect(first({ query: { terms: { from: [...values, "0x1"] } } })).toEqual({
      code: "CS_QUERY_TOO_MANY_VALUES",
      path: "query.terms.from",
    });
    expect(first({ query: { ids: { values: [...values, "0x1"] } } })).toEqual({
      code: "CS_QUERY_TOO_MANY_VALUES",
      path: "query.ids.values",
    });
  });
});

describe("sort", () => {
  it("accepts a map, {order}, an array of maps and _score", () => {
    expect(ok({ sort: { "blockNumber.num": "desc" } }).sort).toEqual([{ "blockNumber.num": { order: "desc" } }]);
    expect(ok({ sort: [{ "blockNumber.num": { order: "asc" } }, { _score: "desc" }] }).sort).toEqual([
      { "blockNumber.num": { order: "asc" } },
      { _score: { order: "desc" } },
    ]);
    expect(validateSort({ timestamp: "asc" }, ["tx"])).toEqual({ ok: true, value: [{ timestamp: { order: "asc" } }] });
  });

  it("adds unmapped_type for a field missing from one of several kinds", () => {
    expect(ok({ sort: { "number.num": "desc" } }, ["block", "tx"]).sort).toEqual([
      { "number.num": { order: "desc", unmapped_type: "long" } },
    ]);
  });

  it("refuses text, nested, unsearchable and unknown fields and bad orders", () => {
    expect(first({ sort: { event: "asc" } }, ["event"])).toEqual({ code: "CS_SORT_INVALID", path: "sort.event" });
    expect(first({ sort: { "args.pos": "asc" } }, ["event"])).toEqual({ code: "CS_SORT_INVALID", path: 'sort["args.pos"]' });
    expect(first({ sort: { input: "asc" } })).toEqual({ code: "CS_SORT_INVALID", path: "sort.input" });
    expect(first({ sort: { nope: "asc" } })).toEqual({ code: "CS_SORT_INVALID", path: "sort.nope" });
    expect(first({ sort: { "blockNumber.num": "up" } })).toEqual({ code: "CS_SORT_INVALID", path: 'sort["blockNumber.num"]' });
    expect(first({ sort: [{ "blockNumber.num": { order: "desc", mode: "max" } }] })).toEqual({
      code: "CS_SORT_INVALID",
      path: 'sort[0]["blockNumber.num"].mode',
    });
    expect(first({ sort: 7 })).toEqual({ code: "CS_SORT_INVALID", path: "sort" });
    expect(first({ sort: "input" })).toEqual({ code: "CS_SORT_INVALID", path: "sort" });
    expect(first({ sort: [{}] })).toEqual({ code: "CS_SORT_INVALID", path: "sort[0]" });
  });
});

describe("size", () => {
  it("accepts -1 and 0..maxSize, defaults to 10", () => {
    expect(validateSize(undefined, 100)).toEqual({ ok: true, value: 10 });
    expect(validateSize(-1, 100)).toEqual({ ok: true, value: -1 });
    expect(validateSize(0, 100)).toEqual({ ok: true, value: 0 });
    expect(validateSize(100, 100)).toEqual({ ok: true, value: 100 });
  });

  it("refuses everything else", () => {
    for (const bad of [101, -2, 1.5, "10", null, true]) {
      const r = validateSize(bad, 100);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors[0]).toMatchObject({ code: "CS_SIZE_INVALID", path: "size" });
    }
    expect(first({ size: MAX_SIZE + 1 })).toEqual({ code: "CS_SIZE_INVALID", path: "size" });
  });
});

describe("_source", () => {
  it("accepts leaf and object paths, drops duplicates", () => {
    expect(validateSource(["hash", "blockNumber", "blockNumber.num", "hash"], ["tx"])).toEqual({
      ok: true,
      value: ["hash", "blockNumber", "blockNumber.num"],
    });
    expect(validateSource(["args.name"], ["event"])).toEqual({ ok: true, value: ["args.name"] });
    expect(validateSource([], ["tx"])).toEqual({ ok: true, value: undefined });
  });

  it("refuses non-arrays, unknown paths, multi-fields and wildcards", () => {
    expect(first({ _source: 3 })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source" });
    expect(first({ _source: { includes: ["hash"], fields: ["to"] } })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source.fields" });
    expect(first({ _source: { excludes: ["nope"] } })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source.excludes[0]" });
    expect(validateSource("hash", ["tx"])).toMatchObject({ ok: false, errors: [{ code: "CS_SOURCE_INVALID", path: "_source" }] });
    expect(first({ _source: ["hash", "nope"] })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source[1]" });
    expect(first({ _source: ["from.raw"] })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source[0]" });
    expect(first({ _source: ["block*"] })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source[0]" });
    expect(first({ _source: [1] })).toEqual({ code: "CS_SOURCE_INVALID", path: "_source[0]" });
  });
});

describe("validateQuery", () => {
  it("is usable on its own", () => {
    expect(validateQuery({ term: { transactionHash: "0xab" } }, ["log"])).toEqual({
      ok: true,
      value: { term: { transactionHash: "0xab" } },
    });
    const r = validateQuery({ prefix: { address: "0x" } }, ["log"], "q");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]?.path).toBe("q.prefix");
  });
});
