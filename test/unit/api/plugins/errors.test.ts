import { errors as esErrors } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import { ACCOUNT_ERROR_HTTP_STATUS, ApiError, ERROR_CODES, errorBody } from "../../../../api/errors.js";
import { bearerToken, tokenChecker } from "../../../../api/plugins/auth.js";
import { clientErrorAnswer, mapError, mapValidation } from "../../../../api/plugins/errors.js";
import { AccountError, type AccountErrorCode } from "../../../../lib/accounts/model.js";

function esResponse(statusCode: number, body: unknown) {
  // The transport's DiagnosticResult shape, as the client builds it.
  return new esErrors.ResponseError({ body, statusCode, headers: {}, warnings: null, meta: {} as never });
}

describe("mapError", () => {
  it("keeps ApiError codes and statuses", () => {
    const err = new ApiError([
      { code: "CS_SORT_INVALID", message: "a", path: "sort" },
      { code: "CS_SIZE_INVALID", message: "b", path: "size" },
    ]);
    expect(mapError(err)).toEqual({ status: 400, details: err.details, unexpected: false });
  });

  it("maps ES 400 to CS_QUERY_REJECTED with the root cause", () => {
    const m = mapError(
      esResponse(400, { error: { root_cause: [{ reason: "failed to parse date field [x]" }], reason: "all shards failed" } }),
    );
    expect(m.status).toBe(400);
    expect(m.details[0]).toEqual({ code: "CS_QUERY_REJECTED", message: "failed to parse date field [x]", path: null });
  });

  it("maps unavailability to 503 and everything else to 500 without details", () => {
    expect(mapError(esResponse(429, {})).details[0]?.code).toBe("CS_BACKEND_UNAVAILABLE");
    expect(mapError(new esErrors.ConnectionError("connect ECONNREFUSED")).status).toBe(503);
    expect(mapError(new esErrors.TimeoutError("Request timed out")).status).toBe(503);
    expect(mapError(esResponse(500, { error: { reason: "secret internals" } }))).toEqual({
      status: 500,
      details: [{ code: "CS_INTERNAL", message: "internal error", path: null }],
      unexpected: true,
    });
    expect(mapError(new TypeError("x is undefined")).details[0]).toEqual({ code: "CS_INTERNAL", message: "internal error", path: null });
  });

  it("maps Fastify body parsing errors", () => {
    expect(mapError(Object.assign(new Error("x"), { code: "FST_ERR_CTP_BODY_TOO_LARGE", statusCode: 413 })).status).toBe(413);
    expect(mapError(Object.assign(new Error("x"), { code: "FST_ERR_CTP_INVALID_MEDIA_TYPE", statusCode: 415 })).details[0]?.code).toBe(
      "CS_UNSUPPORTED_MEDIA_TYPE",
    );
    expect(mapError(Object.assign(new Error("x"), { code: "FST_ERR_CTP_INVALID_JSON_BODY", statusCode: 400 })).details[0]?.code).toBe(
      "CS_BODY_INVALID",
    );
  });

  it("maps router errors raised before routing (bad percent-encoding, over-long segment)", () => {
    expect(mapError(Object.assign(new Error("x"), { code: "FST_ERR_BAD_URL", statusCode: 400 }))).toEqual({
      status: 400,
      details: [{ code: "CS_URL_INVALID", message: "the URL path is not validly percent-encoded", path: null }],
      unexpected: false,
    });
    expect(mapError(Object.assign(new Error("x"), { code: "FST_ERR_MAX_PARAM_LENGTH", statusCode: 414 }))).toMatchObject({
      status: 414,
      details: [{ code: "CS_URL_TOO_LONG" }],
    });
  });

  it("maps schema validation errors by top-level key", () => {
    expect(
      mapValidation(
        [
          { instancePath: "/foo", keyword: "boolean", message: "schema is false" },
          { instancePath: "", keyword: "additionalProperties", params: { additionalProperties: ["foo"] } },
          { instancePath: "/size", keyword: "type", message: "must be integer" },
          { instancePath: "/_source/1", keyword: "type", message: "must be string" },
          { instancePath: "/sort", keyword: "anyOf", message: "must match a schema in anyOf" },
        ],
        "body",
      ).map((d) => [d.code, d.path]),
    ).toEqual([
      ["CS_BODY_INVALID", "foo"],
      ["CS_SIZE_INVALID", "size"],
      ["CS_SOURCE_INVALID", "_source[1]"],
      ["CS_SORT_INVALID", "sort"],
    ]);
    expect(mapValidation([{ instancePath: "", keyword: "type", message: "must be object" }], "body")[0]?.code).toBe("CS_BODY_INVALID");
  });

  it("treats a body key named like an Object.prototype member (toString) as an unknown key, not a 500", () => {
    const [d] = mapValidation([{ instancePath: "/toString", keyword: "type", message: "must be object" }], "body");
    expect(d).toMatchObject({ code: "CS_BODY_INVALID", path: "toString" });
  });
});

