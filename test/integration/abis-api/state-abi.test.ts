/**
 * A view-call state subject without an inline `abi` (api/routes/rules/state-abi.ts) through the whole
 * app against the real Redis: the function is taken from the ABI registered for the call's `to` (the
 * caller's registration, else the global one) and stored in the rule; a function no registration has
 * as view/pure answers 400 CS_RULE_STATE_ABI_UNKNOWN at `stateCondition.subject.function`.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { loadConfig } from "../../../lib/config/index.js";
import { deleteRedisKeys, isolatedApi, MAINNET, searchStackUp } from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id, token, config } = isolatedApi(base, "sa");
const ADMIN = `admin-${id}`;
const POOL = "0x0d4a11d5eeaac28ec3f61d100daf4d40471f1852";
const ORACLE = "0x5f4ec3df9cbd43714fe2740f5e3616155c5b8419";
const POOL_ABI = [
  {
    type: "function",
    name: "getReserves",
    inputs: [],
    outputs: [
      { name: "reserve0", type: "uint112" },
      { name: "reserve1", type: "uint112" },
      { name: "blockTimestampLast", type: "uint32" },
    ],
    stateMutability: "view",
  },
  { type: "function", name: "sync", inputs: [], outputs: [], stateMutability: "nonpayable" },
];
const ORACLE_ABI = [{ type: "function", name: "latestAnswer", inputs: [], outputs: [{ type: "int256" }], stateMutability: "view" }];

describe.skipIf(!up)("state rules with a registered ABI (real Redis)", () => {
  let app: FastifyInstance;
  const inject = (method: "POST" | "PUT", url: string, bearer: string, payload: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, payload });
  const rule = (to: string, fn: string) => ({
    name: `${fn} of ${to}`,
    ...MAINNET,
    maxConfirmationCount: 0,
    config: {
      targetType: "Transaction",
      targetMap: [{ name: "to", operator: "Equals (ignore case)", value: to }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1:9/hook" } }],
    },
    stateCondition: { subject: { type: "call", to, function: fn }, comparison: { percent: "20" } },
  });

  beforeAll(async () => {
    app = await buildApi({ config, logger: false });
    expect((await inject("PUT", `/abis/${POOL}`, token, { abi: POOL_ABI })).statusCode).toBe(201);
    expect((await inject("PUT", `/admin/abis/${ORACLE}`, ADMIN, { abi: ORACLE_ABI })).statusCode).toBe(201);
  });

  afterAll(async () => {
    await app?.close();
    await deleteRedisKeys(base.redisUrl, id);
  });

  it("copies the caller's registered view function into the rule, and the global one when the caller has none", async () => {
    const pool = await inject("POST", "/alerting/rules/", token, rule(POOL, "getReserves"));
    expect(pool.statusCode, pool.body).toBe(201);
    expect(pool.json<{ stateCondition: { subject: { abi: unknown } } }>().stateCondition.subject.abi).toEqual([POOL_ABI[0]]);
    const oracle = await inject("POST", "/alerting/rules/", token, rule(ORACLE.toUpperCase().replace("0X", "0x"), "latestAnswer"));
    expect(oracle.statusCode, oracle.body).toBe(201);
    expect(oracle.json<{ stateCondition: { subject: { abi: unknown } } }>().stateCondition.subject.abi).toEqual(ORACLE_ABI);
  });

  it("refuses a function the registration lacks or that is not a view, and an address without a registration", async () => {
    for (const [to, fn] of [
      [POOL, "sync"],
      [POOL, "getReservez"],
      ["0x00000000000000000000000000000000000000c3", "totalSupply"],
    ] as const) {
      const res = await inject("POST", "/alerting/rules/", token, rule(to, fn));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<{ error: { code: string; path: string } }>().error).toMatchObject({
        code: "CS_RULE_STATE_ABI_UNKNOWN",
        path: "stateCondition.subject.function",
      });
    }
  });

  it("resolves on PUT too; an inline abi is kept as given", async () => {
    const inline = rule(POOL, "getReserves");
    const created = await inject("POST", "/alerting/rules/", token, {
      ...inline,
      stateCondition: {
        ...inline.stateCondition,
        subject: { ...inline.stateCondition.subject, abi: ["function getReserves() view returns (uint112, uint112, uint32)"] },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id: ruleId, stateCondition } = created.json<{ id: string; stateCondition: { subject: { abi: unknown } } }>();
    expect(stateCondition.subject.abi).toEqual(["function getReserves() view returns (uint112, uint112, uint32)"]);
    const put = await inject("PUT", `/alerting/rules/${ruleId}/`, token, { stateCondition: rule(ORACLE, "latestAnswer").stateCondition });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json<{ stateCondition: { subject: { abi: unknown } } }>().stateCondition.subject.abi).toEqual(ORACLE_ABI);
  });
});
