/**
 * The Kafka side of every stage: the Kafka transport (pipeline/kafka/transport.ts; kafkajs behind
 * it, pipeline/kafka/kafkajs.ts), the Confluent-compatible schema registry,
 * topic creation from `topics/` and Avro encoding/decoding (Confluent wire format: magic byte,
 * 4-byte schema id, Avro body — https://docs.confluent.io/platform/current/schema-registry/fundamentals/serdes-develop/index.html#wire-format).
 * @module
 */
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { Kafka, logLevel as KafkaLogLevel } from "kafkajs";
import type { Registry } from "prom-client";
import type { ChainId, Config } from "../../lib/config/index.js";
import { NonRetryableError } from "../../lib/errors.js";
import { consumerGroupId, kafkaClientId } from "../../lib/kafka/consumer-health.js";
import type { Logger } from "../../lib/logger.js";
import { type RecordOf, SEQ_HEADER, subjectOf, TOPICS, type TopicKind, topicName } from "../../topics/index.js";
import { compileToWire, fromWire, stripWireFields } from "../../topics/wire.js";
import { kafkaLogCreator } from "./log.js";
import { kafkaMetricsOf } from "./metrics.js";
import { transportMaker } from "./select.js";
import type {
  ConsumedMessage,
  KafkaTransport,
  OutgoingMessage,
  TransportAdmin,
  TransportProducer,
  TransportProducerOptions,
} from "./transport.js";

/** Shared Kafka plumbing of one process. */
export interface Bus {
  /** The process's Kafka transport (admin, producers), client id {@link kafkaClientId}`(config)`. */
  transport: KafkaTransport;
  /**
   * A transport of its own for one role of the process, e.g. a stage's consumer: client id
   * {@link kafkaClientId}`(config, role)`, so Kafka's tools show which stage of which process holds
   * a partition. The same transport for the same role (kafkajs opens connections per consumer or
   * producer, not per client, so this costs no connection).
   */
  transportOf(role: string): KafkaTransport;
  /**
   * The kafkajs client behind {@link Bus.transport}, for the code not on the transport yet
   * (pipeline/notify/replay.ts, bench/capacity.ts; docs/kafka-client.md).
   */
  kafka: Kafka;
  registry: SchemaRegistry;
  chain: ChainId;
  /** Full topic name of a topic kind (with the configured prefix). */
  topic(kind: TopicKind): string;
  /**
   * Avro-encodes a record for a topic with its registered schema.
   * @throws {NonRetryableError} `CS_AVRO_ENCODE` when the record does not fit the schema.
   */
  encode(kind: TopicKind, record: unknown): Promise<Buffer>;
  /**
   * The synchronous encoder of a topic kind, once its schema is registered (the registry is asked
   * at most once per kind and process): `encoder(kind)` resolves to a function that encodes a
   * record in the same bytes as {@link Bus.encode}, optionally into a shared {@link EncodeSlab}.
   * @throws {NonRetryableError} `CS_AVRO_ENCODE` (from the returned function) when the record does not fit the schema.
   */
  encoder(kind: TopicKind): Promise<(record: unknown, slab?: EncodeSlab) => Buffer>;
  /**
   * Decodes a Confluent-framed Avro message.
   * @throws {NonRetryableError} `CS_AVRO_DECODE` when the bytes are not a valid framed Avro record.
   */
  decode(value: Buffer | null): Promise<unknown>;
  /** Consumer group id for a stage: `<groupPrefix>.<topic prefix><chain>.<stage>`. */
  groupId(stage: string): string;
}

/**
 * A buffer that several encoded messages are written into one after the other (each message a
 * `subarray` of it), instead of one allocation and two copies per message. Replaced by a larger one
 * when a message does not fit.
 */
export interface EncodeSlab {
  buf: Buffer;
  /** Next free byte. */
  pos: number;
}

/** Size of a new {@link EncodeSlab}, in bytes (at least twice the message that did not fit). */
const SLAB_BYTES = 256 * 1024;

