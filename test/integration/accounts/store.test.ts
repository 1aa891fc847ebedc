import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountError } from "../../../lib/accounts/model.js";
import {
  type AccountRedis,
  type AccountStore,
  accountKeys,
  type ConnectedAccountStore,
  connectAccountStore,
  createAccountStore,
} from "../../../lib/accounts/store.js";
import { hashToken } from "../../../lib/accounts/tokens.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "./redis.js";

const h: Harness = createHarness();
await h.es.close(); // only the config and the Redis prefix of the harness are used here
const url = h.config.redisUrl;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

describe.skipIf(!up)("account store (real Redis)", () => {
  let conn: ConnectedAccountStore;
  let store: AccountStore;
  let clock = new Date();
  const prefix = h.config.redisKeyPrefix;
  const keys = accountKeys(prefix);

  beforeAll(async () => {
    conn = await connectAccountStore(h.config, { now: () => clock });
    store = conn.store;
  });

  afterAll(async () => {
    await conn?.close();
    await deletePrefix(url, prefix);
    expect(await keysOf(url, prefix)).toEqual([]);
  });

  it("creates, reads and lists accounts", async () => {
    const a = await store.createAccount({ name: " Acme ", email: "ops@acme.example" });
    expect(a).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Acme",
      email: "ops@acme.example",
      createdAt: clock.toISOString(),
      disabled: false,
    });
    const b = await store.createAccount({ name: "Acme" }); // names are not unique
    expect(b.id).not.toBe(a.id);
    expect(b.email).toBeNull();
    expect(await store.getAccount(a.id)).toEqual(a);
    expect(await store.getAccount("00000000-0000-4000-8000-000000000000")).toBeNull();
    expect(await store.getAccount("not-a-uuid")).toBeNull();
    const ids = (await store.listAccounts()).map((x) => x.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    await expect(store.createAccount({ name: "" })).rejects.toMatchObject({ code: "CS_ACCOUNT_INVALID", field: "name" });
  });

  it("issues a token that authenticates, stores only its hash and lists without secrets", async () => {
    const account = await store.createAccount({ name: "issuer" });
    const { token, info } = await store.issueToken(account.id, { name: "ci" });
    expect(token).toMatch(/^cs_[A-Za-z0-9_-]{43}$/);
    expect(info).toEqual({
      id: expect.any(String),
      accountId: account.id,
      name: "ci",
      prefix: token.slice(3, 11),
      createdAt: clock.toISOString(),
      expiresAt: null,
      revokedAt: null,
    });

    const auth = await store.authenticate(token);
    expect(auth?.account).toEqual(account);
    expect(auth?.token).toMatchObject({ id: info.id, accountId: account.id, lastUsedAt: clock.toISOString() });

    // The secret appears nowhere in Redis; its SHA-256 is the lookup key.
    const client = createClient({ url });
    await client.connect();
    try {
      expect(await client.get(keys.token(hashToken(token)))).toBe(info.id);
      for (const key of await keysOf(url, prefix)) {
        expect(key).not.toContain(token.slice(3));
        const type = await client.type(key);
        const content =
          type === "hash"
            ? JSON.stringify(await client.hGetAll(key))
            : type === "set"
              ? JSON.stringify(await client.sMembers(key))
              : String(await client.get(key));
        expect(content).not.toContain(token.slice(3));
      }
    } finally {
      await client.close();
    }

    const listed = await store.listTokens(account.id);
    expect(listed).toHaveLength(1);
    const text = JSON.stringify(listed);
    expect(text).not.toContain(token.slice(3));
    expect(text).not.toContain(hashToken(token));
    expect(Object.keys(listed[0]!).sort()).toEqual([
      "accountId",
      "createdAt",
      "expiresAt",
      "id",
      "lastUsedAt",
      "name",
      "prefix",
      "revokedAt",
    ]);
    expect(await store.getToken(info.id)).toEqual(listed[0]);
    await expect(store.listTokens("00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ code: "CS_ACCOUNT_NOT_FOUND" });
  });

  it("revocation is immediate, atomic and idempotent", async () => {
    const account = await store.createAccount({ name: "revoker" });
    const { token, info } = await store.issueToken(account.id);
    const other = await store.issueToken(account.id);
    expect(await store.authenticate(token)).not.toBeNull();
    const revoked = await store.revokeToken(info.id);
    expect(revoked.revokedAt).toBe(clock.toISOString());
    expect(await store.authenticate(token)).toBeNull();
    expect(await store.authenticate(other.token)).not.toBeNull(); // only that token
    expect(await keysOf(url, keys.token(hashToken(token)))).toEqual([]); // lookup key gone
    expect((await store.listTokens(account.id)).find((t) => t.id === info.id)?.revokedAt).toBe(revoked.revokedAt);
    clock = new Date(clock.getTime() + 1000);
    expect((await store.revokeToken(info.id)).revokedAt).toBe(revoked.revokedAt);
    await expect(store.revokeToken("00000000-0000-4000-8000-000000000000")).rejects.toBeInstanceOf(AccountError);
    await expect(store.revokeToken("nope")).rejects.toMatchObject({ code: "CS_TOKEN_NOT_FOUND" });
  });

  it("a disabled account's tokens stop authenticating, and it gets no new ones", async () => {
    const account = await store.createAccount({ name: "to-disable" });
    const { token } = await store.issueToken(account.id);
    expect(await store.authenticate(token)).not.toBeNull();
    expect((await store.disableAccount(account.id)).disabled).toBe(true);
    expect(await store.authenticate(token)).toBeNull();
    expect((await store.getAccount(account.id))?.disabled).toBe(true);
    expect((await store.disableAccount(account.id)).disabled).toBe(true); // idempotent
    await expect(store.issueToken(account.id)).rejects.toMatchObject({ code: "CS_ACCOUNT_DISABLED" });
    await expect(store.disableAccount("00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ code: "CS_ACCOUNT_NOT_FOUND" });
  });

  it("an expired token does not authenticate", async () => {
    const account = await store.createAccount({ name: "expiry" });
    const expiresAt = new Date(clock.getTime() + 60 * 60 * 1000);
    const { token, info } = await store.issueToken(account.id, { expiresAt });
    expect(info.expiresAt).toBe(expiresAt.toISOString());
    clock = new Date(expiresAt.getTime() - 1);
    expect(await store.authenticate(token)).not.toBeNull();
    clock = new Date(expiresAt.getTime());
    expect(await store.authenticate(token)).toBeNull();
    clock = new Date();
    // The lookup key carries a TTL (garbage collection) of expiry + 1 h.
    const client = createClient({ url });
    await client.connect();
    try {
      const ttl = await client.pTTL(keys.token(hashToken(token)));
      expect(ttl).toBeGreaterThan(60 * 60 * 1000);
      expect(ttl).toBeLessThanOrEqual(2 * 60 * 60 * 1000 + 5000);
    } finally {
      await client.close();
    }
    await expect(store.issueToken(account.id, { expiresAt: new Date(clock.getTime() - 1) })).rejects.toMatchObject({
      code: "CS_TOKEN_INVALID",
    });
  });

  it("unknown and malformed tokens do not authenticate", async () => {
    expect(await store.authenticate(`cs_${"A".repeat(43)}`)).toBeNull();
    expect(await store.authenticate("")).toBeNull();
    expect(await store.authenticate("Bearer x")).toBeNull();
  });

  it("every failing well-formed token costs the same reads (1 GET + 2 HGETALL)", async () => {
    const client = createClient({ url });
    await client.connect();
    const calls: string[] = [];
    const counted = <T>(name: string, result: T): T => {
      calls.push(name);
      return result;
    };
    const counting: AccountRedis = {
      get: (k) => counted("get", client.get(k)),
      hGetAll: (k) => counted("hGetAll", client.hGetAll(k)),
      hSet: (k, f, v) => counted("hSet", client.hSet(k, f, v)),
      sMembers: (k) => counted("sMembers", client.sMembers(k)),
      multi: () => counted("multi", client.multi()),
    };
    try {
      const s = createAccountStore({ redis: counting, keyPrefix: prefix, now: () => clock });
      const account = await s.createAccount({ name: "timing" });
      const revoked = await s.issueToken(account.id);
      await s.revokeToken(revoked.info.id);
      const expiring = await s.issueToken(account.id, { expiresAt: new Date(clock.getTime() + 1000) });
      const disabledAccount = await s.createAccount({ name: "timing-disabled" });
      const disabled = await s.issueToken(disabledAccount.id);
      await s.disableAccount(disabledAccount.id);
      const saved = clock;
      clock = new Date(clock.getTime() + 2000);
      for (const t of [`cs_${"B".repeat(43)}`, revoked.token, expiring.token, disabled.token]) {
        calls.length = 0;
        expect(await s.authenticate(t)).toBeNull();
        expect(calls).toEqual(["get", "hGetAll", "hGetAll"]);
      }
      clock = saved;
    } finally {
      await client.close();
    }
  });

  it("tokens survive a restart: a new client and store still authenticate them", async () => {
    const account = await store.createAccount({ name: "durable" });
    const kept = await store.issueToken(account.id, { name: "kept" });
    const gone = await store.issueToken(account.id, { name: "gone" });
    await store.revokeToken(gone.info.id);
    await conn.close();

    conn = await connectAccountStore(h.config, { now: () => clock });
    store = conn.store;
    const auth = await store.authenticate(kept.token);
    expect(auth?.account.id).toBe(account.id);
    expect(auth?.token.id).toBe(kept.info.id);
    expect(await store.authenticate(gone.token)).toBeNull();
  });

  it("records lastUsedAt at most once per resolution window", async () => {
    const account = await store.createAccount({ name: "usage" });
    const { token, info } = await store.issueToken(account.id);
    const t0 = clock;
    expect((await store.authenticate(token))?.token.lastUsedAt).toBe(t0.toISOString());
    clock = new Date(t0.getTime() + 30_000);
    await store.authenticate(token);
    expect((await store.getToken(info.id))?.lastUsedAt).toBe(t0.toISOString());
    clock = new Date(t0.getTime() + 61_000);
    await store.authenticate(token);
    expect((await store.getToken(info.id))?.lastUsedAt).toBe(clock.toISOString());
    clock = new Date();
  });

  it("fails fast when Redis is unreachable", async () => {
    await expect(
      connectAccountStore({ redisUrl: "redis://127.0.0.1:1", redisKeyPrefix: prefix }, { connectTimeoutMs: 1000 }),
    ).rejects.toThrow();
  });
});
