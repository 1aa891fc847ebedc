/**
 * The `@platformatic/kafka` implementation of the Kafka transport (pipeline/kafka/transport.ts),
 * the default since issue 37 (`CHAINSIFT_KAFKA_CLIENT`, lib/config/kafka-client.ts; kafkajs stays
 * selectable, docs/kafka-client.md says why). The producer and the admin calls are here, the consumer
 * (the library's fetch, commit and group calls under a batch loop of ours) in
 * pipeline/kafka/platformatic-consumer.ts. Library docs: https://github.com/platformatic/kafka/tree/main/docs
 * (producer.md, consumer.md, admin.md).
 *
 * What differs from the library's defaults, and why:
 * - keyed messages are placed by {@link javaPartitioner} (`murmur2(key) & 0x7fffffff`, which the
 *   library takes modulo the partition count: Kafka's Java partitioner and kafkajs's). The library's
 *   default partitioner (`murmur2(key) >>> 0`) places keys with a negative hash elsewhere
 *   (test/unit/pipeline/kafka/platformatic-partitioner.test.ts); its `compatibilityPartitioner` agrees
 *   with ours but computes murmur2 in BigInt arithmetic, ours in 32-bit integers (pipeline/kafka/partitioner.ts).
 * - strings (keys, header names and values) are sent as UTF-8 (the library takes Buffers only
 *   without serializers).
 * - requests time out after 30 s (kafkajs's `requestTimeout`; a consumer's after its rebalance
 *   timeout + 5 s at least, since the coordinator holds a JoinGroup that long), retries back off
 *   exponentially from 200 ms up to 30 s.
 * @module
 */
import { Admin, findErrorBy, ListOffsetTimestamps, type MessageToProduce, Producer, type RetryDelayGetter } from "@platformatic/kafka";
import type { Logger } from "../../lib/logger.js";
import { murmur2 } from "./partitioner.js";
import { platformaticConsumer } from "./platformatic-consumer.js";
import type { KafkaTransport, NewTopic, TransportAdmin, TransportProducer } from "./transport.js";

/** Options of {@link platformaticTransport}. */
export interface PlatformaticTransportOptions {
  /** Kafka client id of every client of this transport. */
  clientId: string;
  /** Bootstrap brokers, `host:port`. */
  brokers: readonly string[];
  /** Where the consumer reports what it retries (fetch and commit failures, a crashed batch). */
  logger?: Logger;
  /**
   * How long a request may go unanswered, ms. Default 30000 (kafkajs's `requestTimeout`). A
   * consumer's group requests get at least its rebalance timeout + 5 s (pipeline/kafka/platformatic-consumer.ts
   * {@link groupRequestTimeoutMs}). Tests lower it to make requests time out.
   */
  requestTimeoutMs?: number;
  /** How many times the library tries a failed request again (joins included). Default 8. Tests set 0 to see a failure at once. */
  retries?: number;
}

/** Longest wait between two tries of a request, ms (kafkajs's `maxRetryTime` default). */
const MAX_RETRY_DELAY_MS = 30_000;

/** Exponential backoff for the library's retries: 200 ms, 400 ms, … up to {@link MAX_RETRY_DELAY_MS}. */
export const retryDelay: RetryDelayGetter = (_client, _operation, attempt) =>
  Math.min(MAX_RETRY_DELAY_MS, 200 * 2 ** Math.min(attempt, 10));

/** The options every client of the transport shares (https://github.com/platformatic/kafka/blob/main/docs/base.md). */
export function baseOptions(opts: PlatformaticTransportOptions) {
  return {
    clientId: opts.clientId,
    bootstrapBrokers: [...opts.brokers],
    requestTimeout: opts.requestTimeoutMs ?? 30_000,
    retries: opts.retries ?? 8,
    retryDelay,
    autocreateTopics: false,
  };
}

/** Text as UTF-8 bytes; bytes as they are. */
const bytes = (v: string | Buffer | null | undefined): Buffer | undefined =>
  v === null || v === undefined ? undefined : typeof v === "string" ? Buffer.from(v, "utf8") : v;

/**
 * The partition number of a message before the library takes it modulo the partition count:
 * `murmur2(key) & 0x7fffffff` for a keyed message (Kafka's Java `DefaultPartitioner`, kafkajs's
 * `DefaultPartitioner`, our `keyHashPartitioner`), the next of a round-robin counter without a key.
 */
export function javaPartitioner(): (message: MessageToProduce, key: Buffer | undefined) => number {
  let next = 0;
  return (_message, key) => (key === undefined ? next++ & 0x7fffffff : murmur2(key) & 0x7fffffff);
}

/** Every message of a sendBatch as the library's messages, in order. */
function toMessages(topicMessages: Parameters<TransportProducer["sendBatch"]>[0]): MessageToProduce[] {
  const out: MessageToProduce[] = [];
  for (const { topic, messages } of topicMessages) {
    for (const m of messages) {
      const message: MessageToProduce = { topic, key: bytes(m.key), value: bytes(m.value) };
      if (m.headers) {
        const headers = new Map<Buffer, Buffer>();
        for (const [name, value] of Object.entries(m.headers)) headers.set(Buffer.from(name, "utf8"), bytes(value) as Buffer);
        message.headers = headers;
      }
      out.push(message);
    }
  }
  return out;
}

/** Topic configs as the library's CreateTopics entries. */
const configEntries = (t: NewTopic) => Object.entries(t.config).map(([name, value]) => ({ name, value }));