/** A fresh {@link EncodeSlab} of {@link SLAB_BYTES} (or `atLeast` bytes when larger). */
export const newEncodeSlab = (atLeast = 0): EncodeSlab => ({ buf: Buffer.allocUnsafe(Math.max(SLAB_BYTES, atLeast)), pos: 0 });

/**
 * Writes a Confluent-framed Avro message (magic byte 0, the 4-byte big-endian schema id, the Avro
 * body of `type.encode`) into `slab` and returns it as a view of the slab's bytes; a new slab is
 * taken when it does not fit. The bytes are those of `registry.encode(id, record)`.
 * @throws avsc's error when the record does not fit the type.
 */
export function encodeFramed(type: avro.Type, id: number, record: unknown, slab: EncodeSlab): Buffer {
  for (;;) {
    const start = slab.pos;
    // avsc's encode returns the end position, or (negative) the fitting size minus the needed one.
    const end = slab.buf.length - start > 5 ? type.encode(record, slab.buf, start + 5) : -5;
    if (end >= 0) {
      slab.buf[start] = 0;
      slab.buf.writeInt32BE(id, start + 1);
      slab.pos = end;
      return slab.buf.subarray(start, end);
    }
    Object.assign(slab, newEncodeSlab(2 * (slab.buf.length - start - end)));
  }
}

/** The paths of a record's fields that do not fit `type` (for the error message), e.g. `logIndex`. */
function invalidPaths(type: avro.Type, record: unknown): string[] {
  const paths: string[] = [];
  type.isValid(record, { errorHook: (path) => paths.push(path.join(".")) });
  return paths;
}

/** An unreachable registry is transient; anything else is the message's fault. */
const registryUnreachable = (msg: string) => /ECONNREFUSED|ETIMEDOUT|socket hang up|fetch failed/i.test(msg);

/** Options of {@link createBus}. */
export interface BusOptions {
  config: Pick<Config, "kafka" | "schemaRegistryUrl" | "chain">;
  logger: Logger;
  /** Create missing topics and register schemas (default true). */
  setup?: boolean;
}

/**
 * Creates every topic of the chain that does not exist yet, with the partitions and configs
 * from `topics/`.
 */
export async function ensureTopics(
  admin: Pick<TransportAdmin, "listTopics" | "createTopics">,
  chain: ChainId,
  prefix: string,
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = Object.values(TOPICS)
    .map((t) => ({ spec: t, name: topicName(chain, t.kind, prefix) }))
    .filter((t) => !existing.has(t.name));
  if (missing.length === 0) return;
  await admin.createTopics(
    missing.map(({ spec, name }) => ({ topic: name, numPartitions: spec.partitions, replicationFactor: 1, config: { ...spec.config } })),
  );
}

export { kafkaClientId };

/**
 * Connects to Kafka and the schema registry; unless `setup` is false, creates the chain's topics
 * and registers every value schema (idempotent: registering an identical schema returns its id).
 */
