import { describe, expect, it } from "vitest";
import { redactRpcUrl, retryAfterMs } from "../../../../lib/rpc/transport.js";

describe("retryAfterMs", () => {
  const now = Date.parse("2026-11-26T10:00:00Z");
  it("reads delay-seconds and HTTP dates (RFC 9110 §10.2.3), capped", () => {
    expect(retryAfterMs("1", 30_000, now)).toBe(1000);
    expect(retryAfterMs(" 2.5 ", 30_000, now)).toBe(2500);
    expect(retryAfterMs("Thu, 26 Nov 2026 10:00:05 GMT", 30_000, now)).toBe(5000);
    expect(retryAfterMs("Thu, 26 Nov 2026 09:59:00 GMT", 30_000, now)).toBe(0);
    expect(retryAfterMs("3600", 30_000, now)).toBe(30_000);
  });
  it("is undefined when absent or unreadable", () => {
    expect(retryAfterMs(null, 30_000, now)).toBeUndefined();
    expect(retryAfterMs("soon", 30_000, now)).toBeUndefined();
  });
});

describe("redactRpcUrl", () => {
  it("drops credentials, query strings and key-like path segments", () => {
    expect(redactRpcUrl("https://user:secret@node.example:8545/")).toBe("https://node.example:8545");
    expect(redactRpcUrl("https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef")).toBe("https://mainnet.infura.io/v3/***");
    expect(redactRpcUrl("https://eth-mainnet.g.alchemy.com/v2/aB3dE6gH9jK")).toBe("https://eth-mainnet.g.alchemy.com/v2/***");
    expect(redactRpcUrl("https://rpc.example/eth?apikey=hunter2")).toBe("https://rpc.example/eth?***");
    expect(redactRpcUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545");
    expect(redactRpcUrl("not a url")).toBe("<not a URL>");
  });
});
