/**
 * api/plugins/console.ts on a Fastify app with the real auth plugin (static tokens only): the
 * console's files need no token, carry the CSP and security headers, and a missing build is a 503
 * naming the build command; the API's other routes still need the token.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { authPlugin } from "../../../../api/plugins/auth.js";
import { CONSOLE_CSP, consolePlugin } from "../../../../api/plugins/console.js";
import { errorsPlugin } from "../../../../api/plugins/errors.js";

let dir: string;
let app: FastifyInstance | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "console-plugin-"));
  mkdirSync(join(dir, "built"));
  writeFileSync(join(dir, "built/index.html"), "<!doctype html><title>x</title>");
  writeFileSync(join(dir, "built/app.js"), "console.log(1)");
  mkdirSync(join(dir, "empty"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function build(root: string): Promise<FastifyInstance> {
  const a = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
  await a.register(errorsPlugin);
  await a.register(authPlugin, { tokens: ["good-token"] });
  await a.register(consolePlugin, { root });
  a.get("/private", async () => ({ ok: true }));
  return a;
}

describe("consolePlugin", () => {
  it("serves the page and its assets without a token, with the CSP and security headers", async () => {
    app = await build(join(dir, "built"));
    for (const url of ["/console/", "/console", "/console/app.js"]) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-security-policy"]).toBe(CONSOLE_CSP);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["referrer-policy"]).toBe("no-referrer");
    }
    expect((await app.inject("/console/")).body).toContain("<title>x</title>");
    expect((await app.inject("/console/app.js")).headers["content-type"]).toMatch(/javascript/);
    expect(CONSOLE_CSP).toContain("default-src 'self'");
    expect(CONSOLE_CSP).not.toContain("unsafe");
    // Everything else still needs the token.
    expect((await app.inject("/private")).statusCode).toBe(401);
    expect((await app.inject({ url: "/private", headers: { authorization: "Bearer good-token" } })).statusCode).toBe(200);
  });

  it("answers 503 naming the build command when the console was not built", async () => {
    app = await build(join(dir, "empty"));
    const res = await app.inject("/console/");
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: "CS_BACKEND_UNAVAILABLE" } });
    expect(res.json().error.message).toContain("npm run build:console");
  });
});
