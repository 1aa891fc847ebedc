/**
 * Bearer-token authentication. Every route requires `Authorization: Bearer <token>` with a token
 * from config.api.tokens, except routes declared with `config: { public: true }` (health checks).
 * Missing, malformed and unknown tokens get the same 401 `CS_AUTH_REQUIRED` answer (with
 * `WWW-Authenticate: Bearer`), so the answer reveals nothing about which tokens exist.
 *
 * Tokens are compared in constant time: both sides are hashed with SHA-256 (equal lengths) and
 * compared with `crypto.timingSafeEqual`, against every configured token without early exit.
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "../errors.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** When true, the route needs no bearer token (health checks). */
    public?: boolean;
  }
}

/** Options of {@link authPlugin}. */
export interface AuthPluginOptions {
  /** Accepted tokens (config.api.tokens); empty means every protected request is refused. */
  tokens: readonly string[];
}

const digest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/**
 * Builds a constant-time token checker for a fixed token list.
 * @returns a function telling whether a candidate token is one of `tokens`.
 */
export function tokenChecker(tokens: readonly string[]): (candidate: string) => boolean {
  const digests = tokens.filter((t) => t !== "").map(digest);
  return (candidate) => {
    const d = digest(candidate);
    let ok = false;
    for (const t of digests) ok = timingSafeEqual(t, d) || ok;
    return ok;
  };
}

/**
 * The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive), or undefined.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  return m?.[1];
}

/** Adds the authentication `onRequest` hook to the whole app (including the 404 handler). */
export const authPlugin: FastifyPluginAsync<AuthPluginOptions> = globalPlugin(async (app, opts) => {
  const check = tokenChecker(opts.tokens);
  app.addHook("onRequest", async (request, reply) => {
    if (request.routeOptions.config?.public === true) return;
    const token = bearerToken(request.headers.authorization);
    if (token !== undefined && check(token)) return;
    reply.header("www-authenticate", 'Bearer realm="chainsift"');
    throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required: Authorization: Bearer <token>");
  });
}, "chainsift-auth");
