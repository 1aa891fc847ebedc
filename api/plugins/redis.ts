/**
 * Redis for the API: decorates the app with `redis`, the node-redis client (lib/redis.ts) that the
 * rate limiter, the readiness check, the account store and the rules routes' delivery log share. A
 * client passed in (the process's shared one, lib/common.ts) is used as is and left open; a client
 * created here (from `url`, with {@link connectRedisClient}) is connected at registration (failing
 * fast when Redis is unreachable) and closed when the app closes.
 *
 * The client fails commands at once while disconnected (no offline queue) and keeps reconnecting in
 * the background; the rate limiter and the readiness check bound each of their commands to
 * {@link REDIS_COMMAND_TIMEOUT_MS}, so a Redis outage turns into quick 503 answers instead of
 * hanging requests.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import type { Logger } from "../../lib/logger.js";
import { connectRedisClient, type RedisClient, withTimeout } from "../../lib/redis.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** node-redis client of the API (rate limits, readiness, accounts, delivery log); see api/plugins/redis.ts. */
    redis: RedisClient;
  }
}

/** Timeout of one rate-limit or readiness command of the API's client, in milliseconds. */
export const REDIS_COMMAND_TIMEOUT_MS = 2000;

/** Options of {@link redisPlugin}. */
export interface RedisPluginOptions {
  /** Redis URL (config.redisUrl), used only when `client` is absent. */
  url: string;
  /** An existing node-redis client; when given, the plugin never closes it. */
  client?: RedisClient;
}

/**
 * Whether Redis answers PING within `timeoutMs`. Never throws.
 * @param redis - any client with `ping()`.
 * @param timeoutMs - how long to wait for the answer.
 * @returns `{ready: true}`, or `{ready: false, reason}` with the error message (`timed out after … ms` on timeout).
 */
export async function redisReady(
  redis: Pick<RedisClient, "ping">,
  timeoutMs: number,
): Promise<{ ready: true } | { ready: false; reason: string }> {
  try {
    await withTimeout(redis.ping(), timeoutMs);
    return { ready: true };
  } catch (err) {
    return { ready: false, reason: err instanceof Error ? err.message : "unknown error" };
  }
}

/** Registers the Redis client (non-encapsulated: `app.redis` is visible everywhere). */
export const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = globalPlugin(async (app, opts) => {
  if (opts.client) {
    app.decorate("redis", opts.client);
    return;
  }
  const connected = await connectRedisClient(opts.url, { logger: app.log as unknown as Logger, label: "api" });
  app.decorate("redis", connected.client);
  app.addHook("onClose", async () => {
    await connected.close();
  });
}, "chainsift-redis");
