/**
 * Health routes, public (no token, not rate limited):
 * - `GET /healthz`: liveness, always 200 `{"status":"ok"}` while the process serves HTTP.
 * - `GET /readyz`: readiness, 200 `{"status":"ready","elasticsearch":"<cluster status>","redis":"ok"}`
 *   when Elasticsearch answers `_cluster/health` and Redis answers PING, each within
 *   min(requestTimeoutMs, 2000) ms; else 503 `CS_BACKEND_UNAVAILABLE`. Redis is checked only when
 *   the app has a Redis client (`app.redis`).
 * Both answers are in the OpenAPI document ({@link LivenessSchema}, {@link ReadinessSchema}).
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { Type } from "typebox";
import { component } from "../../lib/validation/component.js";
import { apiError } from "../errors.js";
import { elasticsearchReady } from "../plugins/elasticsearch.js";
import { redisReady } from "../plugins/redis.js";
import { ErrorBodySchema } from "./search/schema.js";

/** Longest wait of a readiness check, in milliseconds. */
export const READY_TIMEOUT_MS = 2000;

/** Answer of `GET /healthz` (documentation only: the OpenAPI document's 200). */
export const LivenessSchema = Type.Object(
  { status: Type.Literal("ok") },
  { description: "The process serves HTTP (nothing else is checked)", examples: [{ status: "ok" }], ...component("Liveness") },
);

/** Answer of `GET /readyz` when ready (documentation only: the OpenAPI document's 200). */
export const ReadinessSchema = Type.Object(
  {
    status: Type.Literal("ready"),
    elasticsearch: Type.String({ description: "Cluster health as Elasticsearch reports it: green, yellow or red (any answer counts)" }),
    redis: Type.Optional(Type.Literal("ok", { description: "Redis answered PING (absent when the app has no Redis client)" })),
  },
  {
    description: "Elasticsearch answered _cluster/health and Redis PING in time",
    examples: [{ status: "ready", elasticsearch: "green", redis: "ok" }],
    ...component("Readiness"),
  },
);

/** Registers `/healthz` and `/readyz` (needs `app.es`; uses `app.redis` when present). */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  const common = { tags: ["operations"], security: [] };
  app.get(
    "/healthz",
    { config: { public: true }, schema: { ...common, operationId: "liveness", summary: "Liveness", response: { 200: LivenessSchema } } },
    async () => ({ status: "ok" }),
  );
  app.get(
    "/readyz",
    {
      config: { public: true },
      schema: {
        ...common,
        operationId: "readiness",
        summary: "Readiness (Elasticsearch and Redis answer)",
        response: { 200: ReadinessSchema, 503: ErrorBodySchema },
      },
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
