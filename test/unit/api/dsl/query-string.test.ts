/**
 * The query_string and simple_query_string clauses (api/dsl/query-string.ts): the Lucene subset
 * Grafana and Kibana send, the fields it names checked against the kinds, and the refusals
 * (leading wildcards, regular expressions, proximity, field wildcards, unknown options).
 */
import { describe, expect, it } from "vitest";
import { QUERY_STRING_LIMITS } from "../../../../api/dsl/query-string.js";
import { validateQuery } from "../../../../api/dsl/validate.js";
import type { RecordKind } from "../../../../lib/records.js";

function ok(query: unknown, kinds: RecordKind[] = ["tx"]) {
  const r = validateQuery(query, kinds);
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

function first(query: unknown, kinds: RecordKind[] = ["tx"]) {
  const r = validateQuery(query, kinds);
  if (r.ok) throw new Error(`expected errors for ${JSON.stringify(query)}`);
  return { code: r.errors[0]?.code, path: r.errors[0]?.path };
}

const qs = (query: string, extra: Record<string, unknown> = {}) => ({ query_string: { query, ...extra } });

describe("query_string: accepted", () => {
  it("sends allow_leading_wildcard false and keeps the accepted options", () => {
    expect(ok(qs("*", { analyze_wildcard: true }))).toEqual({
      query_string: { query: "*", analyze_wildcard: true, allow_leading_wildcard: false },
    });
    expect(
      ok(
        qs("from:0xabc", {
          default_field: "to",
          fields: ["from", "to^2"],
          default_operator: "AND",
          lenient: true,
          allow_leading_wildcard: false,
        }),
      ),
    ).toEqual({
      query_string: {
        query: "from:0xabc",
        default_field: "to",
        fields: ["from", "to^2"],
        default_operator: "AND",
        lenient: true,
        allow_leading_wildcard: false,
      },
    });
  });

  it("the Lucene subset: field:value, phrases, AND/OR/NOT, + and -, groups, ranges, trailing wildcards, _exists_, fuzzy", () => {
    for (const q of [
      "*",
      "from:0xabc",
      'to:"0xabc def"',
      "from:0xabc AND (to:0xdef OR NOT status:0)",
      "+from:0xabc -to:0xdef !status:0",
      "blockNumber.num:[1 TO 5]",
      "blockNumber.num:{1 TO *]",
      "timestamp:[now-1d TO now]",
      "timestamp:[now-1d\\/d TO now\\/d}",
      "methodId:0xa9*",
      "_exists_:contractAddress",
      "to:*",
      "hash:0x12?4*",
      'methodId:"0xa9059cbb"~2',
      "blockNumber.num:>5",
      "0xabc",
      "from\\:x",
    ]) {
      expect(ok(qs(q)), q).toBeDefined();
    }
    expect(ok(qs("event:transfer~"), ["event"])).toBeDefined();
  });

  it("nested fields inside a nested query on their path", () => {
    expect(ok({ nested: { path: "args", query: qs("args.name:value AND args.value.scaled:[1000 TO *]") } }, ["event"])).toEqual({
      nested: {
        path: "args",
        query: { query_string: { query: "args.name:value AND args.value.scaled:[1000 TO *]", allow_leading_wildcard: false } },
        ignore_unmapped: true,
      },
    });
  });
});

describe("query_string: refused", () => {
  const P = "query.query_string.query";
  it("leading wildcards (and allow_leading_wildcard true): CS_QUERY_LEADING_WILDCARD", () => {
    expect(first(qs("from:*abc"))).toEqual({ code: "CS_QUERY_LEADING_WILDCARD", path: P });
    expect(first(qs("?bc"))).toEqual({ code: "CS_QUERY_LEADING_WILDCARD", path: P });
    expect(first(qs("a OR (b AND *c)"))).toEqual({ code: "CS_QUERY_LEADING_WILDCARD", path: P });
    expect(first(qs("a", { allow_leading_wildcard: true }))).toEqual({
      code: "CS_QUERY_LEADING_WILDCARD",
      path: "query.query_string.allow_leading_wildcard",
    });
  });

  it("regular expressions, and any unescaped / outside a phrase: CS_QUERY_REGEXP", () => {
    expect(first(qs("hash:/0x.*/"))).toEqual({ code: "CS_QUERY_REGEXP", path: P });
    expect(first(qs("/ab+c/"))).toEqual({ code: "CS_QUERY_REGEXP", path: P });
    expect(first(qs("a/b"))).toEqual({ code: "CS_QUERY_REGEXP", path: P });
    expect(first(qs("timestamp:[now-1d/d TO now] OR /x/"))).toEqual({ code: "CS_QUERY_REGEXP", path: P });
    expect(ok(qs('str:"a/b" AND a\\/b'), ["event"])).toBeDefined();
  });

  it("phrase proximity and phrase_slop above the cap: CS_QUERY_SLOP_TOO_LARGE", () => {
    expect(first(qs(`str:"a b"~${QUERY_STRING_LIMITS.maxSlop + 1}`), ["event"])).toEqual({ code: "CS_QUERY_SLOP_TOO_LARGE", path: P });
    expect(first(qs("a", { phrase_slop: QUERY_STRING_LIMITS.maxSlop + 1 }))).toEqual({
      code: "CS_QUERY_SLOP_TOO_LARGE",
      path: "query.query_string.phrase_slop",
    });
  });

  it("fields: unknown, nested outside a nested query, wildcards, unsearchable", () => {
    expect(first(qs("nosuch:1"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("a AND (b OR -nosuch:1)"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("nosuch:(a OR b)"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("a AND -nosuch:(b)"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("args.name:(value OR from)"), ["event"])).toEqual({ code: "CS_QUERY_NESTED_FIELD", path: P });
    expect(ok(qs("from:(0xabc OR 0xdef) AND to:0x1"))).toBeDefined();
    expect(first(qs("_exists_:nosuch"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("input:0x"))).toEqual({ code: "CS_QUERY_UNKNOWN_FIELD", path: P });
    expect(first(qs("args.name:value"), ["event"])).toEqual({ code: "CS_QUERY_NESTED_FIELD", path: P });
    expect(first(qs("fr*:0xabc"))).toEqual({ code: "CS_QUERY_INVALID", path: P });
    expect(first(qs("a", { default_field: "nosuch" }))).toEqual({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: "query.query_string.default_field",
    });
    expect(first(qs("a", { fields: ["from", "to*"] }))).toEqual({ code: "CS_QUERY_INVALID", path: "query.query_string.fields[1]" });
    expect(first(qs("a", { fields: [] }))).toEqual({ code: "CS_QUERY_INVALID", path: "query.query_string.fields" });
  });

  it("syntax errors, a too long query and options outside the list: CS_QUERY_INVALID", () => {
    expect(first(qs("from:(a"))).toEqual({ code: "CS_QUERY_INVALID", path: P });
    expect(first(qs("a".repeat(QUERY_STRING_LIMITS.maxLength + 1)))).toEqual({ code: "CS_QUERY_INVALID", path: P });
    expect(first({ query_string: { fields: ["from"] } })).toEqual({ code: "CS_QUERY_INVALID", path: "query.query_string" });
    for (const k of ["boost", "rewrite", "fuzzy_max_expansions", "max_determinized_states", "quote_field_suffix", "script"])
      expect(first(qs("a", { [k]: 1 })), k).toEqual({ code: "CS_QUERY_INVALID", path: `query.query_string.${k}` });
    expect(first(qs("a", { default_operator: "XOR" }))).toEqual({ code: "CS_QUERY_INVALID", path: "query.query_string.default_operator" });
  });
});

describe("simple_query_string", () => {
  it("accepts fields, flags without REGEXP and the usual options; no allow_leading_wildcard is added", () => {
    expect(
      ok(
        { simple_query_string: { query: '"a b"~2 +c -d e*', fields: ["str", "event"], default_operator: "and", flags: "AND|OR|PREFIX" } },
        ["event"],
      ),
    ).toEqual({
      simple_query_string: { query: '"a b"~2 +c -d e*', fields: ["str", "event"], default_operator: "and", flags: "AND|OR|PREFIX" },
    });
  });

  it("refuses unknown fields, default_field, REGEXP flags and large proximity", () => {
    expect(first({ simple_query_string: { query: "a", fields: ["nosuch"] } })).toEqual({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: "query.simple_query_string.fields[0]",
    });
    expect(first({ simple_query_string: { query: "a", default_field: "to" } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query.simple_query_string.default_field",
    });
    expect(first({ simple_query_string: { query: "a", flags: "REGEXP" } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query.simple_query_string.flags",
    });
    expect(first({ simple_query_string: { query: '"a b"~50' } })).toEqual({
      code: "CS_QUERY_SLOP_TOO_LARGE",
      path: "query.simple_query_string.query",
    });
  });
});

describe("range: format and time_zone on date fields (Grafana's epoch_millis)", () => {
  it("accepts them on dates, refuses them on numbers", () => {
    expect(ok({ range: { timestamp: { gte: 1668422437218, lte: 1668422625668, format: "epoch_millis", time_zone: "+01:00" } } })).toEqual({
      range: { timestamp: { gte: 1668422437218, lte: 1668422625668, format: "epoch_millis", time_zone: "+01:00" } },
    });
    expect(first({ range: { "gas.num": { gte: 1, format: "epoch_millis" } } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: 'query.range["gas.num"].format',
    });
    expect(first({ range: { timestamp: { gte: 1, format: "epoch{millis}" } } })).toEqual({
      code: "CS_QUERY_INVALID",
      path: "query.range.timestamp.format",
    });
  });
});