describe("mapError: extensions, accounts", () => {
  it("maps AccountError to its code, ACCOUNT_ERROR_HTTP_STATUS and field path", () => {
    expect(mapError(new AccountError("CS_ACCOUNT_INVALID", "bad e-mail", "email"))).toEqual({
      status: 400,
      details: [{ code: "CS_ACCOUNT_INVALID", message: "bad e-mail", path: "email" }],
      unexpected: false,
    });
    expect(mapError(new AccountError("CS_ACCOUNT_DISABLED", "disabled")).status).toBe(409);
    for (const [code, status] of Object.entries(ACCOUNT_ERROR_HTTP_STATUS)) {
      expect(ERROR_CODES[code as AccountErrorCode].status, code).toBe(status);
    }
  });

  it("maps ES too_many_buckets_exception to CS_AGG_TOO_MANY_BUCKETS", () => {
    const body = { error: { root_cause: [{ type: "too_many_buckets_exception", reason: "Trying to create too many buckets" }] } };
    for (const status of [400, 503]) expect(mapError(esResponse(status, body)).details[0]?.code).toBe("CS_AGG_TOO_MANY_BUCKETS");
  });

  it("maps schema errors of the extension keys and of routes with a validation code", () => {
    expect(
      mapValidation(
        [
          { instancePath: "/search_after/0", keyword: "anyOf", message: "must match a schema in anyOf" },
          { instancePath: "/aggs", keyword: "type", message: "must be object" },
          { instancePath: "", keyword: "additionalProperties", params: { additionalProperties: ["highlight"] } },
        ],
        "body",
      ).map((d) => [d.code, d.path, d.message.slice(0, 24)]),
    ).toEqual([
      ["CS_SEARCH_AFTER_INVALID", "search_after[0]", "search_after must match "],
      ["CS_AGG_INVALID", "aggs", "aggs must be object"],
      ["CS_BODY_INVALID", "highlight", "highlight is not support"],
    ]);
    expect(
      mapValidation(
        [
          {
            instancePath: "",
            keyword: "required",
            params: { requiredProperties: ["name"] },
            message: "must have required properties name",
          },
          { instancePath: "/email", keyword: "type", message: "must be string" },
          { instancePath: "/email", keyword: "anyOf", message: "must match a schema in anyOf" },
          { instancePath: "", keyword: "additionalProperties", params: { additionalProperties: ["x"] } },
        ],
        "body",
        "CS_ACCOUNT_INVALID",
      ),
    ).toEqual([
      { code: "CS_ACCOUNT_INVALID", message: "name is required", path: "name" },
      { code: "CS_ACCOUNT_INVALID", message: "email must match a schema in anyOf", path: "email" },
      { code: "CS_ACCOUNT_INVALID", message: "unknown key x", path: "x" },
    ]);
  });
});

describe("errorBody and ERROR_CODES", () => {
  it("puts the first problem in error and all in errors", () => {
    const d = [{ code: "CS_AUTH_REQUIRED" as const, message: "m", path: null }];
    expect(errorBody(d)).toEqual({ error: d[0], errors: d });
  });

  it("every code has a status and a description", () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^CS_[A-Z_]+$/);
      expect(info.status).toBeGreaterThanOrEqual(400);
      expect(info.description.length).toBeGreaterThan(10);
    }
  });
});

describe("auth helpers", () => {
  it("parses bearer headers", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer  abc ")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken("Bearer")).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it("checks tokens of any length; an empty list accepts nothing (also used for the admin token)", () => {
    const check = tokenChecker(["s3cret", "another-much-longer-token"]);
    expect(check("s3cret")).toBe(true);
    expect(check("another-much-longer-token")).toBe(true);
    expect(check("s3cre")).toBe(false);
    expect(check("")).toBe(false);
    expect(tokenChecker([])("s3cret")).toBe(false);
    expect(tokenChecker([""])("")).toBe(false);
  });
});

describe("clientErrorAnswer", () => {
  const parse = (raw: string | null) => {
    const [head = "", body = ""] = (raw ?? "").split("\r\n\r\n");
    return { statusLine: head.split("\r\n")[0], head, body: JSON.parse(body) as unknown };
  };

  it("answers timeouts 408, header overflows 431 and other parse errors 400, with the error body, closing", () => {
    const timeout = parse(clientErrorAnswer({ code: "ERR_HTTP_REQUEST_TIMEOUT" }));
    expect(timeout.statusLine).toBe("HTTP/1.1 408 Request Timeout");
    expect(timeout.head).toMatch(/\r\nConnection: close(\r\n|$)/);
    expect(timeout.body).toEqual(errorBody([{ code: "CS_REQUEST_TIMEOUT", message: "the request did not arrive in time", path: null }]));
    const overflow = parse(clientErrorAnswer({ code: "HPE_HEADER_OVERFLOW" }));
    expect(overflow.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(overflow.body).toMatchObject({ error: { code: "CS_HEADERS_TOO_LARGE" } });
    const bad = parse(clientErrorAnswer({ code: "HPE_INVALID_METHOD" }));
    expect(bad.statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(bad.body).toMatchObject({ error: { code: "CS_BAD_REQUEST" } });
  });

  it("writes a Content-Length that matches the body bytes, and nothing for a reset connection", () => {
    const raw = clientErrorAnswer({ code: "ERR_HTTP_REQUEST_TIMEOUT" }) ?? "";
    const [head = "", body = ""] = raw.split("\r\n\r\n");
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(clientErrorAnswer({ code: "ECONNRESET" })).toBeNull();
  });
});

describe("docs/api.md", () => {
  it("lists every error code", async () => {
    const { readFile } = await import("node:fs/promises");
    const doc = await readFile(new URL("../../../../docs/api.md", import.meta.url), "utf8");
    for (const [code, info] of Object.entries(ERROR_CODES)) expect(doc).toMatch(new RegExp(`\\| \`${code}\`\\s+\\| ${info.status}\\s+\\|`));
  });
});
