/**
 * The API the client suites (test/python, test/go, test/java run.sh, through
 * test/support/fixture-api.sh) talk to, without vitest: indexes the search
 * fixtures (test/integration/api/fixtures.ts) into the real Elasticsearch under a unique index
 * prefix, starts the API on 127.0.0.1 (a random port) with a unique Redis key prefix and a token of
 * its own, and writes `{url, token, records}` as JSON to the file named by its first argument once
 * it listens (the records let the Python tests compute what they expect), plus `webhooks`: a
 * `Webhook (POST)` and a `Webhook (GET)` request as the notify deliverer really sent them to a
 * local receiver (`{secret, method, target, headers, body}`, body as received), which
 * test_standard_webhooks.py verifies with the PyPI `standardwebhooks`.
 *
 * A second chain, `ethereum/ethereum/mainnet-fixtures` (test/support/mainnet-records.ts), serves the
 * real mainnet fixture blocks of `../shared/data/mainnet` in block-range partitions; the info file's
 * `fixtures` is `{chainPath, records}` of that chain (records by kind, as built by the pipeline's
 * transforms), or `{chainPath: null, skipped}` with the reason when the data is absent (the tests
 * that need it skip). SIGTERM / SIGINT delete the indices and Redis keys, close the API and exit 0.
 *
 * Usage: `node --import tsx test/python/serve.ts <info.json>`; Elasticsearch and Redis from the
 * usual configuration (lib/config/index.ts). Exits 1 when they are unreachable.
 */
import { writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import { buildApi } from "../../api/app.js";
import { loadConfig } from "../../lib/config/index.js";
import { uniformPartitioning } from "../../lib/partitioning.js";
import { createDeliverer } from "../../pipeline/notify/deliver.js";
import { generateSecret } from "../../pipeline/notify/sign.js";
import { deleteRedisKeys, indexFixtures, isolatedApi, MAINNET, RECORDS, searchStackUp } from "../integration/api/fixtures.js";
import { hasMainnetFixtures, SKIP_NO_FIXTURES } from "../support/fixtures.js";
import { MAINNET_FIXTURES, MAINNET_FIXTURES_PARTITIONING, mainnetRecords } from "../support/mainnet-records.js";
import { sampleAlert } from "../unit/pipeline/notify/fixtures.js";

/** Delivers one POST and one GET webhook of a sample alert to a local receiver; returns the requests as received. */
async function sampleWebhooks() {
  const secret = generateSecret();
  const got: { method: string; target: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({ method: req.method ?? "", target: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const deliverer = createDeliverer({ allowlist: ["127.0.0.1"], secrets: { getOrCreate: async () => secret }, retry: { maxAttempts: 1 } });
  const alert = sampleAlert();
  await deliverer.deliver(alert, { type: "Webhook (POST)", parameters: { url: `${base}/post` } }, 0);
  await deliverer.deliver(alert, { type: "Webhook (GET)", parameters: { url: `${base}/get/{transactionHash}` } }, 1);
  await deliverer.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return got.map((r) => ({ secret, ...r }));
}

const infoFile = process.argv[2];
if (!infoFile) {
  console.error("usage: serve.ts <info.json>");
  process.exit(2);
}
const base = loadConfig();
if (!(await searchStackUp(base))) process.exit(1);

const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "py");
const es = new Client({ node: base.elasticsearch.url });
// Partitions of 1 block behind each kind's alias (es/partitions.ts), as a large deployment has them.
await indexFixtures(es, MAINNET, PREFIX, uniformPartitioning(1));
const chainPath = (c: typeof MAINNET) => `/${c.technology}/${c.blockchain}/${c.network}/es`;
let fixtures: { chainPath: string; records: unknown } | { chainPath: null; skipped: string };
if (hasMainnetFixtures()) {
  const records = mainnetRecords();
  await indexFixtures(es, MAINNET_FIXTURES, PREFIX, MAINNET_FIXTURES_PARTITIONING, records);
  fixtures = { chainPath: chainPath(MAINNET_FIXTURES), records };
} else {
  fixtures = { chainPath: null, skipped: SKIP_NO_FIXTURES };
}
const app = await buildApi({ config, es, logger: false, chains: [MAINNET, MAINNET_FIXTURES] });
await app.listen({ host: "127.0.0.1", port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const webhooks = await sampleWebhooks();
writeFileSync(infoFile, JSON.stringify({ url, token: TOKEN, chainPath: chainPath(MAINNET), records: RECORDS, webhooks, fixtures }));

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
