/**
 * The thin Kafka shell shared by every consuming stage: consume batches, decode Avro, hand the
 * records to the stage's pure handler, dead-letter what is bad, retry what is transient, then
 * commit. Nothing is silently dropped and a bad message never crashes the stage.
 * @module
 */
import { Registry } from "prom-client";
import { isRetryable, type NonRetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import type { RecordOf, TopicKind } from "../../topics/index.js";
import { type Bus, createRecordProducer, type RecordProducer } from "./bus.js";
import { kafkaMetricsOf } from "./metrics.js";
import type { ConsumedMessage, TransportConsumer } from "./transport.js";

/** One decoded input message of topic kind `K`, its record typed by the kind ({@link RecordOf}). */
export interface InputRecordOf<K extends TopicKind> {
  topicKind: K;
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  record: RecordOf<K>;
  /** The raw message (kept for dead-lettering). */
  message: ConsumedMessage;
}

/**
 * One decoded input message: a union discriminated on `topicKind`, so `if (input.topicKind ===
 * "logs")` narrows `input.record` to a `LogRecord`. `InputRecord<"blocks" | "reorgs">` is a stage's
 * subset.
 */
export type InputRecord<K extends TopicKind = TopicKind> = { [P in K]: InputRecordOf<P> }[K];

/** A message that could not be decoded: where it was and its bytes, no record. */
export type UndecodedInput = Pick<InputRecord, "topic" | "partition" | "offset" | "message">;

/** A record the handler could not process because of the record itself. */
export interface HandlerFailure {
  /** The input record handed to the handler, or, for a message that could not be decoded, its place and bytes. */
  input: UndecodedInput;
  error: NonRetryableError;
}

/**
 * A stage's batch handler. Throw (anything but NonRetryableError) to have the whole batch retried;
 * return failures to have those records dead-lettered while the rest commit.
 */
export type BatchHandler<K extends TopicKind = TopicKind> = (records: InputRecord<K>[]) => Promise<HandlerFailure[] | undefined>;

/** Options of {@link runConsumer}. */
export interface ConsumerOptions<K extends TopicKind = TopicKind> {
  bus: Bus;
  logger: Logger;
  /** Stage name, used for the consumer group id and dead letters (e.g. `decode`). */
  stage: string;
  /** Topic kinds subscribed; the handler gets records of these kinds only. */
  topics: K[];
  handler: BatchHandler<K>;
  /** Start from the earliest offset when the group has no committed offset. Default true. */
  fromBeginning?: boolean;
  /** First retry delay of a failed batch; doubles up to 30 s. Default 500 ms. */
  retryInitialMs?: number;
  /** Bytes fetched per partition per request. Default 4 MiB. */
  maxBytesPerPartition?: number;
  /** Partitions processed at once (each partition stays in order). Default 3. */
  partitionsConsumedConcurrently?: number;
  /** Consumer group session timeout (heartbeats continue while a handler runs). Default 30000 ms. */
  sessionTimeoutMs?: number;
  /**
   * Registry of the shell's metrics (`chainsift_consumer_*`, `chainsift_records_produced_total`,
   * pipeline/kafka/metrics.ts), e.g. the process's (lib/common.ts). Default: a private one, never served.
   */
  registry?: Registry;
}

/** A running consumer. */
export interface RunningConsumer {
  /** The transport's consumer (pipeline/kafka/transport.ts), e.g. for its events. */
  consumer: TransportConsumer;
  /** Messages dead-lettered so far. */
  deadLettered(): number;
  /**
   * Whether the consumer is consuming: true from joining its group (event `groupJoin`) until it
   * crashes, stops or disconnects (the `/readyz` of lib/metrics.ts).
   */
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * Sends a message to the dead-letter topic with the reason; the original bytes are kept whole.
 */
export async function deadLetter(
  producer: RecordProducer,
  stage: string,
  input: UndecodedInput,
  error: { code: string; message: string },
): Promise<void> {
  await producer.send([
    {
      kind: "dead-letter",
      key: input.message.key?.toString() ?? `${input.topic}:${input.partition}:${input.offset}`,
      record: {
        sourceTopic: input.topic,
        partition: input.partition,
        offset: input.offset,
        key: input.message.key ?? null,
        value: input.message.value ?? null,
        stage,
        errorCode: error.code,
        errorMessage: error.message.slice(0, 4000),
        failedAt: new Date().toISOString(),
      },
    },
  ]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Subscribes a consumer group to the topics and runs the handler on every batch until stopped.
 * Offsets are committed only after the handler succeeded and failures were dead-lettered
 * (at-least-once; handlers are idempotent by deterministic keys/ids).
 */
export async function runConsumer<K extends TopicKind>(opts: ConsumerOptions<K>): Promise<RunningConsumer> {
  const { bus, logger, stage, handler } = opts;
  const log = logger.child({ stage });
  // Its own client id per stage (`chainsift-<stage>-<instance>`): Kafka's tools show who holds what.
  const consumer = bus.transportOf(stage).consumer({
    groupId: bus.groupId(stage),
    maxBytesPerPartition: opts.maxBytesPerPartition ?? 4 * 1024 * 1024,
    sessionTimeoutMs: opts.sessionTimeoutMs ?? 30_000,
    rebalanceTimeoutMs: Math.max(60_000, opts.sessionTimeoutMs ?? 0),
  });
  const registry = opts.registry ?? new Registry();
  const metrics = kafkaMetricsOf(registry);
  const dlq = await createRecordProducer(bus, { metrics: { registry, stage } });
  const kindOfTopic = new Map(opts.topics.map((k) => [bus.topic(k), k] as const));
  let deadLettered = 0;
  let stopping = false;
  let joined = false;
  consumer.on("groupJoin", () => {
    joined = true;
  });
  for (const gone of ["crash", "stop", "disconnect"] as const) {
    consumer.on(gone, () => {
      joined = false;
    });
  }
  const untrackLag = metrics.trackLag(bus, bus.groupId(stage));

  await consumer.connect();
  await consumer.subscribe([...kindOfTopic.keys()], opts.fromBeginning ?? true);
  await consumer.run({
    partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 3,
    // Offsets are committed at most every 500 ms (not after every batch): one broker round trip less
    // per batch on the latency path; a crash replays at most that much, which every stage tolerates.
    autoCommitIntervalMs: 500,
    eachBatch: async (batch, { resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
      const topicKind = kindOfTopic.get(batch.topic) as K;
      const labels = { stage, topic: topicKind };
      const inputs: InputRecord<K>[] = [];
      const failures: HandlerFailure[] = [];
      for (const message of batch.messages) {
        const base = {
          topicKind,
          topic: batch.topic,
          partition: batch.partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          message,
        };
        try {
          // The one place a record's type is asserted: the Avro schema of its topic kind (topics/index.ts) wrote it.
          inputs.push({ ...base, record: await bus.decode(message.value) } as InputRecord<K>);
        } catch (err) {
          if (isRetryable(err)) throw err;
          failures.push({ input: base, error: err as NonRetryableError });
        }
      }
      let delay = opts.retryInitialMs ?? 500;
      const endTimer = metrics.handlerSeconds.startTimer(labels);
      for (;;) {
        if (!isRunning() || isStale() || stopping) return;
        try {
          // A handler may block for long (delivery retries): keep the group membership alive
          // meanwhile, so the session timeout can stay short and a dead member is noticed quickly.
          const beat = setInterval(() => void heartbeat().catch(() => {}), 3000);
          let handlerFailures: HandlerFailure[] | undefined;
          try {
            handlerFailures = inputs.length > 0 ? await handler(inputs) : undefined;
          } finally {
            clearInterval(beat);
          }
          if (handlerFailures) failures.push(...handlerFailures);
          break;
        } catch (err) {
          if (!isRetryable(err)) {
            // A handler that throws a NonRetryableError for the whole batch: dead-letter all of it.
            for (const input of inputs) failures.push({ input, error: err as NonRetryableError });
            break;
          }
          metrics.retries.inc({ stage });
          log.warn({ err, topic: batch.topic, partition: batch.partition, retryInMs: delay }, "batch failed; retrying");
          await sleep(delay);
          delay = Math.min(delay * 2, 30_000);
          await heartbeat();
        }
      }
      if (inputs.length > 0) endTimer();
      metrics.consumed.inc(labels, batch.messages.length);
      for (const f of failures) {
        await deadLetter(dlq, stage, f.input, { code: f.error.code, message: f.error.message });
        deadLettered++;
        metrics.deadLetters.inc({ stage, code: f.error.code });
        log.warn(
          { topic: f.input.topic, partition: f.input.partition, offset: f.input.offset, code: f.error.code },
          `dead-lettered: ${f.error.message}`,
        );
      }
      // Which instance handled what, before the commit: a process killed after this line and before
      // the commit has its batch handled again by the next owner (the scale-out test sums these).
      log.debug({ topic: batch.topic, partition: batch.partition, records: batch.messages.length }, "batch handled");
      const last = batch.messages.at(-1);
      if (last) resolveOffset(last.offset);
      await commitOffsetsIfNecessary();
      await heartbeat();
    },
  });

  return {
    consumer,
    deadLettered: () => deadLettered,
    ready: () => joined && !stopping,
    async stop() {
      stopping = true;
      await untrackLag();
      await consumer.disconnect();
      await dlq.disconnect();
    },
  };
}
