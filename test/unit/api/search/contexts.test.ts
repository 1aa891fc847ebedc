/** The pure parts of api/search/contexts.ts: keep-alive time values and the opaque ids. */
import { describe, expect, it } from "vitest";
import {
  CONTEXT_ID_PREFIX,
  contextTypeOf,
  keepAliveMs,
  newContextId,
  SearchContexts,
  TTL_MARGIN,
} from "../../../../api/search/contexts.js";
import { apiFailure } from "../../../support/api-failure.js";

const failure = apiFailure;

describe("keepAliveMs", () => {
  it("reads Elasticsearch time units", () => {
    expect(keepAliveMs("1m", 3_600_000, "scroll")).toBe(60_000);
    expect(keepAliveMs("30s", 3_600_000, "scroll")).toBe(30_000);
    expect(keepAliveMs("1h", 3_600_000, "scroll")).toBe(3_600_000);
    expect(keepAliveMs("250ms", 3_600_000, "scroll")).toBe(250);
    expect(keepAliveMs("1500micros", 3_600_000, "scroll")).toBe(2);
  });

  it("refuses malformed, zero, missing and too long values with CS_KEEP_ALIVE_INVALID at the path", () => {
    for (const bad of ["soon", "1", "-1m", "1.5m", "", undefined, 60, "0s"])
      expect(
        failure(() => keepAliveMs(bad, 3_600_000, "pit.keep_alive")),
        String(bad),
      ).toEqual({
        code: "CS_KEEP_ALIVE_INVALID",
        path: "pit.keep_alive",
      });
    expect(failure(() => keepAliveMs("61m", 3_600_000, "querystring.scroll"))).toEqual({
      code: "CS_KEEP_ALIVE_INVALID",
      path: "querystring.scroll",
    });
    expect(failure(() => keepAliveMs("2d", 3_600_000, "scroll"))?.code).toBe("CS_KEEP_ALIVE_INVALID");
  });
});

describe("context ids", () => {
  it("are random, opaque, and say their type by prefix only", () => {
    const a = newContextId("scroll");
    const b = newContextId("scroll");
    expect(a).not.toBe(b);
    expect(a.startsWith(CONTEXT_ID_PREFIX.scroll)).toBe(true);
    expect(a).toMatch(/^css_[A-Za-z0-9_-]{32}$/);
    expect(contextTypeOf(a)).toBe("scroll");
    expect(contextTypeOf(newContextId("pit"))).toBe("pit");
    expect(contextTypeOf("FGluY2x1ZGVfY29udGV4dF91dWlk")).toBeUndefined();
  });
});

describe("needsRenewal", () => {
  // Pure: no Redis nor Elasticsearch call is made.
  const contexts = new SearchContexts({} as ConstructorParameters<typeof SearchContexts>[0]);
  const record = { type: "pit" as const, account: "a", chain: "c", esId: "e", kinds: ["tx" as const] };

  it("renews when less than the keep-alive is left, or the expiry is unknown; never without a keep-alive", () => {
    const now = 1_000_000;
    expect(contexts.needsRenewal({ ...record, expiresAt: now + 60_000 * TTL_MARGIN }, 60_000, now)).toBe(false);
    expect(contexts.needsRenewal({ ...record, expiresAt: now + 60_000 }, 60_000, now)).toBe(false);
    expect(contexts.needsRenewal({ ...record, expiresAt: now + 59_999 }, 60_000, now)).toBe(true);
    expect(contexts.needsRenewal({ ...record, expiresAt: now + 60_000 }, 120_000, now)).toBe(true);
    expect(contexts.needsRenewal(record, 60_000, now)).toBe(true);
    expect(contexts.needsRenewal({ ...record, expiresAt: now }, undefined, now)).toBe(false);
  });
});

describe("bindings read lately are reused", () => {
  /** A Redis stand-in holding strings (GET, SET and MULTI … EXEC of the commands save and drop send), counting GETs. */
  function fakeRedis() {
    const store = new Map<string, string>();
    const calls = { get: 0 };
    const multi = () => {
      const ops: Array<() => unknown> = [];
      const queue = (op: () => unknown) => {
        ops.push(op);
        return chain;
      };
      const chain = {
        set: (k: string, v: string) => queue(() => store.set(k, v)),
        del: (k: string) => queue(() => store.delete(k)),
        zAdd: () => chain,
        zRem: () => chain,
        pExpire: () => chain,
        exec: async () => ops.map((op) => op()),
      };
      return chain;
    };
    const redis = {
      get: async (k: string) => {
        calls.get++;
        return store.get(k) ?? null;
      },
      set: async (k: string, v: string) => store.set(k, v),
      multi,
    };
    return { redis, store, calls };
  }
  const options = (redis: unknown) =>
    ({
      redis,
      es: {},
      keyPrefix: "t:",
      maxPerAccount: 5,
      maxKeepAliveMs: 3_600_000,
      requestTimeoutMs: 1000,
      redisTimeoutMs: 1000,
    }) as never;
  const record = { type: "pit" as const, account: "a", chain: "c", esId: "e", kinds: ["tx" as const] };

  it("a saved binding is not read again at once; the account, chain and type checks still answer 404", async () => {
    const { redis, store, calls } = fakeRedis();
    const contexts = new SearchContexts(options(redis));
    const id = newContextId("pit");
    await contexts.save(id, record, 60_000);
    expect((await contexts.load(id, "pit", "a", "c", "pit.id")).esId).toBe("e");
    expect((await contexts.load(id, "pit", "a", "c", "pit.id")).esId).toBe("e");
    expect(calls.get).toBe(0);
    expect(store.has(`t:ctx:${id}`)).toBe(true);
    for (const [account, chain] of [
      ["b", "c"],
      ["a", "d"],
    ] as const)
      await expect(contexts.load(id, "pit", account, chain, "pit.id")).rejects.toMatchObject({ code: "CS_CONTEXT_NOT_FOUND" });
    // Another instance (no memory of it) reads Redis; after a drop, Redis is read again and the id is gone.
    const other = new SearchContexts(options(redis));
    expect((await other.load(id, "pit", "a", "c", "pit.id")).account).toBe("a");
    expect(calls.get).toBe(1);
    await contexts.drop(id, record);
    await expect(contexts.load(id, "pit", "a", "c", "pit.id")).rejects.toMatchObject({ code: "CS_CONTEXT_NOT_FOUND" });
    expect(calls.get).toBe(2);
  });
});
