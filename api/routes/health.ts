/**
 * Health routes, public (no token, not rate limited):
 * - `GET /healthz`: liveness, always 200 `{"status":"ok"}` while the process serves HTTP.
 * - `GET /readyz`: readiness, 200 `{"status":"ready","elasticsearch":"<cluster status>","redis":"ok"}`
 *   when Elasticsearch answers `_cluster/health` and Redis answers PING, each within
 *   min(requestTimeoutMs, 2000) ms; else 503 `CS_BACKEND_UNAVAILABLE`. Redis is checked only when
 *   the app has a Redis client (`app.redis`).
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "../errors.js";
import { elasticsearchReady } from "../plugins/elasticsearch.js";
import { redisReady } from "../plugins/redis.js";
import { ErrorBodySchema } from "./search/schema.js";

/** Longest wait of a readiness check, in milliseconds. */
export const READY_TIMEOUT_MS = 2000;

/** Registers `/healthz` and `/readyz` (needs `app.es`; uses `app.redis` when present). */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  const common = { tags: ["operations"], security: [] };
  app.get("/healthz", { config: { public: true }, schema: { ...common, summary: "Liveness" } }, async () => ({ status: "ok" }));
  app.get(
    "/readyz",
    {
      config: { public: true },
      schema: { ...common, summary: "Readiness (Elasticsearch and Redis answer)", response: { 503: ErrorBodySchema } },
    },
    async () => {
      const timeoutMs = Math.min(app.esRequestTimeoutMs, READY_TIMEOUT_MS);
      const [es, redis] = await Promise.all([
        elasticsearchReady(app.es, timeoutMs),
        app.hasDecorator("redis") ? redisReady(app.redis, timeoutMs) : Promise.resolve(undefined),
      ]);
      if (!es.ready) throw apiError("CS_BACKEND_UNAVAILABLE", `Elasticsearch does not answer (${es.reason})`);
      if (redis && !redis.ready) throw apiError("CS_BACKEND_UNAVAILABLE", `Redis does not answer (${redis.reason})`);
      return redis ? { status: "ready", elasticsearch: es.status, redis: "ok" } : { status: "ready", elasticsearch: es.status };
    },
  );
};
