/**
 * Starts the search API on config.api.host:config.api.port.
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { Common } from "../lib/common.js";
import { type ApiDeps, buildApi } from "./app.js";

/** A listening API. */
export interface RunningApi {
  /** The Fastify app; `await app.close()` stops it (and closes the ES and Redis clients it created). */
  app: FastifyInstance;
  /** Base URL, e.g. `http://127.0.0.1:8080` (the actual port when config.api.port is 0). */
  url: string;
}

/**
 * What {@link startApi} takes from the process context (lib/common.ts): the configuration, and when
 * present the root logger, the metrics registry, the shared Redis client and the shutdown path.
 * A whole {@link Common} fits; tests pass `{config}`.
 */
export type ApiCommon = Pick<Common, "config"> & Partial<Pick<Common, "logger" | "metrics" | "redis" | "shutdown">>;

/** Optional dependencies of {@link startApi}: those of {@link ApiDeps} except the configuration; each wins over the context's. */
export type StartApiDeps = Omit<ApiDeps, "config">;

/**
 * Builds the API ({@link buildApi}) and listens on `config.api.host` / `config.api.port`
 * (port 0 picks a free port). The app uses the context's logger, metrics registry and Redis client
 * (`common.redis()`, left open) unless `deps` names others, and registers `app.close()` as a stop
 * of `common.shutdown` when there is one.
 * @param common - the process context, or at least `{config}` ({@link ApiCommon}).
 * @param deps - optional clients, stores, chains and logger ({@link StartApiDeps}).
 * @returns the app and its base URL.
 * @throws when Redis is unreachable at startup (see {@link buildApi}), or when the address is in
 *   use or cannot be bound (the app is closed first).
 */
export async function startApi(common: ApiCommon, deps: StartApiDeps = {}): Promise<RunningApi> {
  const { config } = common;
  const all: ApiDeps = { ...deps, config };
  if (all.logger === undefined && common.logger) all.logger = common.logger;
  if (!all.metricsRegistry && common.metrics) all.metricsRegistry = common.metrics;
  if (!all.redis && common.redis) all.redis = await common.redis();
  const app = await buildApi(all);
  try {
    await app.listen({ host: config.api.host, port: config.api.port });
  } catch (err) {
    await app.close();
    throw err;
  }
  common.shutdown?.add("api", () => app.close());
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.api.port;
  const host = config.api.host.includes(":") ? `[${config.api.host}]` : config.api.host;
  return { app, url: `http://${host}:${port}` };
}