/** The admin calls of the pipeline over the library's `Admin` (https://github.com/platformatic/kafka/blob/main/docs/admin.md). */
function platformaticAdmin(opts: PlatformaticTransportOptions): TransportAdmin {
  const admin = new Admin(baseOptions(opts));
  const partitionCount = async (topic: string): Promise<number> => {
    const md = await admin.metadata({ topics: [topic] });
    const t = md.topics.get(topic);
    if (!t) throw new Error(`unknown topic ${topic}`);
    return t.partitionsCount;
  };
  const listOffsets = async (topic: string, timestamp: bigint) => {
    const n = await partitionCount(topic);
    const [listed] = await admin.listOffsets({
      topics: [{ name: topic, partitions: Array.from({ length: n }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }],
    });
    return new Map((listed?.partitions ?? []).map((p) => [p.partitionIndex, p.offset] as const));
  };
  const ends = async (topic: string) => {
    const [low, high] = await Promise.all([
      listOffsets(topic, ListOffsetTimestamps.EARLIEST),
      listOffsets(topic, ListOffsetTimestamps.LATEST),
    ]);
    return [...high.keys()]
      .sort((a, b) => a - b)
      .map((partition) => ({ partition, low: low.get(partition) ?? 0n, high: high.get(partition) ?? 0n }));
  };
  return {
    async connect() {
      await admin.metadata({ topics: [] });
    },
    listTopics: () => admin.listTopics(),
    async createTopics(topics) {
      await Promise.all(
        topics.map(async (t) => {
          try {
            await admin.createTopics({
              topics: [t.topic],
              partitions: t.numPartitions,
              replicas: t.replicationFactor,
              configs: configEntries(t),
            });
          } catch (err) {
            // Another process created it meanwhile: what kafkajs's createTopics also accepts.
            if (!findErrorBy(err as Error, "apiId", "TOPIC_ALREADY_EXISTS")) throw err;
          }
        }),
      );
      // Wait until every partition has a leader (kafkajs's `waitForLeaders`), at most 30 s.
      const names = topics.map((t) => t.topic);
      for (const deadline = Date.now() + 30_000; ; ) {
        const md = await admin.metadata({ topics: names, forceUpdate: true }).catch(() => undefined);
        const led = md && names.every((n) => md.topics.get(n)?.partitions.every((p) => p.leader >= 0));
        if (led) return;
        if (Date.now() > deadline) throw new Error(`topics without a leader after 30 s: ${names.join(", ")}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async deleteTopics(topics) {
      await admin.deleteTopics({ topics: [...topics] });
    },
    async fetchTopicOffsets(topic) {
      return (await ends(topic)).map((e) => ({ partition: e.partition, low: String(e.low), high: String(e.high) }));
    },
    async fetchTopicOffsetsByTimestamp(topic, sinceMs) {
      const [at, high] = await Promise.all([listOffsets(topic, BigInt(sinceMs)), listOffsets(topic, ListOffsetTimestamps.LATEST)]);
      return [...high.keys()]
        .sort((a, b) => a - b)
        .map((partition) => {
          const o = at.get(partition);
          return { partition, offset: String(o === undefined || o < 0n ? high.get(partition) : o) };
        });
    },
    async fetchCommittedOffsets(groupId, topics) {
      const groups = topics
        ? [
            {
              groupId,
              topics: await Promise.all(
                topics.map(async (name) => ({ name, partitionIndexes: Array.from({ length: await partitionCount(name) }, (_, i) => i) })),
              ),
            },
          ]
        : [groupId];
      const [group] = await admin.listConsumerGroupOffsets({ groups });
      return (group?.topics ?? []).map((t) => ({
        topic: t.name,
        partitions: t.partitions
          .map((p) => ({ partition: p.partitionIndex, offset: String(p.committedOffset < 0n ? -1n : p.committedOffset) }))
          .sort((a, b) => a.partition - b.partition),
      }));
    },
    async describeBrokers() {
      const md = await admin.metadata({ topics: [] });
      return [...md.brokers].map(([nodeId, b]) => ({ nodeId, host: b.host, port: b.port }));
    },
    disconnect: () => admin.close(),
  };
}

/**
 * The transport over `@platformatic/kafka` for one client id: each producer, consumer and admin is
 * a library client of its own (own connections), created when asked for. Topics are never
 * auto-created.
 */
export function platformaticTransport(opts: PlatformaticTransportOptions): KafkaTransport {
  return {
    name: "platformatic",
    producer(popts = {}): TransportProducer {
      const idempotent = popts.idempotent !== false;
      const producer = new Producer({
        ...baseOptions(opts),
        // Idempotence: the library then keeps one request in flight and acks=all, and retries without
        // limit (https://github.com/platformatic/kafka/blob/main/docs/producer.md).
        idempotent,
        ...(idempotent ? { retries: Number.MAX_SAFE_INTEGER } : {}),
        acks: -1,
        partitioner: javaPartitioner(),
      });
      return {
        async connect() {
          await producer.metadata({ topics: [] });
        },
        async sendBatch(topicMessages) {
          const messages = toMessages(topicMessages);
          if (messages.length > 0) await producer.send({ messages, acks: -1 });
        },
        disconnect: () => producer.close(),
      };
    },
    consumer: (copts) => platformaticConsumer(baseOptions(opts), copts, opts.logger),
    admin: () => platformaticAdmin(opts),
  };
}
