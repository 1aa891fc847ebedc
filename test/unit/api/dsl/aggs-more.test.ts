/**
 * The aggregations added by issue 30 (api/dsl/aggs-bucket.ts, aggs-metric.ts, aggs-pipeline.ts):
 * accepted shapes (with their sanitized output), refusals with codes and JSON paths, the nested
 * scope of fields, the caps, and the shapes Grafana sends.
 */
import { describe, expect, it } from "vitest";
import { AGG_LIMITS } from "../../../../api/dsl/aggs.js";
import { validateSearchBody } from "../../../../api/dsl/validate.js";
import { VOLUME_AGGS } from "../../../support/volume-query.js";
import { first, ok } from "./aggs-check.js";

describe("aggregation names", () => {
  it("take dots (eland's sum_gasUsed.num) but not # (the typed_keys separator) or [ ] >", () => {
    expect(ok({ "sum_gasUsed.num": { sum: { field: "gasUsed.num" } } }, ["tx"])).toEqual({
      "sum_gasUsed.num": { sum: { field: "gasUsed.num" } },
    });
    for (const name of ["a#b", "a>b", "a[0]", ""])
      expect(first({ [name]: { sum: { field: "gasUsed.num" } } }, ["tx"])).toEqual({ code: "CS_AGG_INVALID", path: expect.any(String) });
  });
});

describe("nested, reverse_nested, filter, filters: the nested scope of fields", () => {
  it("accepts the volume per day: date_histogram → nested → filter → sum on a nested field", () => {
    expect(ok(VOLUME_AGGS, ["event"])).toEqual({
      per_day: {
        date_histogram: { field: "timestamp", calendar_interval: "day", min_doc_count: 1 },
        aggs: {
          args: {
            nested: { path: "args" },
            aggs: { value: { filter: { term: { "args.name": "value" } }, aggs: { sum: { sum: { field: "args.value.scaled" } } } } },
          },
        },
      },
    });
  });

  it("a nested field outside its nested aggregation, or a root field inside one, is CS_AGG_INVALID at the field", () => {
    expect(first({ s: { sum: { field: "args.value.scaled" } } }, ["event"])).toEqual({ code: "CS_AGG_INVALID", path: "aggs.s.sum.field" });
    expect(first({ n: { nested: { path: "args" }, aggs: { t: { terms: { field: "address" } } } } }, ["event"])).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.n.aggs.t.terms.field",
    });
    // A filter clause inside the nested aggregation is in the nested scope too (the query codes apply).
    expect(first({ n: { nested: { path: "args" }, aggs: { f: { filter: { term: { address: "0x1" } } } } } }, ["event"])).toEqual({
      code: "CS_QUERY_NESTED_FIELD",
      path: "aggs.n.aggs.f.filter.term.address",
    });
    expect(first({ f: { filter: { term: { "args.name": "value" } } } }, ["event"])).toEqual({
      code: "CS_QUERY_NESTED_FIELD",
      path: 'aggs.f.filter.term["args.name"]',
    });
  });

  it("reverse_nested goes back up to the root documents; outside a nested aggregation it is refused", () => {
    const v = ok(
      {
        n: {
          nested: { path: "args" },
          aggs: {
            by_name: {
              terms: { field: "args.name" },
              aggs: { back: { reverse_nested: {}, aggs: { a: { terms: { field: "address" } } } } },
            },
          },
        },
      },
      ["event"],
    );
    expect(v.n?.aggs).toBeDefined();
    expect(first({ r: { reverse_nested: {} } }, ["event"])).toEqual({ code: "CS_AGG_INVALID", path: "aggs.r.reverse_nested" });
    expect(first({ n: { nested: { path: "nope" } } }, ["event"])).toEqual({ code: "CS_AGG_INVALID", path: "aggs.n.nested.path" });
    expect(first({ n: { nested: { path: "args", score_mode: "avg" } } }, ["event"])).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.n.nested.score_mode",
    });
  });

  it("filters: keyed and anonymous, other_bucket; bad clauses and too many filters refused", () => {
    expect(
      ok({ f: { filters: { filters: { a: { term: { status: 1 } }, b: { exists: { field: "to" } } }, other_bucket_key: "rest" } } }),
    ).toEqual({
      f: { filters: { filters: { a: { term: { status: 1 } }, b: { exists: { field: "to" } } }, other_bucket_key: "rest" } },
    });
    expect(ok({ f: { filters: { filters: [{ term: { status: 1 } }], other_bucket: true } } })).toEqual({
      f: { filters: { filters: [{ term: { status: 1 } }], other_bucket: true } },
    });
    expect(first({ f: { filters: { filters: { a: { script: {} } } } } })).toEqual({
      code: "CS_QUERY_UNSUPPORTED_CLAUSE",
      path: "aggs.f.filters.filters.a.script",
    });
    const many = Array.from({ length: AGG_LIMITS.maxRanges + 1 }, () => ({ match_all: {} }));
    expect(first({ f: { filters: { filters: many } } })).toEqual({ code: "CS_AGG_TOO_MANY_BUCKETS", path: "aggs.f.filters.filters" });
  });
});

