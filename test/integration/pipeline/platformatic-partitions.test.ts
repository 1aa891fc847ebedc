/**
 * Issue 37's parity check against the broker (docs/kafka-client.md): keyed messages produced by
 * `@platformatic/kafka`'s producer with its `compatibilityPartitioner` land on the partitions that
 * today's partitioner (`keyHashPartitioner`) gives their keys, read back through the kafkajs
 * transport from a 12-partition topic. The unit test (test/unit/pipeline/kafka/platformatic-partitioner.test.ts)
 * checks the partitioner function over 100,000 keys; this one checks what the library's producer
 * does with it on the stack's Kafka.
 */
import { createHash } from "node:crypto";
import { compatibilityPartitioner, Producer, stringSerializers } from "@platformatic/kafka";
import { Kafka, logLevel, type PartitionerArgs } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkajsTransport } from "../../../pipeline/kafka/kafkajs.js";
import { keyHashPartitioner } from "../../../pipeline/kafka/partitioner.js";
import { createHarness, type Harness, probeStack, skipMessage, waitFor } from "../../support/harness.js";

const up = await probeStack();

const PARTITIONS = 12;
const KEYS = Array.from(
  { length: 600 },
  (_, i) => `0x${createHash("sha256").update(`parity ${i}`).digest("hex")}${i % 3 === 0 ? `_l_${i}` : ""}`,
);

describe.skipIf(!up.ok)(`@platformatic/kafka's producer against the broker${up.ok ? "" : ` (${skipMessage(up.missing)})`}`, () => {
  let h: Harness;
  beforeAll(() => {
    h = createHarness();
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it(`puts each of ${KEYS.length} keys on keyHashPartitioner's partition of ${PARTITIONS}`, async () => {
    const transport = kafkajsTransport(
      new Kafka({ clientId: `${h.id}-parity`, brokers: h.config.kafka.brokers, logLevel: logLevel.NOTHING }),
    );
    const topic = `${h.config.kafka.topicPrefix}parity`;
    const admin = transport.admin();
    await admin.connect();
    await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: 1, config: {} }]);
    await admin.disconnect();

    const producer = new Producer({
      clientId: `${h.id}-platformatic`,
      bootstrapBrokers: h.config.kafka.brokers,
      serializers: stringSerializers,
      partitioner: compatibilityPartitioner,
      autocreateTopics: false,
    });
    try {
      await producer.send({ acks: -1, messages: KEYS.map((key) => ({ topic, key, value: key })) });
    } finally {
      await producer.close();
    }

    const landed = new Map<string, number>();
    const consumer = transport.consumer({ groupId: `${h.config.kafka.groupPrefix}.parity`, maxWaitTimeMs: 200 });
    await consumer.connect();
    try {
      await consumer.subscribe([topic], true);
      await consumer.run({
        eachBatch: async (batch, control) => {
          for (const m of batch.messages) landed.set(m.key?.toString() ?? "", batch.partition);
          const last = batch.messages.at(-1);
          if (last) control.resolveOffset(last.offset);
        },
      });
      await waitFor(async () => landed.size === KEYS.length, 60_000);
    } finally {
      await consumer.disconnect();
    }

    const partition = keyHashPartitioner();
    const partitionMetadata = Array.from({ length: PARTITIONS }, (_, p) => ({ partitionId: p, leader: 0 }));
    const todays = (key: string) => partition({ topic, partitionMetadata, message: { key, value: null } } as PartitionerArgs);
    expect(KEYS.filter((key) => landed.get(key) !== todays(key))).toEqual([]);
    expect(new Set(landed.values()).size).toBe(PARTITIONS);
  });
});
