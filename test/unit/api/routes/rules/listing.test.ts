/**
 * Unit tests of the streamed full listing of `GET /alerting/rules/` (api/routes/rules/index.ts
 * `ruleListingChunks`): the JSON it produces, that pages are fetched only as the consumer reads (so
 * at most one page is held), and that a failing page fails the stream after what was sent.
 * The page source is an in-memory function; the route over the real store is tested in
 * test/integration/rules-api/rules.test.ts.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { LIST_STREAM_PAGE_SIZE, ruleListingChunks, rulesRoutes } from "../../../../../api/routes/rules/index.js";
import type { Rule } from "../../../../../lib/rules/model.js";
import type { RulePage, RuleStore } from "../../../../../lib/rules/store.js";

const rule = (i: number) => ({ id: `id-${i}`, name: `r${i}`, note: 'quote " and \u2028' }) as unknown as Rule;

/** Pages of `size` over `n` rules; cursors are the index of the next rule. Records every fetch. */
function source(n: number, size: number) {
  const fetched: string[] = [];
  const page = (from: number): RulePage => ({
    rules: Array.from({ length: Math.max(0, Math.min(size, n - from)) }, (_, i) => rule(from + i)),
    nextCursor: from + size < n ? String(from + size) : null,
  });
  return {
    fetched,
    first: page(0),
    next: async (cursor: string) => {
      fetched.push(cursor);
      return page(Number(cursor));
    },
  };
}

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const c of chunks) out += c;
  return out;
}

describe("ruleListingChunks", () => {
  it("produces {rules: [...every rule...], nextCursor: null} across pages", async () => {
    for (const [n, size] of [
      [0, 10],
      [1, 10],
      [10, 10],
      [11, 10],
      [51, 20],
      [51, 1],
    ] as const) {
      const s = source(n, size);
      const body = JSON.parse(await text(ruleListingChunks(s.first, s.next)));
      expect(body).toEqual({ rules: Array.from({ length: n }, (_, i) => rule(i)), nextCursor: null });
      expect(s.fetched).toHaveLength(Math.max(0, Math.ceil(n / size) - 1));
    }
  });

  it("fetches the next page only when the consumer asks for more (one page held at a time)", async () => {
    const s = source(30, 10);
    const it = ruleListingChunks(s.first, s.next);
    expect((await it.next()).value).toBe('{"rules":[');
    expect(JSON.parse(`[${(await it.next()).value}]`)).toHaveLength(10);
    expect(s.fetched).toEqual([]);
    expect(JSON.parse(`[${((await it.next()).value as string).slice(1)}]`)).toHaveLength(10);
    expect(s.fetched).toEqual(["10"]);
    await it.return(undefined); // the client went away: nothing more is fetched
    expect(s.fetched).toEqual(["10"]);
  });

  it("fails the stream when a later page fails, after what was already sent", async () => {
    const s = source(30, 10);
    const failing = async (cursor: string) => {
      if (cursor === "20") throw new Error("redis went away");
      return s.next(cursor);
    };
    const stream = Readable.from(ruleListingChunks(s.first, failing), { objectMode: false });
    let received = "";
    stream.on("data", (c: Buffer) => {
      received += c.toString("utf8");
    });
    await expect(new Promise((resolve, reject) => stream.on("end", resolve).on("error", reject))).rejects.toThrow("redis went away");
    expect(received.startsWith('{"rules":[')).toBe(true);
    expect(() => JSON.parse(received)).toThrow(); // truncated: never mistaken for a complete list
  });

  it("reads 100 rules per round trip by default; listPageSize must be 1–500", () => {
    expect(LIST_STREAM_PAGE_SIZE).toBe(100);
    const deps = { rules: {} as RuleStore, chains: [] };
    for (const listPageSize of [0, 501, 1.5]) expect(() => rulesRoutes({ ...deps, listPageSize })).toThrow(RangeError);
    expect(typeof rulesRoutes({ ...deps, listPageSize: 500 })).toBe("function");
  });
});
