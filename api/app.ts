/**
 * The API as a Fastify application: {@link buildApi} wires the plugins (metrics, errors,
 * elasticsearch, redis, accounts, rate limit, auth, OpenAPI) and the routes (health, chains, search,
 * Elasticsearch-compatible, admin, ABIs, rules, backtests) from a {@link Config}, for every served
 * chain (api/served-chains.ts). Nothing here reads the environment; api/server.ts listens.
 *
 * Request path: metrics timing → authentication + rate limit (onRequest; public routes skip both)
 * → chain/kinds check → schema validation → allowlist validation → Elasticsearch → one error
 * handler for every failure.
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import { TypeBoxValidatorCompiler } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Registry } from "prom-client";
import { createRedecodeStatusStore } from "../lib/abis/redecode-status.js";
import { createAbiStore } from "../lib/abis/store.js";
import type { AccountStore } from "../lib/accounts/store.js";
import type { DecodeMethodOptions } from "../lib/chain/methods.js";
import { methodDecodingOf } from "../lib/chain/tokens.js";
import type { ChainId, Config } from "../lib/config/index.js";
import { DEFAULT_WATCHLISTS_CONFIG } from "../lib/config/watchlists.js";
import type { RedisClient } from "../lib/redis.js";
import { createWatchlistStore } from "../lib/watchlists/store.js";
import pkg from "../package.json" with { type: "json" };
import { stateRpcClients } from "./backtest/state-rpc.js";
import { accountsPlugin } from "./plugins/accounts.js";
import { authPlugin } from "./plugins/auth.js";
import { consolePlugin } from "./plugins/console.js";
import { contextsPlugin } from "./plugins/contexts.js";
import { elasticsearchPlugin } from "./plugins/elasticsearch.js";
import { clientErrorHandler, errorsPlugin, frameworkErrorHandler } from "./plugins/errors.js";
import { metricsPlugin, metricsRoutes } from "./plugins/metrics.js";
import { requireObjectBody } from "./plugins/object-body.js";
import { openapiPlugin } from "./plugins/openapi.js";
import { rateLimitPlugin } from "./plugins/rate-limit.js";
import { redisPlugin } from "./plugins/redis.js";
import { resultCachePlugin } from "./plugins/result-cache.js";
import { rulesBackendsPlugin } from "./plugins/rules.js";
import { abisRoutes } from "./routes/abis/index.js";
import { adminRoutes } from "./routes/admin/index.js";
import { chainsRoutes } from "./routes/chains.js";
import { esRoutes } from "./routes/es/index.js";
import { healthRoutes } from "./routes/health.js";
import { rulesRoutes } from "./routes/rules/index.js";
import { ruleTestRoutes } from "./routes/rules/test.js";
import { searchRoutes } from "./routes/search/index.js";
import { chainLabel } from "./routes/search/target.js";
import { searchesRoutes } from "./routes/searches/index.js";
import { searchTestRoutes } from "./routes/searches/test.js";
import { watchlistsRoutes } from "./routes/watchlists/index.js";
import type { SearchTarget } from "./search/search.js";
import { resolveServedChains, type ServedChain, servedChain } from "./served-chains.js";

/** The JSON media type of the official Elasticsearch clients, parsed as `application/json`. */
export const ES_JSON_TYPE = "application/vnd.elasticsearch+json";

/** Largest request body, in bytes (1 MiB; a query with 256 clauses of 1024 values fits). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** The timeout fields of `config.api` that {@link serverTimeouts} reads (all in ms). */
export type ApiTimeouts = Pick<Config["api"], "headersTimeoutMs" | "requestTimeoutMs" | "keepAliveTimeoutMs" | "connectionTimeoutMs">;

/**
 * The Fastify server options that bound how long a client may hold a connection: idle socket
 * (`connectionTimeout`), idle keep-alive (`keepAliveTimeout`), complete headers (`http.headersTimeout`)
 * and complete request (`requestTimeout`). Node checks the last two on a timer,
 * `http.connectionsCheckingInterval` (Node's default 30000 ms would let a slow request live up to
 * 30 s past its timeout), set here to a quarter of the smaller timeout, between 10 and 1000 ms.
 * @param t - the `config.api` timeouts (see lib/config/index.ts for the environment variables and defaults).
 */
export function serverTimeouts(t: ApiTimeouts): Pick<FastifyServerOptions, "connectionTimeout" | "keepAliveTimeout" | "requestTimeout"> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number };
} {
  const checkEveryMs = Math.min(1000, Math.max(10, Math.floor(Math.min(t.headersTimeoutMs, t.requestTimeoutMs) / 4)));
  return {
    connectionTimeout: t.connectionTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    http: { headersTimeout: t.headersTimeoutMs, requestTimeout: t.requestTimeoutMs, connectionsCheckingInterval: checkEveryMs },
  };
}