export async function createBus(opts: BusOptions): Promise<Bus> {
  const { config, logger } = opts;
  const newKafka = (clientId: string) =>
    new Kafka({
      clientId,
      brokers: config.kafka.brokers,
      logLevel: KafkaLogLevel.WARN,
      logCreator: kafkaLogCreator(logger),
      retry: { retries: 8, initialRetryTime: 200 },
    });
  const kafka = newKafka(kafkaClientId(config.kafka));
  const newTransport = await transportMaker(config.kafka, newKafka, logger);
  const transport = newTransport(kafkaClientId(config.kafka));
  const transports = new Map<string, KafkaTransport>();
  const registry = new SchemaRegistry({ host: config.schemaRegistryUrl, retry: { retries: 5 } });
  const prefix = config.kafka.topicPrefix;
  const topic = (kind: TopicKind) => topicName(config.chain, kind, prefix);
  const ids = new Map<TopicKind, number>();
  /** Per kind: the registered writer type and the compiled wire transform. */
  const encoders = new Map<TopicKind, (record: unknown, slab?: EncodeSlab) => Buffer>();
  /**
   * Per schema id: how to read a message body. Ids of a current schema (any kind's) read with
   * that kind's schema without the wire fields as the reader (no copy); other ids (older schemas,
   * other producers) with the writer's type, then {@link fromWire}.
   */
  const readers = new Map<number, (body: Buffer) => unknown>();
  const current = (Object.keys(TOPICS) as TopicKind[]).map((kind) => ({
    fingerprint: avro.Type.forSchema(TOPICS[kind].schema as avro.Schema).fingerprint(),
    reader: avro.Type.forSchema(stripWireFields(TOPICS[kind].schema) as avro.Schema, { omitRecordMethods: true }),
  }));
  const readerOf = async (id: number): Promise<(body: Buffer) => unknown> => {
    let read = readers.get(id);
    if (!read) {
      const writer = (await registry.getSchema(id)) as unknown as avro.Type;
      const fp = writer.fingerprint();
      const mine = current.find((c) => c.fingerprint.equals(fp));
      if (mine) {
        const resolver = mine.reader.createResolver(writer);
        read = (body) => mine.reader.fromBuffer(body, resolver);
      } else read = (body) => fromWire(writer.fromBuffer(body));
      readers.set(id, read);
    }
    return read;
  };

  const register = async (kind: TopicKind): Promise<number> => {
    let id = ids.get(kind);
    if (id === undefined) {
      const res = await registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(TOPICS[kind].schema) },
        { subject: subjectOf(topic(kind)) },
      );
      id = res.id;
      ids.set(kind, id);
    }
    return id;
  };

  const encoder: Bus["encoder"] = async (kind) => {
    let enc = encoders.get(kind);
    if (!enc) {
      const id = await register(kind);
      const type = (await registry.getSchema(id)) as unknown as avro.Type;
      const wire = compileToWire(TOPICS[kind].schema);
      enc = (record, slab) => {
        const value = wire(record);
        try {
          return encodeFramed(type, id, value, slab ?? newEncodeSlab());
        } catch (err) {
          const paths = invalidPaths(type, value);
          const where = paths.length > 0 ? ` (invalid: ${paths.join(", ")})` : "";
          throw new NonRetryableError("CS_AVRO_ENCODE", `record does not fit the ${kind} schema: ${(err as Error).message}${where}`, {
            cause: err,
          });
        }
      };
      encoders.set(kind, enc);
    }
    return enc;
  };

  if (opts.setup !== false) {
    const admin = transport.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, config.chain, prefix);
    } finally {
      await admin.disconnect();
    }
    for (const kind of Object.keys(TOPICS) as TopicKind[]) await register(kind);
  }

  return {
    transport,
    transportOf(role) {
      let t = transports.get(role);
      if (!t) {
        t = newTransport(kafkaClientId(config.kafka, role));
        transports.set(role, t);
      }
      return t;
    },
    kafka,
    registry,
    chain: config.chain,
    topic,
    encoder,
    async encode(kind, record) {
      return Buffer.from((await encoder(kind))(record));
    },
    async decode(value) {
      if (value === null || value.length < 5 || value[0] !== 0) {
        throw new NonRetryableError("CS_AVRO_DECODE", "message is not Confluent-framed Avro (missing magic byte or schema id)");
      }
      const id = value.readInt32BE(1);
      try {
        const read = readers.get(id) ?? (await readerOf(id));
        return read(value.subarray(5));
      } catch (err) {
        const msg = (err as Error).message ?? String(err);
        if (registryUnreachable(msg)) throw err;
        throw new NonRetryableError("CS_AVRO_DECODE", `cannot decode Avro: ${msg}`, { cause: err });
      }
    },
    groupId(stage) {
      return consumerGroupId(config.kafka, config.chain, stage);
    },
  };
}

