import { describe, expect, it } from "vitest";
import { AGG_LIMITS, countBuckets, validateAggs } from "../../../../api/dsl/aggs.js";
import { first, ok } from "./aggs-check.js";

describe("validateAggs: accepted aggregations", () => {
  it("terms on keyword, numeric, date and boolean fields, with size, order, min_doc_count, missing", () => {
    expect(ok({ by_from: { terms: { field: "from", size: 5 } } })).toEqual({ by_from: { terms: { field: "from", size: 5 } } });
    expect(ok({ s: { terms: { field: "status", order: { _count: "desc" }, min_doc_count: 1, missing: 0 } } })).toEqual({
      s: { terms: { field: "status", order: { _count: "desc" }, min_doc_count: 1, missing: 0 } },
    });
    expect(ok({ r: { terms: { field: "removed" } } }, ["log"])).toEqual({ r: { terms: { field: "removed" } } });
    expect(ok({ e: { terms: { field: "event.raw", order: [{ _key: "asc" }] } } }, ["event"])).toBeDefined();
  });

  it("histogram and date_histogram; min_doc_count defaults to 1 without hard_bounds", () => {
    expect(ok({ h: { histogram: { field: "blockNumber.num", interval: 100 } } })).toEqual({
      h: { histogram: { field: "blockNumber.num", interval: 100, min_doc_count: 1 } },
    });
    expect(
      ok({ h: { histogram: { field: "blockNumber.num", interval: 10, hard_bounds: { min: 0, max: 100 }, min_doc_count: 0 } } }),
    ).toEqual({
      h: { histogram: { field: "blockNumber.num", interval: 10, hard_bounds: { min: 0, max: 100 }, min_doc_count: 0 } },
    });
    expect(ok({ d: { date_histogram: { field: "timestamp", calendar_interval: "day", time_zone: "Europe/Paris" } } })).toEqual({
      d: { date_histogram: { field: "timestamp", calendar_interval: "day", time_zone: "Europe/Paris", min_doc_count: 1 } },
    });
    expect(ok({ d: { date_histogram: { field: "timestamp", fixed_interval: "30m", offset: "+5m" } } })).toBeDefined();
  });

  it("metrics: sum/avg on numeric, min/max on numeric or date, cardinality on any aggregatable field", () => {
    expect(
      ok({
        total: { sum: { field: "value.num" } },
        mean: { avg: { field: "gasUsed.num" } },
        first: { min: { field: "timestamp" } },
        last: { max: { field: "blockNumber.num" } },
        senders: { cardinality: { field: "from", precision_threshold: 1000 } },
      }),
    ).toBeDefined();
  });

  it("sub-aggregations under aggs or aggregations; terms ordered by a metric sub-aggregation", () => {
    const v = ok({
      by_to: {
        terms: { field: "to", size: 3, order: { volume: "desc" } },
        aggregations: { volume: { sum: { field: "value.num" } }, per_block: { histogram: { field: "blockNumber.num", interval: 1 } } },
      },
    });
    expect(v.by_to).toEqual({
      terms: { field: "to", size: 3, order: { volume: "desc" } },
      aggs: {
        volume: { sum: { field: "value.num" } },
        per_block: { histogram: { field: "blockNumber.num", interval: 1, min_doc_count: 1 } },
      },
    });
  });

  it("an empty map means no aggregations, as in ES", () => {
    expect(ok({})).toEqual({});
    expect(ok({ a: { terms: { field: "from" }, aggs: {} } })).toEqual({ a: { terms: { field: "from" } } });
  });

  it("accepts a field of any requested kind", () => {
    expect(ok({ n: { max: { field: "number.num" } } }, ["block", "tx"])).toBeDefined();
  });
});

