/**
 * The Kafka transport: the one interface between chainsift and a Kafka client library, covering
 * what the pipeline does with Kafka and nothing more — produce batches of keyed messages with
 * headers, consume partition batches with explicit offset commits, pause/resume/seek, and the
 * admin calls used (topics, offsets, consumer-group offsets). The default implementation wraps
 * kafkajs (pipeline/kafka/kafkajs.ts, {@link KafkaTransport.name} `kafkajs`); docs/kafka-client.md
 * says why it is the default and what another client must match (the partitioner above all).
 *
 * Offsets are decimal strings (Kafka's int64), as kafkajs gives them. Keys and values are bytes.
 * @module
 */

/** A header value as it is read back: the bytes Kafka stored (a string header is sent as UTF-8). */
export type HeaderValue = Buffer | string;

/** A consumed message's headers: a name may repeat (then an array), absent names are undefined. */
export type MessageHeaders = Record<string, HeaderValue | HeaderValue[] | undefined>;

/** One message to produce. */
export interface OutgoingMessage {
  /** Partitioning key (murmur2 of its bytes, Java-compatible: pipeline/kafka/partitioner.ts); null for none. */
  key: string | Buffer | null;
  value: Buffer | null;
  /** Headers, sent as UTF-8 when strings; none by default. */
  headers?: Record<string, string | Buffer>;
}

/** The messages of one produce call for one topic, in order. */
export interface TopicMessages {
  /** Full topic name. */
  topic: string;
  messages: OutgoingMessage[];
}

/** A producer of the transport. */
export interface TransportProducer {
  connect(): Promise<void>;
  /**
   * Sends every message with acks=all (all in-sync replicas), in as few requests as the library
   * makes (kafkajs: one per broker); resolves when Kafka acknowledged all of them.
   * @throws the library's error when a send fails after its retries.
   */
  sendBatch(topicMessages: TopicMessages[]): Promise<void>;
  disconnect(): Promise<void>;
}

/** Options of {@link KafkaTransport.producer}. */
export interface TransportProducerOptions {
  /**
   * Idempotent (default true): the broker drops a retried duplicate, one request in flight per
   * broker connection (so order is kept), retried without limit with a backoff of at most 30 s.
   * False: the library's default retries, no idempotence.
   */
  idempotent?: boolean;
}

/** A message read from a partition. */
export interface ConsumedMessage {
  key: Buffer | null;
  value: Buffer | null;
  /** Its offset in the partition (decimal string). */
  offset: string;
  /** Its timestamp, ms since the epoch (decimal string). */
  timestamp: string;
  headers?: MessageHeaders;
}

/** Messages of one topic-partition, in offset order, as one fetch returned them. */
export interface ConsumedBatch {
  topic: string;
  partition: number;
  messages: ConsumedMessage[];
}

/** What a batch handler may do with its consumer while it handles a batch. */
export interface BatchControl {
  /** Marks the batch's messages up to and including `offset` as processed (the next commit covers them). */
  resolveOffset(offset: string): void;
  /** Commits the resolved offsets when the auto-commit interval has passed since the last commit. */
  commitOffsetsIfNecessary(): Promise<void>;
  /** Tells the group coordinator the member is alive (handlers that run long call it). */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping. */
  isRunning(): boolean;
  /** True once the batch is no longer this member's to handle (a rebalance, a seek). */
  isStale(): boolean;
}

/** Options of {@link KafkaTransport.consumer}. */
export interface TransportConsumerOptions {
  groupId: string;
  /** Bytes fetched per partition per request; the library's default (kafkajs: 1 MiB) when absent. */
  maxBytesPerPartition?: number;
  /** Group session timeout, ms; the library's default (kafkajs: 30,000) when absent. */
  sessionTimeoutMs?: number;
  /** Group rebalance timeout, ms; the library's default (kafkajs: 60,000) when absent. */
  rebalanceTimeoutMs?: number;
  /** Longest time the broker holds a fetch that has no data yet, ms; the library's default (kafkajs: 5,000) when absent. */
  maxWaitTimeMs?: number;
}