/**
 * Moves the consumer groups of some stages to the end of every existing topic of the bus's chain,
 * so that they start after every record already there. For a chain that starts again from block
 * 0 on every run (npm start's embedded anvil chain): records of earlier runs must not be indexed,
 * matched or notified again. Commits each partition's high watermark for each stage's group,
 * which needs the groups to have no running members: call it before the stages start.
 *
 * Done as kafkajs's `admin.setOffsets` does it (a consumer of the group joins, pauses, seeks and
 * stops after its first fetch, committing the seeked offsets), but with one consumer per group
 * for all topics at once and a 100 ms fetch wait: `setOffsets` takes one topic per call and waits
 * out the default 5 s fetch, ~4 s per topic and group (46 s for one group in
 * test/integration/pipeline/skip-existing.test.ts).
 * @throws Error when a group still has running members (kafkajs's state in the message), or the
 *   client's errors (Kafka unreachable).
 */
export async function skipExistingRecords(bus: Bus, stages: readonly string[]): Promise<void> {
  const admin = bus.transport.admin();
  await admin.connect();
  let ends: Map<string, Awaited<ReturnType<typeof admin.fetchTopicOffsets>>>;
  try {
    const existing = new Set(await admin.listTopics());
    const topics = (Object.keys(TOPICS) as TopicKind[]).map((kind) => bus.topic(kind)).filter((t) => existing.has(t));
    // Explicit high watermarks: kafkajs resetOffsets({earliest: false}) commits the marker -1,
    // which a joining consumer reads as "no offset" (and then starts from the beginning).
    ends = new Map(await Promise.all(topics.map(async (t) => [t, await admin.fetchTopicOffsets(t)] as const)));
  } finally {
    await admin.disconnect();
  }
  if (ends.size === 0) return;
  // The groups are independent: they move at once.
  await Promise.all(stages.map((stage) => moveGroupTo(bus, bus.groupId(stage), ends)));
}

/** Commits `ends` (topic → each partition's high watermark) as the offsets of group `groupId`, which must have no running members. */
async function moveGroupTo(
  bus: Bus,
  groupId: string,
  ends: ReadonlyMap<string, ReadonlyArray<{ partition: number; high: string }>>,
): Promise<void> {
  const consumer = bus.transport.consumer({ groupId, maxWaitTimeMs: 100 });
  await consumer.connect();
  try {
    const topics = [...ends.keys()];
    await consumer.subscribe(topics, true);
    const state = await consumer.groupState();
    if (!["Empty", "Dead"].includes(state))
      throw new Error(`consumer group ${groupId} must have no running members to move its offsets; its state: ${state}`);
    await new Promise<void>((resolve, reject) => {
      consumer.on("fetch", () => {
        consumer.stop().then(resolve, reject);
      });
      consumer.run({ eachBatch: async () => {} }).catch(reject);
      // Nothing is consumed: the consumer only carries the seeked offsets to its commit.
      consumer.pause(topics);
      for (const [topic, partitions] of ends) for (const p of partitions) consumer.seek(topic, p.partition, p.high);
    });
  } finally {
    await consumer.disconnect();
  }
}

/** One message to produce on topic kind `K`, its record typed by the kind ({@link RecordOf}). */
export interface OutgoingRecordOf<K extends TopicKind> {
  kind: K;
  key: string;
  record: RecordOf<K>;
  /** Kafka headers, e.g. `{ [SEQ_HEADER]: "42" }` (topics/index.ts); none by default. */
  headers?: Record<string, string>;
}

/** One message to produce: a union discriminated on `kind` (`OutgoingRecord<"events">` is one kind's). */
export type OutgoingRecord<K extends TopicKind = TopicKind> = { [P in K]: OutgoingRecordOf<P> }[K];

/**
 * The ingest sequence number a message carries in its {@link SEQ_HEADER} header, or undefined
 * when it has none (records produced before sequence numbers existed, or by other producers).
 * @throws never: an unparsable header counts as absent.
 */
