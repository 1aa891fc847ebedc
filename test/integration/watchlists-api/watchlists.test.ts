/**
 * The watchlist routes (api/routes/watchlists) through the whole app against the real Redis:
 * create/list/get/delete, bulk add and remove as JSON, NDJSON and CSV, the membership check,
 * a bad member answered with its line, the per-request cap, another account's list answering 404
 * (and refused in a rule's `In watchlist` and a saved search's `terms` lookup).
 * Its own Redis key prefix, deleted afterwards (never a flush).
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { type Config, loadConfig } from "../../../lib/config/index.js";
import { DEFAULT_WATCHLISTS_CONFIG } from "../../../lib/config/watchlists.js";
import type { Watchlist } from "../../../lib/watchlists/store.js";
import { tokenTransferRule } from "../../support/rules.js";
import { deleteRedisKeys, searchStackUp } from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const ID = `t${randomBytes(4).toString("hex")}`;
const ADMIN = `admin-${ID}-${randomBytes(8).toString("hex")}`;
const config: Config = {
  ...base,
  redisKeyPrefix: `${ID}:`,
  elasticsearch: { ...base.elasticsearch, indexPrefix: `${ID}-` },
  api: { ...base.api, tokens: [], adminToken: ADMIN, rateLimitMax: 10_000 },
};
const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

describe.skipIf(!up)("watchlist routes (real Redis)", () => {
  let app: FastifyInstance;
  let tokenA: string;
  let tokenB: string;

  const call = (method: "GET" | "POST" | "DELETE", url: string, token: string, payload?: unknown, contentType?: string) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, ...(contentType ? { "content-type": contentType } : {}) },
      ...(payload !== undefined ? { payload: payload as string } : {}),
    });

  async function newToken(name: string): Promise<string> {
    const admin = { authorization: `Bearer ${ADMIN}` };
    const acc = await app.inject({ method: "POST", url: "/admin/accounts/", headers: admin, payload: { name } });
    const id = acc.json<{ id: string }>().id;
    const issued = await app.inject({ method: "POST", url: `/admin/accounts/${id}/tokens/`, headers: admin, payload: {} });
    return issued.json<{ token: string }>().token;
  }

  beforeAll(async () => {
    app = await buildApi({ config, logger: false });
    tokenA = await newToken("a");
    tokenB = await newToken("b");
  });

  afterAll(async () => {
    await app?.close();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("creates, uploads in three formats, counts, checks, removes and deletes", async () => {
    const created = await call("POST", "/alerting/watchlists/", tokenA, { name: "deposits", kind: "address" });
    expect(created.statusCode, created.body).toBe(201);
    const w = created.json<Watchlist>();
    expect(created.headers.location).toBe(`/alerting/watchlists/${w.id}/`);
    const members = `/alerting/watchlists/${w.id}/members/`;

    const json = await call("POST", members, tokenA, [addr(1), addr(2).toUpperCase().replace("0X", "0x"), addr(2)]);
    expect(json.json()).toEqual({ added: 2, count: 2 });
    const ndjson = await call("POST", members, tokenA, `"${addr(3)}"\n${addr(4)}\n\n`, "application/x-ndjson");
    expect(ndjson.json()).toEqual({ added: 2, count: 4 });
    const csv = await call("POST", members, tokenA, `address,label\n${addr(5)},a\n"${addr(1)}",b\n`, "text/csv");
    expect(csv.json()).toEqual({ added: 1, count: 5 });

    expect((await call("GET", `${members}${addr(5).toUpperCase().replace("0X", "0x")}/`, tokenA)).json()).toEqual({
      member: true,
      value: addr(5),
    });
    expect((await call("GET", `${members}${addr(6)}/`, tokenA)).json()).toEqual({ member: false, value: addr(6) });
    expect((await call("GET", `/alerting/watchlists/${w.id}/`, tokenA)).json()).toMatchObject({ id: w.id, count: 5, kind: "address" });
    expect((await call("GET", "/alerting/watchlists/", tokenA)).json<{ watchlists: Watchlist[] }>().watchlists.map((x) => x.id)).toEqual([
      w.id,
    ]);

    const removed = await call("POST", `${members}delete/`, tokenA, [addr(1), addr(9)]);
    expect(removed.json()).toEqual({ removed: 1, count: 4 });

    expect((await call("DELETE", `/alerting/watchlists/${w.id}/`, tokenA)).statusCode).toBe(204);
    const gone = await call("GET", `/alerting/watchlists/${w.id}/`, tokenA);
    expect(gone.statusCode).toBe(404);
    expect(gone.json<{ error: { code: string } }>().error.code).toBe("CS_WATCHLIST_NOT_FOUND");
  });

  it("refuses a bad member with its line, applying nothing, and hides other accounts' lists", async () => {
    const w = (await call("POST", "/alerting/watchlists/", tokenA, { name: "x", kind: "address" })).json<Watchlist>();
    const members = `/alerting/watchlists/${w.id}/members/`;
    const bad = await call("POST", members, tokenA, `${addr(1)}\n${addr(2)}\n0x1234\n`, "application/x-ndjson");
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: { code: string; path: string } }>().error).toMatchObject({
      code: "CS_WATCHLIST_MEMBER_INVALID",
      path: "lines[3]",
    });
    const badJson = await call("POST", members, tokenA, [addr(1), 7]);
    expect(badJson.json<{ error: { path: string } }>().error.path).toBe("body[1]");
    expect((await call("GET", `/alerting/watchlists/${w.id}/`, tokenA)).json<{ count: number }>().count).toBe(0);

    const other = await call("GET", `/alerting/watchlists/${w.id}/`, tokenB);
    expect(other.statusCode).toBe(404);
    expect((await call("POST", members, tokenB, [addr(1)])).statusCode).toBe(404);

    const invalid = await call("POST", "/alerting/watchlists/", tokenA, { name: "y", kind: "ens" });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json<{ error: { code: string } }>().error.code).toBe("CS_WATCHLIST_INVALID");
  });

  it("refuses an upload over the per-request cap", async () => {
    const w = (await call("POST", "/alerting/watchlists/", tokenA, { name: "big", kind: "address" })).json<Watchlist>();
    const n = DEFAULT_WATCHLISTS_CONFIG.maxMembersPerRequest + 1;
    const body = Array.from({ length: n }, (_, i) => addr(i)).join("\n");
    const res = await call("POST", `/alerting/watchlists/${w.id}/members/`, tokenA, body, "text/csv");
    expect(res.statusCode).toBe(413);
    expect(res.json<{ error: { code: string } }>().error.code).toBe("CS_WATCHLIST_BATCH_TOO_LARGE");
    expect((await call("GET", `/alerting/watchlists/${w.id}/`, tokenA)).json<{ count: number }>().count).toBe(0);
  });

  it("a rule's In watchlist condition must name one of the caller's watchlists (CS_RULE_WATCHLIST_UNKNOWN)", async () => {
    const w = (await call("POST", "/alerting/watchlists/", tokenA, { name: "senders", kind: "address" })).json<Watchlist>();
    const withList = (watchlistId: string) => {
      const r = tokenTransferRule({
        name: "listed",
        chain: config.chain,
        token: addr(7),
        maxConfirmationCount: 1,
        url: "http://127.0.0.1:9/hook",
      });
      r.config.targetMap.push({ name: "from", operator: "In watchlist", value: watchlistId, operatorParameters: null });
      return r;
    };
    const created = await call("POST", "/alerting/rules/", tokenA, withList(w.id));
    expect(created.statusCode, created.body).toBe(201);
    const other = await call("POST", "/alerting/rules/", tokenB, withList(w.id));
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: "config.targetMap[2].value" } });
    const ruleId = created.json<{ id: string }>().id;
    const update = await app.inject({
      method: "PUT",
      url: `/alerting/rules/${ruleId}/`,
      headers: { authorization: `Bearer ${tokenA}` },
      payload: { config: withList("00000000-0000-4000-8000-000000000000").config },
    });
    expect(update.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN" } });

    // A sequence's followedBy conditions are checked the same way.
    const sequenceOf = (watchlistId: string) => ({
      followedBy: { targetType: "Transaction", targetMap: [{ name: "to", operator: "In watchlist", value: watchlistId }] },
      within: { blocks: 10 },
      correlate: { first: "args.to", followedBy: "from" },
    });
    const plain = tokenTransferRule({
      name: "then",
      chain: config.chain,
      token: addr(7),
      maxConfirmationCount: 1,
      url: "http://127.0.0.1:9/hook",
    });
    const seqOk = await call("POST", "/alerting/rules/", tokenA, { ...plain, sequence: sequenceOf(w.id) });
    expect(seqOk.statusCode, seqOk.body).toBe(201);
    const seqOther = await call("POST", "/alerting/rules/", tokenB, { ...plain, sequence: sequenceOf(w.id) });
    expect(seqOther.statusCode).toBe(400);
    expect(seqOther.json()).toMatchObject({
      error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: "sequence.followedBy.targetMap[0].value" },
    });
  });

  it("a saved search's terms lookup must name one of the caller's watchlists (CS_RULE_WATCHLIST_UNKNOWN)", async () => {
    const w = (await call("POST", "/alerting/watchlists/", tokenA, { name: "search senders", kind: "address" })).json<Watchlist>();
    const search = {
      name: "listed senders",
      ...config.chain,
      maxConfirmationCount: 1,
      kind: "tx",
      query: { terms: { from: { watchlist: w.id } } },
      alerts: [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1:9/hook" } }],
    };
    const mine = await call("POST", "/alerting/searches/", tokenA, search);
    expect(mine.statusCode, mine.body).toBe(201);
    const theirs = await call("POST", "/alerting/searches/", tokenB, search);
    expect(theirs.statusCode).toBe(400);
    expect(theirs.json()).toMatchObject({ error: { code: "CS_RULE_WATCHLIST_UNKNOWN", path: "query.terms.from.watchlist" } });
  });
});