/** Dependencies of {@link buildApi}. */
export interface ApiDeps {
  /**
   * Uses `chain`, `api.*` (tokens, adminToken, maxSize, rateLimitMax, rateLimitWindowMs, and the
   * connection timeouts headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, connectionTimeoutMs),
   * `elasticsearch.*`, `backtest.*` (rule tests), `redisUrl`, `redisKeyPrefix` and `logLevel`.
   */
  config: Config;
  /**
   * The chains this deployment serves; the path segments of each request (or a rule's chain fields)
   * pick one, and its index names are resolved per request. Plain chain ids other than
   * `config.chain` get no chain id (null in `GET /chains/`) and the default method decoding; give
   * {@link ServedChain}s to say more. Default: every chain of the chains file (`config.chainsFile`,
   * each with its `chainId` and `tokenDecimals`), else `[config.chain]` (api/served-chains.ts `servedChainsOf`).
   */
  chains?: Array<ChainId | ServedChain>;
  /**
   * An Elasticsearch client to use (and leave open on close). Default: a client created from
   * `config.elasticsearch.url`, closed when the app closes.
   */
  es?: Client;
  /**
   * The account and token store to authenticate against (and leave open). Default: a store over
   * the app's Redis client (`app.redis`, keys under `config.redisKeyPrefix`).
   */
  accounts?: AccountStore;
  /**
   * The node-redis client (lib/redis.ts) for the rate-limit counters, the readiness check, the
   * default account store and the rules routes' delivery log, e.g. the process's shared client
   * (lib/common.ts); left open on close. Default: a client connected to `config.redisUrl` with
   * `connectRedisClient`, closed when the app closes. The rule store always opens its own
   * connection (its WATCH/MULTI transactions are per connection).
   */
  redis?: RedisClient;
  /**
   * A prom-client registry to register the API metrics in (e.g. a process-wide one). Default: a
   * registry of this app, with the prom-client default metrics.
   */
  metricsRegistry?: Registry;
  /**
   * Chain id and token decimals for the Method/Call arguments' `scaled` values of rule backtests
   * (`POST /alerting/rules/test/`) of `config.chain`, the same as its match stage's (`npm start`
   * passes its node's chain id and token list to both). Default: lib/chain/tokens.ts
   * `methodDecodingOf(config)`, the configured `chainId` and the bundled token list. Backtests of the
   * other served chains decode with their own chain id (api/served-chains.ts).
   */
  methodDecoding?: DecodeMethodOptions;
  /**
   * A pino-compatible logger instance to use, `false` for no logging, or `true`/absent for a pino
   * logger at `config.logLevel` writing JSON lines to stdout.
   */
  logger?: FastifyBaseLogger | boolean;
}

