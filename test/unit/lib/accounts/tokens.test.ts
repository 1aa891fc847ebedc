import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  generateToken,
  hashToken,
  isWellFormedToken,
  TOKEN_BYTES,
  TOKEN_LENGTH,
  TOKEN_PREFIX,
  tokenDisplayPrefix,
} from "../../../../lib/accounts/tokens.js";

describe("generateToken", () => {
  it("is cs_ + base64url of 32 random bytes (256 bits, >= 128 required)", () => {
    expect(TOKEN_BYTES * 8).toBeGreaterThanOrEqual(128);
    const token = generateToken();
    expect(token).toMatch(/^cs_[A-Za-z0-9_-]{43}$/);
    expect(token).toHaveLength(TOKEN_LENGTH);
    expect(Buffer.from(token.slice(TOKEN_PREFIX.length), "base64url")).toHaveLength(32);
  });

  it("encodes exactly the bytes of the random source", () => {
    const bytes = Buffer.alloc(32, 0xff);
    let asked = 0;
    const token = generateToken((n) => {
      asked = n;
      return bytes;
    });
    expect(asked).toBe(32);
    expect(token).toBe(`cs_${bytes.toString("base64url")}`);
    expect(() => generateToken(() => Buffer.alloc(16))).toThrow(/16 bytes/);
  });

  it("never repeats and spreads over the whole alphabet", () => {
    const tokens = Array.from({ length: 2000 }, () => generateToken());
    expect(new Set(tokens).size).toBe(tokens.length);
    // 2000 × 42 full characters ≈ 84000 draws: every one of the 64 symbols appears, none dominates.
    const counts = new Map<string, number>();
    for (const t of tokens) for (const c of t.slice(3, 45)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(64);
    const expected = (tokens.length * 42) / 64;
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.2);
  });
});

describe("hashToken", () => {
  it("is lower-case hex SHA-256 of the UTF-8 token", () => {
    expect(hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const t = generateToken();
    expect(hashToken(t)).toBe(createHash("sha256").update(t).digest("hex"));
    expect(hashToken(t)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(t)).not.toContain(t.slice(3));
  });
  it("differs for tokens differing in one character", () => {
    const t = generateToken();
    const u = `${t.slice(0, -1)}${t.endsWith("A") ? "B" : "A"}`;
    expect(hashToken(t)).not.toBe(hashToken(u));
  });
});

describe("isWellFormedToken", () => {
  it("accepts generated tokens only", () => {
    const t = generateToken();
    expect(isWellFormedToken(t)).toBe(true);
    for (const bad of [
      "",
      "cs_",
      t.slice(1),
      `${t}A`,
      t.slice(0, -1),
      `xx_${t.slice(3)}`,
      `${t.slice(0, 10)}+${t.slice(11)}`,
      `${t.slice(0, 10)}=${t.slice(11)}`,
      ` ${t.slice(1)}`,
      `Bearer ${t}`,
    ]) {
      expect(isWellFormedToken(bad), JSON.stringify(bad)).toBe(false);
    }
    expect(isWellFormedToken(undefined)).toBe(false);
    expect(isWellFormedToken(42)).toBe(false);
  });
});

describe("tokenDisplayPrefix", () => {
  it("is the 8 characters after cs_", () => {
    const t = generateToken();
    expect(tokenDisplayPrefix(t)).toBe(t.slice(3, 11));
    expect(tokenDisplayPrefix(t)).toHaveLength(8);
  });
});
