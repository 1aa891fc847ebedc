/**
 * The single source of every Kafka topic: name, key, partitions, config and Avro schema.
 * Names carry technology/blockchain/network: `ethereum.ethereum.mainnet.blocks`.
 *
 * Every message ingest produces (and every event decode derives from a log) carries the Kafka
 * header {@link SEQ_HEADER}: the ingest sequence number, a decimal integer that grows with every
 * block bundle and every reorg announcement ingest produces, across restarts. It orders facts about
 * the same block height or `_id` across topics and partitions (docs/reorgs.md).
 * @module
 */
import type { AlertAvro } from "../lib/alerting/avro.js";
import type { ChainId } from "../lib/config/index.js";
import type { BlockRecord, EventRecord, LogRecord, RecordKind, ReorgRecord, TraceRecord, TransactionRecord } from "../lib/records.js";
import {
  type AvroSchema,
  alertSchema,
  blockSchema,
  deadLetterSchema,
  eventSchema,
  logSchema,
  reorgSchema,
  traceSchema,
  transactionSchema,
} from "./schemas.js";

/** Logical topic of a chain. */
export type TopicKind = "blocks" | "transactions" | "logs" | "traces" | "events" | "reorgs" | "alerts" | "dead-letter";

/**
 * The record of the dead-letter topic ({@link deadLetterSchema}): a message a stage could not
 * process, kept whole with the reason (pipeline/kafka/consumer.ts `deadLetter`).
 */
export interface DeadLetterRecord {
  /** Topic the message came from, or a pseudo-topic such as `rpc:eth_getBlockByNumber` (ingest). */
  sourceTopic: string;
  /** Its partition, -1 when it never was on a topic. */
  partition: number;
  /** Its offset (a decimal string), or what identifies it otherwise (ingest: the block height). */
  offset: string;
  /** The original message key, or null. */
  key: Buffer | null;
  /** The original message bytes, whole, or null. */
  value: Buffer | null;
  /** The stage that gave up on it, e.g. `decode`. */
  stage: string;
  /** Stable `CS_…` code of the error, e.g. `CS_AVRO_DECODE`. */
  errorCode: string;
  /** The error's message, at most 4000 characters. */
  errorMessage: string;
  /** When it was dead-lettered, ISO 8601 UTC. */
  failedAt: string;
}

/**
 * The record each topic kind carries, as producers send it and consumers get it back from Avro
 * (the schema of each is in {@link TOPICS}). A new topic kind without an entry here does not compile.
 */
export interface TopicRecords {
  blocks: BlockRecord;
  transactions: TransactionRecord;
  logs: LogRecord;
  traces: TraceRecord;
  events: EventRecord;
  reorgs: ReorgRecord;
  alerts: AlertAvro;
  "dead-letter": DeadLetterRecord;
}

/** The record type of topic kind `K`, e.g. `RecordOf<"logs">` is {@link LogRecord}. */
export type RecordOf<K extends TopicKind> = TopicRecords[K];

/** Definition of one topic. */
export interface TopicSpec {
  kind: TopicKind;
  /** Record kind carried (indexed into Elasticsearch), or null for the reorgs, alerts and dead-letter topics. */
  recordKind: RecordKind | null;
  /** What the message key holds (keys make replays idempotent). */
  key: string;
  /** Partition count at creation. */
  partitions: number;
  /** Topic-level Kafka configs (https://kafka.apache.org/documentation/#topicconfigs). */
  config: Record<string, string>;
  /** Avro value schema. */
  schema: AvroSchema;
}

const retention = { "cleanup.policy": "delete", "retention.ms": String(7 * 24 * 3600 * 1000), "compression.type": "producer" };

/** Every topic of one chain. */
export const TOPICS: Record<TopicKind, TopicSpec> = {
  blocks: { kind: "blocks", recordKind: "block", key: "block hash", partitions: 1, config: retention, schema: blockSchema },
  transactions: {
    kind: "transactions",
    recordKind: "tx",
    key: "transaction hash",
    partitions: 3,
    config: retention,
    schema: transactionSchema,
  },
  logs: { kind: "logs", recordKind: "log", key: "<transactionHash>_l_<logIndex>", partitions: 3, config: retention, schema: logSchema },
  traces: {
    kind: "traces",
    recordKind: null,
    key: "<transactionHash>_t",
    partitions: 3,
    config: { ...retention, "max.message.bytes": String(8 * 1024 * 1024) },
    schema: traceSchema,
  },
  events: {
    kind: "events",
    recordKind: "event",
    key: "<transactionHash>_e_<logIndex>",
    partitions: 3,
    config: retention,
    schema: eventSchema,
  },
  reorgs: {
    kind: "reorgs",
    recordKind: null,
    key: "orphaned block hash",
    // One partition: the reorgs of a chain stay in the order ingest found them.
    partitions: 1,
    config: retention,
    schema: reorgSchema,
  },
  alerts: {
    kind: "alerts",
    recordKind: null,
    key: "rule id (alerts of one rule stay in order)",
    partitions: 3,
    config: retention,
    schema: alertSchema,
  },
  "dead-letter": {
    kind: "dead-letter",
    recordKind: null,
    key: "the original message key",
    partitions: 1,
    config: { "cleanup.policy": "delete", "retention.ms": String(30 * 24 * 3600 * 1000) },
    schema: deadLetterSchema,
  },
};

/** Topic carrying each record kind (calls are flattened from the traces topic by the index stage). */
export const TOPIC_OF_KIND: Record<RecordKind, TopicKind> = {
  block: "blocks",
  tx: "transactions",
  log: "logs",
  event: "events",
  call: "traces",
};

/** Full topic name, e.g. `ethereum.ethereum.mainnet.blocks`, with an optional prefix (tests use one). */
export function topicName(chain: ChainId, kind: TopicKind, prefix = ""): string {
  return `${prefix}${chain.technology}.${chain.blockchain}.${chain.network}.${kind}`;
}

/** Schema registry subject of a topic's values (Confluent TopicNameStrategy). */
export function subjectOf(topic: string): string {
  return `${topic}-value`;
}

/**
 * Kafka header carrying the ingest sequence number of a message (decimal ASCII). All records of
 * one block share it; a `reorgs` record has a larger one than every record of the block it
 * orphans, and the new branch's records larger ones still. The index stage uses it as the
 * Elasticsearch external version of each document.
 */
export const SEQ_HEADER = "chainsift-seq";

/**
 * Kafka header (`1`) of an event the decode stage re-derived from a past log because an ABI was
 * registered (pipeline/decode/redecode.ts): it is indexed like any event (same `_id`, the log's
 * sequence number as version) but the match stage skips it, so registering an ABI never alerts on
 * history.
 */
export const REDECODE_HEADER = "chainsift-redecode";

/**
 * Kafka header (`1`) of an alert record that `chainsift alerts replay` put back on the alerts topic
 * from the dead letters (pipeline/notify/replay.ts): the notify stage queues its actions again even
 * though they were finished (dead-lettered) before — the `done:` marker that keeps a Kafka
 * redelivery from re-queueing a finished job does not apply to a deliberate replay.
 */
export const REPLAY_HEADER = "chainsift-replay";
