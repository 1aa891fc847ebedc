/**
 * console/src/hit-stream.ts: the hits of an envelope, whatever the chunking, with strings that hold
 * braces, brackets, quotes and the word "hits", aggregations after the hits, and an empty list.
 */
import { describe, expect, it } from "vitest";
import { HitSplitter } from "../../../console/src/hit-stream.js";

const hits = [
  { _index: "e", _id: "a", _score: 1, _source: { event: 'x{"hits":[1]}\\"', args: [{ name: "v", value: { hex: "0x1" } }] } },
  { _index: "e", _id: "b", _score: 1, _source: { hits: ["[", "{"], nested: { deep: [[{}]] } } },
  { _index: "e", _id: "c", _score: 1, _source: {} },
];
const envelope = JSON.stringify({
  took: 3,
  timed_out: false,
  _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
  hits: { total: hits.length, max_score: 1, hits },
  aggregations: { hits: { buckets: [{ key: 1, doc_count: 2 }] } },
});

function split(text: string, size: number): string[] {
  const s = new HitSplitter();
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...s.feed(text.slice(i, i + size)));
  return out;
}

describe("HitSplitter", () => {
  it("answers each hit's JSON text, for every chunk size", () => {
    for (const size of [1, 2, 3, 7, 64, envelope.length]) {
      expect(
        split(envelope, size).map((t) => JSON.parse(t)),
        `chunks of ${size}`,
      ).toEqual(hits);
    }
  });

  it("answers nothing for an envelope without hits", () => {
    expect(split(JSON.stringify({ took: 1, hits: { total: 0, max_score: null, hits: [] } }), 5)).toEqual([]);
  });
});
