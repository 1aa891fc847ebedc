/**
 * The user-ABI routes (api/routes/abis) through the whole app (api/app.ts) against the real Redis:
 * registration, replacement, listing, removal, malformed ABIs answered 400 with the offending path,
 * namespace isolation between two accounts, the admin-only global namespace, the per-account limit,
 * the OpenAPI document. Its own Redis key prefix, deleted afterwards (never a flush).
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { AbiRegistration } from "../../../lib/abis/model.js";
import { createRedecodeStatusStore } from "../../../lib/abis/redecode-status.js";
import { type Config, loadConfig } from "../../../lib/config/index.js";
import { deleteRedisKeys, searchStackUp } from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const ADMIN = `admin-${ID}-${randomBytes(8).toString("hex")}`;
const CONTRACT = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const PING_ABI = [
  {
    type: "event",
    name: "Ping",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "note", type: "string", indexed: true },
      { name: "amount", type: "uint256" },
      {
        name: "pair",
        type: "tuple",
        components: [
          { name: "a", type: "uint8" },
          { name: "b", type: "bytes32[]" },
        ],
      },
    ],
  },
  { type: "function", name: "ping", inputs: [{ name: "x", type: "uint256" }], outputs: [], stateMutability: "nonpayable" },
];

const config: Config = {
  ...base,
  redisKeyPrefix: `${ID}:`,
  elasticsearch: { ...base.elasticsearch, indexPrefix: `${ID}-` },
  api: { ...base.api, tokens: [], adminToken: ADMIN, rateLimitMax: 10_000 },
  abis: { ...base.abis, maxPerAccount: 3 },
};

interface ErrorBody {
  error: { code: string; message: string; path: string | null };
  errors: Array<{ code: string; message: string; path: string | null }>;
}

describe.skipIf(!up)("user ABI routes (real Redis)", () => {
  let app: FastifyInstance;
  let tokenA: string;
  let tokenB: string;
  let accountA: string;

  const call = (method: "GET" | "PUT" | "DELETE", url: string, token: string, payload?: unknown) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload !== undefined ? { payload: payload as object } : {}),
    });

  async function newToken(name: string): Promise<{ id: string; token: string }> {
    const acc = await app.inject({
      method: "POST",
      url: "/admin/accounts/",
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: { name },
    });
    const id = acc.json<{ id: string }>().id;
    const issued = await app.inject({
      method: "POST",
      url: `/admin/accounts/${id}/tokens/`,
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: {},
    });
    return { id, token: issued.json<{ token: string }>().token };
  }

  beforeAll(async () => {
    app = await buildApi({ config, logger: false });
    const a = await newToken("a");
    const b = await newToken("b");
    tokenA = a.token;
    accountA = a.id;
    tokenB = b.token;
  });

  afterAll(async () => {
    await app?.close();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("shows the re-decode status of the latest registration on GET (issue 19 §3 g)", async () => {
    const address = "0x00000000000000000000000000000000000000b2";
    const put = await call("PUT", `/abis/${address}`, tokenA, { abi: PING_ABI });
    expect(put.statusCode, put.body).toBe(201);
    const reg = put.json<AbiRegistration>();
    expect((await call("GET", `/abis/${address}`, tokenA)).json<{ redecode: unknown }>().redecode).toBeNull();
    const redis = createClient({ url: base.redisUrl });
    await redis.connect();
    try {
      const status = createRedecodeStatusStore({ redis, keyPrefix: config.redisKeyPrefix });
      // What the decode stage writes after a failed attempt (it retries later).
      expect(await status.claim(accountA, address, reg.updatedAt, 1)).toBe(true);
      await status.failed(accountA, address, reg.updatedAt, 1, "search failed: 503", Date.parse("2030-01-01T00:00:00Z"));
      const got = (await call("GET", `/abis/${address}`, tokenA)).json<{ redecode: Record<string, unknown> }>();
      expect(got.redecode).toMatchObject({
        state: "failed",
        attempts: 1,
        lastError: "search failed: 503",
        nextAttemptAt: "2030-01-01T00:00:00.000Z",
        registrationAt: reg.updatedAt,
      });
      // The failure released the lock: the next attempt can claim it.
      expect(await status.claim(accountA, address, reg.updatedAt, 2, "search failed: 503")).toBe(true);
      // A status of an earlier registration is not shown for a newer one.
      await status.succeeded(accountA, address, "2000-01-01T00:00:00.000Z", 1, { logs: 1, events: 1, truncated: false });
      expect((await call("GET", `/abis/${address}`, tokenA)).json<{ redecode: unknown }>().redecode).toBeNull();
    } finally {
      await redis.quit();
    }
    expect((await call("DELETE", `/abis/${address}`, tokenA)).statusCode).toBe(204);
  });

  it("registers, replaces, lists, gets and removes an ABI in the caller's namespace", async () => {
    const put = await call("PUT", `/abis/${CONTRACT}`, tokenA, { abi: PING_ABI, name: "Pinger" });
    expect(put.statusCode, put.body).toBe(201);
    const reg = put.json<AbiRegistration>();
    expect(reg).toMatchObject({ namespace: accountA, address: CONTRACT.toLowerCase(), name: "Pinger", events: 1 });
    const again = await call("PUT", `/abis/${CONTRACT.toLowerCase()}`, tokenA, { abi: PING_ABI });
    expect(again.statusCode).toBe(200);
    expect(again.json<AbiRegistration>()).toMatchObject({ createdAt: reg.createdAt, name: null });
    const list = await call("GET", "/abis/", tokenA);
    expect(list.json<{ abis: AbiRegistration[] }>().abis.map((r) => r.address)).toEqual([CONTRACT.toLowerCase()]);
    expect((await call("GET", `/abis/${CONTRACT}`, tokenA)).json<AbiRegistration>().abi).toEqual(PING_ABI);
    expect((await call("DELETE", `/abis/${CONTRACT}`, tokenA)).statusCode).toBe(204);
    const gone = await call("GET", `/abis/${CONTRACT}`, tokenA);
    expect(gone.statusCode).toBe(404);
    expect(gone.json<ErrorBody>().error.code).toBe("CS_ABI_NOT_FOUND");
  });

  it("answers a malformed ABI with 400 CS_ABI_INVALID and the offending path", async () => {
    const badType = structuredClone(PING_ABI) as Array<{ inputs: Array<{ type: string }> }>;
    (badType[0] as { inputs: Array<{ type: string }> }).inputs[2] = { type: "uint257" } as never;
    const cases: Array<[unknown, string]> = [
      [{ abi: [PING_ABI[1], PING_ABI[1], PING_ABI[1], badType[0]] }, "abi[3].inputs[2].type"],
      [{ abi: [{ type: "event", name: "E", inputs: [{ name: "t", type: "tuple" }] }] }, "abi[0].inputs[0].components"],
      [{ abi: [{ type: "event", inputs: [] }] }, "abi[0].name"],
      [{ abi: [{ type: "evnt", name: "E" }] }, "abi[0].type"],
      [{ abi: [] }, "abi"],
      [{ abi: PING_ABI, extra: 1 }, "extra"],
    ];
    for (const [body, path] of cases) {
      const res = await call("PUT", `/abis/${CONTRACT}`, tokenA, body);
      expect(res.statusCode, res.body).toBe(400);
      const err = res.json<ErrorBody>();
      expect(err.error.code).toBe("CS_ABI_INVALID");
      expect(
        err.errors.map((e) => e.path),
        res.body,
      ).toContain(path);
    }
    const badAddress = await call("PUT", "/abis/0x1234", tokenA, { abi: PING_ABI });
    expect(badAddress.statusCode).toBe(400);
    expect(badAddress.json<ErrorBody>().error).toMatchObject({ code: "CS_ABI_ADDRESS_INVALID", path: "params.address" });
    const functionsForAny = await call("PUT", "/abis/any", tokenA, { abi: PING_ABI });
    expect(functionsForAny.statusCode).toBe(400);
    expect(functionsForAny.json<ErrorBody>().error.path).toBe("abi[1].type");
  });

  it("keeps namespaces apart: another account can neither read, replace nor delete a registration", async () => {
    expect((await call("PUT", `/abis/${CONTRACT}`, tokenA, { abi: PING_ABI, name: "A's" })).statusCode).toBe(201);
    expect((await call("GET", `/abis/${CONTRACT}`, tokenB)).statusCode).toBe(404);
    expect((await call("DELETE", `/abis/${CONTRACT}`, tokenB)).statusCode).toBe(404);
    expect((await call("GET", "/abis/", tokenB)).json<{ abis: unknown[] }>().abis).toEqual([]);
    // B's registration of the same address is B's own; A's stays as it was.
    expect((await call("PUT", `/abis/${CONTRACT}`, tokenB, { abi: PING_ABI, name: "B's" })).statusCode).toBe(201);
    expect((await call("GET", `/abis/${CONTRACT}`, tokenA)).json<AbiRegistration>()).toMatchObject({ name: "A's", namespace: accountA });
    // No route takes a namespace: the global one needs the admin token.
    expect((await call("PUT", `/admin/abis/${CONTRACT}`, tokenA, { abi: PING_ABI })).statusCode).toBe(401);
    const global = await call("PUT", `/admin/abis/${CONTRACT}`, ADMIN, { abi: PING_ABI });
    expect(global.statusCode, global.body).toBe(201);
    expect(global.json<AbiRegistration>().namespace).toBe("global");
    expect((await call("GET", "/admin/abis/", ADMIN)).json<{ abis: AbiRegistration[] }>().abis).toHaveLength(1);
  });

  it("refuses a registration beyond the per-account limit with 409 CS_ABI_LIMIT_REACHED", async () => {
    const addresses = [`0x${"1".repeat(40)}`, `0x${"2".repeat(40)}`, `0x${"3".repeat(40)}`];
    const statuses: number[] = [];
    for (const a of addresses) statuses.push((await call("PUT", `/abis/${a}`, tokenB, { abi: PING_ABI })).statusCode);
    // B already has CONTRACT: the limit (3) is reached at the third new address.
    expect(statuses).toEqual([201, 201, 409]);
    expect((await call("PUT", `/abis/${CONTRACT}`, tokenB, { abi: PING_ABI })).statusCode).toBe(200);
  });

  it("documents the routes in the OpenAPI document", async () => {
    const doc = (await app.inject({ method: "GET", url: "/docs/json" })).json<{ paths: Record<string, unknown> }>();
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/abis/{address}", "/abis/", "/admin/abis/{address}"]));
  });
});
