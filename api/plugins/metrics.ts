/**
 * Prometheus metrics with `prom-client`, served at `GET /metrics` by {@link metricsRoutes} (text
 * exposition format, no token, not rate limited). Operators should not expose `/metrics` publicly (it reveals traffic patterns):
 * scrape it from inside the network, or block the path at the reverse proxy.
 *
 * Metrics:
 * - the prom-client default metrics (process CPU, memory, event loop lag, GC, …), when the plugin
 *   creates its own registry;
 * - `http_request_duration_seconds` (histogram), labels `route` (the route pattern, e.g.
 *   `/:technology/:blockchain/:network/es/:kinds/search/`, or `unmatched` for unknown routes, so
 *   the label set stays bounded), `method`, `status_code`;
 * - `chainsift_search_hits_total` (counter), labels `chain` (`technology/blockchain/network`) and
 *   `kinds` (as requested, e.g. `block,tx`): hits returned by searches.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";
import { globalPlugin } from "./plugin.js";

/** The API's metrics. */
export interface ApiMetrics {
  /** The registry `/metrics` renders. */
  registry: Registry;
  /** `http_request_duration_seconds`. */
  httpDuration: Histogram<"route" | "method" | "status_code">;
  /** `chainsift_search_hits_total`. */
  searchHits: Counter<"chain" | "kinds">;
  /**
   * `chainsift_search_answers_total`: successful search answers by how they were written,
   * `path` = `bytes` (from ES's response bytes, api/search/raw.ts), `parsed` (parse and shape:
   * aggregations or an unexpected response layout) or `stream` (size -1).
   */
  searchAnswers: Counter<"path">;
}

declare module "fastify" {
  interface FastifyInstance {
    /** Prometheus metrics of the API (see api/plugins/metrics.ts). */
    metrics: ApiMetrics;
  }
}

/** Options of {@link metricsPlugin}. */
export interface MetricsPluginOptions {
  /**
   * Registry to register the metrics in (metrics already registered under the same names are
   * reused, so several apps can share one). Default: a new registry with the default metrics.
   */
  registry?: Registry;
}

/** Buckets of `http_request_duration_seconds`, in seconds. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function metric<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

/** Creates (or finds) the API's metrics in a registry. */
export function createApiMetrics(registry: Registry): ApiMetrics {
  const httpDuration = metric(
    registry,
    "http_request_duration_seconds",
    () =>
      new Histogram({
        name: "http_request_duration_seconds",
        help: "Duration of HTTP requests, by route pattern, method and status code.",
        labelNames: ["route", "method", "status_code"] as const,
        buckets: DURATION_BUCKETS,
        registers: [registry],
      }),
  );
  const searchHits = metric(
    registry,
    "chainsift_search_hits_total",
    () =>
      new Counter({
        name: "chainsift_search_hits_total",
        help: "Hits returned by searches, by chain and requested kinds.",
        labelNames: ["chain", "kinds"] as const,
        registers: [registry],
      }),
  );
  const searchAnswers = metric(
    registry,
    "chainsift_search_answers_total",
    () =>
      new Counter({
        name: "chainsift_search_answers_total",
        help: "Successful search answers, by how they were written: bytes (copied from ES's response), parsed, or stream (size -1).",
        labelNames: ["path"] as const,
        registers: [registry],
      }),
  );
  return { registry, httpDuration, searchHits, searchAnswers };
}

/** Registers the metrics (`app.metrics`) and the timing hook (whole app); {@link metricsRoutes} serves them. */
export const metricsPlugin: FastifyPluginAsync<MetricsPluginOptions> = globalPlugin(async (app, opts) => {
  let registry = opts.registry;
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  const metrics = createApiMetrics(registry);
  app.decorate("metrics", metrics);

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    metrics.httpDuration.observe({ route, method: request.method, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
}, "chainsift-metrics");

/** Registers `GET /metrics` (public), rendering `app.metrics.registry`. */
export const metricsRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    "/metrics",
    {
      config: { public: true },
      schema: {
        operationId: "metrics",
        summary: "Prometheus metrics (text exposition format); do not expose publicly",
        tags: ["operations"],
        security: [],
        // `content` names the media type (without it the document says application/json).
        response: {
          200: {
            description: "Prometheus text exposition format (version 0.0.4)",
            content: { "text/plain": { schema: { type: "string" } } },
          },
        },
      },
    },
    async (_request, reply) => {
      const body = await app.metrics.registry.metrics();
      return reply.type(app.metrics.registry.contentType).send(body);
    },
  );
};
