/**
 * `npm run bench -- ingest --legacy [--copies N] [--processes]`: the method before issue 23 (it
 * refreshes and counts the indices every 200 ms, runs the replay node in the bench's process and
 * each side once; bench/ingest.ts is the honest method). Replays the mainnet fixture blocks N times (hashes and
 * numbers rewritten so every copy is a distinct set of records) through a JSON-RPC replay server
 * → ingest → Kafka → decode → index → Elasticsearch, and prints end-to-end records/s next to raw
 * Elasticsearch bulk records/s for the same documents on the same machine.
 * Needs the stack (`npm run stack -- up`) and ../shared/data/mainnet.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import type { Client } from "@elastic/elasticsearch";
import { indexName } from "../es/mappings.js";
import type { Config } from "../lib/config/index.js";
import { createLogger } from "../lib/logger.js";
import { type RecordKind, recordId } from "../lib/records.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { ensureIndices } from "../pipeline/index/indexer.js";
import { toBlockBundle } from "../pipeline/ingest/transform.js";
import { startPipeline } from "../pipeline/runtime.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { createHarness } from "../test/support/harness.js";
import { startRpcReplay } from "../test/support/rpc-replay.js";
import { copyBlock } from "./support/data.js";

async function countAll(es: Client, indices: string[]): Promise<number> {
  await es.indices.refresh({ index: indices.join(",") });
  const r = await es.count({ index: indices.join(",") });
  return r.count;
}

/** Starts one stage as a child process (`cli/stage.ts`) on the bench's prefixes; resolves when it consumes. */
function spawnStage(stage: string, config: Config): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", resolve(import.meta.dirname, "../cli/stage.ts"), stage], {
    env: {
      ...process.env,
      CHAINSIFT_TOPIC_PREFIX: config.kafka.topicPrefix,
      CHAINSIFT_GROUP_PREFIX: config.kafka.groupPrefix,
      CHAINSIFT_INDEX_PREFIX: config.elasticsearch.indexPrefix,
      LOG_LEVEL: "warn",
      KAFKAJS_NO_PARTITIONER_WARNING: "1",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolveReady, reject) => {
    child.once("exit", (code) => reject(new Error(`stage ${stage} exited with ${code}`)));
    child.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes('"ready":true')) resolveReady(child);
    });
  });
}

/** Runs the legacy benchmark and prints its figures. */
export async function benchIngestLegacy(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const copies = Number(args[args.indexOf("--copies") + 1] ?? 0) || 20;
  const base = loadCompleteBlocks();
  const blocks = Array.from({ length: copies }, (_, c) => base.map((b) => copyBlock(b, c, 100_000_000))).flat();
  const decoder = createDecoder({ chainId: 1 });

  // Expected records, and the documents for the raw bulk baseline.
  const docs: Array<{ kind: RecordKind; doc: Record<string, unknown> }> = [];
  for (const fb of blocks) {
    const bundle = toBlockBundle(fb.block, fb.receipts);
    docs.push({ kind: "block", doc: bundle.block as never });
    for (const t of bundle.transactions) docs.push({ kind: "tx", doc: t as never });
    for (const l of bundle.logs) {
      docs.push({ kind: "log", doc: l as never });
      const ev = decoder.decode(l);
      if (ev) docs.push({ kind: "event", doc: ev as never });
    }
  }
  const total = docs.length;
  console.log(`stages          : ${args.includes("--processes") ? "decode and index in their own processes" : "all in one process"}`);
  console.log(`bench ingest: ${blocks.length} blocks (${base.length} fixture blocks x ${copies} copies), ${total} records`);

  // 1. Raw Elasticsearch bulk of the same documents.
  const raw = createHarness();
  await ensureIndices(raw.es, raw.config.chain, raw.config.elasticsearch.indexPrefix);
  const rawIndices = (["block", "tx", "log", "event"] as RecordKind[]).map((k) =>
    indexName(raw.config.chain, k, raw.config.elasticsearch.indexPrefix),
  );
  let t0 = performance.now();
  await raw.es.helpers.bulk({
    datasource: docs,
    onDocument: (d) =>
      [
        {
          index: {
            _index: indexName(raw.config.chain, d.kind, raw.config.elasticsearch.indexPrefix),
            _id: recordId(d.kind, d.doc as never),
          },
        },
        d.doc,
      ] as never,
    flushBytes: 5 * 1024 * 1024,
  });
  const rawCount = await countAll(raw.es, rawIndices);
  const rawSec = (performance.now() - t0) / 1000;
  await raw.cleanup();

  // 2. End to end: replay node → ingest → Kafka → decode → index → ES.
  const h = createHarness();
  const config = { ...h.config, logLevel: "warn" };
  const replay = await startRpcReplay({ blocks });
  // --processes: decode and index run as their own processes (`npm run stage`), as an operator
  // would deploy them; by default every stage shares this process's event loop.
  const separate = args.includes("--processes");
  const pipeline = await startPipeline({ config, logger: createLogger("warn", "bench"), es: h.es, stages: separate ? [] : undefined });
  const children = separate ? await Promise.all(["decode", "index"].map((stage) => spawnStage(stage, config))) : [];
  const indices = rawIndices.map((i) => i.replace(raw.config.elasticsearch.indexPrefix, h.config.elasticsearch.indexPrefix));
  const { ingester, close } = await pipeline.createIngester(replay.url, { concurrency: 8 });
  t0 = performance.now();
  const ingestDone = ingester.ingestBlocks(blocks.map((b) => b.number)).then(() => performance.now());
  let count = 0;
  while (count < total) {
    await new Promise((r) => setTimeout(r, 200));
    count = await countAll(h.es, indices);
    if (performance.now() - t0 > 600_000) break;
  }
  const e2eSec = (performance.now() - t0) / 1000;
  const ingestSec = ((await ingestDone) - t0) / 1000;
  await close();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once("exit", r)))));
  await pipeline.stop();
  await replay.close();
  await h.cleanup();

  const rawRate = rawCount / rawSec;
  const e2eRate = count / e2eSec;
  const mem = process.memoryUsage();
  console.log(`raw ES bulk     : ${rawCount} records in ${rawSec.toFixed(2)} s = ${rawRate.toFixed(0)} records/s`);
  console.log(
    `end to end      : ${count} records in ${e2eSec.toFixed(2)} s = ${e2eRate.toFixed(0)} records/s (ingest → Kafka finished after ${ingestSec.toFixed(2)} s)`,
  );
  console.log(`ratio e2e / raw : ${(e2eRate / rawRate).toFixed(2)} (target >= 0.80)`);
  console.log(`bench process   : rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
  if (count < total) console.log(`WARNING: only ${count} of ${total} records arrived within 600 s`);
}
