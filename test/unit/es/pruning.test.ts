import { describe, expect, it } from "vitest";
import { BLOCK_FIELD, blockIntervalsOf, partitionsOfIntervals } from "../../../es/pruning.js";

const F = "blockNumber.num";
const INF = Number.POSITIVE_INFINITY;
const NINF = Number.NEGATIVE_INFINITY;

describe("blockIntervalsOf: the block numbers a query can match (exact semantics only)", () => {
  it("term, terms and range on the kind's block-number field", () => {
    expect(blockIntervalsOf({ term: { [F]: 25 } }, F)).toEqual([{ lo: 25, hi: 25 }]);
    expect(blockIntervalsOf({ term: { [F]: { value: "25", boost: 2 } } }, F)).toEqual([{ lo: 25, hi: 25 }]);
    expect(blockIntervalsOf({ terms: { [F]: [3, 40] } }, F)).toEqual([
      { lo: 3, hi: 3 },
      { lo: 40, hi: 40 },
    ]);
    expect(blockIntervalsOf({ range: { [F]: { gte: 10, lte: 19 } } }, F)).toEqual([{ lo: 10, hi: 19 }]);
    expect(blockIntervalsOf({ range: { [F]: { gt: 9, lt: 20 } } }, F)).toEqual([{ lo: 10, hi: 19 }]);
    expect(blockIntervalsOf({ range: { [F]: { gt: 9.5, lt: 19.5 } } }, F)).toEqual([{ lo: 9, hi: 20 }]); // widened, never narrowed
    expect(blockIntervalsOf({ range: { [F]: { gte: 10 } } }, F)).toEqual([{ lo: 10, hi: INF }]);
    expect(blockIntervalsOf({ range: { [F]: { lte: 10 } } }, F)).toEqual([{ lo: NINF, hi: 10 }]);
    expect(blockIntervalsOf({ term: { "number.num": 7 } }, BLOCK_FIELD.block)).toEqual([{ lo: 7, hi: 7 }]);
  });

  it("bool filter and must intersect; should and must_not never narrow", () => {
    const q = {
      bool: {
        filter: [{ range: { [F]: { gte: 10, lte: 50 } } }, { term: { address: "0xabc" } }],
        must: { bool: { filter: { range: { [F]: { gte: 30 } } } } },
        should: [{ term: { [F]: 1 } }],
        must_not: [{ range: { [F]: { gte: 40 } } }],
      },
    };
    expect(blockIntervalsOf(q, F)).toEqual([{ lo: 30, hi: 50 }]);
    expect(blockIntervalsOf({ bool: { should: [{ term: { [F]: 1 } }, { term: { [F]: 2 } }] } }, F)).toBeUndefined();
    expect(blockIntervalsOf({ bool: { must_not: { range: { [F]: { lt: 100 } } } } }, F)).toBeUndefined();
    expect(blockIntervalsOf({ bool: { filter: [{ term: { [F]: 5 } }, { term: { [F]: 6 } }] } }, F)).toEqual([]); // nothing matches
  });

  it("anything else constrains nothing", () => {
    for (const q of [
      undefined,
      { match_all: {} },
      { term: { address: "0xabc" } },
      { term: { "number.num": 5 } }, // another kind's field
      { ids: { values: ["0x1"] } },
      { match: { [F]: 5 } },
      { nested: { path: "args", query: { term: { [F]: 5 } } } },
      { range: { [F]: { gte: 5, format: "x" } } },
      { range: { [F]: { gte: "0x10" } } },
      { range: { [F]: { lte: 2 ** 60 } } },
      { term: { [F]: 2.5 } },
      { term: { [F]: 2 ** 60 } },
      { terms: { [F]: { index: "i", id: "1", path: "p" } } },
      { term: { [F]: 5 }, range: { [F]: { gte: 1 } } },
    ]) {
      expect(blockIntervalsOf(q, F), JSON.stringify(q)).toBeUndefined();
    }
  });
});

describe("partitionsOfIntervals", () => {
  const layout = { blocks: 10, legacyThrough: -1 };
  it("the partitions of the intervals' blocks, ascending", () => {
    expect(partitionsOfIntervals([{ lo: 25, hi: 25 }], layout)).toEqual([2]);
    expect(partitionsOfIntervals([{ lo: 9, hi: 31 }], layout)).toEqual([0, 1, 2, 3]);
    expect(
      partitionsOfIntervals(
        [
          { lo: 40, hi: 40 },
          { lo: 3, hi: 3 },
          { lo: 45, hi: 49 },
        ],
        layout,
      ),
    ).toEqual([0, 4]);
    expect(partitionsOfIntervals([], layout)).toEqual([]);
    expect(partitionsOfIntervals([{ lo: NINF, hi: 12 }], layout)).toEqual([0, 1]);
    expect(partitionsOfIntervals([{ lo: -5, hi: -1 }], layout)).toEqual([0]); // malformed heights are in partition 0
  });
  it("the migrated index holds every block up to its last one", () => {
    const migrated = { blocks: 10, legacyThrough: 25 };
    expect(partitionsOfIntervals([{ lo: 22, hi: 22 }], migrated)).toEqual([0]);
    expect(partitionsOfIntervals([{ lo: 26, hi: 29 }], migrated)).toEqual([2]);
    expect(partitionsOfIntervals([{ lo: 15, hi: 35 }], migrated)).toEqual([0, 2, 3]);
  });
  it("unbounded above or too many partitions: undefined (search the alias)", () => {
    expect(partitionsOfIntervals([{ lo: 10, hi: INF }], layout)).toBeUndefined();
    expect(partitionsOfIntervals([{ lo: 0, hi: 1000 }], layout, 32)).toBeUndefined();
    expect(partitionsOfIntervals([{ lo: 0, hi: 319 }], layout, 32)).toHaveLength(32);
  });
});