export function messageSeq(message: Pick<ConsumedMessage, "headers">): number | undefined {
  const raw = message.headers?.[SEQ_HEADER];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (text === undefined) return undefined;
  const n = Number(text.toString());
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Headers that carry a sequence number `seq` ({@link SEQ_HEADER}), or none when `seq` is undefined. */
export function seqHeaders(seq: number | undefined): Record<string, string> | undefined {
  return seq === undefined ? undefined : { [SEQ_HEADER]: String(seq) };
}

/** An idempotent producer that Avro-encodes records per topic kind. */
export interface RecordProducer {
  /** Encodes and sends the records in one request per broker (acks=all). */
  send(records: OutgoingRecord[]): Promise<void>;
  disconnect(): Promise<void>;
  /** The transport's producer underneath (e.g. to send bytes that are not a record). */
  producer: TransportProducer;
}

/** Options of {@link createRecordProducer}. */
export interface RecordProducerOptions {
  /** Largest request, in bytes of keys and values. Default 768 KiB. */
  maxRequestBytes?: number;
  /**
   * Count what `send` delivered in `chainsift_records_produced_total{stage,topic}` of this registry
   * (pipeline/kafka/metrics.ts). Default: not counted.
   */
  metrics?: { registry: Registry; stage: string };
}

/**
 * Creates a connected idempotent producer. `send` splits large batches into requests of at most
 * `maxRequestBytes` (default 768 KiB of keys and values) so no record batch exceeds the broker's
 * `message.max.bytes`.
 *
 * Idempotence: the transport's idempotent producer ({@link TransportProducerOptions.idempotent}:
 * one request in flight, acks=all) so a retried send never duplicates.
 */
export async function createRecordProducer(bus: Bus, opts: RecordProducerOptions = {}): Promise<RecordProducer> {
  const maxRequestBytes = opts.maxRequestBytes ?? 768 * 1024;
  const counted = opts.metrics && { produced: kafkaMetricsOf(opts.metrics.registry).produced, stage: opts.metrics.stage };
  const producer = bus.transport.producer({ idempotent: true });
  await producer.connect();
  return {
    producer,
    async send(records) {
      if (records.length === 0) return;
      const kinds = [...new Set(records.map((r) => r.kind))];
      const encoders = new Map(await Promise.all(kinds.map(async (k) => [k, await bus.encoder(k)] as const)));
      const slab = newEncodeSlab();
      const encoded = records.map((r) => (encoders.get(r.kind) as (record: unknown, slab?: EncodeSlab) => Buffer)(r.record, slab));
      // One request per ~maxRequestBytes, records kept in order; the broker refuses a record batch
      // larger than message.max.bytes (1 MiB by default).
      let byTopic = new Map<string, OutgoingMessage[]>();
      let bytes = 0;
      const flush = async () => {
        if (byTopic.size === 0) return;
        const topicMessages = [...byTopic.entries()].map(([topic, messages]) => ({ topic, messages }));
        byTopic = new Map();
        bytes = 0;
        await producer.sendBatch(topicMessages);
      };
      for (let i = 0; i < records.length; i++) {
        const r = records[i] as OutgoingRecord;
        const value = encoded[i] as Buffer;
        if (bytes > 0 && bytes + value.length + r.key.length > maxRequestBytes) await flush();
        const t = bus.topic(r.kind);
        let list = byTopic.get(t);
        if (!list) {
          list = [];
          byTopic.set(t, list);
        }
        list.push(r.headers ? { key: r.key, value, headers: r.headers } : { key: r.key, value });
        bytes += value.length + r.key.length;
      }
      await flush();
      if (counted) {
        const perKind = new Map<TopicKind, number>();
        for (const r of records) perKind.set(r.kind, (perKind.get(r.kind) ?? 0) + 1);
        for (const [kind, n] of perKind) counted.produced.inc({ stage: counted.stage, topic: kind }, n);
      }
    },
    async disconnect() {
      await producer.disconnect();
    },
  };
}
