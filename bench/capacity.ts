/**
 * `npm run bench -- capacity [--kafka-log-dir DIR]`: the measured inputs of the capacity plan in
 * docs/operations.md. Ingests the mainnet fixture blocks (with their call traces) through the real
 * pipeline (JSON-RPC replay server → ingest → Kafka → decode → index → Elasticsearch) under a
 * private topic, group, index and Redis prefix, then prints per record kind:
 * - records per block, over all fixture blocks and over the post-Merge ones (≥ 15,537,394); traces
 *   and calls over the blocks whose fixtures have call traces;
 * - Kafka bytes per message: key + value (Confluent-framed Avro) + headers, summed over every
 *   message of the topic (read back with a consumer), and, with `--kafka-log-dir` (the broker's
 *   `log.dirs`, e.g. `~/.cache/chainsift/stack/run/kafka/data` for `npm run stack`), the size of the
 *   topic's segment files on disk per message (record-batch overhead included);
 * - Elasticsearch bytes per document: size of the live segments of the kind's index (`_segments`,
 *   after a flush and a force merge to one segment) over its count of top-level documents.
 * Needs the stack (`npm run stack -- up`) and ../shared/data/mainnet.
 * @module
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { indexName } from "../es/mappings.js";
import { createLogger } from "../lib/logger.js";
import type { RecordKind } from "../lib/records.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { startPipeline } from "../pipeline/runtime.js";
import { deletePrefix } from "../test/integration/accounts/redis.js";
import { type BlockRecordCounts, fixtureRecords } from "../test/support/fixture-records.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { createHarness, waitFor } from "../test/support/harness.js";
import { startRpcReplay } from "../test/support/rpc-replay.js";
import { TOPIC_OF_KIND, type TopicKind } from "../topics/index.js";

/** First block after the Merge (proof of stake): blocks from here on are what the chain head looks like today. */
const MERGE_BLOCK = 15_537_394;
const KINDS: RecordKind[] = ["block", "tx", "log", "event", "call"];
/** The topics measured: the kinds' topics (calls are flattened from `traces` by the index stage). */
const TOPICS: TopicKind[] = ["blocks", "transactions", "logs", "events", "traces"];

/** Bytes of the segment files (`*.log`) of every partition directory `<topic>-<n>` under a Kafka log dir. */
function logDirBytes(dir: string, topic: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir)) {
    if (!new RegExp(`^${topic.replace(/\./g, "\\.")}-\\d+$`).test(entry)) continue;
    for (const f of readdirSync(join(dir, entry))) if (f.endsWith(".log")) bytes += statSync(join(dir, entry, f)).size;
  }
  return bytes;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits).padStart(10);

