/**
 * patches/kafkajs+2.2.4.patch against the real broker (docs/kafka-client.md#the-kafkajs-patch):
 * a consumer whose Fetch the broker holds (an empty topic, `maxWaitTimeInMs`) arms no timer in
 * kafkajs's request queue while the Fetch is in flight (kafkajs 2.2.4 loops on a 1 ms `setTimeout`
 * from the first response on, tulios/kafkajs#1556), and connecting, producing and consuming make
 * Node 24 print no `TimeoutNegativeWarning` (2.2.4: once per process, tulios/kafkajs#1751).
 * Both fail without the patch.
 */
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness, probeStack, skipMessage } from "../../support/harness.js";

// Listening before the first Kafka connection of the process (probeStack's): Node warns once per process.
const warnings: string[] = [];
const onWarning = (w: Error) => warnings.push(w.name);
process.on("warning", onWarning);
const up = await probeStack();

/** Whether the current call stack runs in kafkajs's request queue. */
const fromRequestQueue = () => /kafkajs[\\/]src[\\/]network[\\/]requestQueue[\\/]/.test(new Error().stack ?? "");

describe.skipIf(!up.ok)(`kafkajs patch against the broker${up.ok ? "" : ` (${skipMessage(up.missing)})`}`, () => {
  let h: Harness;
  beforeAll(() => {
    h = createHarness();
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    vi.restoreAllMocks();
    await h?.cleanup();
  });

  it("arms no request-queue timer while the broker holds a Fetch, and Node prints no TimeoutNegativeWarning", async () => {
    const kafka = new Kafka({ clientId: `${h.id}-patch`, brokers: h.config.kafka.brokers, logLevel: logLevel.NOTHING });
    const topic = `${h.config.kafka.topicPrefix}patch`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({ topic, messages: [{ key: "k", value: "v", headers: { h: "1" } }] });
    await producer.disconnect();

    // Fetches of an empty topic that the broker holds for 1.5 s each (the one record is read first).
    const consumer = kafka.consumer({ groupId: `${h.config.kafka.groupPrefix}.patch`, maxWaitTimeInMs: 1_500 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const realSetTimeout = globalThis.setTimeout;
    /** Request-queue timers armed while a Fetch was in flight, per Fetch of the empty topic. */
    const armedPerHeldFetch: number[] = [];
    let inFetch = false;
    let armed = 0;
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      if (inFetch && fromRequestQueue()) armed++;
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout);
    let consumed = 0;
    const twoHeldFetches = new Promise<void>((resolve) => {
      consumer.on(consumer.events.FETCH_START, () => {
        inFetch = true;
        armed = 0;
      });
      consumer.on(consumer.events.FETCH, ({ payload }: { payload: { numberOfBatches: number } }) => {
        inFetch = false;
        if (consumed === 1 && payload.numberOfBatches === 0) armedPerHeldFetch.push(armed);
        if (armedPerHeldFetch.length === 2) resolve();
      });
    });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        consumed += batch.messages.length;
      },
    });
    try {
      await twoHeldFetches;
    } finally {
      await consumer.disconnect();
    }
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    expect(consumed).toBe(1);
    expect(warnings).not.toContain("TimeoutNegativeWarning");
    expect(armedPerHeldFetch).toEqual([0, 0]);
  });
});