/**
 * Builds the API application (plugins registered, not listening). Use `app.inject()` in tests or
 * `app.listen()` / {@link startApi} to serve. Call `app.close()` to release the clients it created.
 *
 * Routing: trailing slashes are optional (`/…/search/` and `/…/search` are the same route).
 * Bodies: `application/json` only (others get 415); an empty body is accepted and means `{}`; a JSON
 * body that is not an object (`null`, an array, a scalar) is 400 `CS_BODY_INVALID` (search and admin
 * routes, api/plugins/object-body.ts).
 * Responses: serialized with `JSON.stringify` (route response schemas document, never reshape).
 * Slow clients: see {@link serverTimeouts}; an expired headers or request timeout is answered 408
 * `CS_REQUEST_TIMEOUT` and the connection closed (api/plugins/errors.ts `clientErrorHandler`).
 * @param deps - the configuration and the optional clients, stores and registry ({@link ApiDeps}).
 * @returns the app, plugins and routes registered, not listening.
 * @throws when a plugin fails to register, e.g. an invalid ES URL, or Redis unreachable (the
 *   app's Redis client, when not given, and the rule store's connection are opened at startup,
 *   failing fast).
 */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const served = resolveServedChains(config, deps.chains, deps.methodDecoding ?? methodDecodingOf(config));
  const chains: ChainId[] = served.map((c) => ({ technology: c.technology, blockchain: c.blockchain, network: c.network }));
  const options: FastifyServerOptions = {
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: BODY_LIMIT_BYTES,
    ...serverTimeouts(config.api),
    clientErrorHandler,
    // Bad percent-encoding in the path (/%ZZ) and over-long path parameters: our error body, not Fastify's.
    frameworkErrors: frameworkErrorHandler,
  };
  const app: FastifyInstance =
    typeof deps.logger === "object"
      ? (Fastify({ ...options, loggerInstance: deps.logger }) as unknown as FastifyInstance)
      : Fastify({ ...options, logger: deps.logger === false ? false : { level: config.logLevel } });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // An empty JSON body means "no body" ({}): the contract's "search with no body".
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser(["application/json", "text/plain"]);
  // The official Elasticsearch clients send JSON as application/vnd.elasticsearch+json; compatible-with=8.
  app.addContentTypeParser(["application/json", ES_JSON_TYPE], { parseAs: "string" }, (request, body, done) => {
    if ((body as string).trim() === "") done(null, undefined);
    else json(request, body as string, done);
  });

  try {
    await app.register(metricsPlugin, deps.metricsRegistry ? { registry: deps.metricsRegistry } : {});
    await app.register(errorsPlugin);
    await app.register(elasticsearchPlugin, {
      url: config.elasticsearch.url,
      requestTimeoutMs: config.elasticsearch.requestTimeoutMs,
      tracing: config.elasticsearch.tracing,
      ...(deps.es ? { client: deps.es } : {}),
    });
    await app.register(redisPlugin, { url: config.redisUrl, ...(deps.redis ? { client: deps.redis } : {}) });
    await app.register(accountsPlugin, { config, ...(deps.accounts ? { store: deps.accounts } : { redis: app.redis }) });
    await app.register(rateLimitPlugin, {
      max: config.api.rateLimitMax,
      timeWindowMs: config.api.rateLimitWindowMs,
      redis: app.redis,
      nameSpace: `${config.redisKeyPrefix}ratelimit:`,
    });
    await app.register(authPlugin, {
      tokens: config.api.tokens,
      adminToken: config.api.adminToken,
      store: app.accounts,
      limit: (request, reply) => app.enforceRateLimit(request, reply),
    });
    await app.register(contextsPlugin, { config });
    await app.register(resultCachePlugin, { config });
    await app.register(openapiPlugin, { version: pkg.version, chains });
    const watchlistLimits = DEFAULT_WATCHLISTS_CONFIG;
    const watchlists = createWatchlistStore({ redis: app.redis, keyPrefix: config.redisKeyPrefix, limits: watchlistLimits });
    /** The caller's watchlist members, for `terms` by watchlist in a search (api/search/watchlist-terms.ts). */
    const watchlistMembers = (account: string, id: string) => watchlists.members(account, id);
    /** Search metrics of every search route (contract and Elasticsearch-compatible). */
    const onHits = (target: SearchTarget, hits: number, path: "bytes" | "parsed" | "stream"): void => {
      app.metrics.searchHits.inc({ chain: target.chain ? chainLabel(target.chain) : "unknown", kinds: target.kinds.join(",") }, hits);
      app.metrics.searchAnswers.inc({ path });
    };
    await app.register(healthRoutes);
    await app.register(chainsRoutes({ chains: served, keyPrefix: config.redisKeyPrefix, kafka: config.kafka }));
    await app.register(metricsRoutes);
    await app.register(consolePlugin);
    // Search and admin bodies must be JSON objects (null, arrays, scalars: 400 CS_BODY_INVALID);
    // the rules routes, registered outside this scope, validate theirs themselves (CS_RULE_INVALID).
    await app.register(async (scope) => {
      scope.addHook("preValidation", requireObjectBody);
      await scope.register(searchRoutes, {
        config,
        chains,
        onHits,
        watchlistMembers,
      });
      await scope.register(adminRoutes);
    });
    // Elasticsearch-compatible routes: their own scope (product header, error fields, NDJSON parser).
    await app.register(esRoutes, {
      config,
      chains,
      version: pkg.version,
      onHits,
      watchlistMembers,
    });
    const abis = createAbiStore({ redis: app.redis, keyPrefix: config.redisKeyPrefix, maxPerAccount: config.abis.maxPerAccount });
    await app.register(
      abisRoutes({
        store: abis,
        redecodeStatus: createRedecodeStatusStore({ redis: app.redis, keyPrefix: config.redisKeyPrefix }),
      }),
    );
    await app.register(rulesBackendsPlugin, { config, redis: app.redis });
    const { rules, deliveries, deliveryStatus, traceSource, searches, finalitySource } = app.rulesBackends;
    await app.register(rulesRoutes({ rules, deliveries, deliveryStatus, traceSource, chains, watchlists, abis }));
    await app.register(searchesRoutes({ searches, chains, finalitySource, watchlists }));
    await app.register(watchlistsRoutes({ store: watchlists, limits: watchlistLimits }));
    const stateRpc = stateRpcClients(config);
    app.addHook("onClose", async () => stateRpc.close());
    const backtests = {
      config,
      chains,
      decode: (chain: ChainId) => servedChain(served, chain)?.decode,
      rpc: stateRpc.of,
      watchlists,
      abis,
    };
    await app.register(ruleTestRoutes(backtests));
    await app.register(searchTestRoutes(backtests));
  } catch (err) {
    // Release what the plugins registered so far opened (ES client, Redis connections).
    await app.close().catch(() => {});
    throw err;
  }
  return app;
}
