/**
 * An anvil environment with a Redis client, and optionally the API in front of it, for e2e tests
 * that create rules (through the environment's store, test/e2e/window-alerts.test.ts,
 * test/e2e/sequence-alerts.test.ts) or rules and saved searches through the API
 * (test/e2e/search-window-alerts.test.ts, test/e2e/search-sequence-alerts.test.ts) and look at the
 * match stage's Redis state.
 * @module
 */
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll } from "vitest";
import { startApi } from "../../api/server.js";
import type { Rule } from "../../lib/rules/model.js";
import { type AnvilEnv, startAnvilEnv } from "./anvil-env.js";
import { waitFor } from "./harness.js";
import { absenceTransferRule } from "./rules.js";

/** What {@link anvilWithRedis} gives, valid inside the tests. */
export interface AnvilWithRedis {
  env: AnvilEnv;
  /** A client of the environment's Redis. */
  redis: RedisClientType;
}

/** What {@link anvilWithApi} gives, valid inside the tests. */
export interface AnvilWithApi extends AnvilWithRedis {
  /** Base URL of the API. */
  url: string;
}

/**
 * Registers the calling `describe`'s hooks: `beforeAll` (180 s) starts the environment (no traces,
 * rules and searches reloaded every 500 ms), the API when `withApi`, and a Redis client;
 * `afterAll` stops them.
 */
function anvilParts(withApi: boolean) {
  let env: AnvilEnv | undefined;
  let api: { app: { close(): Promise<unknown> }; url: string } | undefined;
  let redis: RedisClientType | undefined;
  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false, match: () => ({ reloadIntervalMs: 500 }) });
    if (withApi) api = await startApi({ config: env.config, logger: env.logger });
    redis = createClient({ url: env.config.redisUrl }) as RedisClientType;
    await redis.connect();
  }, 180_000);
  afterAll(async () => {
    await redis?.close();
    await api?.app.close();
    await env?.stop();
  });
  return (who: string) => {
    if (env === undefined || redis === undefined) throw new Error(`${who}: not started`);
    return { env, redis, api };
  };
}

/**
 * Starts the environment (no traces, rules and searches reloaded every 500 ms) and a Redis client
 * before the calling `describe`'s tests, and stops them after (registers `beforeAll`, 180 s, and
 * `afterAll`).
 * @returns a getter of the running parts; it throws before they are started.
 */
export function anvilWithRedis(): () => AnvilWithRedis {
  const parts = anvilParts(false);
  return () => {
    const { env, redis } = parts("anvilWithRedis");
    return { env, redis };
  };
}

/**
 * Starts the environment (no traces, rules and searches reloaded every 500 ms), the API and a
 * Redis client before the calling `describe`'s tests, and stops them after (registers `beforeAll`,
 * 180 s, and `afterAll`).
 * @returns a getter of the running parts; it throws before they are started.
 */
export function anvilWithApi(): () => AnvilWithApi {
  const parts = anvilParts(true);
  return () => {
    const { env, redis, api } = parts("anvilWithApi");
    if (api === undefined) throw new Error("anvilWithApi: not started");
    return { env, redis, url: api.url };
  };
}

/**
 * Creates, through the environment's rule store (account `acc-e2e`), an absence rule on the
 * environment's token: no Transfer to a fresh address for 3 blocks, posted to `env.hook(hook)`;
 * waits (10 s) until the match stage has loaded it.
 * @returns the stored rule and the watched address.
 * @throws when the match stage does not load the rule within 10 s.
 */
export async function absenceRuleOn(env: AnvilEnv, hook: string): Promise<{ rule: Rule; to: string }> {
  const to = env.newAddress();
  const input = absenceTransferRule({ chain: env.config.chain, token: await env.token.getAddress(), url: env.hook(hook), to, blocks: 3 });
  const rule = await env.rules.create("acc-e2e", input);
  await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
  return { rule, to };
}
