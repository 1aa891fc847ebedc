/**
 * `GET …/es/_cluster/health` and `GET …/es/_cluster/health/<index>` of the Elasticsearch-compatible
 * API: what Grafana's Elasticsearch data source asks before anything else (its health check,
 * `GET <url>/_cluster/health?wait_for_status=yellow`, healthy unless 408 or `status: red`), and
 * monitoring scripts that call the clients' `cluster.health()`.
 *
 * Decision: the answer is Elasticsearch's own cluster health **of the chain's indices** (every
 * partition of the kinds the path's index expression names, all kinds without one; a kind
 * without an index yet counts as green, as Elasticsearch answers a wildcard matching nothing), in
 * Elasticsearch 8.19's shape, with chainsift's `cluster_name` (`chainsift <technology>/<blockchain>/<network>`,
 * as the cluster-info route). So `status` is green when Elasticsearch holds every shard of the
 * chain, yellow when a replica is missing, red when a primary is; Elasticsearch unreachable is 503
 * `CS_BACKEND_UNAVAILABLE`. Other indices of the cluster do not count. The `wait_for_*`, `timeout`,
 * `master_timeout`, `level`, `local` parameters are accepted and ignored: the answer is the health
 * now, never after a wait (a client that waits for a status gets it at once, or sees the worse one),
 * and only at the cluster level (no per-index or per-shard sections, which would name the partitions).
 * Source: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/cluster-health.html
 * @module
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ChainId, Config } from "../../../lib/config/index.js";
import { component } from "../../../lib/validation/component.js";
import { requestOptions } from "../../search/search.js";
import { chainLabel } from "../search/target.js";
import { resolveIndexTarget } from "./indices.js";
import { ES_ERROR_RESPONSES, EsChainParams, EsIndexParams } from "./schema.js";

/** Options of {@link healthRoutes}. */
export interface HealthRoutesOptions {
  /** Uses `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`. */
  config: Config;
  /** The chains served. */
  chains: readonly ChainId[];
}

const ignored = Type.Optional(Type.String({ description: "Accepted and ignored: the health now, at the cluster level" }));

/** Query-string parameters of the health routes (all accepted and ignored); any other is 400 CS_BAD_REQUEST. */
export const HEALTH_PARAMETERS = [
  "wait_for_status",
  "wait_for_nodes",
  "wait_for_events",
  "wait_for_active_shards",
  "wait_for_no_relocating_shards",
  "wait_for_no_initializing_shards",
  "timeout",
  "master_timeout",
  "level",
  "local",
  "expand_wildcards",
  "pretty",
  "human",
  "error_trace",
] as const;

const HealthQuery = Type.Object(Object.fromEntries(HEALTH_PARAMETERS.map((p) => [p, ignored])), { additionalProperties: false });

const HealthSchema = Type.Object(
  {
    cluster_name: Type.String({ description: "chainsift <technology>/<blockchain>/<network>" }),
    status: Type.String({ description: "green, yellow or red: Elasticsearch's health of the chain's indices" }),
    timed_out: Type.Boolean(),
  },
  {
    additionalProperties: true,
    description: "Elasticsearch's cluster health of the chain's indices (shard counts, nodes, tasks)",
    ...component("EsClusterHealth"),
  },
);

/** The cluster-health answer of an Elasticsearch answer: its fields, chainsift's cluster name, no per-index sections. */
export function healthAnswer(es: Record<string, unknown>, chain: ChainId): Record<string, unknown> {
  const { cluster_name: _name, indices: _indices, ...rest } = es;
  return { cluster_name: `chainsift ${chainLabel(chain)}`, ...rest };
}

/** Registers the health routes (see the module notes) in the Elasticsearch routes' scope. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { config, chains }) => {
  const prefix = config.elasticsearch.indexPrefix;
  const timeoutMs = config.elasticsearch.requestTimeoutMs;
  const base = "/:technology/:blockchain/:network/es";
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const t = resolveIndexTarget(
      chains,
      prefix,
      request.params as { technology: string; blockchain: string; network: string; index?: string },
    );
    // Each alias and its partitions (`<alias>-p000112`): a kind without an index matches nothing, which Elasticsearch answers green.
    const res = await app.es.cluster.health({ index: t.indices.map((i) => `${i}*`), expand_wildcards: "open" }, requestOptions(timeoutMs));
    return reply.type("application/json; charset=utf-8").send(healthAnswer(res as unknown as Record<string, unknown>, t.chain) as never);
  };
  for (const [url, params, operationId] of [
    [`${base}/_cluster/health`, EsChainParams, "esClusterHealth"],
    [`${base}/_cluster/health/:index`, EsIndexParams, "esClusterHealthIndex"],
  ] as const)
    app.route({
      method: "GET",
      url,
      schema: {
        summary: "Health of the chain's indices (Grafana's data source check, cluster.health())",
        description:
          "Elasticsearch's cluster health of the chain's indices (of the kinds the index names), with chainsift's cluster_name; wait_for_* and level are accepted and ignored.",
        operationId,
        tags: ["elasticsearch"],
        params,
        querystring: HealthQuery,
        response: { 200: HealthSchema, ...ES_ERROR_RESPONSES },
      },
      handler,
    });
};