describe("validateAggs: refused", () => {
  it("aggregation types outside the allowlist: CS_AGG_UNSUPPORTED at the type", () => {
    for (const type of ["scripted_metric", "bucket_script", "bucket_selector", "geo_distance", "moving_fn", "rare_terms", "weighted_avg"]) {
      expect(first({ a: { [type]: {} } }), type).toEqual({ code: "CS_AGG_UNSUPPORTED", path: `aggs.a.${type}` });
    }
  });

  it("scripts, patterns, meta and unknown options: CS_AGG_INVALID at the option", () => {
    expect(first({ a: { terms: { field: "from", script: { source: "1" } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.terms.script",
    });
    expect(first({ a: { terms: { field: "from", include: ".*" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.include" });
    expect(first({ a: { sum: { script: "doc['x']" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.sum.script" });
    expect(first({ a: { terms: { field: "from" }, meta: {} } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a" });
  });

  it("fields: unknown, text, nested, objects, not searchable, wrong type", () => {
    expect(first({ a: { terms: { field: "sender" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.field" });
    expect(first({ a: { terms: { field: "event" } } }, ["event"])).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.field" });
    expect(first({ a: { terms: { field: "args.name" } } }, ["event"])).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.field" });
    expect(first({ a: { terms: { field: "blockNumber" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.field" });
    expect(first({ a: { terms: { field: "input" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.terms.field" });
    expect(first({ a: { sum: { field: "from" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.sum.field" });
    expect(first({ a: { histogram: { field: "timestamp", interval: 1 } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.histogram.field",
    });
    expect(first({ a: { date_histogram: { field: "blockNumber.num", calendar_interval: "day" } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.date_histogram.field",
    });
  });

  it("bad shapes and names", () => {
    expect(first({ d: { date_histogram: { field: "timestamp", calendar_interval: "toString" } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.d.date_histogram.calendar_interval",
    });
    expect(first([])).toEqual({ code: "CS_AGG_INVALID", path: "aggs" });
    expect(first("terms")).toEqual({ code: "CS_AGG_INVALID", path: "aggs" });
    expect(first({ "a[0]": { sum: { field: "gas.num" } } })).toEqual({ code: "CS_AGG_INVALID", path: 'aggs["a[0]"]' });
    expect(first({ a: { sum: { field: "gas.num" }, max: { field: "gas.num" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a" });
    expect(first({ a: { sum: { field: "gas.num" }, aggs: { b: { max: { field: "gas.num" } } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.aggs",
    });
    expect(first({ a: { histogram: { field: "gas.num", interval: 0 } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.histogram.interval",
    });
    expect(first({ a: { date_histogram: { field: "timestamp" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.a.date_histogram" });
    expect(first({ a: { date_histogram: { field: "timestamp", calendar_interval: "2d" } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.date_histogram.calendar_interval",
    });
    expect(first({ a: { terms: { field: "from", order: { nope: "desc" } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.a.terms.order.nope",
    });
  });

  it("bucket caps: terms size, nested products, empty buckets without hard_bounds, bounded histograms", () => {
    expect(first({ a: { terms: { field: "from", size: AGG_LIMITS.maxTermsSize + 1 } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.a.terms.size",
    });
    expect(first({ a: { terms: { field: "from", size: 500 }, aggs: { b: { terms: { field: "to", size: 500 } } } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.a",
    });
    expect(first({ a: { histogram: { field: "gas.num", interval: 1, min_doc_count: 0 } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.a.histogram.min_doc_count",
    });
    expect(first({ a: { histogram: { field: "gas.num", interval: 1, hard_bounds: { min: 0, max: 1e6 } } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.a",
    });
    expect(
      first({ a: { date_histogram: { field: "timestamp", fixed_interval: "1s", hard_bounds: { min: "2023-01-01", max: "2023-12-31" } } } }),
    ).toEqual({ code: "CS_AGG_TOO_MANY_BUCKETS", path: "aggs.a" });
    const siblings = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`t${i}`, { terms: { field: "from", size: 1000 } }]));
    expect(first(siblings)).toEqual({ code: "CS_AGG_TOO_MANY_BUCKETS", path: "aggs" });
  });

  it("caps nesting depth (CS_AGG_TOO_DEEP) and the number of aggregations", () => {
    // Depth maxDepth + 1: a chain of single-bucket filters, a sum at the bottom.
    let deep: Record<string, unknown> = { sum: { field: "gas.num" } };
    for (let i = 0; i < AGG_LIMITS.maxDepth; i++) deep = { filter: { match_all: {} }, aggs: { [`l${i}`]: deep } };
    const r = validateAggs({ top: deep }, ["tx"]);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]?.code).toBe("CS_AGG_TOO_DEEP");
    expect(r.ok || r.errors[0]?.path?.split(".aggs").length).toBe(AGG_LIMITS.maxDepth + 1);
    const many = Object.fromEntries(Array.from({ length: AGG_LIMITS.maxAggs + 1 }, (_, i) => [`m${i}`, { sum: { field: "gas.num" } }]));
    expect(first(many)).toEqual({ code: "CS_AGG_TOO_MANY_BUCKETS", path: `aggs.m${AGG_LIMITS.maxAggs}` });
  });
});

describe("countBuckets", () => {
  it("counts buckets at every level, arrays and keyed objects", () => {
    const res = {
      a: {
        buckets: [
          { key: 1, doc_count: 2, b: { buckets: [{ key: "x" }, { key: "y" }] } },
          { key: 2, doc_count: 1 },
        ],
      },
      c: { value: 3 },
      d: { buckets: { k1: { doc_count: 1 }, k2: { doc_count: 1 } } },
    };
    expect(countBuckets(res)).toBe(6);
    expect(countBuckets(undefined)).toBe(0);
  });
});
