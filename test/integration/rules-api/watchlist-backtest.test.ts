/**
 * `In watchlist` conditions in rule backtests (`POST /alerting/rules/test/`; api/backtest/watchlists.ts)
 * over the API's hand-written transactions indexed in the real Elasticsearch, with a list made through
 * the watchlist routes in the real Redis: the backtest matches exactly the transactions an inline
 * `Equals` of the list's members matches, and a member added afterwards is matched by the next backtest
 * (today's membership, over past blocks). Expected hashes come from the fixture records. Skips when
 * Elasticsearch or Redis is down.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import type { RuleInput } from "../../../lib/rules/model.js";
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
const { id: ID, token: TOKEN, config } = isolatedApi(base, "wlbt");
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LAST = FIRST_BLOCK + blocks.length - 1;

const ruleOf = (condition: { name: string; operator: string; value: string }): RuleInput =>
  ({
    name: "from listed senders",
    maxConfirmationCount: 0,
    ...MAINNET,
    config: {
      targetType: "Transaction",
      targetMap: [condition],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/l" } }],
    },
  }) as RuleInput;

describe.skipIf(!up)("In watchlist in rule backtests (real Elasticsearch and Redis)", () => {
  let api: FixtureApi;
  let app: FastifyInstance;
  let list: string;

  const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: AUTH, payload: payload as object });
  /** The hashes of the transactions the backtest of `rule` matched over the fixture blocks, sorted. */
  const matched = async (rule: RuleInput): Promise<string[]> => {
    const res = await post("/alerting/rules/test/", { rule, from: FIRST_BLOCK, to: LAST });
    expect(res.statusCode, res.body).toBe(200);
    return backtestedHashes(res.body);
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

  it("matches what the inline condition on the list's members matches", async () => {
    const expected = sentBy(VITALIK);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(txs.length);
    expect(await matched(ruleOf({ name: "from", operator: "In watchlist", value: list }))).toEqual(expected);
    expect(await matched(ruleOf({ name: "from", operator: "Equals", value: VITALIK }))).toEqual(expected);
  });

  it("reads today's members: a member added later is matched over the same past blocks", async () => {
    const added = await post(`/alerting/watchlists/${list}/members/`, [BINANCE]);
    expect(added.statusCode, added.body).toBe(200);
    const expected = sentBy(VITALIK, BINANCE);
    expect(expected.length).toBeGreaterThan(sentBy(VITALIK).length);
    expect(await matched(ruleOf({ name: "from", operator: "In watchlist", value: list }))).toEqual(expected);
  });

  it("an unknown list has no members", async () => {
    expect(await matched(ruleOf({ name: "from", operator: "In watchlist", value: "5b0c7a52-4a8f-4d7e-9a36-1f3f0e2a9c11" }))).toEqual([]);
  });
});
