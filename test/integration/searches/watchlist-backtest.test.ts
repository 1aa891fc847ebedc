/**
 * Saved searches with a `terms` lookup by watchlist through the API, over the API's hand-written
 * transactions indexed in the real Elasticsearch and a list made through the watchlist routes in the
 * real Redis: a saved-search backtest (`POST /alerting/searches/test/`, api/backtest/search-tester.ts)
 * matches exactly the records the search API answers for the same query (which expands the list),
 * and a member added afterwards is matched by the next backtest (today's members); a list the caller
 * does not have is refused with `CS_RULE_WATCHLIST_UNKNOWN` at the lookup's path, by the saved-search
 * routes and by the backtest; a backtest with `window` feeds the window exactly the listed senders'
 * transactions of each block. Expected hashes come from the fixture records. Skips when Elasticsearch
 * or Redis is down.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import {
  BINANCE,
  backtestedHashes,
  blocks,
  deleteRedisKeys,
  FIRST_BLOCK,
  type FixtureApi,
  isolatedApi,
  MAINNET,
  searchStackUp,
  sentBy,
  startFixtureApi,
  txs,
  VITALIK,
} from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id: ID, token: TOKEN, config } = isolatedApi(base, "sswl");
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LAST = FIRST_BLOCK + blocks.length - 1;
const UNKNOWN = "5b0c7a52-4a8f-4d7e-9a36-1f3f0e2a9c11";

const byList = (id: string) => ({ bool: { filter: [{ terms: { from: { watchlist: id } } }] } });
const LOOKUP_PATH = "query.bool.filter[0].terms.from.watchlist";

const searchOf = (query: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name: "from listed senders",
  ...MAINNET,
  maxConfirmationCount: 0,
  kind: "tx",
  query,
  alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/l" } }],
  ...extra,
});

describe.skipIf(!up)("watchlist lookups in saved searches through the API (real Elasticsearch and Redis)", () => {
  let api: FixtureApi;
  let app: FastifyInstance;
  let list: string;

  const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: AUTH, payload: payload as object });
  /** The hashes of the transactions the backtest of the search matched over the fixture blocks, sorted. */
  const backtested = async (query: Record<string, unknown>): Promise<string[]> => {
    const res = await post("/alerting/searches/test/", { search: searchOf(query), from: FIRST_BLOCK, to: LAST });
    expect(res.statusCode, res.body).toBe(200);
    return backtestedHashes(res.body);
  };
  /** The hashes the search API answers for the query over the fixture blocks, sorted. */
  const searched = async (query: Record<string, unknown>): Promise<string[]> => {
    const res = await post("/ethereum/ethereum/mainnet/es/tx/search/", { size: 1000, query });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().hits.hits as Array<{ _source: { hash: string } }>).map((h) => h._source.hash).sort();
  };

  beforeAll(async () => {
    api = await startFixtureApi(config);
    ({ app } = api);
    const created = await post("/alerting/watchlists/", { name: "senders", kind: "address" });
    expect(created.statusCode, created.body).toBe(201);
    list = created.json<{ id: string }>().id;
    expect((await post(`/alerting/watchlists/${list}/members/`, [VITALIK])).statusCode).toBe(200);
  });

  afterAll(async () => {
    await api?.close();
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("a backtest matches what the search API answers for the same lookup; a member added later is matched next time", async () => {
    const expected = sentBy(VITALIK);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(txs.length);
    expect(await searched(byList(list))).toEqual(expected);
    expect(await backtested(byList(list))).toEqual(expected);
    expect((await post(`/alerting/watchlists/${list}/members/`, [BINANCE])).statusCode).toBe(200);
    const more = sentBy(VITALIK, BINANCE);
    expect(more.length).toBeGreaterThan(expected.length);
    expect(await backtested(byList(list))).toEqual(more);
    expect(await searched(byList(list))).toEqual(more);
  });

  it("stores a saved search with the caller's list; refuses a list the caller does not have (CS_RULE_WATCHLIST_UNKNOWN)", async () => {
    const created = await post("/alerting/searches/", searchOf(byList(list)));
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ query: byList(list) });
    const unknown = await post("/alerting/searches/", searchOf(byList(UNKNOWN)));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: LOOKUP_PATH } });
    const put = await app.inject({
      method: "PUT",
      url: `/alerting/searches/${created.json<{ id: string }>().id}/`,
      headers: AUTH,
      payload: { query: byList(UNKNOWN) },
    });
    expect(put.statusCode).toBe(400);
    expect(put.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: LOOKUP_PATH } });
    const sequence = {
      followedBy: { kind: "tx", query: byList(UNKNOWN) },
      within: { blocks: 5 },
      correlate: { first: "to", followedBy: "to" },
    };
    const seq = await post("/alerting/searches/", searchOf(byList(list), { sequence }));
    expect(seq.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: `sequence.followedBy.${LOOKUP_PATH}` } });
    const test = await post("/alerting/searches/test/", { search: searchOf(byList(UNKNOWN)), from: FIRST_BLOCK, to: LAST });
    expect(test.statusCode).toBe(400);
    expect(test.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: `search.${LOOKUP_PATH}` } });
  });

  it("a backtest of a search with window evaluates the lookup: the records entering the window are the listed senders'", async () => {
    const created = await post("/alerting/watchlists/", { name: "one sender", kind: "address" });
    const one = created.json<{ id: string }>().id;
    expect((await post(`/alerting/watchlists/${one}/members/`, [BINANCE])).statusCode).toBe(200);
    const listed = new Set(sentBy(BINANCE));
    const perBlock = blocks.map((b) => [b.number.num, txs.filter((t) => t.blockNumber.num === b.number.num && listed.has(t.hash)).length]);
    // The list selects some, not all, of the transactions of the range.
    expect(listed.size).toBeGreaterThan(0);
    expect(listed.size).toBeLessThan(txs.length);
    const window = { blocks: 1, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "1" };
    const res = await post("/alerting/searches/test/", { search: searchOf(byList(one), { window }), from: FIRST_BLOCK, to: LAST });
    expect(res.statusCode, res.body).toBe(200);
    const lines = res.body
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; blockNumber?: number; selected?: number });
    expect(lines.filter((l) => l.type === "block").map((l) => [l.blockNumber, l.selected])).toEqual(perBlock);
    expect(lines.filter((l) => l.type === "match").length).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatchObject({ type: "end", complete: true });
  });
});
