/**
 * Paging through the Elasticsearch-compatible routes with the official JavaScript client
 * (`@elastic/elasticsearch` 8) against the real Elasticsearch and Redis: scrolls (the client's
 * `helpers.scrollDocuments` / `helpers.scrollSearch`, and `search?scroll` + `scroll` +
 * `clearScroll`), points in time (`openPointInTime` + `search_after` + `closePointInTime`),
 * `from`/`size`, `filter_path` (`helpers.search`), `helpers.msearch`, the body keys the clients send
 * (`track_total_hits`, `_source` objects, `stored_fields: "_none_"`, `docvalue_fields`), and the
 * refusals: the per-account context cap (429), another account's scroll and point-in-time ids
 * (404), `from + size` past 10,000 and a keep-alive past the cap (400). The fixtures are indexed in
 * partitions of one block, so a point in time spans several backing indices.
 */
import type { AddressInfo } from "node:net";
import { Client, errors, type estypes } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { loadConfig } from "../../../lib/config/index.js";
import { uniformPartitioning } from "../../../lib/partitioning.js";
import { deleteRedisKeys, events, indexFixtures, isolatedApi, MAINNET, searchStackUp, txs } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const iso = isolatedApi(base, "pg");
const MAX_CONTEXTS = 3;
const config = { ...iso.config, api: { ...iso.config.api, searchContextsMax: MAX_CONTEXTS, searchContextMaxKeepAliveMs: 600_000 } };

/** The status and code of a refused call (the client's ResponseError). */
async function refusal(p: Promise<unknown>): Promise<{ status: number | undefined; code: unknown }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(errors.ResponseError);
  const e = err as InstanceType<typeof errors.ResponseError>;
  return { status: e.statusCode, code: (e.body as { error?: { type?: unknown } }).error?.type };
}

const eventKey = (e: { transactionHash: string; logIndex: { num: number } }): string => `${e.transactionHash}_${e.logIndex.num}`;
const sorted = (xs: string[]): string[] => [...xs].sort();

