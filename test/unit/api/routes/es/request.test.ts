/**
 * The Elasticsearch-only parts of a `_search` request (api/routes/es/request.ts): what is split off
 * the body and merged from the query string before the contract's validator sees the body.
 */
import { describe, expect, it } from "vitest";
import { checkDocvalueFields, splitEsSearch } from "../../../../../api/routes/es/request.js";
import { apiFailure } from "../../../../support/api-failure.js";

const failure = apiFailure;

describe("splitEsSearch", () => {
  it("takes fields and highlight off the body as given; script_fields {} is dropped, a script refused", () => {
    const fields = [{ field: "timestamp", format: "strict_date_optional_time_nanos" }];
    const highlight = { fields: { "*": {} } };
    const r = splitEsSearch({ size: 1, fields, highlight, script_fields: {} }, {});
    expect(r.body).toEqual({ size: 1 });
    expect(r.fields).toEqual(fields);
    expect(r.highlight).toEqual(highlight);
    expect(splitEsSearch({ size: 1 }, {}).fields).toBeUndefined();
    expect(failure(() => splitEsSearch({ script_fields: { x: { script: "1" } } }, {}))).toEqual({
      code: "CS_BODY_INVALID",
      path: "script_fields",
    });
    expect(failure(() => splitEsSearch({ script_fields: [] }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "script_fields" });
  });

  it("takes track_total_hits, stored_fields, docvalue_fields and pit off the body; the rest goes to the validator", () => {
    const r = splitEsSearch(
      {
        size: 3,
        from: 5,
        track_total_hits: 100,
        stored_fields: "_none_",
        docvalue_fields: ["blockNumber.num", { field: "hash" }, "hash"],
        pit: { id: "csp_x", keep_alive: "1m" },
      },
      {},
    );
    expect(r).toEqual({
      body: { size: 3, from: 5 },
      trackTotalHits: 100,
      metadataOnly: true,
      docvalueFields: ["blockNumber.num", "hash"],
      pit: { id: "csp_x", keepAlive: "1m" },
    });
  });

  it("track_total_hits: true by default; false, numbers and the query string's spelling; the body wins", () => {
    expect(splitEsSearch(undefined, {}).trackTotalHits).toBe(true);
    expect(splitEsSearch({ track_total_hits: false }, {}).trackTotalHits).toBe(false);
    expect(splitEsSearch({}, { track_total_hits: "false" }).trackTotalHits).toBe(false);
    expect(splitEsSearch({}, { track_total_hits: "250" }).trackTotalHits).toBe(250);
    expect(splitEsSearch({ track_total_hits: true }, { track_total_hits: "7" }).trackTotalHits).toBe(true);
    expect(failure(() => splitEsSearch({ track_total_hits: -1 }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "track_total_hits" });
    expect(failure(() => splitEsSearch({}, { track_total_hits: "many" }))).toEqual({
      code: "CS_BAD_REQUEST",
      path: "querystring.track_total_hits",
    });
  });

  it("merges size, from, sort and _source of the query string when the body lacks them", () => {
    const r = splitEsSearch({ size: 2 }, { size: "9", from: "4", sort: "blockNumber.num:desc,hash", _source_includes: "hash,from" });
    expect(r.body).toEqual({ size: 2, from: 4, sort: [{ "blockNumber.num": "desc" }, "hash"], _source: { includes: ["hash", "from"] } });
    expect(splitEsSearch({}, { _source: "false" }).body).toEqual({ _source: false });
    expect(splitEsSearch({}, { _source: "hash,to" }).body).toEqual({ _source: ["hash", "to"] });
    expect(splitEsSearch({}, { _source_excludes: "input" }).body).toEqual({ _source: { excludes: ["input"] } });
    // Not a number: handed over as is, for the validator's CS_SIZE_INVALID.
    expect(splitEsSearch({}, { size: "ten" }).body).toEqual({ size: "ten" });
  });

  it("refuses stored_fields other than _none_, malformed docvalue_fields and pit", () => {
    expect(failure(() => splitEsSearch({ stored_fields: ["hash"] }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "stored_fields" });
    expect(failure(() => splitEsSearch({ docvalue_fields: "hash" }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "docvalue_fields" });
    expect(failure(() => splitEsSearch({ docvalue_fields: [{ field: "timestamp", format: "epoch_millis" }] }, {}))).toEqual({
      code: "CS_BODY_INVALID",
      path: "docvalue_fields[0].format",
    });
    expect(failure(() => splitEsSearch({ pit: { id: 1 } }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "pit" });
    expect(failure(() => splitEsSearch({ pit: { id: "x", routing: "y" } }, {}))).toEqual({ code: "CS_BODY_INVALID", path: "pit" });
  });
});

describe("checkDocvalueFields", () => {
  it("accepts fields with doc values of the kinds; refuses text, nested and unknown fields", () => {
    expect(() => checkDocvalueFields(["blockNumber.num", "from", "timestamp"], ["tx"])).not.toThrow();
    expect(failure(() => checkDocvalueFields(["transactionHash", "str"], ["event"]))).toEqual({
      code: "CS_BODY_INVALID",
      path: "docvalue_fields[1]",
    });
    expect(failure(() => checkDocvalueFields(["args.name"], ["event"]))).toEqual({ code: "CS_BODY_INVALID", path: "docvalue_fields[0]" });
    expect(failure(() => checkDocvalueFields(["nope"], ["tx"]))).toEqual({ code: "CS_BODY_INVALID", path: "docvalue_fields[0]" });
  });
});
