/**
 * The `@platformatic/kafka` transport (pipeline/kafka/platformatic.ts, issue 37) against the
 * stack's broker, end to end: topics created, keyed messages with headers produced by its
 * idempotent producer, consumed in batches by its consumer with explicit commits, a consumer that
 * restarts in the same group reading only what came after the commit, a crashed batch handled
 * again, a committed offset past the end reset to the earliest, and a group shared with a kafkajs
 * consumer (the rolling switch docs/kafka-client.md describes). Runs whatever
 * `CHAINSIFT_KAFKA_CLIENT` says: it builds the transports itself.
 */
import { createHash } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkajsTransport } from "../../../pipeline/kafka/kafkajs.js";
import { murmur2 } from "../../../pipeline/kafka/partitioner.js";
import { platformaticTransport } from "../../../pipeline/kafka/platformatic.js";
import type { ConsumedBatch, KafkaTransport, TransportConsumer } from "../../../pipeline/kafka/transport.js";
import { createHarness, type Harness, probeStack, skipMessage, waitFor } from "../../support/harness.js";

const up = await probeStack();

const PARTITIONS = 6;
const keyOf = (i: number) => `0x${createHash("sha256").update(`pk ${i}`).digest("hex")}${i % 4 === 0 ? `_l_${i}` : ""}`;
/** Where Kafka's Java partitioner (and kafkajs's) puts a key. */
const javaPartition = (key: string) => (murmur2(key) & 0x7fffffff) % PARTITIONS;

/** What a consumer saw: per key, the partitions, offsets and `seq` headers of its deliveries. */
interface Seen {
  key: string;
  partition: number;
  offset: string;
  seq: string | undefined;
  value: string;
}

