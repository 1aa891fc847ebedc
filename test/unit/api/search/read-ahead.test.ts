import { describe, expect, it } from "vitest";
import { lastSortValues, nextPageRequest, ReadAhead } from "../../../../api/search/read-ahead.js";

const answer = (hits: string) => Buffer.from(`{"pit_id":"p2","took":1,"timed_out":false,"hits":{"hits":[${hits}]}}`);

describe("lastSortValues", () => {
  it("reads the last hit's sort values at the end of an answer", () => {
    const bytes = answer('{"_id":"a","_source":{"x":",\\"sort\\":[9]"},"sort":[1,"x"]},{"_id":"b","_source":{},"sort":[2,"y\\"]"]}');
    expect(lastSortValues(bytes)).toEqual([2, 'y"]']);
  });
  it("gives undefined without hits, without sort values, or with anything after the hits", () => {
    expect(lastSortValues(answer(""))).toBeUndefined();
    expect(lastSortValues(answer('{"_id":"a","_source":{}}'))).toBeUndefined();
    expect(lastSortValues(Buffer.from('{"hits":{"hits":[{"_id":"a","sort":[1]}]},"aggregations":{}}'))).toBeUndefined();
  });
});

describe("ReadAhead", () => {
  const req = { size: 2, sort: [{ a: "asc" as const }], pit: { id: "p1", keep_alive: "1m" } };
  const next = nextPageRequest(req, [5], "p2");

  it("predicts search_after and the returned pit id, and matches the request whatever its key order", async () => {
    expect(next).toEqual({ size: 2, sort: [{ a: "asc" }], pit: { id: "p2", keep_alive: "1m" }, search_after: [5] });
    const outcomes: string[] = [];
    const ra = new ReadAhead({ maxBytes: 1000, ttlMs: 1000, onOutcome: (o) => outcomes.push(o) });
    ra.start("c", next, async () => Buffer.from("page"));
    const reordered = { search_after: [5], pit: { keep_alive: "1m", id: "p2" }, sort: [{ a: "asc" as const }], size: 2 };
    expect((await ra.take("c", reordered))?.toString()).toBe("page");
    expect(await ra.take("c", reordered)).toBeUndefined(); // used once
    expect(outcomes).toEqual(["hit"]);
  });

  it("drops a page on another request, a failed fetch, expiry; counts held bytes against the budget", async () => {
    let now = 0;
    const outcomes: string[] = [];
    const ra = new ReadAhead({ maxBytes: 4, ttlMs: 100, now: () => now, onOutcome: (o) => outcomes.push(o) });
    ra.start("c", next, async () => Buffer.from("12345"));
    expect(await ra.take("c", { ...next, size: 3 })).toBeUndefined();
    ra.start("c", next, async () => {
      throw new Error("es down");
    });
    expect(await ra.take("c", next)).toBeUndefined();
    ra.start("c", next, async () => Buffer.from("12345"));
    await new Promise((r) => setImmediate(r));
    expect(ra.heldBytes).toBe(5);
    ra.start("d", next, async () => Buffer.from("x")); // over budget: not started
    expect(await ra.take("d", next)).toBeUndefined();
    now = 101;
    expect(await ra.take("c", next)).toBeUndefined(); // expired
    expect(ra.heldBytes).toBe(0);
    expect(outcomes).toEqual(["miss", "miss", "miss"]);
  });
});
