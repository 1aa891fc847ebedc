/**
 * Accounts, tokens, admin endpoints and rate limits of the API against the real Redis (and
 * Elasticsearch, which answers the searches with empty results: no indices are created). Every
 * app uses its own Redis key prefix; the keys are deleted afterwards (never a flush).
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { Account, TokenInfo } from "../../../lib/accounts/model.js";
import type { AccountStore } from "../../../lib/accounts/store.js";
import { type Config, loadConfig } from "../../../lib/config/index.js";
import { deleteRedisKeys, searchStackUp } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const STATIC = `static-${ID}`;
const ADMIN = `admin-${ID}-${randomBytes(8).toString("hex")}`;
const SEARCH = "/ethereum/ethereum/mainnet/es/tx/search/";

function configFor(suffix: string, api: Partial<Config["api"]> = {}): Config {
  return {
    ...base,
    chain: { technology: "ethereum", blockchain: "ethereum", network: "mainnet" },
    elasticsearch: { ...base.elasticsearch, indexPrefix: `${ID}-` },
    redisKeyPrefix: `${ID}${suffix}:`,
    api: { ...base.api, tokens: [STATIC], adminToken: ADMIN, rateLimitMax: 1000, rateLimitWindowMs: 60_000, ...api },
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe.skipIf(!up)("accounts, admin endpoints and rate limits (real Redis)", () => {
  let app: FastifyInstance;
  const apps: FastifyInstance[] = [];

  async function build(config: Config): Promise<FastifyInstance> {
    const a = await buildApi({ config, logger: false });
    apps.push(a);
    return a;
  }

  const admin = (method: "GET" | "POST" | "DELETE", url: string, payload?: object, token = ADMIN, target = app) =>
    target.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
  const search = (a: FastifyInstance, token?: string) =>
    a.inject({ method: "POST", url: SEARCH, ...(token ? { headers: bearer(token) } : {}), payload: { size: 0 } });

  /** Creates an account and issues it a token through the admin endpoints of `target`. */
  async function newToken(name = "acme", target = app): Promise<{ account: Account; token: string; info: TokenInfo }> {
    const created = await admin("POST", "/admin/accounts/", { name, email: "ops@acme.example" }, ADMIN, target);
    expect(created.statusCode, created.body).toBe(201);
    const account = created.json<Account>();
    const issued = await admin("POST", `/admin/accounts/${account.id}/tokens/`, { name: "ci" }, ADMIN, target);
    expect(issued.statusCode, issued.body).toBe(201);
    const { token, info } = issued.json<{ token: string; info: TokenInfo }>();
    return { account, token, info };
  }

  beforeAll(async () => {
    app = await build(configFor("a"));
  });

  afterAll(async () => {
    for (const a of apps) await a.close();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("creates accounts, issues a token (shown once) and lists both", async () => {
    const { account, token, info } = await newToken();
    expect(account).toMatchObject({ name: "acme", email: "ops@acme.example", disabled: false });
    expect(token).toMatch(/^cs_[A-Za-z0-9_-]{43}$/);
    expect(info).toMatchObject({ accountId: account.id, name: "ci", revokedAt: null, expiresAt: null });
    const list = await admin("GET", "/admin/accounts/");
    expect(list.json<{ accounts: Account[] }>().accounts.map((a) => a.id)).toContain(account.id);
    expect((await admin("GET", `/admin/accounts/${account.id}`)).json()).toEqual(account);
    const tokens = await admin("GET", `/admin/accounts/${account.id}/tokens/`);
    expect(tokens.json<{ tokens: TokenInfo[] }>().tokens.map((t) => t.id)).toEqual([info.id]);
    expect(tokens.body).not.toContain(token);
    expect((await admin("GET", `/admin/tokens/${info.id}`)).json<TokenInfo>().id).toBe(info.id);
  });

  it("an issued token authenticates; revoking it through the admin endpoint makes it 401 at once", async () => {
    const { token, info } = await newToken();
    expect((await search(app, token)).statusCode).toBe(200);
    const revoke = await admin("DELETE", `/admin/tokens/${info.id}`);
    expect(revoke.statusCode).toBe(204);
    expect(revoke.body).toBe("");
    const after = await search(app, token);
    expect(after.statusCode).toBe(401);
    expect(after.json().error.code).toBe("CS_AUTH_REQUIRED");
    expect((await admin("GET", `/admin/tokens/${info.id}`)).json<TokenInfo>().revokedAt).not.toBeNull();
    expect((await admin("DELETE", `/admin/tokens/${info.id}`)).statusCode).toBe(204); // idempotent
  });

  it("a token of a disabled account gets 401; no new token can be issued to it (409)", async () => {
    const { account, token } = await newToken();
    expect((await search(app, token)).statusCode).toBe(200);
    const disabled = await admin("POST", `/admin/accounts/${account.id}/disable`);
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json<Account>().disabled).toBe(true);
    expect((await search(app, token)).statusCode).toBe(401);
    const issue = await admin("POST", `/admin/accounts/${account.id}/tokens/`, {});
    expect(issue.statusCode).toBe(409);
    expect(issue.json().error.code).toBe("CS_ACCOUNT_DISABLED");
  });

  it("missing, unknown and revoked tokens all get the same 401 body", async () => {
    const { token, info } = await newToken();
    await admin("DELETE", `/admin/tokens/${info.id}`);
    const answers = [await search(app), await search(app, `cs_${"x".repeat(43)}`), await search(app, "garbage"), await search(app, token)];
    for (const r of answers) {
      expect(r.statusCode).toBe(401);
      expect(r.json()).toEqual(answers[0]?.json());
    }
  });

  it("static tokens work (account id static)", async () => {
    expect((await search(app, STATIC)).statusCode).toBe(200);
  });

  it("tokens survive a restart of the API (a new app, new Redis connections)", async () => {
    const { token } = await newToken();
    const restarted = await build(configFor("a"));
    expect((await search(restarted, token)).statusCode).toBe(200);
  });

  it("admin endpoints: wrong or missing admin token, API tokens, unset admin token → 401", async () => {
    const { token } = await newToken();
    for (const t of ["wrong", STATIC, token]) {
      const r = await admin("GET", "/admin/accounts/", undefined, t);
      expect(r.statusCode, t).toBe(401);
      expect(r.json().error.code).toBe("CS_AUTH_REQUIRED");
    }
    expect((await app.inject({ method: "POST", url: "/admin/accounts/", payload: { name: "x" } })).statusCode).toBe(401);
    const noAdmin = await build(configFor("b", { adminToken: undefined }));
    expect((await noAdmin.inject({ method: "GET", url: "/admin/accounts/", headers: bearer(ADMIN) })).statusCode).toBe(401);
  });

  it("admin endpoints map account errors to their codes and statuses", async () => {
    const cases: Array<[string, string, object | undefined, number, string, string | null]> = [
      ["POST", "/admin/accounts/", { email: "a@b.co" }, 400, "CS_ACCOUNT_INVALID", "name"],
      ["POST", "/admin/accounts/", { name: "x", email: "not-an-address" }, 400, "CS_ACCOUNT_INVALID", "email"],
      ["POST", "/admin/accounts/", { name: "x", role: "root" }, 400, "CS_ACCOUNT_INVALID", "role"],
      ["POST", "/admin/accounts/", { name: "   " }, 400, "CS_ACCOUNT_INVALID", "name"],
      ["GET", "/admin/accounts/no-such-id", undefined, 404, "CS_ACCOUNT_NOT_FOUND", "params.id"],
      ["POST", "/admin/accounts/00000000-0000-4000-8000-000000000000/disable", undefined, 404, "CS_ACCOUNT_NOT_FOUND", null],
      ["GET", "/admin/accounts/00000000-0000-4000-8000-000000000000/tokens/", undefined, 404, "CS_ACCOUNT_NOT_FOUND", null],
      ["DELETE", "/admin/tokens/00000000-0000-4000-8000-000000000000", undefined, 404, "CS_TOKEN_NOT_FOUND", null],
      ["GET", "/admin/tokens/nope", undefined, 404, "CS_TOKEN_NOT_FOUND", "params.tokenId"],
    ];
    for (const [method, url, body, status, code, path] of cases) {
      const r = await admin(method as "GET", url, body);
      expect(r.statusCode, `${method} ${url} ${r.body}`).toBe(status);
      expect(r.json().error).toMatchObject({ code, path });
    }
    const { account } = await newToken();
    const past = await admin("POST", `/admin/accounts/${account.id}/tokens/`, { expiresAt: "2001-01-01T00:00:00Z" });
    expect(past.statusCode).toBe(400);
    expect(past.json().error).toMatchObject({ code: "CS_TOKEN_INVALID", path: "expiresAt" });
    const extra = await admin("POST", `/admin/accounts/${account.id}/tokens/`, { scope: "all" });
    expect(extra.json().error).toMatchObject({ code: "CS_TOKEN_INVALID", path: "scope" });
    const soon = await admin("POST", `/admin/accounts/${account.id}/tokens/`, {
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(soon.statusCode).toBe(201);
    expect(soon.headers["cache-control"]).toBe("no-store");
  });

  it("503 CS_BACKEND_UNAVAILABLE, not 401, when Redis cannot be asked (accounts, rate limits, readiness)", async () => {
    // Never connected: every command fails at once (node-redis ClientClosedError).
    const dead = createClient({ url: "redis://127.0.0.1:1", disableOfflineQueue: true, socket: { reconnectStrategy: false } });
    dead.on("error", () => {});
    const failing = {
      async authenticate() {
        throw new Error("connect ECONNREFUSED 127.0.0.1:6379");
      },
    } as unknown as AccountStore;
    const broken = await buildApi({ config: configFor("d"), accounts: failing, redis: dead, logger: false });
    try {
      for (const token of [`cs_${"q".repeat(43)}`, STATIC]) {
        const r = await search(broken, token);
        expect(r.statusCode, token).toBe(503);
        expect(r.json().error.code).toBe("CS_BACKEND_UNAVAILABLE");
        expect(r.body).not.toContain("ECONNREFUSED");
      }
      expect((await broken.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(503);
      expect((await broken.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    } finally {
      await broken.close();
      if (dead.isOpen) dead.destroy();
    }
  });

  describe("rate limits (max 3 per window)", () => {
    let limited: FastifyInstance;

    beforeAll(async () => {
      limited = await build(configFor("r", { rateLimitMax: 3, rateLimitWindowMs: 60_000 }));
    });

    it("the 4th request of a token is 429 CS_RATE_LIMITED with Retry-After; other tokens keep their budget", async () => {
      const { token: one } = await newToken("one", limited);
      const { token: two } = await newToken("two", limited);
      for (let i = 0; i < 3; i++) {
        const r = await search(limited, one);
        expect(r.statusCode).toBe(200);
        expect(r.headers["x-ratelimit-limit"]).toBe("3");
        expect(r.headers["x-ratelimit-remaining"]).toBe(String(2 - i));
      }
      const over = await search(limited, one);
      expect(over.statusCode).toBe(429);
      expect(Number(over.headers["retry-after"])).toBeGreaterThan(0);
      expect(Number(over.headers["retry-after"])).toBeLessThanOrEqual(60);
      expect(over.json()).toEqual({
        error: { code: "CS_RATE_LIMITED", message: expect.any(String), path: null },
        errors: [{ code: "CS_RATE_LIMITED", message: expect.any(String), path: null }],
      });
      expect((await search(limited, two)).statusCode).toBe(200);
      expect((await search(limited, STATIC)).statusCode).toBe(200);
    });

    it("the budget is shared by every API process (Redis), not per process", async () => {
      const { token } = await newToken("shared", limited);
      const other = await build(configFor("r", { rateLimitMax: 3, rateLimitWindowMs: 60_000 }));
      expect((await search(limited, token)).statusCode).toBe(200);
      expect((await search(other, token)).statusCode).toBe(200);
      expect((await search(limited, token)).statusCode).toBe(200);
      expect((await search(other, token)).statusCode).toBe(429);
    });

    it("health, readiness, metrics and docs are exempt", async () => {
      for (let i = 0; i < 5; i++) {
        for (const url of ["/healthz", "/readyz", "/metrics", "/docs/json"]) {
          const r = await limited.inject({ method: "GET", url });
          expect(r.statusCode, url).toBe(200);
          expect(r.headers["x-ratelimit-limit"]).toBeUndefined();
        }
      }
    });

    it("failed authentications are limited by client address", async () => {
      const ip = await build(configFor("i", { rateLimitMax: 3, rateLimitWindowMs: 60_000 }));
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await search(ip, `cs_${"z".repeat(43)}`)).statusCode);
      expect(codes).toEqual([401, 401, 401, 429]);
    });
  });
});
