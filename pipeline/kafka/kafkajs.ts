/**
 * The kafkajs implementation of the Kafka transport (pipeline/kafka/transport.ts), the default:
 * kafkajs 2.2.4 with the request-queue patch that `npm install` applies
 * (patches/kafkajs+2.2.4.patch, docs/kafka-client.md). A thin mapping: messages are kafkajs's own
 * objects (no copy per message), offsets its decimal strings. kafkajs options:
 * https://kafka.js.org/docs/configuration, https://kafka.js.org/docs/producing,
 * https://kafka.js.org/docs/consuming, https://kafka.js.org/docs/admin.
 * @module
 */
import type { Consumer, Kafka } from "kafkajs";
import { kafkajsLagAdmin } from "../../lib/kafka/lag.js";
import { keyHashPartitioner } from "./partitioner.js";
import type { ConsumerEvent, KafkaTransport, TransportAdmin, TransportConsumer, TransportProducer } from "./transport.js";

/** The kafkajs consumer event of each {@link ConsumerEvent}. */
const EVENTS = {
  groupJoin: "consumer.group_join",
  fetch: "consumer.fetch",
  crash: "consumer.crash",
  stop: "consumer.stop",
  disconnect: "consumer.disconnect",
} as const satisfies Record<ConsumerEvent, Consumer["events"][keyof Consumer["events"]]>;

/**
 * The transport over one kafkajs client (one client id). Producers place keyed messages with
 * {@link keyHashPartitioner} (Java-compatible murmur2); topics are never auto-created.
 * @param kafka - a kafkajs client (`new Kafka({ clientId, brokers, … })`).
 */
export function kafkajsTransport(kafka: Kafka): KafkaTransport {
  return {
    name: "kafkajs",
    producer(opts = {}): TransportProducer {
      const producer = kafka.producer({
        allowAutoTopicCreation: false,
        createPartitioner: keyHashPartitioner,
        // Idempotence: one request in flight, acks=all (https://kafka.js.org/docs/producing#options);
        // kafkajs requires unlimited retries for it; each retry backs off up to 30 s.
        ...(opts.idempotent === false
          ? {}
          : { idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 30_000 } }),
      });
      return {
        connect: () => producer.connect(),
        async sendBatch(topicMessages) {
          await producer.sendBatch({ acks: -1, topicMessages });
        },
        disconnect: () => producer.disconnect(),
      };
    },
    consumer(opts): TransportConsumer {
      const consumer = kafka.consumer({
        groupId: opts.groupId,
        allowAutoTopicCreation: false,
        ...(opts.maxBytesPerPartition !== undefined ? { maxBytesPerPartition: opts.maxBytesPerPartition } : {}),
        ...(opts.sessionTimeoutMs !== undefined ? { sessionTimeout: opts.sessionTimeoutMs } : {}),
        ...(opts.rebalanceTimeoutMs !== undefined ? { rebalanceTimeout: opts.rebalanceTimeoutMs } : {}),
        ...(opts.maxWaitTimeMs !== undefined ? { maxWaitTimeInMs: opts.maxWaitTimeMs } : {}),
      });
      return {
        connect: () => consumer.connect(),
        subscribe: (topics, fromBeginning) => consumer.subscribe({ topics: [...topics], fromBeginning }),
        run: (run) =>
          consumer.run({
            eachBatchAutoResolve: false,
            partitionsConsumedConcurrently: run.partitionsConsumedConcurrently ?? 1,
            autoCommit: true,
            ...(run.autoCommitIntervalMs !== undefined ? { autoCommitInterval: run.autoCommitIntervalMs } : {}),
            eachBatch: ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) =>
              run.eachBatch(batch, {
                resolveOffset,
                heartbeat,
                commitOffsetsIfNecessary: () => commitOffsetsIfNecessary(),
                isRunning,
                isStale,
              }),
          }),
        pause: (topics) => consumer.pause(topics.map((topic) => ({ topic }))),
        resume: (topics) => consumer.resume(topics.map((topic) => ({ topic }))),
        seek: (topic, partition, offset) => consumer.seek({ topic, partition, offset }),
        groupState: async () => (await consumer.describeGroup()).state,
        on(event, listener) {
          consumer.on(EVENTS[event], listener);
        },
        stop: () => consumer.stop(),
        disconnect: () => consumer.disconnect(),
      };
    },
    admin(): TransportAdmin {
      const admin = kafka.admin();
      return {
        connect: () => admin.connect(),
        listTopics: () => admin.listTopics(),
        async createTopics(topics) {
          await admin.createTopics({
            waitForLeaders: true,
            topics: topics.map((t) => ({
              topic: t.topic,
              numPartitions: t.numPartitions,
              replicationFactor: t.replicationFactor,
              configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })),
            })),
          });
        },
        deleteTopics: (topics) => admin.deleteTopics({ topics: [...topics] }),
        ...kafkajsLagAdmin(admin),
        describeBrokers: async () => (await admin.describeCluster()).brokers.map(({ nodeId, host, port }) => ({ nodeId, host, port })),
        disconnect: () => admin.disconnect(),
      };
    },
  };
}
