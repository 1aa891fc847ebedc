/**
 * Redis for the API's own use (rate-limit counters and the readiness check): decorates the app with
 * `redis`, an ioredis client (the client `@fastify/rate-limit` documents for its Redis store). A
 * client passed in is used as is and left open; a client created here (from `url`) is connected at
 * registration (failing fast when Redis is unreachable) and closed when the app closes.
 *
 * The client fails commands at once while disconnected (no offline queue) and gives each command
 * {@link REDIS_COMMAND_TIMEOUT_MS}, so a Redis outage turns into quick 503 answers instead of
 * hanging requests; it keeps reconnecting in the background.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { Redis } from "ioredis";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** ioredis client of the API (rate limits, readiness); see api/plugins/redis.ts. */
    redis: Redis;
  }
}

/** Timeout of one Redis command of the API's client, in milliseconds. */
export const REDIS_COMMAND_TIMEOUT_MS = 2000;

/** Options of {@link redisPlugin}. */
export interface RedisPluginOptions {
  /** Redis URL (config.redisUrl), used only when `client` is absent. */
  url: string;
  /** An existing ioredis client; when given, the plugin never closes it. */
  client?: Redis;
}

/**
 * Connects an ioredis client configured for request paths (see the module notes).
 * @throws the connection error when Redis cannot be reached (the client is disconnected first).
 */
export async function connectRedis(url: string, onError?: (err: unknown) => void): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    connectTimeout: 5000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    // One round trip for all commands issued in the same tick (rate-limit counters under load).
    enableAutoPipelining: true,
    retryStrategy: (times) => Math.min(100 * 2 ** times, 5000),
  });
  let connected = false;
  client.on("error", (err: unknown) => {
    if (connected) onError?.(err);
  });
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    throw err;
  }
  connected = true;
  return client;
}

/** Whether Redis answers PING within `timeoutMs`. Never throws. */
export async function redisReady(redis: Redis, timeoutMs: number): Promise<{ ready: true } | { ready: false; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
    });
    await Promise.race([redis.ping(), timeout]);
    return { ready: true };
  } catch (err) {
    return { ready: false, reason: err instanceof Error ? err.message : "unknown error" };
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the Redis client (non-encapsulated: `app.redis` is visible everywhere). */
export const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = globalPlugin(async (app, opts) => {
  const owned = opts.client === undefined;
  const client = opts.client ?? (await connectRedis(opts.url, (err) => app.log.warn({ err }, "redis connection error")));
  app.decorate("redis", client);
  if (owned) {
    app.addHook("onClose", async () => {
      if (client.status === "ready") await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    });
  }
}, "chainsift-redis");
