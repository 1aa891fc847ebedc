/**
 * Several API instances over one Elasticsearch and one Redis, as a deployment behind a load
 * balancer runs them (the read-ahead tests: test/integration/api/scroll-ahead.test.ts,
 * pit-ahead.test.ts): the mainnet fixtures indexed once, `count` apps listening on 127.0.0.1, one
 * official JavaScript client per app; and the read-ahead counter of an app's `/metrics`.
 * @module
 */
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { buildApi } from "../../../api/app.js";
import type { Config } from "../../../lib/config/index.js";
import { uniformPartitioning } from "../../../lib/partitioning.js";
import { deleteRedisKeys, type IsolatedApi, indexFixtures, MAINNET } from "./fixtures.js";

/** What {@link startApiInstances} started. */
export interface ApiInstances {
  /** The Elasticsearch client the apps share. */
  es: Client;
  apps: FastifyInstance[];
  /** `clients[i]` talks to `apps[i]`'s `…/ethereum/ethereum/mainnet/es` routes with the isolation's token. */
  clients: Client[];
  /** Closes the clients and apps, deletes the fixture indices and the isolation's Redis keys. */
  close(): Promise<void>;
}

/**
 * Indexes the mainnet fixtures under `iso.indexPrefix` (partitions of one block) and starts `count`
 * apps with `config` (`iso.config` or a variant of it), each listening on a free port.
 */
export async function startApiInstances(base: Config, iso: IsolatedApi, config: Config, count: number): Promise<ApiInstances> {
  const es = new Client({ node: base.elasticsearch.url });
  await indexFixtures(es, MAINNET, iso.indexPrefix, uniformPartitioning(1));
  const apps: FastifyInstance[] = [];
  const clients: Client[] = [];
  for (let i = 0; i < count; i++) {
    const app = await buildApi({ config, es, logger: false });
    await app.listen({ host: "127.0.0.1", port: 0 });
    apps.push(app);
    const node = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
    clients.push(new Client({ node, auth: { bearer: iso.token } }));
  }
  return {
    es,
    apps,
    clients,
    async close() {
      for (const c of clients) await c.close();
      for (const a of apps) await a.close();
      await es.indices.delete({ index: `${iso.indexPrefix}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
      await deleteRedisKeys(base.redisUrl, `${iso.id}:`);
    },
  };
}

/** `chainsift_search_read_ahead_total` of `app`'s `/metrics`, by outcome (`hit`, `handoff`, `miss`: 0 when absent). */
export async function readAheadOutcomes(app: FastifyInstance): Promise<Record<string, number>> {
  const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
  const out: Record<string, number> = { hit: 0, handoff: 0, miss: 0 };
  for (const m of text.matchAll(/^chainsift_search_read_ahead_total\{outcome="(\w+)"\} (\d+)$/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}
