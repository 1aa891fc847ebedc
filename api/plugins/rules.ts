/**
 * The alerting-rules backends of the API as a plugin: opens the rule store and the delivery log
 * ({@link connectRulesBackends}) when registered, decorates the app with `rulesBackends` for the
 * rules routes (api/routes/rules/index.ts), and closes them in an `onClose` hook, so `app.close()`
 * releases their Redis connections like every other plugin's.
 *
 * ```ts
 * await app.register(rulesBackendsPlugin, { config, redis: app.redis });
 * const { rules, deliveries, deliveryStatus } = app.rulesBackends;
 * await app.register(rulesRoutes({ rules, deliveries, deliveryStatus, chains }));
 * ```
 * @module
 */

import type { FastifyPluginAsync } from "fastify";
import { createDeliveryLog, type DeliveryLog } from "../../lib/alerting/deliveries.js";
import { actionDeliveryStatus } from "../../lib/alerting/delivery-status.js";
import { finalizedKey, readFinalized } from "../../lib/chain/finality.js";
import { ingestKeyPrefix } from "../../lib/chain/state.js";
import type { ChainId, Config } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import { type ConnectedRedis, type RedisClient, sharedOrConnect } from "../../lib/redis.js";
import { connectRuleStore, type RuleStore } from "../../lib/rules/store.js";
import { searchKeyPrefix } from "../../lib/searches/model.js";
import type { RulesRoutesDeps } from "../routes/rules/index.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The rule store, delivery log and delivery status of the rules routes; see api/plugins/rules.ts. */
    rulesBackends: RulesBackends;
  }
}

/** What {@link connectRulesBackends} reads of the configuration. */
export type RulesBackendsConfig = Pick<Config, "redisUrl" | "redisKeyPrefix"> & { rules?: Partial<Config["rules"]> };

/** The rule store and delivery log of the rules routes (`rulesRoutes`), with the Redis connections they own. */
export interface RulesBackends {
  rules: RuleStore;
  /** The saved searches' store: a rule store under `searchKeyPrefix` (lib/searches/model.ts), on a connection of its own. */
  searches: RuleStore;
  /** Whether ingest published a finalized block for a chain (lib/chain/finality.ts): `finalized`, `none` (ingest ran, no tag), or null (no ingest ran). */
  finalitySource: (chain: ChainId) => Promise<"finalized" | "none" | null>;
  deliveries: DeliveryLog;
  /** Delivery status of a rule's actions, read from the notify stage's queue on the log's connection. */
  deliveryStatus: NonNullable<RulesRoutesDeps["deliveryStatus"]>;
  /** The trace source ingest recorded for a chain (lib/chain/state.ts `ingestKeyPrefix` + `traces`). */
  traceSource: NonNullable<RulesRoutesDeps["traceSource"]>;
  /** Closes the Redis connections opened here (idempotent); a client passed in stays open. */
  close(): Promise<void>;
}

/** Options of {@link connectRulesBackends}. */
export interface ConnectRulesBackendsOptions {
  /** Receives Redis connection errors after the first connection (as `warn`). */
  logger?: Logger;
  /**
   * A connected client for the delivery log and the queue reads (e.g. the API's shared `app.redis`),
   * left open by `close`. Default: a connection of its own (`connectRedisClient`).
   */
  redis?: RedisClient;
}

/**
 * Connects what the rules routes (`rulesRoutes`) need from a config: a rule store on its own Redis connection
 * (`connectRuleStore`, limited to `config.rules.maxPerAccount` rules per account, default 1000) and a
 * delivery log on `options.redis` (or a second connection), both under `config.redisKeyPrefix`.
 * Both clients fail commands at once while disconnected (503, not a hang) and reconnect with backoff
 * (lib/redis.ts).
 * @param config - `redisUrl`, `redisKeyPrefix` and optionally `rules.maxPerAccount`.
 * @param options - see {@link ConnectRulesBackendsOptions}.
 * @returns the store, the log, the delivery status reader and `close`.
 * @throws the client's connection error when Redis cannot be reached (fail fast at startup).
 */
export async function connectRulesBackends(config: RulesBackendsConfig, options: ConnectRulesBackendsOptions = {}): Promise<RulesBackends> {
  const ruleConn = await connectRuleStore(config, {
    ...(options.logger ? { logger: options.logger } : {}),
    ...(config.rules?.maxPerAccount !== undefined ? { maxRulesPerAccount: config.rules.maxPerAccount } : {}),
  });
  let searchConn: Awaited<ReturnType<typeof connectRuleStore>>;
  try {
    searchConn = await connectRuleStore(
      { ...config, redisKeyPrefix: searchKeyPrefix(config.redisKeyPrefix) },
      {
        ...(options.logger ? { logger: options.logger } : {}),
        ...(config.rules?.maxPerAccount !== undefined ? { maxRulesPerAccount: config.rules.maxPerAccount } : {}),
      },
    );
  } catch (err) {
    await ruleConn.close();
    throw err;
  }
  let log: ConnectedRedis;
  try {
    log = await sharedOrConnect(options.redis, config.redisUrl, {
      label: "rules: delivery log",
      ...(options.logger ? { logger: options.logger } : {}),
    });
  } catch (err) {
    await ruleConn.close();
    await searchConn.close();
    throw err;
  }
  const { client } = log;
  let closing: Promise<void> | undefined;
  return {
    rules: ruleConn.store,
    searches: searchConn.store,
    async finalitySource(chain) {
      if ((await readFinalized(client, finalizedKey(config.redisKeyPrefix, chain))) !== null) return "finalized";
      return (await client.get(`${ingestKeyPrefix(config.redisKeyPrefix, chain)}traces`)) === null ? null : "none";
    },
    deliveries: createDeliveryLog({ redis: client, keyPrefix: config.redisKeyPrefix }),
    deliveryStatus: (ruleId, actions) => actionDeliveryStatus(client, config.redisKeyPrefix, ruleId, actions),
    traceSource: (chain) => client.get(`${ingestKeyPrefix(config.redisKeyPrefix, chain)}traces`),
    close() {
      closing ??= Promise.all([ruleConn.close(), searchConn.close(), log.close()]).then(() => {});
      return closing;
    },
  };
}

/** Options of {@link rulesBackendsPlugin}. */
export interface RulesBackendsPluginOptions {
  /** `redisUrl`, `redisKeyPrefix` and optionally `rules.maxPerAccount`. */
  config: RulesBackendsConfig;
  /** A connected client for the delivery log (the app's `app.redis`), left open; default: a connection of its own. */
  redis?: RedisClient;
}

/**
 * Registers `app.rulesBackends` (non-encapsulated), opened with {@link connectRulesBackends} (the
 * app's logger; a failure to connect fails the registration), and closes them on `onClose`.
 */
export const rulesBackendsPlugin: FastifyPluginAsync<RulesBackendsPluginOptions> = globalPlugin(async (app, opts) => {
  const backends = await connectRulesBackends(opts.config, {
    logger: app.log as unknown as Logger,
    ...(opts.redis ? { redis: opts.redis } : {}),
  });
  app.decorate("rulesBackends", backends);
  app.addHook("onClose", async () => {
    await backends.close();
  });
}, "chainsift-rules-backends");
