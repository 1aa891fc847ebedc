import type { Client, estypes } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import type { HitsEnvelope } from "../../../../api/search/envelope.js";
import { streamSearch } from "../../../../api/search/stream.js";

const INDEX = "ethereum-ethereum-mainnet-tx";

/** A fake ES client serving `total` tx documents through PIT + search_after; records its calls. */
function fakeEs(total: number, opts: { failOnPage?: number } = {}) {
  const calls: { open: number; close: string[]; searches: estypes.SearchRequest[] } = { open: 0, close: [], searches: [] };
  const docs = Array.from({ length: total }, (_, i) => ({
    _index: INDEX,
    _id: `0x${i.toString(16).padStart(64, "0")}`,
    _score: null,
    _source: {
      hash: `0x${i.toString(16).padStart(64, "0")}`,
      blockHash: `0x${"b".repeat(64)}`,
      nonce: { num: i, raw: `0x${i.toString(16)}` },
    },
    sort: [i],
  }));
  let page = 0;
  const es = {
    async openPointInTime() {
      calls.open += 1;
      return { id: "pit-0" };
    },
    async closePointInTime(req: { id: string }) {
      calls.close.push(req.id);
      return { succeeded: true, num_freed: 1 };
    },
    async search(req: estypes.SearchRequest): Promise<estypes.SearchResponse<unknown>> {
      calls.searches.push(req);
      const base = {
        took: 2,
        timed_out: false,
        _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
        pit_id: `pit-${calls.searches.length}`,
      };
      if (req.size === 0) return { ...base, hits: { total: { value: total, relation: "eq" }, max_score: null, hits: [] } };
      page += 1;
      if (opts.failOnPage === page) throw new Error("boom");
      const after = (req.search_after?.[0] as number | undefined) ?? -1;
      const hits = docs.filter((d) => d._id && (d.sort[0] as number) > after).slice(0, req.size ?? 10);
      return { ...base, hits: { max_score: null, hits } };
    },
  };
  return { es: es as unknown as Client, calls };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += chunk;
  return text;
}

const target = { kinds: ["tx" as const], indices: [INDEX] };

describe("streamSearch", () => {
  it("counts on the PIT, pages with search_after + _shard_doc, and closes the PIT", async () => {
    const { es, calls } = fakeEs(23);
    const s = await streamSearch({
      es,
      plan: { size: -1, sort: [{ "nonce.num": { order: "asc" } }] },
      target,
      requestTimeoutMs: 1000,
      pageSize: 10,
    });
    expect(s.total).toBe(23);
    const env = JSON.parse(await readAll(s.body)) as HitsEnvelope;
    expect(env.hits.total).toBe(23);
    expect(env.hits.max_score).toBe(1);
    expect(env.hits.hits).toHaveLength(23);
    expect(env.hits.hits.every((h) => h._type === "tx" && h._score === 1 && h._parent === `0x${"b".repeat(64)}`)).toBe(true);
    expect(calls.open).toBe(1);
    const [count, ...pages] = calls.searches;
    expect(count).toMatchObject({ size: 0, track_total_hits: true, timeout: "1000ms" });
    expect(pages.map((p) => p.size)).toEqual([10, 10, 3]);
    expect(pages[0]?.sort).toEqual([{ "nonce.num": { order: "asc" } }, { _shard_doc: "asc" }]);
    expect(pages[0]?.search_after).toBeUndefined();
    expect(pages[1]?.search_after).toEqual([9]);
    expect(pages[1]?.pit?.id).toBe("pit-2"); // the latest PIT id is used
    expect(pages.every((p) => p.index === undefined && p.track_total_hits === false)).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(calls.close).toHaveLength(1);
  });

  it("an empty result is a valid envelope", async () => {
    const { es, calls } = fakeEs(0);
    const s = await streamSearch({ es, plan: { size: -1 }, target, requestTimeoutMs: 1000 });
    expect(JSON.parse(await readAll(s.body))).toEqual({
      took: 2,
      timed_out: false,
      _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
      hits: { total: 0, max_score: null, hits: [] },
    });
    expect(calls.searches).toHaveLength(1);
  });

  it("a failing page destroys the stream (truncated body) and still closes the PIT", async () => {
    const { es, calls } = fakeEs(30, { failOnPage: 2 });
    const s = await streamSearch({ es, plan: { size: -1 }, target, requestTimeoutMs: 1000, pageSize: 10 });
    await expect(readAll(s.body)).rejects.toThrow("boom");
    await new Promise((r) => setImmediate(r));
    expect(calls.close).toHaveLength(1);
  });

  it("a stream destroyed before it is read closes the PIT", async () => {
    const { es, calls } = fakeEs(30);
    const s = await streamSearch({ es, plan: { size: -1 }, target, requestTimeoutMs: 1000 });
    s.body.destroy();
    await new Promise((r) => setImmediate(r));
    expect(calls.close).toHaveLength(1);
  });
});
