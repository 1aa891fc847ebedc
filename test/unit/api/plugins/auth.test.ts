import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { apiError } from "../../../../api/errors.js";
import { authPlugin, STATIC_ACCOUNT_ID, staticTokenId } from "../../../../api/plugins/auth.js";
import { errorsPlugin } from "../../../../api/plugins/errors.js";
import { rateLimitKey } from "../../../../api/plugins/rate-limit.js";
import type { Account, TokenInfo } from "../../../../lib/accounts/model.js";
import type { AccountStore, Authenticated } from "../../../../lib/accounts/store.js";
import { testAccount, testTokenInfo } from "../../../support/accounts.js";

const ACCOUNT: Account = testAccount();
const INFO: TokenInfo = testTokenInfo();
const GOOD = `cs_${"a".repeat(43)}`;

/** A store double: `GOOD` authenticates while `state.valid`; `state.down` makes Redis fail. */
function fakeStore(state: { valid: boolean; down: boolean; calls: number }): AccountStore {
  return {
    async authenticate(token: string): Promise<Authenticated | null> {
      state.calls += 1;
      if (state.down) throw new Error("ECONNREFUSED");
      return token === GOOD && state.valid ? { account: ACCOUNT, token: INFO } : null;
    },
  } as unknown as AccountStore;
}

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function build(opts: { store?: AccountStore; adminToken?: string; limited?: string[] } = {}) {
  const limited = opts.limited;
  app = Fastify({ logger: false });
  await app.register(errorsPlugin);
  await app.register(authPlugin, {
    tokens: ["static-one", "static-two"],
    adminToken: opts.adminToken,
    ...(opts.store ? { store: opts.store } : {}),
    ...(limited
      ? {
          limit: async (request: FastifyRequest, _reply: FastifyReply) => {
            limited.push(rateLimitKey(request));
            if (limited.length > 3) throw apiError("CS_RATE_LIMITED", "slow down");
          },
        }
      : {}),
  });
  app.get("/data", async (request) => ({ account: request.account }));
  app.get("/healthz", { config: { public: true } }, async () => ({ ok: true }));
  app.get("/admin/x", { config: { admin: true } }, async (request) => ({ admin: true, account: request.account }));
  return app;
}

const get = (url: string, token?: string) =>
  app?.inject({ method: "GET", url, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) });

describe("authPlugin", () => {
  it("static tokens authenticate as the synthetic account", async () => {
    await build();
    const r = await get("/data", "static-two");
    expect(r?.statusCode).toBe(200);
    expect(r?.json().account).toEqual({ id: STATIC_ACCOUNT_ID, tokenId: staticTokenId("static-two"), static: true });
    expect(staticTokenId("static-two")).toMatch(/^static:[0-9a-f]{16}$/);
    expect(staticTokenId("static-one")).not.toBe(staticTokenId("static-two"));
  });

  it("account tokens are checked against the store on every request (no caching)", async () => {
    const state = { valid: true, down: false, calls: 0 };
    await build({ store: fakeStore(state) });
    const r = await get("/data", GOOD);
    expect(r?.statusCode).toBe(200);
    expect(r?.json().account).toEqual({ id: ACCOUNT.id, tokenId: INFO.id, static: false });
    state.valid = false; // revoked
    const revoked = await get("/data", GOOD);
    expect(revoked?.statusCode).toBe(401);
    expect(state.calls).toBe(2);
  });

  it("missing, malformed, unknown and revoked tokens get the same 401", async () => {
    await build({ store: fakeStore({ valid: false, down: false, calls: 0 }) });
    const answers = await Promise.all([get("/data"), get("/data", "nope"), get("/data", GOOD), get("/data", `cs_${"b".repeat(43)}`)]);
    for (const r of answers) {
      expect(r?.statusCode).toBe(401);
      expect(r?.headers["www-authenticate"]).toBe('Bearer realm="chainsift"');
      expect(r?.json()).toEqual(answers[0]?.json());
      expect(r?.json().error).toMatchObject({ code: "CS_AUTH_REQUIRED", path: null });
    }
  });

  it("503, not 401, when the store cannot be asked; static tokens still work", async () => {
    await build({ store: fakeStore({ valid: true, down: true, calls: 0 }) });
    const r = await get("/data", GOOD);
    expect(r?.statusCode).toBe(503);
    expect(r?.json().error.code).toBe("CS_BACKEND_UNAVAILABLE");
    expect((await get("/data", "static-one"))?.statusCode).toBe(200);
  });

  it("public routes need nothing and are not counted", async () => {
    const limited: string[] = [];
    await build({ limited });
    expect((await get("/healthz"))?.statusCode).toBe(200);
    expect(limited).toEqual([]);
  });

  it("admin routes need the admin token; API tokens do not open them; unset admin token refuses all", async () => {
    await build({ adminToken: "adm-secret" });
    expect((await get("/admin/x", "adm-secret"))?.json()).toEqual({ admin: true, account: null });
    expect((await get("/admin/x", "static-one"))?.statusCode).toBe(401);
    expect((await get("/admin/x"))?.statusCode).toBe(401);
    expect((await get("/data", "adm-secret"))?.statusCode).toBe(401);
    await app?.close();
    await build();
    expect((await get("/admin/x", "adm-secret"))?.statusCode).toBe(401);
    expect((await get("/admin/x", ""))?.statusCode).toBe(401);
  });

  it("counts successes by token and failures by client address", async () => {
    const limited: string[] = [];
    await build({ limited, adminToken: "adm" });
    await get("/data", "static-one");
    await get("/data", "wrong");
    await get("/admin/x", "wrong");
    await get("/admin/x", "adm"); // successful admin requests are not counted
    expect(limited).toEqual([`token:${staticTokenId("static-one")}`, "ip:127.0.0.1", "ip:127.0.0.1"]);
    const r = await get("/data", "wrong");
    expect(r?.statusCode).toBe(429); // the failure budget is used up before 401 is answered
  });
});
