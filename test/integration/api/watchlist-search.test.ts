/**
 * `terms` by watchlist in a search (issue 34; api/search/watchlist-terms.ts) against the real
 * Elasticsearch and Redis: a list made through the watchlist routes selects the same transactions
 * as the inline `terms` of its members, on the contract path, `_search` and `_count`; a list longer
 * than one `terms` chunk (65,536) gives the same answer; an edit of the list changes the next
 * answer (the result cache keys on the members); unknown lists and non-keyword fields are refused
 * with their codes and paths. Expected ids come from the fixture records.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import { TERMS_CHUNK } from "../../../api/search/watchlist-terms.js";
import { loadConfig } from "../../../lib/config/index.js";
import { BINANCE, deleteRedisKeys, indexFixtures, isolatedApi, MAINNET, searchStackUp, sentBy, txs, VITALIK } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "wl");
const PATH = "/ethereum/ethereum/mainnet/es";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe.skipIf(!up)("terms by watchlist (real Elasticsearch and Redis)", () => {
  let es: Client;
  let app: FastifyInstance;
  let list: string;

  const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: AUTH, payload: payload as object });
  const hashesOf = async (url: string, body: unknown): Promise<string[]> => {
    const res = await post(url, body);
    expect(res.statusCode, res.body).toBe(200);
    const hits = res.json<{ hits: { hits: Array<{ _source: { hash: string } }> } }>().hits.hits;
    return hits.map((h) => h._source.hash).sort();
  };
  const byList = (id: string) => ({ query: { terms: { from: { watchlist: id } } }, size: 100 });

  beforeAll(async () => {
    es = new Client({ node: base.elasticsearch.url });
    await indexFixtures(es, MAINNET, PREFIX);
    app = await buildApi({ config, es, logger: false });
    const created = await post("/alerting/watchlists/", { name: "senders", kind: "address" });
    expect(created.statusCode, created.body).toBe(201);
    list = created.json<{ id: string }>().id;
    const added = await post(`/alerting/watchlists/${list}/members/`, [VITALIK, BINANCE]);
    expect(added.statusCode, added.body).toBe(200);
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("selects what the inline terms of its members select, on the contract path, _search and _count", async () => {
    const expected = sentBy(VITALIK, BINANCE);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(txs.length);
    expect(await hashesOf(`${PATH}/tx/search/`, byList(list))).toEqual(expected);
    expect(await hashesOf(`${PATH}/tx/search/`, { query: { terms: { from: [VITALIK, BINANCE] } }, size: 100 })).toEqual(expected);
    expect(await hashesOf(`${PATH}/tx/_search`, byList(list))).toEqual(expected);
    const counted = await post(`${PATH}/tx/_count`, { query: byList(list).query });
    expect(counted.statusCode, counted.body).toBe(200);
    expect(counted.json<{ count: number }>().count).toBe(expected.length);
  });

  it("a list longer than one terms chunk gives the same answer, and an edit changes the next answer", async () => {
    const filler = Array.from({ length: TERMS_CHUNK + 10 }, () => `0x${randomBytes(20).toString("hex")}`);
    for (let i = 0; i < filler.length; i += 50_000) {
      const res = await post(`/alerting/watchlists/${list}/members/`, filler.slice(i, i + 50_000));
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(await hashesOf(`${PATH}/tx/_search`, byList(list))).toEqual(sentBy(VITALIK, BINANCE));
    const removed = await post(`/alerting/watchlists/${list}/members/delete/`, [VITALIK]);
    expect(removed.statusCode, removed.body).toBe(200);
    expect(await hashesOf(`${PATH}/tx/_search`, byList(list))).toEqual(sentBy(BINANCE));
  });

  it("refuses an unknown list (404 at its path), a non-keyword field and a malformed lookup", async () => {
    const unknown = await post(`${PATH}/tx/_search`, byList("00000000-0000-4000-8000-000000000000"));
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json<ErrorBody>().error).toMatchObject({ code: "CS_WATCHLIST_NOT_FOUND", path: "query.terms.from.watchlist" });
    const numeric = await post(`${PATH}/tx/search/`, { query: { terms: { "value.num": { watchlist: list } } } });
    expect(numeric.statusCode).toBe(400);
    expect(numeric.json<ErrorBody>().error).toMatchObject({ code: "CS_QUERY_INVALID", path: `query.terms["value.num"]` });
    const extra = await post(`${PATH}/tx/search/`, { query: { terms: { from: { watchlist: list, path: "x" } } } });
    expect(extra.json<ErrorBody>().error.code).toBe("CS_QUERY_INVALID");
  });
});
