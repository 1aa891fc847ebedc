/** Elasticsearch's `filter_path` semantics (api/search/filter-path.ts) on answers shaped like the API's. */
import { describe, expect, it } from "vitest";
import { applyFilterPath, parseFilterPath } from "../../../../api/search/filter-path.js";

const answer = {
  _scroll_id: "css_x",
  took: 3,
  timed_out: false,
  _shards: { total: 2, successful: 2, skipped: 0, failed: 0 },
  hits: {
    total: { value: 2, relation: "eq" },
    max_score: 1,
    hits: [
      { _index: "i", _id: "a", _score: 1, _source: { hash: "a", blockNumber: { num: 1, raw: "0x1" } } },
      { _index: "i", _id: "b", _score: 1, _source: { hash: "b", blockNumber: { num: 2, raw: "0x2" } } },
    ],
  },
};

describe("parseFilterPath", () => {
  it("splits the comma list into inclusions and exclusions (- prefix), blank items ignored", () => {
    expect(parseFilterPath("hits.hits._id, -hits.total ,,")).toEqual({
      includes: [["hits", "hits", "_id"]],
      excludes: [["hits", "total"]],
    });
  });
});

describe("applyFilterPath", () => {
  it("keeps the listed paths, crossing arrays (what the JS helpers send)", () => {
    expect(applyFilterPath(answer, "hits.hits._id,hits.hits._source,_scroll_id")).toEqual({
      _scroll_id: "css_x",
      hits: { hits: answer.hits.hits.map((h) => ({ _id: h._id, _source: h._source })) },
    });
  });

  it("* inside a segment, ** over any depth (none included)", () => {
    expect(applyFilterPath(answer, "hits.hits._sou*.hash")).toEqual({
      hits: { hits: [{ _source: { hash: "a" } }, { _source: { hash: "b" } }] },
    });
    expect(applyFilterPath(answer, "**.num")).toEqual({
      hits: { hits: [{ _source: { blockNumber: { num: 1 } } }, { _source: { blockNumber: { num: 2 } } }] },
    });
    expect(applyFilterPath(answer, "**.took")).toEqual({ took: 3 });
    expect(applyFilterPath(answer, "*.total")).toEqual({ _shards: { total: 2 }, hits: { total: { value: 2, relation: "eq" } } });
  });

  it("exclusions alone drop what they match; with inclusions they apply after them", () => {
    const noHits = applyFilterPath(answer, "-hits.hits,-_shards") as Record<string, unknown>;
    expect(noHits).toEqual({ _scroll_id: "css_x", took: 3, timed_out: false, hits: { total: { value: 2, relation: "eq" }, max_score: 1 } });
    expect(applyFilterPath(answer, "hits.hits._source,-**.raw")).toEqual({
      hits: { hits: [{ _source: { hash: "a", blockNumber: { num: 1 } } }, { _source: { hash: "b", blockNumber: { num: 2 } } }] },
    });
  });

  it("nothing matched is {}; an empty filter changes nothing; the input is not changed", () => {
    const before = JSON.stringify(answer);
    expect(applyFilterPath(answer, "nope.none")).toEqual({});
    expect(applyFilterPath(answer, "")).toBe(answer);
    expect(applyFilterPath(answer, "-**")).toEqual({});
    expect(JSON.stringify(answer)).toBe(before);
  });
});