describe.skipIf(!up.ok)(`the @platformatic/kafka transport against the broker${up.ok ? "" : ` (${skipMessage(up.missing)})`}`, () => {
  let h: Harness;
  let t: KafkaTransport;
  let topic: string;
  let group: string;
  const open: TransportConsumer[] = [];

  /** A consumer of `group` that records every message and resolves every batch; `crashOnce` throws on its first batch. */
  async function consume(seen: Seen[], opts: { transport?: KafkaTransport; crashOnce?: boolean; partitions?: Set<number> } = {}) {
    const consumer = (opts.transport ?? t).consumer({ groupId: group, maxWaitTimeMs: 200, sessionTimeoutMs: 10_000 });
    open.push(consumer);
    let crash = opts.crashOnce === true;
    let joins = 0;
    consumer.on("groupJoin", () => {
      joins++;
    });
    await consumer.connect();
    await consumer.subscribe([topic], true);
    await consumer.run({
      partitionsConsumedConcurrently: 3,
      autoCommitIntervalMs: 200,
      eachBatch: async (batch: ConsumedBatch, control) => {
        if (crash) {
          crash = false;
          throw new Error("a crash the test asked for");
        }
        opts.partitions?.add(batch.partition);
        for (const m of batch.messages) {
          const seq = m.headers?.seq;
          seen.push({
            key: m.key?.toString() ?? "",
            partition: batch.partition,
            offset: m.offset,
            seq: seq === undefined ? undefined : String(Array.isArray(seq) ? seq[0] : seq),
            value: m.value?.toString() ?? "",
          });
        }
        const last = batch.messages.at(-1);
        if (last) control.resolveOffset(last.offset);
        await control.commitOffsetsIfNecessary();
      },
    });
    return { consumer, joins: () => joins };
  }

  /** Produces messages `from`..`to-1` (keyed, a `seq` header, the value `v<i>`). */
  async function produce(from: number, to: number) {
    const producer = t.producer({ idempotent: true });
    await producer.connect();
    try {
      const messages = Array.from({ length: to - from }, (_, j) => {
        const i = from + j;
        return { key: keyOf(i), value: Buffer.from(`v${i}`), headers: { seq: String(i) } };
      });
      await producer.sendBatch([{ topic, messages }]);
    } finally {
      await producer.disconnect();
    }
  }

  /** The group's committed offsets on the topic equal the topic's ends. */
  async function committedAtEnd(): Promise<boolean> {
    const admin = t.admin();
    await admin.connect();
    try {
      const [ends, committed] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchCommittedOffsets(group, [topic])]);
      const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
      return ends.every((e) => at.get(e.partition) === e.high);
    } finally {
      await admin.disconnect();
    }
  }

  beforeAll(async () => {
    h = createHarness();
    t = platformaticTransport({ clientId: `${h.id}-pk`, brokers: h.config.kafka.brokers, logger: h.logger });
    topic = `${h.config.kafka.topicPrefix}pk`;
    group = `${h.config.kafka.groupPrefix}.pk`;
    const admin = t.admin();
    await admin.connect();
    try {
      await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: 1, config: { "retention.ms": "3600000" } }]);
      // Creating it again is not an error (another process may have won the race).
      await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: 1, config: {} }]);
      expect(await admin.listTopics()).toContain(topic);
      expect((await admin.describeBrokers()).length).toBeGreaterThan(0);
    } finally {
      await admin.disconnect();
    }
  });
  afterAll(async () => {
    for (const c of open) await c.disconnect().catch(() => {});
    await h?.cleanup();
  });

  it("produces keyed messages with headers that a consumer reads in batches on the Java partitioner's partitions, and commits them", async () => {
    await produce(0, 300);
    const seen: Seen[] = [];
    const { consumer } = await consume(seen);
    await waitFor(async () => seen.length >= 300, 60_000);
    // Committed while running, after the last batch too (the stages' lag metric reads this).
    await waitFor(committedAtEnd, 30_000);
    await consumer.stop();
    expect(seen).toHaveLength(300);
    expect(new Set(seen.map((s) => s.key)).size).toBe(300);
    for (const s of seen) {
      const i = Number(s.seq);
      expect(s.key).toBe(keyOf(i));
      expect(s.value).toBe(`v${i}`);
      expect(s.partition).toBe(javaPartition(s.key));
    }
    // Offsets within a partition come in order, from 0.
    for (let p = 0; p < PARTITIONS; p++) {
      const offsets = seen.filter((s) => s.partition === p).map((s) => Number(s.offset));
      expect(offsets).toEqual(offsets.map((_, i) => i));
    }
    expect(await committedAtEnd()).toBe(true);
    await consumer.disconnect();
  });

  it("restarts in the same group from the commit: only newer messages, a crashed batch read again", async () => {
    await produce(300, 400);
    const seen: Seen[] = [];
    const { consumer, joins } = await consume(seen, { crashOnce: true });
    await waitFor(async () => seen.length >= 100, 60_000);
    // Nothing more arrives (e.g. old messages re-read): wait a few fetch rounds.
    await new Promise((r) => setTimeout(r, 1500));
    await consumer.stop();
    expect(seen.map((s) => Number(s.seq)).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => 300 + i));
    // The crash restarted the consumer: it announced its partitions again.
    expect(joins()).toBeGreaterThanOrEqual(2);
    expect(await committedAtEnd()).toBe(true);
    await consumer.disconnect();
  });

  it("starts a partition whose committed offset is past its end from the earliest record (auto.offset.reset)", async () => {
    const kafka = new Kafka({ clientId: `${h.id}-reset`, brokers: h.config.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const stored = await admin.fetchTopicOffsets(topic);
    const total = stored.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
    // As if retention had removed what the commit points at: offsets no partition has.
    const resetGroup = `${group}-reset`;
    await admin.setOffsets({ groupId: resetGroup, topic, partitions: stored.map((p) => ({ partition: p.partition, offset: "1000000" })) });
    await admin.disconnect();
    const seen: Seen[] = [];
    const consumer = t.consumer({ groupId: resetGroup, maxWaitTimeMs: 200 });
    open.push(consumer);
    await consumer.connect();
    await consumer.subscribe([topic], true);
    await consumer.run({
      eachBatch: async (batch, control) => {
        for (const m of batch.messages) seen.push({ key: "", partition: batch.partition, offset: m.offset, seq: undefined, value: "" });
        const last = batch.messages.at(-1);
        if (last) control.resolveOffset(last.offset);
      },
    });
    await waitFor(async () => seen.length >= total, 60_000);
    await consumer.stop();
    expect(seen).toHaveLength(total);
    expect(seen.filter((m) => m.offset === "0").length).toBe(stored.filter((p) => Number(p.high) > 0).length);
    await consumer.disconnect();
  });

  it("shares a group with a kafkajs consumer: partitions split between them, every message read once", async () => {
    const kafkajs = kafkajsTransport(new Kafka({ clientId: `${h.id}-kjs`, brokers: h.config.kafka.brokers, logLevel: logLevel.NOTHING }));
    const seenP: Seen[] = [];
    const seenK: Seen[] = [];
    const partsP = new Set<number>();
    const partsK = new Set<number>();
    const a = await consume(seenP, { partitions: partsP });
    const b = await consume(seenK, { transport: kafkajs, partitions: partsK });
    // Both members hold partitions once the group has rebalanced: a message on every partition shows whose.
    let next = 400;
    await waitFor(
      async () => {
        await produce(next, next + 60);
        next += 60;
        return partsP.size > 0 && partsK.size > 0 && partsP.size + partsK.size >= PARTITIONS;
      },
      90_000,
      1000,
    );
    // Counted without repeats: a message read by both members around the rebalance counts once.
    await waitFor(async () => new Set([...seenP, ...seenK].map((s) => s.seq)).size >= next - 400, 60_000);
    await a.consumer.stop();
    await b.consumer.stop();
    const seqs = [...seenP, ...seenK].map((s) => Number(s.seq)).sort((x, y) => x - y);
    // At least once: a message read by both around the rebalance is allowed, a lost one is not.
    expect([...new Set(seqs)]).toEqual(Array.from({ length: next - 400 }, (_, i) => 400 + i));
    await a.consumer.disconnect();
    await b.consumer.disconnect();
  });
});
