/**
 * Per-token rate limits with `@fastify/rate-limit` and its Redis store (an ioredis client, the
 * store the library documents), so every API process shares the same budgets and they survive
 * restarts of the API.
 *
 * The library is registered with `global: false` and driven by {@link FastifyInstance.enforceRateLimit},
 * which the authentication hook (api/plugins/auth.ts) calls once it knows the caller:
 * - key `token:<token id>` for an authenticated request (static tokens: `token:static:<hash>`),
 *   `ip:<client address>` for a failed authentication;
 * - `max` requests per `timeWindowMs` (config.api.rateLimitMax / rateLimitWindowMs), a fixed
 *   window that starts with the key's first request;
 * - every counted answer carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 *   `X-RateLimit-Reset` (seconds); beyond the budget the answer is 429 `CS_RATE_LIMITED` with
 *   `Retry-After` (seconds);
 * - when Redis cannot be asked, the answer is 503 `CS_BACKEND_UNAVAILABLE` (the limit is never
 *   silently skipped).
 * Public routes (health, metrics, docs) and successful admin requests are not counted.
 *
 * Redis keys: `<nameSpace><key>`, e.g. `cs:ratelimit:token:<uuid>`, each with the window as TTL.
 * @module
 */
import rateLimit from "@fastify/rate-limit";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import { apiError } from "../errors.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /**
     * Counts one request against the budget of its key ({@link rateLimitKey}) and sets the
     * rate-limit headers.
     * @throws {ApiError} 429 CS_RATE_LIMITED (with Retry-After) beyond the budget; 503
     *   CS_BACKEND_UNAVAILABLE when Redis fails.
     */
    enforceRateLimit(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

/** Options of {@link rateLimitPlugin}. */
export interface RateLimitPluginOptions {
  /** Requests per window and key (config.api.rateLimitMax). */
  max: number;
  /** Window length in milliseconds (config.api.rateLimitWindowMs). */
  timeWindowMs: number;
  /** ioredis client holding the counters. */
  redis: Redis;
  /** Prefix of the Redis keys, e.g. `cs:ratelimit:` (config.redisKeyPrefix + `ratelimit:`). */
  nameSpace: string;
}

/** The rate-limit key of a request: `token:<token id>` when authenticated, else `ip:<address>`. */
export function rateLimitKey(request: FastifyRequest): string {
  return request.account ? `token:${request.account.tokenId}` : `ip:${request.ip}`;
}

/** Registers `@fastify/rate-limit` (not globally) and decorates the app with `enforceRateLimit`. */
export const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = globalPlugin(async (app, opts) => {
  await app.register(rateLimit, {
    global: false,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    redis: opts.redis,
    nameSpace: opts.nameSpace,
    keyGenerator: rateLimitKey,
    skipOnError: false,
  });
  const limiter = app.createRateLimit();
  app.decorate("enforceRateLimit", async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    let result: Awaited<ReturnType<typeof limiter>>;
    try {
      result = await limiter(request);
    } catch (err) {
      request.log.warn({ err }, "rate limiter unavailable");
      throw apiError("CS_BACKEND_UNAVAILABLE", "the rate limiter is temporarily unavailable; retry later");
    }
    if (result.isAllowed) return;
    reply.header("x-ratelimit-limit", result.max);
    reply.header("x-ratelimit-remaining", result.remaining);
    reply.header("x-ratelimit-reset", result.ttlInSeconds);
    if (!result.isExceeded) return;
    reply.header("retry-after", result.ttlInSeconds);
    throw apiError(
      "CS_RATE_LIMITED",
      `rate limit exceeded: ${result.max} requests per ${Math.round(result.timeWindow / 1000)} s; retry in ${result.ttlInSeconds} s`,
    );
  });
}, "chainsift-rate-limit");
