/**
 * Elasticsearch integration: decorates the app with `es` (an `@elastic/elasticsearch` 8.x
 * client) and `esRequestTimeoutMs`. A client passed in is used as is and left open; a client
 * created here (from `url`) is closed when the app closes.
 * @module
 */
import { Client, SniffingTransport } from "@elastic/elasticsearch";
import type { FastifyPluginAsync } from "fastify";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The Elasticsearch client (see api/plugins/elasticsearch.ts). */
    es: Client;
    /** Client-side timeout of every ES request, in milliseconds (config.elasticsearch.requestTimeoutMs). */
    esRequestTimeoutMs: number;
  }
}

/** Options of {@link elasticsearchPlugin}. */
export interface ElasticsearchPluginOptions {
  /** ES base URL, used only when `client` is absent (config.elasticsearch.url). */
  url: string;
  /** Per-request timeout in milliseconds (config.elasticsearch.requestTimeoutMs). */
  requestTimeoutMs: number;
  /** OpenTelemetry spans for the client's requests (config.elasticsearch.tracing). Default false. */
  tracing?: boolean;
  /** An existing client; when given, the plugin never closes it. */
  client?: Client;
}

/** Result of {@link elasticsearchReady}. */
export type Readiness = { ready: true; status: string } | { ready: false; reason: string };

/**
 * Whether ES answers `GET /_cluster/health` within `timeoutMs` (any cluster status counts as an answer).
 * Never throws.
 */
export async function elasticsearchReady(es: Client, timeoutMs: number): Promise<Readiness> {
  try {
    const health = await es.cluster.health({}, { requestTimeout: timeoutMs });
    return { ready: true, status: health.status };
  } catch (err) {
    return { ready: false, reason: err instanceof Error ? err.name : "unknown error" };
  }
}

/**
 * The client's default transport (`SniffingTransport`) with the OpenTelemetry instrumentation of
 * `@elastic/transport` turned off for every request (its per-request option `openTelemetry`).
 */
export class UntracedTransport extends SniffingTransport {}
type TransportRequest = SniffingTransport["request"];
UntracedTransport.prototype.request = function untracedRequest(
  this: SniffingTransport,
  params: Parameters<TransportRequest>[0],
  options: Parameters<TransportRequest>[1] = {},
) {
  return SniffingTransport.prototype.request.call(this, params, {
    ...options,
    openTelemetry: { ...options.openTelemetry, enabled: false },
  });
} as TransportRequest;

/** Registers the ES client (non-encapsulated: `app.es` is visible everywhere). */
export const elasticsearchPlugin: FastifyPluginAsync<ElasticsearchPluginOptions> = globalPlugin(async (app, opts) => {
  const owned = opts.client === undefined;
  const client =
    opts.client ??
    new Client({ node: opts.url, requestTimeout: opts.requestTimeoutMs, ...(opts.tracing ? {} : { Transport: UntracedTransport }) });
  app.decorate("es", client);
  app.decorate("esRequestTimeoutMs", opts.requestTimeoutMs);
  if (owned) {
    app.addHook("onClose", async () => {
      await client.close();
    });
  }
}, "chainsift-elasticsearch");
