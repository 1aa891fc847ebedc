/**
 * The API the client suites (test/python, test/go, test/java run.sh, through
 * test/support/fixture-api.sh) talk to, without vitest: indexes the search
 * fixtures (test/integration/api/fixtures.ts) into the real Elasticsearch under a unique index
 * prefix, starts the API on 127.0.0.1 (a random port) with a unique Redis key prefix and a token of
 * its own, and writes `{url, token, records}` as JSON to the file named by its first argument once
 * it listens (the records let the Python tests compute what they expect). SIGTERM / SIGINT delete
 * the indices and Redis keys, close the API and exit 0.
 *
 * Usage: `node --import tsx test/python/serve.ts <info.json>`; Elasticsearch and Redis from the
 * usual configuration (lib/config.ts). Exits 1 when they are unreachable.
 */
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import { buildApi } from "../../api/app.js";
import { loadConfig } from "../../lib/config.js";
import { deleteRedisKeys, indexFixtures, isolatedApi, MAINNET, RECORDS, searchStackUp } from "../integration/api/fixtures.js";

const infoFile = process.argv[2];
if (!infoFile) {
  console.error("usage: serve.ts <info.json>");
  process.exit(2);
}
const base = loadConfig();
if (!(await searchStackUp(base))) process.exit(1);

const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "py");
const es = new Client({ node: base.elasticsearch.url });
await indexFixtures(es, MAINNET, PREFIX);
const app = await buildApi({ config, es, logger: false });
await app.listen({ host: "127.0.0.1", port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
writeFileSync(infoFile, JSON.stringify({ url, token: TOKEN, chainPath: "/ethereum/ethereum/mainnet/es", records: RECORDS }));

let closing = false;
async function close(): Promise<void> {
  if (closing) return;
  closing = true;
  await app.close().catch(() => {});
  await es.indices.delete({ index: `${PREFIX}*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
  await es.close().catch(() => {});
  await deleteRedisKeys(base.redisUrl, `${ID}:`);
  process.exit(0);
}
process.once("SIGTERM", () => void close());
process.once("SIGINT", () => void close());
