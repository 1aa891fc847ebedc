/**
 * The web console (docs/console.md) at {@link CONSOLE_PREFIX}: the static files that
 * `npm run build:console` (console/build.ts, also run by `npm install`'s `prepare` and `npm run build`)
 * bundles into `dist/console/`, served with `@fastify/static`. The files are public (no token, not
 * rate limited: they hold no data); the console itself calls the ordinary API routes with the bearer
 * token the user typed, kept in the tab's `sessionStorage` — never in a URL, a cookie or a log.
 *
 * Every answer under the prefix carries a strict Content-Security-Policy ({@link CONSOLE_CSP}: only
 * this origin's scripts, styles and connections, no inline script or style, no framing), plus
 * `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. When the bundle was not built,
 * `GET /console/` answers 503 `CS_BACKEND_UNAVAILABLE` naming the command that builds it.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "../errors.js";

/** Where the console is served (with a trailing slash: its relative asset URLs resolve under it). */
export const CONSOLE_PREFIX = "/console/";

/**
 * The Content-Security-Policy of every console answer: scripts, styles, images, fonts and
 * connections from this origin only (`data:` images for the chart library's canvas export), no
 * inline script or style attribute in the HTML, no plugins, no framing, no `<base>` or form posts
 * elsewhere. CodeMirror's and uPlot's run-time styles are constructed style sheets and CSSOM
 * property writes, which `style-src 'self'` allows
 * (https://www.w3.org/TR/CSP3/#directive-style-src).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Route options of the console's own routes: not in the OpenAPI document (static files, not an API operation). */
const HIDDEN = { schema: { hide: true } } as const;

/** Options of {@link consolePlugin}. */
export interface ConsolePluginOptions {
  /**
   * The folder of the built console (holding `index.html`). Default: {@link defaultConsoleRoot}.
   */
  root?: string;
}

/**
 * The built console's folder: `dist/console/` of the repository, found from this file both when it
 * runs from source (`api/plugins/console.ts` under tsx: `<repo>/dist/console`) and compiled
 * (`dist/api/plugins/console.js`: `<repo>/dist/console`).
 */
export function defaultConsoleRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [resolve(here, "../../dist/console"), resolve(here, "../../console")];
  return candidates.find((c) => existsSync(join(c, "index.html"))) ?? (candidates[0] as string);
}

/**
 * Serves the console under {@link CONSOLE_PREFIX} (and `/console`: the app ignores trailing slashes;
 * index.html names its assets with absolute paths). Encapsulated: its
 * headers hook applies to the console's routes only. Holds no resources (no onClose needed).
 */
export const consolePlugin: FastifyPluginAsync<ConsolePluginOptions> = async (app, opts) => {
  const root = opts.root ?? defaultConsoleRoot();
  // Static files need no token: mark every route of this scope public before they are added.
  app.addHook("onRoute", (route) => {
    route.config = { ...route.config, public: true };
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    reply.header("content-security-policy", CONSOLE_CSP);
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
    return payload;
  });
  if (!existsSync(join(root, "index.html"))) {
    const notBuilt = async () => {
      throw apiError("CS_BACKEND_UNAVAILABLE", "the console is not built: run `npm run build:console`");
    };
    app.get(CONSOLE_PREFIX, HIDDEN, notBuilt);
    app.get(`${CONSOLE_PREFIX}*`, HIDDEN, notBuilt);
    return;
  }
  // The page itself from memory (read once), its assets by @fastify/static.
  const index = readFileSync(join(root, "index.html"));
  app.get(CONSOLE_PREFIX, HIDDEN, async (_request, reply) =>
    reply.type("text/html; charset=utf-8").header("cache-control", "no-cache").send(index),
  );
  // @fastify/static hides its routes from the OpenAPI document too (`schemaHide`, default true).
  await app.register(fastifyStatic, { root, prefix: CONSOLE_PREFIX, index: false, decorateReply: false, wildcard: true, schemaHide: true });
};
