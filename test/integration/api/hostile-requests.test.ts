/**
 * Hostile requests found by probing the API (schemathesis, hand-made bodies and URLs): JSON bodies
 * that are not objects, bad percent-encoding in the path, and answers missing from the OpenAPI
 * document (`GET /readyz` 200 was undocumented).
 * Uses `app.inject` against real Redis and Elasticsearch (no indices needed: the requests are
 * refused before any search); skipped when they are not reachable.
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { ErrorBody } from "../../../api/errors.js";
import { loadConfig } from "../../../lib/config/index.js";
import { deleteRedisKeys, mainnetApiConfig, searchStackUp } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const TOKEN = `test-${ID}`;
const ADMIN_TOKEN = `admin-${ID}`;
const config = mainnetApiConfig(base, {
  indexPrefix: `${ID}-`,
  redisKeyPrefix: `${ID}:`,
  api: { tokens: [TOKEN], adminToken: ADMIN_TOKEN, rateLimitMax: 100_000 },
});
const SEARCH = "/ethereum/ethereum/mainnet/es/block/search/";
const JSON_HEADERS = { "content-type": "application/json" };
const AUTH = { authorization: `Bearer ${TOKEN}`, ...JSON_HEADERS };
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}`, ...JSON_HEADERS };

/** JSON texts that parse but are not objects. */
const NOT_OBJECTS = ["null", " null\n", "[]", "[{}]", "5", '"query"', "true", "false"];

