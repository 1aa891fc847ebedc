/**
 * The search API as a Fastify application: {@link buildApi} wires the plugins (errors,
 * elasticsearch, auth) and the routes (health, search) from a {@link Config}. Nothing here reads
 * the environment; api/server.ts listens.
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import { TypeBoxValidatorCompiler } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Config } from "../lib/config.js";
import { authPlugin } from "./plugins/auth.js";
import { elasticsearchPlugin } from "./plugins/elasticsearch.js";
import { errorsPlugin } from "./plugins/errors.js";
import { healthRoutes } from "./routes/health.js";
import { searchRoutes } from "./routes/search/index.js";

/** Largest request body, in bytes (1 MiB; a query with 256 clauses of 1024 values fits). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Dependencies of {@link buildApi}. */
export interface ApiDeps {
  /** Uses `chain`, `api.tokens`, `api.maxSize`, `elasticsearch.*` and `logLevel`. */
  config: Config;
  /**
   * An Elasticsearch client to use (and leave open on close). Default: a client created from
   * `config.elasticsearch.url`, closed when the app closes.
   */
  es?: Client;
  /**
   * A pino-compatible logger instance to use, `false` for no logging, or `true`/absent for a pino
   * logger at `config.logLevel` writing JSON lines to stdout.
   */
  logger?: FastifyBaseLogger | boolean;
}

/**
 * Builds the API application (plugins registered, not listening). Use `app.inject()` in tests or
 * `app.listen()` / {@link startApi} to serve. Call `app.close()` to release the ES client it created.
 *
 * Routing: trailing slashes are optional (`/…/search/` and `/…/search` are the same route).
 * Bodies: `application/json` only (others get 415); an empty body is accepted and means `{}`.
 * @throws when a plugin fails to register (e.g. an invalid ES URL).
 */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const options: FastifyServerOptions = {
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: BODY_LIMIT_BYTES,
  };
  const app: FastifyInstance =
    typeof deps.logger === "object"
      ? (Fastify({ ...options, loggerInstance: deps.logger }) as unknown as FastifyInstance)
      : Fastify({ ...options, logger: deps.logger === false ? false : { level: config.logLevel } });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);

  // An empty JSON body means "no body" ({}): the contract's "search with no body".
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if ((body as string).trim() === "") done(null, undefined);
    else json(request, body as string, done);
  });

  await app.register(errorsPlugin);
  await app.register(elasticsearchPlugin, {
    url: config.elasticsearch.url,
    requestTimeoutMs: config.elasticsearch.requestTimeoutMs,
    ...(deps.es ? { client: deps.es } : {}),
  });
  await app.register(authPlugin, { tokens: config.api.tokens });
  await app.register(healthRoutes);
  await app.register(searchRoutes, { config });
  return app;
}