/** Runs the benchmark and prints its figures. */
export async function benchCapacity(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const logDirArg = args.indexOf("--kafka-log-dir");
  const logDir = logDirArg >= 0 ? args[logDirArg + 1] : undefined;
  const blocks = loadCompleteBlocks();
  const decoder = createDecoder({ chainId: 1 });
  const expected = fixtureRecords(blocks, decoder);
  const h = createHarness();
  const logger = createLogger("error", "bench-capacity");
  const replay = await startRpcReplay({ blocks, blockReceipts: true, traces: true });
  const pipeline = await startPipeline({ config: h.config, logger, es: h.es, decoder });
  try {
    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: true });
    await ingester.ingestBlocks(blocks.map((b) => b.number));
    await close();
    const indexOf = (k: RecordKind) => indexName(h.config.chain, k, h.config.elasticsearch.indexPrefix);
    await waitFor(
      async () => {
        for (const k of KINDS) {
          await h.es.indices.refresh({ index: indexOf(k) });
          if ((await h.es.count({ index: indexOf(k) })).count < (expected.ids.get(k)?.size ?? 0)) return false;
        }
        return true;
      },
      300_000,
      500,
    );

    // Kafka: every message of each topic, read back.
    const kafka = pipeline.bus.kafka;
    const admin = kafka.admin();
    await admin.connect();
    const ends = new Map<string, Map<number, bigint>>();
    for (const t of TOPICS) {
      const offsets = await admin.fetchTopicOffsets(pipeline.bus.topic(t));
      ends.set(pipeline.bus.topic(t), new Map(offsets.map((o) => [o.partition, BigInt(o.high)])));
    }
    await admin.disconnect();
    const msgs = new Map<string, { count: number; bytes: number }>();
    const remaining = new Set<string>();
    for (const [topic, parts] of ends) for (const [p, high] of parts) if (high > 0n) remaining.add(`${topic}|${p}`);
    const consumer = kafka.consumer({ groupId: `${h.config.kafka.groupPrefix}.capacity-read` });
    await consumer.connect();
    await consumer.subscribe({ topics: [...ends.keys()], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const m = msgs.get(topic) ?? { count: 0, bytes: 0 };
        m.count++;
        m.bytes += (message.key?.length ?? 0) + (message.value?.length ?? 0);
        for (const [name, v] of Object.entries(message.headers ?? {}))
          m.bytes += Buffer.byteLength(name) + (Buffer.isBuffer(v) ? v.length : 0);
        msgs.set(topic, m);
        if (BigInt(message.offset) + 1n >= (ends.get(topic)?.get(partition) ?? 0n)) remaining.delete(`${topic}|${partition}`);
      },
    });
    await waitFor(async () => remaining.size === 0, 120_000, 200);
    await consumer.disconnect();

    // Elasticsearch: one segment per index, then the primary store size.
    const all = KINDS.map(indexOf).join(",");
    await h.es.indices.flush({ index: all });
    await h.es.indices.forcemerge({ index: all, max_num_segments: 1 });
    // Bytes of the live segments of each index's primary shard (`_segments`): `_stats` store size
    // also counts files a merge has just replaced and not yet deleted.
    const segments = await h.es.indices.segments({ index: all });
    const storeBytes = new Map<RecordKind, number>();
    for (const k of KINDS) {
      let bytes = 0;
      for (const copies of Object.values(segments.indices[indexOf(k)]?.shards ?? {}))
        for (const shard of copies as Array<{ routing: { primary: boolean }; segments: Record<string, { size_in_bytes: number }> }>)
          if (shard.routing.primary) for (const seg of Object.values(shard.segments)) bytes += seg.size_in_bytes;
      storeBytes.set(k, bytes);
    }

    // Top-level documents (`_stats` counts Lucene documents, nested event and call arguments included).
    const docCount = new Map<RecordKind, number>();
    for (const k of KINDS) docCount.set(k, (await h.es.count({ index: indexOf(k) })).count);

    const post = expected.perBlock.filter((b) => b.number >= MERGE_BLOCK);
    /** Average per block; traces and calls over the blocks whose fixtures have traces only. */
    const perBlock = (list: BlockRecordCounts[], k: keyof BlockRecordCounts) => {
      const over = k === "trace" || k === "call" ? list.filter((b) => b.trace > 0) : list;
      return over.reduce((n, b) => n + (b[k] as number), 0) / Math.max(1, over.length);
    };
    console.log(
      `bench capacity: ${blocks.length} fixture blocks (${post.length} post-Merge: ${post.map((b) => b.number).join(", ")}), traces where the fixtures have them (${expected.perBlock.filter((b) => b.trace > 0).length} blocks)`,
    );
    console.log(
      "kind   records/block  records/block  Kafka topic    messages  Kafka bytes/msg  log-dir bytes/msg  ES docs  ES bytes/doc\n" +
        "       (all)          (post-Merge)                           (key+value+hdrs) (segments on disk)         (1 segment)",
    );
    const rows: Array<[string, keyof BlockRecordCounts, TopicKind | undefined]> = [
      ["block", "block", "blocks"],
      ["tx", "tx", "transactions"],
      ["log", "log", "logs"],
      ["event", "event", "events"],
      ["trace", "trace", "traces"],
      ["call", "call", undefined],
    ];
    for (const [label, key, topicKind] of rows) {
      const topic = topicKind ? pipeline.bus.topic(topicKind) : undefined;
      const m = topic ? msgs.get(topic) : undefined;
      const kind = (KINDS as string[]).includes(label) ? (label as RecordKind) : undefined;
      const docs = kind ? (docCount.get(kind) ?? 0) : 0;
      const store = kind ? (storeBytes.get(kind) ?? 0) : 0;
      const disk = topic && logDir && m ? logDirBytes(logDir, topic) / m.count : undefined;
      console.log(
        `${label.padEnd(6)} ${fmt(perBlock(expected.perBlock, key))}     ${fmt(perBlock(post, key))}     ${(topicKind ?? `(${TOPIC_OF_KIND.call})`).padEnd(13)} ${String(m?.count ?? "-").padStart(8)}  ${m ? fmt(m.bytes / m.count, 0) : "         -"}       ${disk !== undefined ? fmt(disk, 0) : "         -"}        ${kind ? String(docs).padStart(7) : "      -"}  ${kind && docs ? fmt(store / docs, 0) : "         -"}`,
      );
    }
    const totalMsgBytes = [...msgs.values()].reduce((n, m) => n + m.bytes, 0);
    const totalStore = KINDS.reduce((n, k) => n + (storeBytes.get(k) ?? 0), 0);
    console.log(
      `totals: Kafka ${totalMsgBytes} bytes in ${[...msgs.values()].reduce((n, m) => n + m.count, 0)} messages; ES ${totalStore} bytes in ${KINDS.reduce((n, k) => n + (docCount.get(k) ?? 0), 0)} documents (traces and calls per block: over the blocks with traces)`,
    );
  } finally {
    await (await pipeline.chainState()).reset().catch(() => {});
    await pipeline.stop();
    await replay.close();
    await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
    await h.cleanup();
  }
}
