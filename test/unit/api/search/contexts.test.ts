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
