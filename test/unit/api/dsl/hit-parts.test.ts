/**
 * The hit parts the Elasticsearch-compatible routes add on request (api/dsl/hit-parts.ts):
 * `fields` (eland's to_pandas, Grafana) and `highlight` (Grafana's logs), checked against the kinds'
 * field catalogue; and the Grafana-sent shapes of the query language (api/dsl/validate.ts): the
 * sort options `unmapped_type` / `numeric_type`, the legacy `range` bounds `from` / `to`.
 */
import { describe, expect, it } from "vitest";
import { globRegExp, validateFields, validateHighlight } from "../../../../api/dsl/hit-parts.js";
import { validateSearchBody } from "../../../../api/dsl/validate.js";
import type { RecordKind } from "../../../../lib/records.js";

const problems = (r: { ok: boolean; errors?: Array<{ code: string; path: string | null }> }) =>
  r.ok ? [] : (r.errors ?? []).map((e) => [e.code, e.path]);
const plan = (body: unknown, kinds: RecordKind[] = ["tx"]) => {
  const r = validateSearchBody(body, { kinds, maxSize: 10_000 });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
};
const codes = (body: unknown, kinds: RecordKind[] = ["tx"]) => problems(validateSearchBody(body, { kinds, maxSize: 10_000 }));

describe("fields", () => {
  it("names, * patterns and {field, format} of date fields; duplicates dropped", () => {
    const r = validateFields(
      [
        "hash",
        "blockNumber.*",
        { field: "timestamp", format: "strict_date_optional_time_nanos" },
        "hash",
        { field: "from", include_unmapped: true },
      ],
      ["tx"],
    );
    expect(r).toEqual({
      ok: true,
      value: [
        { field: "hash" },
        { field: "blockNumber.*" },
        { field: "timestamp", format: "strict_date_optional_time_nanos" },
        { field: "from" },
      ],
    });
    expect(validateFields(["*"], ["block", "tx"]).ok).toBe(true);
  });

  it("refuses unknown fields, patterns matching nothing, formats of non-date fields, other options, a non-array", () => {
    expect(
      problems(validateFields(["nope", "zz*", { field: "hash", format: "epoch_millis" }, { field: "hash", script: 1 }, 5], ["tx"])),
    ).toEqual([
      ["CS_BODY_INVALID", "fields[0]"],
      ["CS_BODY_INVALID", "fields[1]"],
      ["CS_BODY_INVALID", "fields[2].format"],
      ["CS_BODY_INVALID", "fields[3].script"],
      ["CS_BODY_INVALID", "fields[4]"],
    ]);
    expect(problems(validateFields("hash", ["tx"]))).toEqual([["CS_BODY_INVALID", "fields"]]);
    // event exists in event records only
    expect(problems(validateFields(["event"], ["tx"]))).toEqual([["CS_BODY_INVALID", "fields[0]"]]);
    expect(validateFields(["event"], ["event"]).ok).toBe(true);
  });

  it("globRegExp matches whole names, * over any characters, dots literal", () => {
    expect(globRegExp("blockNumber.*").test("blockNumber.num")).toBe(true);
    expect(globRegExp("blockNumber.*").test("blockNumberXnum")).toBe(false);
    expect(globRegExp("*").test("a.b")).toBe(true);
    expect(globRegExp("hash").test("hashes")).toBe(false);
  });
});

describe("highlight", () => {
  it("takes Grafana's logs highlight and per-field options", () => {
    const grafana = { pre_tags: ["@HIGHLIGHT@"], post_tags: ["@/HIGHLIGHT@"], fragment_size: 2147483647, fields: { "*": {} } };
    expect(validateHighlight(grafana, ["tx"])).toEqual({ ok: true, value: grafana });
    const perField = { fields: { methodId: { number_of_fragments: 0, require_field_match: false } }, encoder: "html" };
    expect(validateHighlight(perField, ["tx"])).toEqual({ ok: true, value: perField });
  });

  it("refuses highlight_query, unknown options, bad values, unknown fields, no fields", () => {
    expect(
      problems(
        validateHighlight(
          {
            highlight_query: { script: {} },
            fields: { nope: {}, hash: { fragment_size: -1, pre_tags: "x" }, from: [] },
            boundary_chars: ".",
          },
          ["tx"],
        ),
      ),
    ).toEqual([
      ["CS_BODY_INVALID", "highlight.highlight_query"],
      ["CS_BODY_INVALID", "highlight.boundary_chars"],
      ["CS_BODY_INVALID", "highlight.fields.nope"],
      ["CS_BODY_INVALID", "highlight.fields.hash.fragment_size"],
      ["CS_BODY_INVALID", "highlight.fields.hash.pre_tags"],
      ["CS_BODY_INVALID", "highlight.fields.from"],
    ]);
    expect(problems(validateHighlight({ pre_tags: ["a"] }, ["tx"]))).toEqual([["CS_BODY_INVALID", "highlight"]]);
    expect(problems(validateHighlight({ fields: {}, pre_tags: new Array(11).fill("a") }, ["tx"]))).toEqual([
      ["CS_BODY_INVALID", "highlight"],
    ]);
    expect(problems(validateHighlight({ fields: { "*": {} }, post_tags: new Array(11).fill("a") }, ["tx"]))).toEqual([
      ["CS_BODY_INVALID", "highlight.post_tags"],
    ]);
  });
});