describe.skipIf(!up)("hostile requests", () => {
  let app: FastifyInstance;
  let accountId: string;

  beforeAll(async () => {
    app = await buildApi({ config, logger: false });
    const created = await app.inject({ method: "POST", url: "/admin/accounts/", headers: ADMIN, payload: '{"name":"hostile"}' });
    expect(created.statusCode, created.body).toBe(201);
    accountId = created.json<{ id: string }>().id;
  });

  afterAll(async () => {
    await app?.close();
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  describe("bodies that are valid JSON but not an object", () => {
    const routes = (): Array<[string, string, Record<string, string>]> => [
      ["POST", SEARCH, AUTH],
      ["POST", "/admin/accounts/", ADMIN],
      ["POST", `/admin/accounts/${accountId}/tokens/`, ADMIN],
    ];

    it("are refused with 400 CS_BODY_INVALID on every route that takes a body", async () => {
      for (const [method, url, headers] of routes()) {
        for (const payload of NOT_OBJECTS) {
          const res = await app.inject({ method: method as "POST", url, headers, payload });
          const what = `${method} ${url} ${JSON.stringify(payload)}`;
          expect(res.statusCode, `${what}: ${res.body}`).toBe(400);
          expect(res.json<ErrorBody>().error, what).toMatchObject({ code: "CS_BODY_INVALID", path: null });
        }
      }
    });

    it("leave an empty body as it was (search: {}, token: no name, no expiry)", async () => {
      const search = await app.inject({ method: "POST", url: SEARCH, headers: AUTH });
      expect(search.statusCode, search.body).not.toBe(400);
      const token = await app.inject({ method: "POST", url: `/admin/accounts/${accountId}/tokens/`, headers: ADMIN, payload: "" });
      expect(token.statusCode, token.body).toBe(201);
    });

    it("a wrong chain with a non-object body is refused as the body, like invalid JSON", async () => {
      const url = "/ethereum/ethereum/nonet/es/block/search/";
      const invalid = await app.inject({ method: "POST", url, headers: AUTH, payload: "{" });
      const nul = await app.inject({ method: "POST", url, headers: AUTH, payload: "null" });
      expect([invalid.statusCode, invalid.json<ErrorBody>().error.code]).toEqual([400, "CS_BODY_INVALID"]);
      expect([nul.statusCode, nul.json<ErrorBody>().error.code]).toEqual([400, "CS_BODY_INVALID"]);
    });
  });
  describe("bad percent-encoding and over-long segments in the path", () => {
    it.each([
      ["GET", "/%ZZ"],
      ["GET", "/%"],
      ["GET", "/ethereum/ethereum/mainnet/es/block/search/%ZZ"],
      ["POST", "/ethereum/ethereum/mainnet/es/block/search/%ZZ"],
      ["GET", "/ethereum/ethereum/mainnet/es/block/%E0%A4%A/"],
      ["GET", "/admin/accounts/%ZZ"],
    ])("%s %s is 400 CS_URL_INVALID in the error envelope, with or without a token", async (method, url) => {
      for (const headers of [AUTH, {}]) {
        const res = await app.inject({ method: method as "GET", url, headers });
        expect(res.statusCode, res.body).toBe(400);
        expect(res.headers["content-type"]).toMatch(/^application\/json/);
        expect(res.json<ErrorBody>()).toEqual({
          error: { code: "CS_URL_INVALID", message: expect.any(String), path: null },
          errors: [{ code: "CS_URL_INVALID", message: expect.any(String), path: null }],
        });
      }
    });

    it("a path segment beyond the router's 100 characters is 414 CS_URL_TOO_LONG in the error envelope", async () => {
      const res = await app.inject({ method: "GET", url: `/ethereum/ethereum/mainnet/es/block/0x${"ab".repeat(100)}/`, headers: AUTH });
      expect(res.statusCode, res.body).toBe(414);
      expect(res.json<ErrorBody>().error).toMatchObject({ code: "CS_URL_TOO_LONG", path: null });
    });

    it("well-formed percent-encoding still routes", async () => {
      const res = await app.inject({ method: "GET", url: "/%68ealthz" });
      expect([res.statusCode, res.json()]).toEqual([200, { status: "ok" }]);
    });
  });
  describe("the OpenAPI document", () => {
    interface Operation {
      responses?: Record<string, { description?: string; content?: Record<string, { schema?: JsonSchema }> }>;
    }
    interface JsonSchema {
      $ref?: string;
      type?: string;
      properties?: Record<string, JsonSchema>;
      required?: string[];
      enum?: unknown[];
    }
    const document = async () =>
      (await app.inject({ method: "GET", url: "/docs/json" })).json<{
        paths: Record<string, Record<string, Operation>>;
        components: { schemas: Record<string, JsonSchema> };
      }>();

    it("documents a success answer with a schema for every operation (204: no body)", async () => {
      const doc = await document();
      const missing: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const ok = Object.entries(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
          if (ok.length === 0) missing.push(`${method.toUpperCase()} ${path}: no 2xx answer`);
          for (const [status, answer] of ok) {
            if (status === "204") continue;
            const schemas = Object.values(answer.content ?? {}).map((c) => c.schema);
            if (schemas.length === 0 || schemas.some((x) => x === undefined))
              missing.push(`${method.toUpperCase()} ${path} ${status}: no schema`);
          }
        }
      }
      expect(missing).toEqual([]);
    });

    it("documents /healthz and /readyz 200 with the keys they answer, and /metrics as text", async () => {
      const doc = await document();
      // Shared schemas are $refs into components/schemas (api/plugins/openapi.ts hoistComponents).
      const schemaOf = (path: string, status: string) => {
        const schema = doc.paths[path]?.get?.responses?.[status]?.content?.["application/json"]?.schema;
        return schema?.$ref ? doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema;
      };
      for (const path of ["/healthz", "/readyz"]) {
        const res = await app.inject({ method: "GET", url: path });
        expect(res.statusCode, res.body).toBe(200);
        const answer = res.json<Record<string, unknown>>();
        const schema = schemaOf(path, "200");
        expect(schema?.type, path).toBe("object");
        expect(
          Object.keys(answer).filter((k) => !(k in (schema?.properties ?? {}))),
          path,
        ).toEqual([]);
        expect(
          (schema?.required ?? []).filter((k) => !(k in answer)),
          path,
        ).toEqual([]);
      }
      expect(schemaOf("/readyz", "503")).toBeDefined();
      const metrics = doc.paths["/metrics"]?.get?.responses?.["200"]?.content ?? {};
      expect(Object.keys(metrics)).toEqual(["text/plain"]);
      expect(metrics["text/plain"]?.schema?.type).toBe("string");
    });
  });
});
