/**
 * Prometheus plumbing shared by the stages (prom-client, https://github.com/siimon/prom-client):
 *
 * - {@link memoPerRegistry}: a stage's metric families are created once per registry. `npm start`
 *   runs every stage in one process with one registry (lib/common.ts `metrics`), and prom-client
 *   throws when a name is registered twice in one registry, so each stage asks for its families
 *   through a memoised `metricsOf(registry)`;
 * - {@link startMetricsServer}: the small `node:http` server each pipeline process serves
 *   `/metrics`, `/healthz` and `/readyz` on (`CHAINSIFT_METRICS_HOST`, `CHAINSIFT_METRICS_PORT`;
 *   docs/metrics.md). node:http rather than Fastify: three fixed GET routes, no body, no auth, no
 *   plugins; it stays out of the API's hooks, rate limits and request metrics.
 * @module
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

/**
 * Wraps a factory of metric families so that it runs once per registry: later calls with the same
 * registry return the same families (a `WeakMap`, so a dropped registry is collected).
 * @param make - creates the families and registers them in `registry` (`registers: [registry]`).
 * @returns `metricsOf(registry)`.
 */
export function memoPerRegistry<T>(make: (registry: Registry) => T): (registry: Registry) => T {
  const made = new WeakMap<Registry, T>();
  return (registry) => {
    let families = made.get(registry);
    if (families === undefined) {
      families = make(registry);
      made.set(registry, families);
    }
    return families;
  };
}

/** One named readiness check of a process, e.g. `decode` → its consumer joined its group. */
export interface ReadinessCheck {
  /** Shown in the `/readyz` answer, e.g. `decode`, `ingest`. */
  name: string;
  /** True when this part is connected and working (consumer in its group, ingester following). */
  ready(): boolean;
}

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  /** The registry `/metrics` renders (the process's, lib/common.ts). */
  registry: Registry;
  /** Interface to bind, e.g. `127.0.0.1` (default) or `0.0.0.0` in a container. */
  host: string;
  /** TCP port; 0 picks a free one (read it from {@link MetricsServer.port}). */
  port: number;
  /** The checks `/readyz` runs; they can be added later with {@link MetricsServer.addReadiness}. */
  readiness?: ReadinessCheck[];
}

/** A running metrics server. */
export interface MetricsServer {
  /** The bound port (the real one when 0 was asked). */
  port: number;
  /** `http://<host>:<port>`. */
  url: string;
  /** Adds a readiness check (e.g. once a stage has started). */
  addReadiness(check: ReadinessCheck): void;
  /** Stops listening and closes idle connections. */
  close(): Promise<void>;
}

/**
 * The `/readyz` verdict: ready when there is at least one check and every check is ready.
 * @param checks - the process's checks.
 * @returns `ready` and each check's state by name.
 */
export function readiness(checks: readonly ReadinessCheck[]): { ready: boolean; checks: Record<string, boolean> } {
  const states = Object.fromEntries(checks.map((c) => [c.name, c.ready()]));
  return { ready: checks.length > 0 && Object.values(states).every(Boolean), checks: states };
}

/**
 * Serves, on `host:port`:
 * - `GET /metrics`: the registry in the Prometheus text exposition format (200);
 * - `GET /healthz`: 200 `{"status":"ok"}` while the process answers (liveness);
 * - `GET /readyz`: 200 `{"status":"ready","checks":{…}}` when every {@link ReadinessCheck} is
 *   ready, else 503 `{"status":"not ready","checks":{…}}` (also while no check is registered yet);
 * - anything else: 404.
 * @param options - see {@link MetricsServerOptions}.
 * @returns once listening.
 * @throws the listen error, e.g. `EADDRINUSE` when the port is taken.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry } = options;
  const checks = [...(options.readiness ?? [])];
  const json = (status: number, body: unknown) => ({ status, type: "application/json", body: JSON.stringify(body) });
  const answer = async (path: string) => {
    if (path === "/metrics") return { status: 200, type: registry.contentType, body: await registry.metrics() };
    if (path === "/healthz") return json(200, { status: "ok" });
    if (path === "/readyz") {
      const r = readiness(checks);
      return json(r.ready ? 200 : 503, { status: r.ready ? "ready" : "not ready", checks: r.checks });
    }
    return json(404, { status: "not found" });
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] as string;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    answer(path).then(
      (a) => res.writeHead(a.status, { "content-type": a.type }).end(req.method === "HEAD" ? undefined : a.body),
      (err: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(err as Error).message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    port,
    url: `http://${host}:${port}`,
    addReadiness: (check) => {
      checks.push(check);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** What {@link serveProcessMetrics} needs of the process context (lib/common.ts). */
export interface ProcessMetricsContext {
  config: { metrics: { host: string; port: number } };
  logger: { info(obj: object, msg: string): void };
  metrics: Registry;
  shutdown: { add(name: string, stop: () => unknown): void };
}

/**
 * Starts the process's metrics server on `config.metrics` (`CHAINSIFT_METRICS_HOST`,
 * `CHAINSIFT_METRICS_PORT`; -1: none), logs its URL (`metrics server listening`) and registers its
 * close with the shutdown path. Started before the stages, so `/healthz` answers (and `/readyz`
 * says 503) while they connect.
 * @param common - the process context.
 * @returns the server, or undefined when the port is -1.
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function serveProcessMetrics(common: ProcessMetricsContext): Promise<MetricsServer | undefined> {
  const { host, port } = common.config.metrics;
  if (port < 0) return undefined;
  const server = await startMetricsServer({ registry: common.metrics, host, port });
  common.shutdown.add("metrics server", () => server.close());
  common.logger.info({ url: server.url, port: server.port }, "metrics server listening (/metrics, /healthz, /readyz)");
  return server;
}
