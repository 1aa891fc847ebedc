/**
 * Health routes, public (no bearer token):
 * - `GET /healthz`: liveness, always 200 `{"status":"ok"}` while the process serves HTTP.
 * - `GET /readyz`: readiness, 200 `{"status":"ready","elasticsearch":"<cluster status>"}` when
 *   Elasticsearch answers `_cluster/health` within min(requestTimeoutMs, 2000) ms, else 503
 *   `CS_BACKEND_UNAVAILABLE`.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "../errors.js";
import { elasticsearchReady } from "../plugins/elasticsearch.js";

/** Longest wait of a readiness check, in milliseconds. */
export const READY_TIMEOUT_MS = 2000;

/** Registers `/healthz` and `/readyz` (needs `app.es`). */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get("/healthz", { config: { public: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { config: { public: true } }, async () => {
    const r = await elasticsearchReady(app.es, Math.min(app.esRequestTimeoutMs, READY_TIMEOUT_MS));
    if (!r.ready) throw apiError("CS_BACKEND_UNAVAILABLE", `Elasticsearch does not answer (${r.reason})`);
    return { status: "ready", elasticsearch: r.status };
  });
};
