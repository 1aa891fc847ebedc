/**
 * Starts the search API on config.api.host:config.api.port.
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { Config } from "../lib/config.js";
import { type ApiDeps, buildApi } from "./app.js";

/** A listening API. */
export interface RunningApi {
  /** The Fastify app; `await app.close()` stops it (and closes the ES and Redis clients it created). */
  app: FastifyInstance;
  /** Base URL, e.g. `http://127.0.0.1:8080` (the actual port when config.api.port is 0). */
  url: string;
}

/**
 * Builds the API ({@link buildApi}) and listens on `config.api.host` / `config.api.port`
 * (port 0 picks a free port). Two call shapes: `startApi(config, {es?, accounts?, …})` or
 * `startApi({config, es?, accounts?, …})`.
 * @param configOrDeps - the process configuration, or all {@link ApiDeps}.
 * @param deps - with a bare config: the optional dependencies (see {@link ApiDeps}).
 * @throws when Redis is unreachable at startup (see {@link buildApi}), or when the address is in
 *   use or cannot be bound (the app is closed first).
 */
export async function startApi(configOrDeps: Config | ApiDeps, deps: Omit<ApiDeps, "config"> = {}): Promise<RunningApi> {
  const all: ApiDeps = isDeps(configOrDeps) ? configOrDeps : { ...deps, config: configOrDeps };
  const { config } = all;
  const app = await buildApi(all);
  try {
    await app.listen({ host: config.api.host, port: config.api.port });
  } catch (err) {
    await app.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.api.port;
  const host = config.api.host.includes(":") ? `[${config.api.host}]` : config.api.host;
  return { app, url: `http://${host}:${port}` };
}

function isDeps(v: Config | ApiDeps): v is ApiDeps {
  return "config" in v && typeof (v as ApiDeps).config === "object" && !("chain" in v);
}
