import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { eventId } from "../../../lib/records.js";
import { createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { hasMainnetFixtures, loadCompleteBlocks } from "../../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { startRpcReplay } from "../../support/rpc-replay.js";
import { usdtLog } from "../../support/sample-records.js";

const up = await probeStack();

describe.skipIf(!up.ok)("Kafka + schema registry + Elasticsearch (real stack)", () => {
  let h: Harness;
  let pipeline: Pipeline;

  beforeAll(async () => {
    h = createHarness();
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, refresh: true });
  });

  afterAll(async () => {
    await pipeline?.stop();
    await h?.cleanup();
  });

  it("round-trips a record through Avro with the registered schema", async () => {
    const encoded = await pipeline.bus.encode("logs", usdtLog);
    expect(encoded[0]).toBe(0); // Confluent magic byte
    expect(await pipeline.bus.decode(encoded)).toEqual(usdtLog);
    // The subject itself, not the /subjects list: Apicurio pages that list at 1000 entries, which a
    // long-lived registry shared by many test runs exceeds.
    const res = await fetch(`${h.config.schemaRegistryUrl}/subjects/${encodeURIComponent(`${pipeline.bus.topic("logs")}-value`)}/versions`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as number[]).length).toBeGreaterThan(0);
  });

  it("refuses a record that does not fit the schema", async () => {
    await expect(pipeline.bus.encode("logs", { ...usdtLog, logIndex: "seven" })).rejects.toMatchObject({ code: "CS_AVRO_ENCODE" });
  });

  it("decodes and indexes a produced log, and dead-letters a malformed message without stopping", async () => {
    const producer = await createRecordProducer(pipeline.bus);
    // Garbage first: must be dead-lettered, and must not block the valid record behind it.
    await producer.producer.sendBatch([
      { topic: pipeline.bus.topic("logs"), messages: [{ key: "garbage", value: Buffer.from("not avro") }] },
    ]);
    await producer.send([{ kind: "logs", key: "k", record: usdtLog }]);
    await producer.disconnect();

    const id = eventId(usdtLog);
    const index = indexName(h.config.chain, "event", h.config.elasticsearch.indexPrefix);
    // The index names are aliases over block-range partitions: GET by id takes one concrete index, a search by ids any alias.
    const byId = async (alias: string, docId: string) =>
      (await h.es.search({ index: alias, query: { ids: { values: [docId] } } })).hits.hits[0]?._source as
        | Record<string, unknown>
        | undefined;
    const doc = await waitFor(() => byId(index, id));
    expect(doc.event).toBe("Transfer");
    const args = doc.args as Array<{ name: string; value: { num: number; scaled: number | null } }>;
    expect(args.find((a) => a.name === "value")?.value).toMatchObject({ num: 5_000_000, scaled: 5 });

    // The log itself is indexed too.
    const logIndex = indexName(h.config.chain, "log", h.config.elasticsearch.indexPrefix);
    expect(await byId(logIndex, `${usdtLog.transactionHash}_l_7`)).toBeDefined();

    // The garbage message is in the dead-letter topic with its bytes and the reason.
    const bus = await createBus({ config: h.config, logger: h.logger, setup: false });
    const consumer = bus.kafka.consumer({ groupId: `${h.config.kafka.groupPrefix}.dlq-reader` });
    await consumer.connect();
    await consumer.subscribe({ topic: bus.topic("dead-letter"), fromBeginning: true });
    const letters: Array<Record<string, unknown>> = [];
    await consumer.run({
      eachMessage: async ({ message }) => void letters.push((await bus.decode(message.value)) as Record<string, unknown>),
    });
    // Both stages that consume the logs topic (decode and index) refuse it, each dead-letters it.
    await waitFor(async () => letters.length >= 2);
    await consumer.disconnect();
    expect(letters.map((l) => l.stage).sort()).toEqual(["decode", "index"]);
    for (const letter of letters) {
      expect(letter).toMatchObject({ sourceTopic: bus.topic("logs"), errorCode: "CS_AVRO_DECODE" });
      expect(Buffer.from(letter.value as Buffer).toString()).toBe("not avro");
    }
  });

  it.skipIf(!hasMainnetFixtures())("falls back to eth_getTransactionReceipt on a node without eth_getBlockReceipts", async () => {
    const blocks = loadCompleteBlocks().filter((b) => b.number === 483920 || b.number === 1755635);
    const replay = await startRpcReplay({ blocks, blockReceipts: false });
    const { ingester, close } = await pipeline.createIngester(replay.url);
    try {
      const stats = await ingester.ingestBlocks([483920, 1755635, 99_999_999]);
      expect(stats).toMatchObject({ blocks: 2, transactions: 6, logs: 4, missing: 1, deadLettered: 0 });
      // Tried by the first (concurrent) fetches only, then remembered as unsupported.
      expect(replay.calls.get("eth_getBlockReceipts")).toBeLessThanOrEqual(3);
      expect(replay.calls.get("eth_getTransactionReceipt")).toBe(6);
    } finally {
      await close();
      await replay.close();
    }
  });
});
