/**
 * Per-token rate limits with `@fastify/rate-limit` over a Redis store of our own
 * ({@link redisRateLimitStore}: the app's node-redis client, lib/redis.ts; the library's built-in
 * store needs ioredis), so every API process shares the same budgets and they survive restarts of
 * the API.
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
import { createHash } from "node:crypto";
import rateLimit, { type FastifyRateLimitOptions, type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { type RedisClient, withTimeout } from "../../lib/redis.js";
import { apiError } from "../errors.js";
import { globalPlugin } from "./plugin.js";
import { REDIS_COMMAND_TIMEOUT_MS } from "./redis.js";

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
  /** node-redis client holding the counters (the app's `redis`). */
  redis: Pick<RedisClient, "eval" | "evalSha">;
  /** Prefix of the Redis keys, e.g. `cs:ratelimit:` (config.redisKeyPrefix + `ratelimit:`). */
  nameSpace: string;
}

/** The rate-limit key of a request: `token:<token id>` when authenticated, else `ip:<address>`. */
export function rateLimitKey(request: FastifyRequest): string {
  return request.account ? `token:${request.account.tokenId}` : `ip:${request.ip}`;
}

/**
 * One request counted in a fixed window: INCR the key; the first request of a window sets the TTL
 * (PEXPIRE, the window); a key left without TTL gets one again. Answers `{count, ttl ms}`.
 */
const INCR_SCRIPT = `local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if current == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`;
const INCR_SHA = createHash("sha1").update(INCR_SCRIPT).digest("hex");

/**
 * A `@fastify/rate-limit` store class (its `store` option) counting in Redis through a node-redis
 * client: one {@link INCR_SCRIPT} round trip per request (EVALSHA, EVAL when the script cache was
 * flushed), bounded by {@link REDIS_COMMAND_TIMEOUT_MS}. Fixed windows only: the library's
 * `continueExceeding` and `exponentialBackoff` are refused.
 * @param redis - the client holding the counters.
 * @param nameSpace - prefix of every key, e.g. `cs:ratelimit:`; a route-level child store appends `<method><url>-`.
 * @returns the store constructor; constructing it throws when `continueExceeding` or `exponentialBackoff` is set.
 */
export function redisRateLimitStore(redis: RateLimitPluginOptions["redis"], nameSpace: string): FastifyRateLimitStoreCtor {
  return class extends RedisRateLimitStore {
    constructor(options: FastifyRateLimitOptions & { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
      if (options.continueExceeding || options.exponentialBackoff) {
        throw new Error("the Redis rate-limit store counts fixed windows: continueExceeding and exponentialBackoff are not supported");
      }
      super(redis, nameSpace);
    }
  };
}

/** The store of {@link redisRateLimitStore}: keys under `prefix`. */
class RedisRateLimitStore implements FastifyRateLimitStore {
  constructor(
    private readonly redis: RateLimitPluginOptions["redis"],
    private readonly prefix: string,
  ) {}

  incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
    this.count(this.prefix + key, timeWindow).then(
      (result) => callback(null, result),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
    );
  }

  child(routeOptions: Parameters<FastifyRateLimitStore["child"]>[0]): FastifyRateLimitStore {
    // The library passes its merged parameters; their `routeInfo` is the route (as its own Redis store reads it).
    const route = (routeOptions as unknown as { routeInfo?: { method?: string; url?: string } }).routeInfo ?? {};
    return new RedisRateLimitStore(this.redis, `${this.prefix}${route.method ?? ""}${route.url ?? ""}-`);
  }

  private async count(key: string, windowMs: number): Promise<{ current: number; ttl: number }> {
    const args = { keys: [key], arguments: [String(windowMs)] };
    const reply = await withTimeout(
      this.redis.evalSha(INCR_SHA, args).catch((err: unknown) => {
        if (err instanceof Error && err.message.startsWith("NOSCRIPT")) return this.redis.eval(INCR_SCRIPT, args);
        throw err;
      }),
      REDIS_COMMAND_TIMEOUT_MS,
    );
    const [current, ttl] = reply as [number, number];
    return { current, ttl };
  }
}

/** Registers `@fastify/rate-limit` (not globally) and decorates the app with `enforceRateLimit`. */
export const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = globalPlugin(async (app, opts) => {
  await app.register(rateLimit, {
    global: false,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    store: redisRateLimitStore(opts.redis, opts.nameSpace),
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
