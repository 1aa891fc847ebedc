import { Counter, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type MetricsServer, memoPerRegistry, readiness, startMetricsServer } from "../../../lib/metrics.js";

describe("memoPerRegistry", () => {
  const familiesOf = memoPerRegistry(
    (registry: Registry) => new Counter({ name: "chainsift_test_total", help: "h", registers: [registry] }),
  );

  it("creates a registry's families once (prom-client throws on a second registration)", () => {
    const a = new Registry();
    expect(familiesOf(a)).toBe(familiesOf(a));
    const b = new Registry();
    expect(familiesOf(b)).not.toBe(familiesOf(a));
    expect(() => new Counter({ name: "chainsift_test_total", help: "h", registers: [a] })).toThrow(/already been registered/);
  });
});

describe("readiness", () => {
  it("is ready only with at least one check and every check ready", () => {
    expect(readiness([])).toEqual({ ready: false, checks: {} });
    expect(readiness([{ name: "decode", ready: () => true }])).toEqual({ ready: true, checks: { decode: true } });
    const both = readiness([
      { name: "decode", ready: () => true },
      { name: "index", ready: () => false },
    ]);
    expect(both).toEqual({ ready: false, checks: { decode: true, index: false } });
  });
});

describe("startMetricsServer", () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("serves /metrics, /healthz and /readyz on an ephemeral port", async () => {
    const registry = new Registry();
    new Counter({ name: "chainsift_test_total", help: "h", registers: [registry] }).inc(3);
    server = await startMetricsServer({ registry, host: "127.0.0.1", port: 0 });
    expect(server.port).toBeGreaterThan(0);
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get("content-type")).toBe(registry.contentType);
    expect(await metrics.text()).toContain("chainsift_test_total 3");
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: "ok" });
    const notYet = await fetch(`${server.url}/readyz`);
    expect([notYet.status, await notYet.json()]).toEqual([503, { status: "not ready", checks: {} }]);
    let ready = false;
    server.addReadiness({ name: "decode", ready: () => ready });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    ready = true;
    const now = await fetch(`${server.url}/readyz`);
    expect([now.status, await now.json()]).toEqual([200, { status: "ready", checks: { decode: true } }]);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("fails to start on a port that is taken", async () => {
    const registry = new Registry();
    server = await startMetricsServer({ registry, host: "127.0.0.1", port: 0 });
    await expect(startMetricsServer({ registry, host: "127.0.0.1", port: server.port })).rejects.toMatchObject({ code: "EADDRINUSE" });
  });
});