describe.skipIf(!up)("paging with the official JavaScript client: scroll, point in time, from/size, filter_path", () => {
  let es: Client;
  let app: FastifyInstance;
  let client: Client;
  let other: Client;
  let node: string;

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    await indexFixtures(es, MAINNET, iso.indexPrefix, uniformPartitioning(1));
    app = await buildApi({ config, es, logger: false });
    await app.listen({ host: "127.0.0.1", port: 0 });
    node = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
    client = new Client({ node, auth: { bearer: iso.token } });
    const account = await app.accounts.createAccount({ name: "other" });
    const issued = await app.accounts.issueToken(account.id);
    other = new Client({ node, auth: { bearer: issued.token } });
  });

  afterAll(async () => {
    await client?.close();
    await other?.close();
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${iso.indexPrefix}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${iso.id}:`);
  });

  /** The open contexts the API reports at /metrics, by type. */
  async function openContexts(): Promise<Record<string, number>> {
    const text = await (await fetch(`${node.replace(/\/ethereum\/.*$/, "")}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^chainsift_search_contexts_open\{type="(\w+)"\} (\d+)$/gm)) out[m[1] as string] = Number(m[2]);
    return out;
  }

  it("helpers.scrollDocuments returns every event (sort _doc, pages of 2); the scroll is cleared at the end", async () => {
    const seen: string[] = [];
    for await (const doc of client.helpers.scrollDocuments<{ transactionHash: string; logIndex: { num: number } }>({
      index: "event",
      size: 2,
      sort: ["_doc"],
    }))
      seen.push(eventKey(doc));
    expect(sorted(seen)).toEqual(sorted(events.map(eventKey)));
    expect((await openContexts()).scroll).toBe(0);
  });

  it("helpers.scrollSearch pages through every transaction, each page an Elasticsearch answer with our _scroll_id", async () => {
    const seen: string[] = [];
    let pages = 0;
    for await (const res of client.helpers.scrollSearch<{ hash: string }>({ index: "tx", size: 5, sort: "_doc" })) {
      pages++;
      expect(res.body._scroll_id).toMatch(/^css_/);
      expect(res.body.hits.total).toEqual({ value: txs.length, relation: "eq" });
      seen.push(...res.documents.map((d) => d.hash));
    }
    expect(pages).toBe(Math.ceil(txs.length / 5));
    expect(sorted(seen)).toEqual(sorted(txs.map((t) => t.hash)));
  });

  it("search?scroll, scroll, clearScroll by hand; a cleared scroll is 404; /metrics counts it while open", async () => {
    const first = await client.search<{ hash: string }>({ index: "tx", scroll: "1m", size: 4, sort: ["blockNumber.num", { hash: "asc" }] });
    expect(first._scroll_id).toMatch(/^css_/);
    expect((await openContexts()).scroll).toBe(1);
    const seen = first.hits.hits.map((h) => h._source?.hash);
    let id = first._scroll_id as string;
    for (;;) {
      const page = await client.scroll<{ hash: string }>({ scroll_id: id, scroll: "1m" });
      if (page.hits.hits.length === 0) break;
      seen.push(...page.hits.hits.map((h) => h._source?.hash));
      id = page._scroll_id as string;
    }
    const expected = [...txs].sort((a, b) => a.blockNumber.num - b.blockNumber.num || (a.hash < b.hash ? -1 : 1)).map((t) => t.hash);
    expect(seen).toEqual(expected);
    expect(await client.clearScroll({ scroll_id: id })).toMatchObject({ succeeded: true, num_freed: 1 });
    expect(await refusal(client.scroll({ scroll_id: id, scroll: "1m" }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect((await openContexts()).scroll).toBe(0);
  });

  it("openPointInTime + search_after pages equal a plain sorted search; closePointInTime; the id then is 404", async () => {
    const pit = await client.openPointInTime({ index: "event", keep_alive: "1m" });
    expect(pit.id).toMatch(/^csp_/);
    const sort: estypes.SortCombinations[] = [{ "blockNumber.num": "asc" }, { transactionHash: "asc" }, { "logIndex.num": "asc" }];
    const plain = await client.search<{ transactionHash: string; logIndex: { num: number } }>({ index: "event", size: 100, sort });
    const seen: string[] = [];
    let after: Array<string | number> | undefined;
    for (;;) {
      const page = await client.search<{ transactionHash: string; logIndex: { num: number } }>({
        pit: { id: pit.id, keep_alive: "1m" },
        size: 2,
        sort,
        ...(after ? { search_after: after } : {}),
      });
      expect(page.pit_id).toBe(pit.id);
      if (page.hits.hits.length === 0) break;
      seen.push(...page.hits.hits.map((h) => eventKey(h._source as never)));
      after = page.hits.hits.at(-1)?.sort as Array<string | number>;
    }
    expect(seen).toEqual(plain.hits.hits.map((h) => eventKey(h._source as never)));
    expect(seen).toHaveLength(events.length);
    expect(await client.closePointInTime({ id: pit.id })).toMatchObject({ succeeded: true, num_freed: 1 });
    expect(await refusal(client.search({ pit: { id: pit.id }, size: 1 }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
  });

  it("another account's scroll id and point-in-time id answer 404, as an unknown id; the owner still uses them", async () => {
    const pit = await client.openPointInTime({ index: "tx", keep_alive: "1m" });
    const scroll = await client.search({ index: "tx", scroll: "1m", size: 1 });
    const sid = scroll._scroll_id as string;
    expect(await refusal(other.search({ pit: { id: pit.id }, size: 1 }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect(await refusal(other.closePointInTime({ id: pit.id }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect(await refusal(other.scroll({ scroll_id: sid, scroll: "1m" }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect(await refusal(other.clearScroll({ scroll_id: sid }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect(await refusal(client.scroll({ scroll_id: "css_unknown", scroll: "1m" }))).toEqual({ status: 404, code: "CS_CONTEXT_NOT_FOUND" });
    expect((await client.search({ pit: { id: pit.id }, size: 100 })).hits.hits).toHaveLength(txs.length);
    expect((await client.scroll({ scroll_id: sid })).hits.hits).toHaveLength(1);
    await client.closePointInTime({ id: pit.id });
    await client.clearScroll({ scroll_id: sid });
  });

  it("the per-account context cap is 429 CS_CONTEXT_LIMIT; closing one makes room; a keep-alive past the cap is 400", async () => {
    const ids: string[] = [];
    for (let i = 0; i < MAX_CONTEXTS; i++) ids.push((await client.openPointInTime({ index: "block", keep_alive: "1m" })).id);
    expect(await refusal(client.openPointInTime({ index: "block", keep_alive: "1m" }))).toEqual({ status: 429, code: "CS_CONTEXT_LIMIT" });
    expect(await refusal(client.search({ index: "block", scroll: "1m" }))).toEqual({ status: 429, code: "CS_CONTEXT_LIMIT" });
    // Another account has its own budget.
    const theirs = await other.openPointInTime({ index: "block", keep_alive: "1m" });
    await other.closePointInTime({ id: theirs.id });
    await client.closePointInTime({ id: ids.pop() as string });
    ids.push((await client.openPointInTime({ index: "block", keep_alive: "1m" })).id);
    for (const id of ids) await client.closePointInTime({ id });
    expect(await refusal(client.openPointInTime({ index: "block", keep_alive: "2h" }))).toEqual({
      status: 400,
      code: "CS_KEEP_ALIVE_INVALID",
    });
    expect(await refusal(client.search({ index: "block", scroll: "11m" }))).toEqual({ status: 400, code: "CS_KEEP_ALIVE_INVALID" });
    expect(await refusal(client.search({ index: "block", scroll: "soon" }))).toEqual({ status: 400, code: "CS_KEEP_ALIVE_INVALID" });
  });

  it("from + size pages a sorted search up to 10,000; past it CS_RESULT_WINDOW_TOO_LARGE", async () => {
    const all = (await client.search<{ hash: string }>({ index: "tx", size: 100, sort: [{ hash: "asc" }] })).hits.hits.map((h) => h._id);
    const page = await client.search({ index: "tx", from: 3, size: 4, sort: "hash" });
    expect(page.hits.hits.map((h) => h._id)).toEqual(all.slice(3, 7));
    expect(await refusal(client.search({ index: "tx", from: 9_999, size: 2 }))).toEqual({
      status: 400,
      code: "CS_RESULT_WINDOW_TOO_LARGE",
    });
    // The contract's path takes from too.
    const contract = await fetch(`${node}/tx/search/`, {
      method: "POST",
      headers: { authorization: `Bearer ${iso.token}`, "content-type": "application/json" },
      body: JSON.stringify({ from: 3, size: 4, sort: "hash" }),
    });
    expect(((await contract.json()) as { hits: { hits: Array<{ _id: string }> } }).hits.hits.map((h) => h._id)).toEqual(all.slice(3, 7));
  });

  it("helpers.search (filter_path=hits.hits._id,hits.hits._source) and filter_path on plain searches", async () => {
    const docs = await client.helpers.search<{ hash: string }>({ index: "tx", size: 100, query: { term: { from: txs[0]?.from } } });
    expect(sorted(docs.map((d) => d._id))).toEqual(sorted(txs.filter((t) => t.from === txs[0]?.from).map((t) => t.hash)));
    expect(docs.every((d) => d.hash === d._id)).toBe(true);
    const cut = await client.search({ index: "tx", size: 2, filter_path: "hits.total,-hits.total.relation" });
    expect(cut).toEqual({ hits: { total: { value: txs.length } } });
    const wild = await client.search({ index: "tx", size: 1, filter_path: "**.blockNumber.num" });
    expect(wild).toEqual({ hits: { hits: [{ _source: { blockNumber: { num: expect.any(Number) } } }] } });
  });

  it("point-in-time pages are read ahead: answered from it (metric hits), another size than predicted still gets its own page, the same pages as without read-ahead", async () => {
    const readAhead = async (a: FastifyInstance, outcome: string): Promise<number> => {
      const text = (await a.inject({ method: "GET", url: "/metrics" })).body;
      return Number(new RegExp(`chainsift_search_read_ahead_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const sort: estypes.SortCombinations[] = [{ "blockNumber.num": "asc" }, { transactionHash: "asc" }, { "logIndex.num": "asc" }];
    /** Pages of 1, from the third on of 2 (the third is not the predicted request); the keys in order, each request's size and hits. */
    const exportAll = async (c: Client): Promise<{ keys: string[]; asked: number[]; got: number[] }> => {
      const pit = await c.openPointInTime({ index: "event", keep_alive: "1m" });
      const keys: string[] = [];
      const asked: number[] = [];
      const got: number[] = [];
      let after: Array<string | number> | undefined;
      for (let n = 0; ; n++) {
        const size = n < 2 ? 1 : 2;
        const page = await c.search<{ transactionHash: string; logIndex: { num: number } }>({
          pit: { id: pit.id, keep_alive: "1m" },
          size,
          sort,
          ...(after ? { search_after: after } : {}),
        });
        asked.push(size);
        got.push(page.hits.hits.length);
        if (page.hits.hits.length === 0) break;
        keys.push(...page.hits.hits.map((h) => eventKey(h._source as never)));
        after = page.hits.hits.at(-1)?.sort as Array<string | number>;
      }
      await c.closePointInTime({ id: pit.id });
      return { keys, asked, got };
    };
    const plain = await client.search<{ transactionHash: string; logIndex: { num: number } }>({ index: "event", size: 100, sort });
    const expected = plain.hits.hits.map((h) => eventKey(h._source as never));
    const [hits, misses] = [await readAhead(app, "hit"), await readAhead(app, "miss")];
    const withReadAhead = await exportAll(client);
    expect(withReadAhead.keys).toEqual(expected);
    // A full page is read ahead with the same size: the next request is answered from it when it asks that size (a hit), else it is dropped (a miss).
    let expectHits = 0;
    let expectMisses = 0;
    for (let i = 1; i < withReadAhead.asked.length; i++)
      if (withReadAhead.got[i - 1] === withReadAhead.asked[i - 1]) {
        if (withReadAhead.asked[i] === withReadAhead.asked[i - 1]) expectHits++;
        else expectMisses++;
      }
    expect(expectHits).toBeGreaterThan(1);
    expect(expectMisses).toBe(1);
    expect(await readAhead(app, "hit")).toBe(hits + expectHits);
    expect(await readAhead(app, "miss")).toBe(misses + expectMisses);

    const off = await buildApi({
      config: { ...config, api: { ...config.api, readAhead: { ...config.api.readAhead, enabled: false } } },
      es,
      logger: false,
    });
    try {
      await off.listen({ host: "127.0.0.1", port: 0 });
      const offNode = `http://127.0.0.1:${(off.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
      const offClient = new Client({ node: offNode, auth: { bearer: iso.token } });
      expect(await exportAll(offClient)).toEqual(withReadAhead);
      expect(await readAhead(off, "hit")).toBe(0);
      await offClient.close();
    } finally {
      await off.close();
    }
  });

  it("point-in-time and scroll pages over several partitions (ids of several hundred bytes) are written from Elasticsearch's bytes", async () => {
    const answers = async (): Promise<{ bytes: number; parsed: number }> => {
      const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
      const count = (path: string): number =>
        Number(new RegExp(`chainsift_search_answers_total\\{path="${path}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
      return { bytes: count("bytes"), parsed: count("parsed") };
    };
    const before = await answers();
    const pit = await client.openPointInTime({ index: "event", keep_alive: "1m" });
    const page = await client.search({ pit: { id: pit.id, keep_alive: "1m" }, size: 3, sort: [{ _shard_doc: "asc" }] });
    expect(page.hits.hits).toHaveLength(3);
    await client.closePointInTime({ id: pit.id });
    const first = await client.search({ index: "event", scroll: "1m", size: 2, sort: ["_doc"] });
    const next = await client.scroll({ scroll_id: first._scroll_id as string, scroll: "1m" });
    expect(next.hits.hits).toHaveLength(2);
    await client.clearScroll({ scroll_id: first._scroll_id });
    // The point-in-time page, the scroll's first page and its next page.
    expect(await answers()).toEqual({ bytes: before.bytes + 3, parsed: before.parsed });
  });

  it("helpers.msearch answers each search", async () => {
    const m = client.helpers.msearch();
    const [a, b] = await Promise.all([
      m.search<{ hash: string }>({ index: "tx" }, { query: { match_all: {} }, size: 100 }),
      m.search({ index: "block" }, { size: 0 }),
    ]);
    expect(a.documents).toHaveLength(txs.length);
    expect(b.body.hits.total).toEqual({ value: 3, relation: "eq" });
    m.stop();
  });

  it("track_total_hits, _source includes/excludes and false, stored_fields _none_, docvalue_fields", async () => {
    const capped = await client.search({ index: "tx", size: 0, track_total_hits: 2 });
    expect(capped.hits.total).toEqual({ value: 2, relation: "gte" });
    expect((await client.search({ index: "tx", size: 0, track_total_hits: 1000 })).hits.total).toEqual({
      value: txs.length,
      relation: "eq",
    });
    expect((await client.search({ index: "tx", size: 0, track_total_hits: false })).hits.total).toBeUndefined();
    const src = await client.search({
      index: "tx",
      size: 1,
      _source: { includes: ["blockNumber", "hash"], excludes: ["blockNumber.raw"] },
    });
    expect(Object.keys(src.hits.hits[0]?._source as object).sort()).toEqual(["blockNumber", "hash"]);
    expect(src.hits.hits[0]?._source).toMatchObject({ blockNumber: { num: expect.any(Number) } });
    expect(src.hits.hits[0]?._source).not.toHaveProperty("blockNumber.raw");
    expect((await client.search({ index: "tx", size: 1, _source: false })).hits.hits[0]).not.toHaveProperty("_source");
    const bare = await client.search({ index: "tx", size: 1, stored_fields: "_none_" });
    expect(Object.keys(bare.hits.hits[0] ?? {})).toEqual(["_index", "_id", "_score"]);
    const dv = await client.search({ index: "tx", size: 1, query: { term: { _id: txs[0]?.hash } }, docvalue_fields: ["blockNumber.num"] });
    expect(dv.hits.hits[0]?.fields).toEqual({ "blockNumber.num": [txs[0]?.blockNumber.num] });
  });
});
