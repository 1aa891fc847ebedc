import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ACCOUNT_ERROR_HTTP_STATUS } from "../../../../api/errors.js";
import { AccountError, isAccountError, isId, validateAccountInput, validateTokenInput } from "../../../../lib/accounts/model.js";

function codeOf(fn: () => unknown): { code: string; field: string | undefined } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AccountError) return { code: err.code, field: err.field };
    throw err;
  }
  throw new Error("did not throw");
}

describe("validateAccountInput", () => {
  it("trims the name and makes a missing e-mail null", () => {
    expect(validateAccountInput({ name: "  Acme  " })).toEqual({ name: "Acme", email: null });
    expect(validateAccountInput({ name: "Acme", email: null })).toEqual({ name: "Acme", email: null });
    expect(validateAccountInput({ name: "Zoë 株式会社", email: " ops@acme.example.com " })).toEqual({
      name: "Zoë 株式会社",
      email: "ops@acme.example.com",
    });
  });

  it.each([
    [{ name: "" }, "name"],
    [{ name: "   " }, "name"],
    [{ name: "x".repeat(101) }, "name"],
    [{ name: "a\nb" }, "name"],
    [{ name: 42 }, "name"],
    [{ name: "ok", email: "" }, "email"],
    [{ name: "ok", email: "no-at-sign" }, "email"],
    [{ name: "ok", email: "a@nodot" }, "email"],
    [{ name: "ok", email: "a b@c.de" }, "email"],
    [{ name: "ok", email: "a@b..de" }, "email"],
    [{ name: "ok", email: `${"a".repeat(250)}@b.de` }, "email"],
    [{ name: "ok", email: 7 }, "email"],
  ])("refuses %j (CS_ACCOUNT_INVALID on %s)", (input, field) => {
    expect(codeOf(() => validateAccountInput(input))).toEqual({ code: "CS_ACCOUNT_INVALID", field });
  });

  it("accepts a 100-character name", () => {
    expect(validateAccountInput({ name: "x".repeat(100) }).name).toHaveLength(100);
  });
});

describe("validateTokenInput", () => {
  const now = new Date("2025-01-01T00:00:00.000Z");
  it("defaults to no name and no expiry", () => {
    expect(validateTokenInput(undefined, now)).toEqual({ name: null, expiresAt: null });
    expect(validateTokenInput({ name: null, expiresAt: null }, now)).toEqual({ name: null, expiresAt: null });
  });
  it("accepts a Date or an ISO string in the future", () => {
    expect(validateTokenInput({ name: " ci ", expiresAt: "2025-02-01T00:00:00Z" }, now)).toEqual({
      name: "ci",
      expiresAt: new Date("2025-02-01T00:00:00.000Z"),
    });
    const d = new Date("2025-01-01T00:00:01Z");
    expect(validateTokenInput({ expiresAt: d }, now).expiresAt?.getTime()).toBe(d.getTime());
  });
  it.each([
    [{ name: "" }, "name"],
    [{ name: "x".repeat(101) }, "name"],
    [{ expiresAt: "tomorrow" }, "expiresAt"],
    [{ expiresAt: 12345 }, "expiresAt"],
    [{ expiresAt: new Date("invalid") }, "expiresAt"],
    [{ expiresAt: "2025-01-01T00:00:00.000Z" }, "expiresAt"],
    [{ expiresAt: "2024-12-31T23:59:59Z" }, "expiresAt"],
  ])("refuses %j (CS_TOKEN_INVALID on %s)", (input, field) => {
    expect(codeOf(() => validateTokenInput(input, now))).toEqual({ code: "CS_TOKEN_INVALID", field });
  });
});

describe("AccountError", () => {
  it("carries a stable code the API maps to a status", () => {
    const err = new AccountError("CS_ACCOUNT_NOT_FOUND", "no account");
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("AccountError");
    expect(isAccountError(err)).toBe(true);
    expect(isAccountError(err, "CS_ACCOUNT_NOT_FOUND")).toBe(true);
    expect(isAccountError(err, "CS_TOKEN_NOT_FOUND")).toBe(false);
    expect(isAccountError(new Error("x"))).toBe(false);
    expect(ACCOUNT_ERROR_HTTP_STATUS).toEqual({
      CS_ACCOUNT_NOT_FOUND: 404,
      CS_TOKEN_NOT_FOUND: 404,
      CS_ACCOUNT_INVALID: 400,
      CS_TOKEN_INVALID: 400,
      CS_ACCOUNT_DISABLED: 409,
    });
  });
});

describe("isId", () => {
  it("accepts UUID v4 only", () => {
    expect(isId(randomUUID())).toBe(true);
    expect(isId("00000000-0000-4000-8000-000000000000")).toBe(true);
    expect(isId("00000000-0000-1000-8000-000000000000")).toBe(false);
    expect(isId("x:tokens")).toBe(false);
    expect(isId(randomUUID().toUpperCase())).toBe(false);
    expect(isId(null)).toBe(false);
  });
});