describe("sort options Grafana sends", () => {
  it("unmapped_type is accepted and dropped (the validator's own unmapped_type stays); numeric_type passed on", () => {
    expect(plan({ sort: { timestamp: { order: "desc", unmapped_type: "boolean" }, _doc: { order: "desc" } } }).sort).toEqual([
      { timestamp: { order: "desc" } },
      { _doc: { order: "desc" } },
    ]);
    // Over block and tx, transactionIndex.num is tx's only: unmapped_type comes from its own type, not the client's.
    expect(plan({ sort: [{ "transactionIndex.num": { order: "asc", unmapped_type: "boolean" } }] }, ["block", "tx"]).sort).toEqual([
      { "transactionIndex.num": { order: "asc", unmapped_type: "long" } },
    ]);
    expect(plan({ sort: [{ timestamp: { order: "asc", numeric_type: "date_nanos" } }] }).sort).toEqual([
      { timestamp: { order: "asc", numeric_type: "date_nanos" } },
    ]);
  });

  it("refuses other options, a bad numeric_type, numeric_type on a keyword, a non-string unmapped_type", () => {
    expect(codes({ sort: [{ timestamp: { order: "asc", mode: "min" } }] })).toEqual([["CS_SORT_INVALID", "sort[0].timestamp.mode"]]);
    expect(codes({ sort: [{ timestamp: { numeric_type: "float" } }] })).toEqual([["CS_SORT_INVALID", "sort[0].timestamp.numeric_type"]]);
    expect(codes({ sort: [{ hash: { numeric_type: "long" } }] })).toEqual([["CS_SORT_INVALID", "sort[0].hash.numeric_type"]]);
    expect(codes({ sort: [{ hash: { unmapped_type: 1 } }] })).toEqual([["CS_SORT_INVALID", "sort[0].hash.unmapped_type"]]);
  });
});

describe("range with the legacy from / to", () => {
  it("from is gte and to lte; include_lower / include_upper false make them gt / lt; null is no bound", () => {
    expect(plan({ query: { range: { timestamp: { from: 1, to: 2, format: "epoch_millis" } } } }).query).toEqual({
      range: { timestamp: { format: "epoch_millis", gte: 1, lte: 2 } },
    });
    expect(plan({ query: { range: { "gasUsed.num": { from: 1, to: 9, include_lower: false, include_upper: false } } } }).query).toEqual({
      range: { "gasUsed.num": { gt: 1, lt: 9 } },
    });
    expect(plan({ query: { range: { "gasUsed.num": { from: null, to: 9 } } } }).query).toEqual({ range: { "gasUsed.num": { lte: 9 } } });
  });

  it("refuses a bound given both ways, flags that are not booleans, no bound at all, bad values at the legacy key's path", () => {
    expect(codes({ query: { range: { "gasUsed.num": { from: 1, gte: 2 } } } })).toEqual([
      ["CS_QUERY_INVALID", 'query.range["gasUsed.num"].from'],
    ]);
    expect(codes({ query: { range: { "gasUsed.num": { from: 1, include_lower: "no" } } } })).toEqual([
      ["CS_QUERY_INVALID", 'query.range["gasUsed.num"].include_lower'],
    ]);
    expect(codes({ query: { range: { "gasUsed.num": { from: null, to: null } } } })).toEqual([
      ["CS_QUERY_INVALID", 'query.range["gasUsed.num"]'],
    ]);
    expect(codes({ query: { range: { "gasUsed.num": { from: "abc" } } } })).toEqual([
      ["CS_QUERY_INVALID", 'query.range["gasUsed.num"].from'],
    ]);
  });
});
