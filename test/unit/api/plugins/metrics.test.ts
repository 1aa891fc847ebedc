import Fastify from "fastify";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createApiMetrics, metricsPlugin, metricsRoutes } from "../../../../api/plugins/metrics.js";

describe("metrics", () => {
  it("reuses metrics already registered in a shared registry", () => {
    const registry = new Registry();
    const a = createApiMetrics(registry);
    const b = createApiMetrics(registry);
    expect(b.httpDuration).toBe(a.httpDuration);
    expect(b.searchHits).toBe(a.searchHits);
  });

  it("times requests by route pattern (unknown routes: unmatched) and serves /metrics", async () => {
    const app = Fastify({ logger: false });
    await app.register(metricsPlugin, {});
    await app.register(metricsRoutes);
    app.get("/things/:id", async () => ({ ok: true }));
    try {
      await app.inject({ method: "GET", url: "/things/42" });
      await app.inject({ method: "GET", url: "/nowhere/1" });
      app.metrics.searchHits.inc({ chain: "ethereum/ethereum/mainnet", kinds: "tx" }, 3);
      const res = await app.inject({ method: "GET", url: "/metrics" });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      expect(res.body).toContain('http_request_duration_seconds_count{route="/things/:id",method="GET",status_code="200"} 1');
      expect(res.body).toContain('http_request_duration_seconds_count{route="unmatched",method="GET",status_code="404"} 1');
      expect(res.body).toContain('chainsift_search_hits_total{chain="ethereum/ethereum/mainnet",kinds="tx"} 3');
      expect(res.body).toContain("process_cpu_user_seconds_total"); // default metrics
    } finally {
      await app.close();
    }
  });
});
