/**
 * Authentication of every request, in one `onRequest` hook on the whole app (including the 404
 * handler, so unknown routes also need a token and reveal nothing):
 *
 * - Routes declared with `config: { public: true }` (health, metrics, docs) need nothing.
 * - Routes declared with `config: { admin: true }` (the `/admin/` endpoints) need
 *   `Authorization: Bearer <config.api.adminToken>`, compared in constant time; with no admin token
 *   configured they always answer 401.
 * - Every other route needs `Authorization: Bearer <token>` with an API token of an account
 *   (lib/accounts: checked against Redis on every request, never cached, so a revocation or a
 *   disabled account takes effect at the next request), or one of the static tokens of
 *   `config.api.tokens` (a bootstrap/development convenience, compared in constant time, all mapped
 *   to the synthetic account id {@link STATIC_ACCOUNT_ID}). The caller is attached as
 *   `request.account` ({@link RequestAccount}).
 *
 * Missing, malformed, unknown, revoked and expired tokens and tokens of disabled accounts all get
 * the same 401 `CS_AUTH_REQUIRED` answer (with `WWW-Authenticate: Bearer`). When Redis cannot be
 * asked, the answer is 503 `CS_BACKEND_UNAVAILABLE`, never 401 (which would tell a valid client
 * that its token is bad).
 *
 * Rate limiting (api/plugins/rate-limit.ts) is called from the same hook, once the caller is
 * known: an authenticated request counts against its token, a failed authentication (API or admin)
 * against the client address, so guessing tokens is throttled too.
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { AccountStore } from "../../lib/accounts/store.js";
import { apiError } from "../errors.js";
import { globalPlugin } from "./plugin.js";

/** Account id of requests made with a static token of `config.api.tokens`. */
export const STATIC_ACCOUNT_ID = "static";

/** Who made an authenticated request. */
export interface RequestAccount {
  /** The account id (a UUID), or {@link STATIC_ACCOUNT_ID} for a static token. */
  id: string;
  /** The token id (a UUID), or `static:<16 hex digits of the token's SHA-256>` for a static token. */
  tokenId: string;
  /** Whether the token is one of the static `config.api.tokens`. */
  static: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** When true, the route needs no token and is not rate limited (health, metrics, docs). */
    public?: boolean;
    /** When true, the route needs the admin token (config.api.adminToken) instead of an API token. */
    admin?: boolean;
  }
  interface FastifyRequest {
    /** The caller of an authenticated (non-public, non-admin) request; null otherwise. */
    account: RequestAccount | null;
  }
}

/** Options of {@link authPlugin}. */
export interface AuthPluginOptions {
  /** Static tokens (config.api.tokens); empty means only account tokens authenticate. */
  tokens: readonly string[];
  /** The admin credential (config.api.adminToken); undefined means the admin routes always answer 401. */
  adminToken?: string | undefined;
  /** The account store; absent means only static tokens authenticate (tests). */
  store?: AccountStore;
  /**
   * Counts the request against its rate-limit budget (keyed by `request.account`, or the client
   * address when null); throws 429 when it is used up. Called after authentication succeeded and
   * before a 401 is answered. Absent: no rate limiting.
   */
  limit?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

const digest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/**
 * Builds a constant-time token checker for a fixed token list: both sides are hashed with SHA-256
 * (equal lengths) and compared with `crypto.timingSafeEqual`, against every token without early exit.
 * @returns a function telling whether a candidate token is one of `tokens` (empty tokens never match).
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

/** The token id reported for a static token: `static:` and the first 16 hex digits of its SHA-256. */
export function staticTokenId(token: string): string {
  return `static:${digest(token).toString("hex").slice(0, 16)}`;
}

/**
 * The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive), or undefined.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  return m?.[1];
}

function unauthorized(reply: FastifyReply, admin: boolean): never {
  reply.header("www-authenticate", 'Bearer realm="chainsift"');
  throw apiError(
    "CS_AUTH_REQUIRED",
    admin
      ? "the admin token is required: Authorization: Bearer <admin token>"
      : "a valid bearer token is required: Authorization: Bearer <token>",
  );
}

/** Adds the authentication `onRequest` hook to the whole app and decorates requests with `account`. */
export const authPlugin: FastifyPluginAsync<AuthPluginOptions> = globalPlugin(async (app, opts) => {
  const isStatic = tokenChecker(opts.tokens);
  const isAdmin = tokenChecker(opts.adminToken ? [opts.adminToken] : []);
  const { store, limit } = opts;
  app.decorateRequest("account", null);

  app.addHook("onRequest", async (request, reply) => {
    const config = request.routeOptions.config;
    if (config?.public === true) return;
    const token = bearerToken(request.headers.authorization);
    if (config?.admin === true) {
      if (token !== undefined && isAdmin(token)) return;
      await limit?.(request, reply);
      unauthorized(reply, true);
    }
    let account: RequestAccount | null = null;
    if (token !== undefined && isStatic(token)) {
      account = { id: STATIC_ACCOUNT_ID, tokenId: staticTokenId(token), static: true };
    } else if (token !== undefined && store) {
      let auth: Awaited<ReturnType<AccountStore["authenticate"]>>;
      try {
        auth = await store.authenticate(token);
      } catch (err) {
        request.log.warn({ err }, "account store unavailable during authentication");
        throw apiError("CS_BACKEND_UNAVAILABLE", "authentication is temporarily unavailable; retry later");
      }
      if (auth) account = { id: auth.account.id, tokenId: auth.token.id, static: false };
    }
    request.account = account;
    await limit?.(request, reply);
    if (!account) unauthorized(reply, false);
  });
}, "chainsift-auth");