describe("composite, range, date_range, missing, significant_terms", () => {
  it("composite with terms, histogram and date_histogram sources and after", () => {
    const spec = {
      size: 100,
      sources: [
        { from: { terms: { field: "from", order: "desc", missing_bucket: true } } },
        { block: { histogram: { field: "blockNumber.num", interval: 10 } } },
        { day: { date_histogram: { field: "timestamp", calendar_interval: "day", format: "yyyy-MM-dd" } } },
      ],
      after: { from: "0xabc", block: 10, day: "2023-04-13" },
    };
    expect(ok({ c: { composite: spec } })).toEqual({ c: { composite: spec } });
  });

  it("composite refusals: size over the cap, after not matching the sources, under a multi-bucket parent, bad sources", () => {
    const sources = [{ f: { terms: { field: "from" } } }];
    expect(first({ c: { composite: { sources, size: AGG_LIMITS.maxCompositeSize + 1 } } })).toEqual({
      code: "CS_AGG_SIZE_TOO_LARGE",
      path: "aggs.c.composite.size",
    });
    expect(first({ c: { composite: { sources, after: { g: 1 } } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.c.composite.after" });
    expect(first({ t: { terms: { field: "to" }, aggs: { c: { composite: { sources } } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.aggs.c.composite",
    });
    expect(first({ c: { composite: { sources: [{ f: { range: { field: "gas.num" } } }] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.c.composite.sources[0].f",
    });
    expect(first({ c: { composite: { sources: [{ f: { terms: { field: "input" } } }] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.c.composite.sources[0].f.terms.field",
    });
  });

  it("range and date_range: ranges checked, their number capped", () => {
    expect(ok({ r: { range: { field: "value.num", ranges: [{ to: 1 }, { from: 1, key: "some" }], keyed: true } } })).toBeDefined();
    expect(
      ok({ r: { date_range: { field: "timestamp", ranges: [{ from: "now-1d/d" }], format: "yyyy-MM-dd", time_zone: "UTC" } } }),
    ).toBeDefined();
    expect(first({ r: { range: { field: "value.num", ranges: [{ from: "a" }] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.r.range.ranges[0].from",
    });
    expect(first({ r: { range: { field: "value.num", ranges: [{}] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.r.range.ranges[0]",
    });
    expect(first({ r: { date_range: { field: "value.num", ranges: [{ to: "now" }] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.r.date_range.field",
    });
    const many = Array.from({ length: AGG_LIMITS.maxRanges + 1 }, (_, i) => ({ from: i }));
    expect(first({ r: { range: { field: "value.num", ranges: many } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.r.range.ranges",
    });
  });

  it("missing and significant_terms", () => {
    expect(ok({ m: { missing: { field: "methodId" } } })).toEqual({ m: { missing: { field: "methodId" } } });
    expect(ok({ s: { significant_terms: { field: "to", size: 5 } } })).toEqual({ s: { significant_terms: { field: "to", size: 5 } } });
    expect(first({ s: { significant_terms: { field: "to", background_filter: {} } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.s.significant_terms.background_filter",
    });
  });
});

describe("metrics: value_count, stats, extended_stats, percentiles, percentile_ranks, top_hits", () => {
  it("accepts each, with their options", () => {
    expect(
      ok({
        n: { value_count: { field: "hash" } },
        s: { stats: { field: "timestamp" } },
        e: { extended_stats: { field: "gasUsed.num", sigma: 3 } },
        p: { percentiles: { field: "gasUsed.num", percents: [50, 99.9], keyed: false } },
        r: { percentile_ranks: { field: "gasUsed.num", values: [21000, 46109] } },
        t: { top_hits: { size: 3, sort: [{ "blockNumber.num": "desc" }, "hash"], _source: { includes: ["hash", "blockNumber"] } } },
      }),
    ).toEqual({
      n: { value_count: { field: "hash" } },
      s: { stats: { field: "timestamp" } },
      e: { extended_stats: { field: "gasUsed.num", sigma: 3 } },
      p: { percentiles: { field: "gasUsed.num", percents: [50, 99.9], keyed: false } },
      r: { percentile_ranks: { field: "gasUsed.num", values: [21000, 46109] } },
      t: {
        top_hits: {
          size: 3,
          sort: [{ "blockNumber.num": { order: "desc" } }, { hash: { order: "asc" } }],
          _source: { includes: ["hash", "blockNumber"] },
        },
      },
    });
  });

  it("caps and refusals: top_hits size, percents count and range, _source and sort fields", () => {
    expect(first({ t: { top_hits: { size: AGG_LIMITS.maxTopHitsSize + 1 } } })).toEqual({
      code: "CS_AGG_SIZE_TOO_LARGE",
      path: "aggs.t.top_hits.size",
    });
    const percents = Array.from({ length: AGG_LIMITS.maxPercents + 1 }, (_, i) => i);
    expect(first({ p: { percentiles: { field: "gas.num", percents } } })).toEqual({
      code: "CS_AGG_SIZE_TOO_LARGE",
      path: "aggs.p.percentiles.percents",
    });
    expect(first({ p: { percentiles: { field: "gas.num", percents: [50, 101] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.p.percentiles.percents[1]",
    });
    expect(first({ p: { percentiles: { field: "gas.num", hdr: {} } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.p.percentiles.hdr",
    });
    expect(first({ r: { percentile_ranks: { field: "gas.num" } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.r.percentile_ranks.values",
    });
    expect(first({ t: { top_hits: { _source: ["hash", "nope"] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.top_hits._source[1]",
    });
    expect(first({ t: { top_hits: { _source: { includes: ["*"] } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.top_hits._source.includes[0]",
    });
    expect(first({ t: { top_hits: { sort: [{ input: "asc" }] } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.top_hits.sort[0].input",
    });
    expect(first({ t: { top_hits: { sort: { hash: "up" } } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.t.top_hits.sort.hash" });
    expect(first({ t: { top_hits: { script_fields: {} } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.t.top_hits.script_fields" });
    expect(first({ t: { top_hits: {}, aggs: { x: { sum: { field: "gas.num" } } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.aggs",
    });
    expect(first({ s: { extended_stats: { field: "from" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.s.extended_stats.field" });
  });

  it("top_hits under a nested aggregation sorts on the nested fields", () => {
    expect(
      ok({ n: { nested: { path: "args" }, aggs: { t: { top_hits: { size: 1, sort: { "args.pos": "asc" } } } } } }, ["event"]),
    ).toBeDefined();
    expect(first({ n: { nested: { path: "args" }, aggs: { t: { top_hits: { sort: { timestamp: "asc" } } } } } }, ["event"])).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.n.aggs.t.top_hits.sort.timestamp",
    });
  });
});

describe("pipelines: bucket_sort, cumulative_sum, derivative and buckets_path", () => {
  const hist = { field: "blockNumber.num", interval: 1, min_doc_count: 0, extended_bounds: { min: 0, max: 10 } };

  it("accepts buckets paths to sibling metrics, through single-bucket aggregations, to multi-value metric values and _count", () => {
    const v = ok({
      h: {
        histogram: hist,
        aggs: {
          gas: { sum: { field: "gasUsed.num" } },
          st: { stats: { field: "gasUsed.num" } },
          p: { percentiles: { field: "gasUsed.num" } },
          mine: { filter: { term: { status: 1 } }, aggs: { g: { sum: { field: "gasUsed.num" } } } },
          a: { cumulative_sum: { buckets_path: "gas" } },
          b: { derivative: { buckets_path: "st.avg", gap_policy: "insert_zeros" } },
          c: { cumulative_sum: { buckets_path: "mine>g" } },
          d: { derivative: { buckets_path: "mine>_count" } },
          e: { cumulative_sum: { buckets_path: "p[99.0]" } },
          f: { derivative: { buckets_path: "_count" } },
          g: { cumulative_sum: { buckets_path: "f" } },
        },
      },
    });
    expect(Object.keys(v.h?.aggs as object)).toHaveLength(11);
    expect(
      ok({
        t: {
          terms: { field: "to" },
          aggs: {
            gas: { sum: { field: "gasUsed.num" } },
            top: { bucket_sort: { sort: [{ gas: { order: "desc" } }, "_key"], from: 1, size: 3 } },
          },
        },
      }).t?.aggs,
    ).toEqual({
      gas: { sum: { field: "gasUsed.num" } },
      top: { bucket_sort: { sort: [{ gas: { order: "desc" } }, { _key: { order: "asc" } }], from: 1, size: 3 } },
    });
  });

  it("refuses paths that do not name a sibling metric (CS_AGG_BUCKETS_PATH), wrong parents and non-empty-bucket histograms", () => {
    const under = (aggs: Record<string, unknown>) => first({ h: { histogram: hist, aggs } });
    expect(under({ c: { cumulative_sum: { buckets_path: "nope" } } })).toEqual({
      code: "CS_AGG_BUCKETS_PATH",
      path: "aggs.h.aggs.c.cumulative_sum.buckets_path",
    });
    expect(under({ t: { terms: { field: "to" } }, c: { cumulative_sum: { buckets_path: "t" } } })).toEqual({
      code: "CS_AGG_BUCKETS_PATH",
      path: "aggs.h.aggs.c.cumulative_sum.buckets_path",
    });
    expect(under({ s: { stats: { field: "gas.num" } }, c: { cumulative_sum: { buckets_path: "s" } } })).toEqual({
      code: "CS_AGG_BUCKETS_PATH",
      path: "aggs.h.aggs.c.cumulative_sum.buckets_path",
    });
    expect(under({ s: { sum: { field: "gas.num" } }, c: { cumulative_sum: { buckets_path: "s>x" } } })).toEqual({
      code: "CS_AGG_BUCKETS_PATH",
      path: "aggs.h.aggs.c.cumulative_sum.buckets_path",
    });
    expect(first({ t: { terms: { field: "to" }, aggs: { b: { bucket_sort: { sort: [{ nope: "asc" }] } } } } })).toEqual({
      code: "CS_AGG_BUCKETS_PATH",
      path: "aggs.t.aggs.b.bucket_sort.sort[0].nope",
    });
    expect(first({ c: { cumulative_sum: { buckets_path: "_count" } } })).toEqual({ code: "CS_AGG_INVALID", path: "aggs.c.cumulative_sum" });
    expect(first({ t: { terms: { field: "to" }, aggs: { c: { derivative: { buckets_path: "_count" } } } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.t.aggs.c.derivative",
    });
    expect(
      first({ h: { histogram: { field: "gas.num", interval: 1 }, aggs: { c: { cumulative_sum: { buckets_path: "_count" } } } } }),
    ).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.h.histogram.min_doc_count",
    });
    expect(first({ c: { cumulative_sum: { buckets_path: "_count", script: "1" } } })).toEqual({
      code: "CS_AGG_INVALID",
      path: "aggs.c.cumulative_sum",
    });
  });
});

describe("date_histogram options and bucket caps", () => {
  it("fixed_interval, calendar_interval, min_doc_count 0 with extended_bounds, hard_bounds, time_zone, format, offset, keyed, order", () => {
    const spec = {
      field: "timestamp",
      fixed_interval: "1h",
      min_doc_count: 0,
      extended_bounds: { min: 1_681_344_000_000, max: 1_681_430_400_000 },
      hard_bounds: { min: "2023-04-13T00:00:00Z", max: "2023-04-14T00:00:00Z" },
      time_zone: "Europe/Paris",
      format: "epoch_millis",
      offset: "+30m",
      keyed: true,
      order: { _key: "desc" },
    };
    expect(ok({ d: { date_histogram: spec } })).toEqual({ d: { date_histogram: spec } });
  });

  it("min_doc_count 0 needs bounds; extended bounds spanning more than the cap are refused before searching", () => {
    expect(first({ d: { date_histogram: { field: "timestamp", fixed_interval: "1m", min_doc_count: 0 } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.d.date_histogram.min_doc_count",
    });
    const wide = { min: 0, max: (AGG_LIMITS.maxBuckets + 1) * 60_000 };
    expect(first({ d: { date_histogram: { field: "timestamp", fixed_interval: "1m", min_doc_count: 0, extended_bounds: wide } } })).toEqual(
      {
        code: "CS_AGG_TOO_MANY_BUCKETS",
        path: "aggs.d.date_histogram.extended_bounds",
      },
    );
  });

  it("buckets multiply through the nesting: composite pages, ranges and filters count", () => {
    const composite = { composite: { size: 1000, sources: [{ f: { terms: { field: "from" } } }] } };
    expect(first({ c: { ...composite, aggs: { t: { terms: { field: "to", size: 10 } } } } })).toEqual({
      code: "CS_AGG_TOO_MANY_BUCKETS",
      path: "aggs.c",
    });
    expect(ok({ c: { ...composite, aggs: { t: { terms: { field: "to", size: 9 } } } } })).toBeDefined();
  });
});

describe("Grafana's request shapes (pkg/tsdb/elasticsearch)", () => {
  const FROM = 1668422437218;
  const TO = 1668422625668;
  /** Grafana's time filter (range on the time field, epoch_millis) with its Lucene query. */
  const grafanaQuery = (lucene: string) => ({
    bool: {
      filter: [
        { range: { timestamp: { gte: FROM, lte: TO, format: "epoch_millis" } } },
        { query_string: { analyze_wildcard: true, query: lucene } },
      ],
    },
  });
  /** Grafana's date histogram: fixed_interval, min_doc_count 0, extended_bounds of the panel's range, epoch_millis keys. */
  const grafanaHistogram = {
    field: "timestamp",
    fixed_interval: "1m",
    min_doc_count: 0,
    extended_bounds: { min: FROM, max: TO },
    format: "epoch_millis",
  };

  it("a time series panel: range epoch_millis + query_string *, terms → date_histogram with extended_bounds and min_doc_count 0", () => {
    const aggs = {
      "3": {
        terms: { field: "event.raw", size: 10, order: { _key: "desc" }, min_doc_count: 1 },
        aggs: { "2": { date_histogram: grafanaHistogram, aggs: { "1": { sum: { field: "blockNumber.num" } } } } },
      },
    };
    const r = validateSearchBody({ size: 0, query: grafanaQuery("*"), aggs }, { kinds: ["event"], maxSize: 10_000 });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r.value.query).toEqual({
      bool: {
        filter: [
          { range: { timestamp: { gte: FROM, lte: TO, format: "epoch_millis" } } },
          { query_string: { analyze_wildcard: true, query: "*", allow_leading_wildcard: false } },
        ],
      },
    });
    expect(r.value.aggs).toEqual(aggs);
  });

  it("a Lucene filter with field:value, a phrase and a range, as typed in Grafana's query box", () => {
    const query = grafanaQuery('event.raw:Transfer AND str:"value=1000" AND blockNumber.num:[1 TO 5]');
    expect(
      validateSearchBody({ size: 0, query, aggs: { "2": { date_histogram: grafanaHistogram } } }, { kinds: ["event"], maxSize: 10_000 }).ok,
    ).toBe(true);
    const bad = grafanaQuery("event.raw:Transfer AND nosuch:1");
    const r = validateSearchBody({ size: 0, query: bad }, { kinds: ["event"], maxSize: 10_000 });
    expect(r.ok ? undefined : r.errors[0]).toMatchObject({
      code: "CS_QUERY_UNKNOWN_FIELD",
      path: "query.bool.filter[1].query_string.query",
    });
  });
});
