/**
 * The account and token store (lib/accounts, Redis): decorates the app with `accounts`. A store
 * passed in is used as is; else a store over the Redis client passed in (the app's shared one,
 * left open); with neither, the plugin connects its own with `connectAccountStore` (failing fast
 * when Redis is unreachable) and closes it when the app closes.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import type { AccountStore } from "../../lib/accounts/store.js";
import { connectAccountStore, createAccountStore } from "../../lib/accounts/store.js";
import type { Config } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import type { RedisClient } from "../../lib/redis.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Accounts and API tokens (see lib/accounts/store.ts). */
    accounts: AccountStore;
  }
}

/** Options of {@link accountsPlugin}. */
export interface AccountsPluginOptions {
  /** `redisKeyPrefix` (and `redisUrl` when neither `store` nor `redis` is given). */
  config: Pick<Config, "redisUrl" | "redisKeyPrefix">;
  /** An existing store; the plugin then opens and closes nothing. */
  store?: AccountStore;
  /** A connected client to build the store on (e.g. `app.redis`); left open. Ignored with `store`. */
  redis?: RedisClient;
}

/** Registers the account store (non-encapsulated: `app.accounts` is visible everywhere). */
export const accountsPlugin: FastifyPluginAsync<AccountsPluginOptions> = globalPlugin(async (app, opts) => {
  if (opts.store) {
    app.decorate("accounts", opts.store);
    return;
  }
  if (opts.redis) {
    app.decorate(
      "accounts",
      createAccountStore({ redis: opts.redis, keyPrefix: opts.config.redisKeyPrefix, logger: app.log as unknown as Logger }),
    );
    return;
  }
  const connected = await connectAccountStore(opts.config, { logger: app.log as unknown as Logger });
  app.decorate("accounts", connected.store);
  app.addHook("onClose", async () => {
    await connected.close();
  });
}, "chainsift-accounts");