/** Options of {@link TransportConsumer.run}. */
export interface TransportRunOptions {
  /** Partitions handled at once (each partition's batches stay in order). Default 1. */
  partitionsConsumedConcurrently?: number;
  /**
   * Commit resolved offsets at most this often, ms (through {@link BatchControl.commitOffsetsIfNecessary}
   * and when the consumer stops). Absent: after every batch.
   */
  autoCommitIntervalMs?: number;
  /**
   * Handles one partition batch. Offsets are committed only for what it resolved: it must call
   * {@link BatchControl.resolveOffset} (there is no auto-resolve). A throw is the library's
   * consumer crash (kafkajs: the consumer restarts from the last commit).
   */
  eachBatch(batch: ConsumedBatch, control: BatchControl): Promise<void>;
}

/** What a consumer reports: `groupJoin` (joined its group, got partitions), `fetch` (a fetch round ended), `crash`, `stop`, `disconnect`. */
export type ConsumerEvent = "groupJoin" | "fetch" | "crash" | "stop" | "disconnect";

/** A consumer-group member of the transport. */
export interface TransportConsumer {
  connect(): Promise<void>;
  /**
   * Subscribes to `topics` (full names; before {@link TransportConsumer.run}).
   * @param fromBeginning - where to start on a partition the group has no committed offset on: the earliest record (true) or the end.
   */
  subscribe(topics: readonly string[], fromBeginning: boolean): Promise<void>;
  /** Starts consuming in the background; resolves once started. */
  run(opts: TransportRunOptions): Promise<void>;
  /** Stops fetching these topics (every partition) until {@link TransportConsumer.resume}. */
  pause(topics: readonly string[]): void;
  resume(topics: readonly string[]): void;
  /** Moves the partition's next read (and its next commit) to `offset`. Only once running. */
  seek(topic: string, partition: number, offset: string): void;
  /** The group's state as the coordinator describes it (`Empty`, `Dead`, `Stable`, `PreparingRebalance`, …). */
  groupState(): Promise<string>;
  /** Calls `listener` on every `event`. */
  on(event: ConsumerEvent, listener: () => void): void;
  /** Stops consuming (commits what is resolved) but stays connected. */
  stop(): Promise<void>;
  /** Stops and leaves the group. */
  disconnect(): Promise<void>;
}

/** A topic to create. */
export interface NewTopic {
  topic: string;
  numPartitions: number;
  replicationFactor: number;
  /** Topic configs, e.g. `{ "cleanup.policy": "compact" }`. */
  config: Record<string, string>;
}

/** A partition's offsets: the first still stored (`low`) and the next to be written (`high`). */
export interface PartitionEnds {
  partition: number;
  low: string;
  high: string;
}

/** A consumer group's committed offsets on one topic; `offset` is `-1` on a partition without a commit. */
export interface CommittedOffsets {
  topic: string;
  partitions: { partition: number; offset: string }[];
}

/** The admin calls the pipeline makes. */
export interface TransportAdmin {
  connect(): Promise<void>;
  listTopics(): Promise<string[]>;
  /** Creates the topics and waits until each partition has a leader. */
  createTopics(topics: readonly NewTopic[]): Promise<void>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** Every partition's ends. @throws for an unknown topic. */
  fetchTopicOffsets(topic: string): Promise<PartitionEnds[]>;
  /** Per partition, the first offset whose timestamp is at or after `sinceMs` (ms since the epoch), or the high watermark when none is. */
  fetchTopicOffsetsByTimestamp(topic: string, sinceMs: number): Promise<{ partition: number; offset: string }[]>;
  /** A group's committed offsets on `topics`, or on every topic it committed in when absent. */
  fetchCommittedOffsets(groupId: string, topics?: readonly string[]): Promise<CommittedOffsets[]>;
  /** The cluster's brokers. */
  describeBrokers(): Promise<{ nodeId: number; host: string; port: number }[]>;
  disconnect(): Promise<void>;
}

/** One Kafka client library behind the pipeline, for one client id. */
export interface KafkaTransport {
  /** The library, e.g. `kafkajs`. */
  readonly name: string;
  producer(opts?: TransportProducerOptions): TransportProducer;
  consumer(opts: TransportConsumerOptions): TransportConsumer;
  admin(): TransportAdmin;
}
