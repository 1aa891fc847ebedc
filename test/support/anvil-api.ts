/**
 * An anvil environment with the API in front of it and a Redis client, for e2e tests that create
 * rules or saved searches through the API and look at the match stage's Redis state
 * (test/e2e/search-window-alerts.test.ts, test/e2e/search-sequence-alerts.test.ts).
 * @module
 */
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll } from "vitest";
import { startApi } from "../../api/server.js";
import { type AnvilEnv, startAnvilEnv } from "./anvil-env.js";

/** What {@link anvilWithApi} gives, valid inside the tests. */
export interface AnvilWithApi {
  env: AnvilEnv;
  /** Base URL of the API. */
  url: string;
  /** A client of the environment's Redis. */
  redis: RedisClientType;
}

/**
 * Starts the environment (no traces, rules and searches reloaded every 500 ms), the API and a
 * Redis client before the calling `describe`'s tests, and stops them after (registers `beforeAll`,
 * 180 s, and `afterAll`).
 * @returns a getter of the running parts.
 */
export function anvilWithApi(): () => AnvilWithApi {
  let env: AnvilEnv | undefined;
  let api: { app: { close(): Promise<unknown> }; url: string } | undefined;
  let redis: RedisClientType | undefined;
  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false, match: () => ({ reloadIntervalMs: 500 }) });
    api = await startApi({ config: env.config, logger: env.logger });
    redis = createClient({ url: env.config.redisUrl }) as RedisClientType;
    await redis.connect();
  }, 180_000);
  afterAll(async () => {
    await redis?.close();
    await api?.app.close();
    await env?.stop();
  });
  return () => {
    if (env === undefined || api === undefined || redis === undefined) throw new Error("anvilWithApi: not started");
    return { env, url: api.url, redis };
  };
}
