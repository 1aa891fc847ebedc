/**
 * skipExistingRecords (pipeline/kafka/bus.ts), as npm start uses it on the embedded chain: a stage
 * started after it sees only records produced afterwards, never those of earlier runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import type { BlockRecord } from "../../../lib/records.js";
import { createBus, createRecordProducer, skipExistingRecords } from "../../../pipeline/kafka/bus.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { TOPICS, type TopicKind } from "../../../topics/index.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { ABSENT_BLOCK_FIELDS } from "../../support/records.js";

const up = await probeStack();

const q = (n: number) => ({ num: n, raw: `0x${n.toString(16)}` });
const h32 = (n: number): string => `0x${n.toString(16).padStart(64, "0")}`;
const block = (n: number): BlockRecord => ({
  hash: h32(n),
  parentHash: h32(n - 1),
  number: q(n),
  timestamp: "2026-11-22T20:00:00",
  miner: "0x0000000000000000000000000000000000000001",
  gasUsed: q(21_000),
  gasLimit: q(30_000_000),
  baseFeePerGas: q(7),
  difficulty: q(0),
  size: q(600),
  extraData: "0x",
  nonce: "0x0000000000000000",
  stateRoot: h32(100 + n),
  transactionsRoot: h32(200 + n),
  receiptsRoot: h32(300 + n),
  transactionCount: 0,
  uncles: [],
  withdrawalsCount: 0,
  ...ABSENT_BLOCK_FIELDS,
});

describe.skipIf(!up.ok)("skipExistingRecords (real Kafka)", () => {
  let h: Harness;
  let pipeline: Pipeline | undefined;

  beforeAll(() => {
    h = createHarness();
  });
  afterAll(async () => {
    await pipeline?.stop();
    await h?.cleanup();
  });

  it("moves the stages' groups to the end: only records produced afterwards are indexed", async () => {
    // An "earlier run": topics and schemas set up, two blocks produced, no stage ever consumed them.
    const setup = await createBus({ config: h.config, logger: h.logger });
    const producer = await createRecordProducer(setup);
    await producer.send([1, 2].map((n) => ({ kind: "blocks" as const, key: block(n).hash, record: block(n) })));

    await skipExistingRecords(setup, ["index", "decode"]);
    const admin = setup.kafka.admin();
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    const topics = (Object.keys(TOPICS) as TopicKind[]).map((k) => setup.topic(k)).filter((t) => existing.has(t));
    expect(topics).toContain(setup.topic("blocks"));
    // Every existing topic of the chain, for both groups, at its high watermark (one consumer per group covers all topics).
    for (const stage of ["index", "decode"]) {
      const committed = await admin.fetchOffsets({ groupId: setup.groupId(stage), topics });
      for (const topic of topics) {
        const ends = await admin.fetchTopicOffsets(topic);
        const got = committed
          .find((c) => c.topic === topic)
          ?.partitions.map((p) => `${p.partition}:${p.offset}`)
          .sort();
        expect({ stage, topic, got }).toEqual({ stage, topic, got: ends.map((p) => `${p.partition}:${p.high}`).sort() });
      }
    }
    await admin.disconnect();

    // This run: the index stage starts, a third block is produced; only it reaches Elasticsearch.
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, refresh: true, stages: ["index"] });
    await producer.send([{ kind: "blocks", key: block(3).hash, record: block(3) }]);
    await producer.disconnect();
    const index = indexName(h.config.chain, "block", h.config.elasticsearch.indexPrefix);
    const found = await waitFor(async () => {
      const res = await h.es.search({ index, query: { match_all: {} }, size: 10 }, { ignore: [404] });
      const hits = (res as { hits?: { hits: Array<{ _id?: string }> } }).hits?.hits ?? [];
      return hits.length > 0 ? hits : undefined;
    }, 30_000);
    // Give a replay of blocks 1 and 2 time to show up if it were to happen.
    await new Promise((r) => setTimeout(r, 1500));
    await h.es.indices.refresh({ index });
    const all = await h.es.search({ index, query: { match_all: {} }, size: 10 });
    expect(found.length).toBeGreaterThan(0);
    expect(all.hits.hits.map((x) => x._id)).toEqual([block(3).hash]);
    // A group with a running member cannot be moved.
    await expect(skipExistingRecords(setup, ["index"])).rejects.toThrow(/no running members/);
  });
});
