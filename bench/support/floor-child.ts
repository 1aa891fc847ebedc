/**
 * The library floor of `npm run bench -- ingest --floor` (issue 23): one stage's work done with the
 * same libraries, Kafka topics, message shapes and Elasticsearch indices as chainsift's stage, but
 * with none of chainsift's own code in the measured path. Run as its own process, like a stage:
 * `node --import tsx bench/support/floor-child.ts <ingest|decode|index> --copies N --start S [--from F --to T]`,
 * with the environment of `configEnv` (test/support/stage-process.ts; read once by `loadConfig`).
 *
 * What each role does per record, and nothing else:
 * - `ingest`: fetches every block of F..T from the JSON-RPC node (`CHAINSIFT_RPC_URL`) as chainsift's
 *   ingest does (one JSON-RPC batch of `eth_getBlockByNumber(n, true)` + `eth_getBlockReceipts(n)`,
 *   `CHAINSIFT_INGEST_CONCURRENCY` blocks at a time, Node's `fetch` + `JSON.parse`), then Avro-encodes
 *   the block's records (Confluent framing) and produces them with a `chainsift-seq` header through
 *   the idempotent producer of the pipeline's transport (acks all, requests of at most 768 KiB; kafkajs
 *   unless `CHAINSIFT_KAFKA_CLIENT` says `platformatic`). The records themselves
 *   (the shape that chainsift's transform and wire fields give them) are built per block from the
 *   same fixture copies the replay node serves, with their CPU measured and left out (the
 *   transform is chainsift's code; see `excluded` below).
 *   It writes its JSON-RPC requests itself rather than through lib/rpc/ (the one client of the
 *   service), to measure `fetch` + `JSON.parse` alone: exempted in test/unit/lib/rpc/one-client.test.ts.
 * - `decode`: consumes the logs topic (the transport's `eachBatch`), Avro-decodes every log, decodes its
 *   event with chainsift's decoder (CPU measured and left out), Avro-encodes and produces it.
 * - `index`: consumes the blocks, transactions, logs and events topics, Avro-decodes each record with
 *   the reader schema without the wire fields (as chainsift's bus does), and writes them with the
 *   Elasticsearch client's bulk helper (5 MiB requests, `external_gte` versions from the header,
 *   the same `filter_path`) into the chain's indices; counts them in
 *   `chainsift_index_documents_total{result="written"}` on its /metrics, like the index stage.
 *
 * Prints `{"role","pid","ready":true,"metrics"?}` once set up (topics, schemas, consumers joined)
 * and, for `ingest`, `{"msg":"backfill done","excludedCpuS"}` after the last block is acknowledged,
 * then exits; `decode` prints `{"msg":"excluded","excludedCpuS"}` after every batch.
 * SIGTERM/SIGINT stop the consumers and exit 0. Only 127.0.0.1 services (the harness's config).
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { Kafka, logLevel } from "kafkajs";
import { Counter, Registry } from "prom-client";
import { indexName } from "../../es/mappings.js";
import { loadConfig } from "../../lib/config/index.js";
import { createLogger } from "../../lib/logger.js";
import { eventId, type LogRecord, logId, type RecordKind, recordId } from "../../lib/records.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { ensureIndices } from "../../pipeline/index/indexer.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";
import { type EncodeSlab, encodeFramed, ensureTopics, newEncodeSlab } from "../../pipeline/kafka/bus.js";
import { transportMaker } from "../../pipeline/kafka/select.js";
import { type FixtureBlock, loadCompleteBlocks } from "../../test/support/fixtures.js";
import { SEQ_HEADER, subjectOf, TOPICS, type TopicKind, topicName } from "../../topics/index.js";
import { stripWireFields, toWire } from "../../topics/wire.js";
import { copyBlock, numberArg } from "./data.js";

const args = process.argv.slice(2);
const role = args[0];
if (role !== "ingest" && role !== "decode" && role !== "index") throw new Error(`floor-child: unknown role ${role}`);
const config = loadConfig(process.env);
const prefix = config.kafka.topicPrefix;
const topic = (kind: TopicKind) => topicName(config.chain, kind, prefix);
/**
 * The Kafka client: the pipeline's transport of `CHAINSIFT_KAFKA_CLIENT` (pipeline/kafka/select.ts;
 * `npm run bench -- ingest --floor --client platformatic`), a thin mapping onto the library in both
 * cases (kafkajs's own producer and `eachBatch`; `@platformatic/kafka`'s producer and fetch calls).
 */
const transport = (
  await transportMaker(
    config.kafka,
    (clientId) => new Kafka({ clientId, brokers: config.kafka.brokers, logLevel: logLevel.WARN }),
    createLogger("warn", `floor-${role}`),
  )
)(`floor-${role}`);
const registry = new SchemaRegistry({ host: config.schemaRegistryUrl });

/**
 * `--batched`: one Kafka message per block and kind, its value an Avro array of the kind's records
 * (what a topic format of one message per block would cost; not chainsift's format).
 */
const batched = args.includes("--batched");

/** An avsc type of a kind's records: the record, or with `--batched` an array of it. */
const typeOf = (schema: unknown, opts?: Partial<avro.ForSchemaOptions>): avro.Type =>
  avro.Type.forSchema((batched ? { type: "array", items: schema } : schema) as avro.Schema, opts);

/** Registers a kind's schema (idempotent) and returns its id with its avsc writer type ({@link typeOf}). */
async function schemaOf(kind: TopicKind): Promise<{ id: number; type: avro.Type }> {
  const schema = TOPICS[kind].schema;
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: subjectOf(topic(kind)) });
  return { id, type: typeOf(schema) };
}

/** An idempotent producer as chainsift's (pipeline/kafka/bus.ts `createRecordProducer`: the transport's, acks all, the Java partitioner). */
async function producer() {
  const p = transport.producer({ idempotent: true });
  await p.connect();
  return p;
}

type Out = { topic: string; key: string; value: Buffer; headers: Record<string, string> };

/** Sends messages in requests of at most 768 KiB of keys and values, in order. */
async function sendAll(p: Awaited<ReturnType<typeof producer>>, messages: Out[]): Promise<void> {
  let byTopic = new Map<string, Array<Omit<Out, "topic">>>();
  let bytes = 0;
  const flush = async () => {
    if (byTopic.size === 0) return;
    const topicMessages = [...byTopic].map(([t, ms]) => ({ topic: t, messages: ms }));
    byTopic = new Map();
    bytes = 0;
    await p.sendBatch(topicMessages);
  };
  for (const m of messages) {
    if (bytes > 0 && bytes + m.value.length + m.key.length > 768 * 1024) await flush();
    const list = byTopic.get(m.topic) ?? [];
    byTopic.set(m.topic, list);
    list.push({ key: m.key, value: m.value, headers: m.headers });
    bytes += m.value.length + m.key.length;
  }
  await flush();
}

/** `--batched`: one message of all `items` (an Avro array), keyed by the first item's key. */
function batchMessage(
  kind: TopicKind,
  items: ReadonlyArray<{ key: string; record: unknown }>,
  schema: { id: number; type: avro.Type },
  slab: EncodeSlab,
  headers: Record<string, string>,
): Out {
  const value = encodeFramed(
    schema.type,
    schema.id,
    items.map((i) => i.record),
    slab,
  );
  return { topic: topic(kind), key: (items[0] as { key: string }).key, value, headers };
}

const base = loadCompleteBlocks();
const start = numberArg(args, "--start", 20_000_000);
const copies = numberArg(args, "--copies", 10);
/** Block `n` of the replay node's copies (bench/support/data.ts `contiguousCopies`), built on demand so nothing large stays in the heap. */
const blockAt = (n: number): FixtureBlock => {
  const k = n - start;
  return copyBlock(base[k % base.length] as FixtureBlock, Math.floor(k / base.length), 0, n);
};
/**
 * CPU of chainsift's own code this process runs to know what to send (the transform, the wire
 * fields, the event decoder): measured with `process.cpuUsage` around it, microseconds, and
 * reported in the `backfill done` line (ingest) or on /metrics (decode) so the benchmark leaves it out.
 */
let excludedUs = 0;
const excluded = <T>(fn: () => T): T => {
  const t0 = process.cpuUsage();
  try {
    return fn();
  } finally {
    const d = process.cpuUsage(t0);
    excludedUs += d.user + d.system;
  }
};
const stops: Array<() => Promise<void>> = [];
const stop = () =>
  void Promise.all(stops.map((s) => s())).finally(() => {
    process.exit(0);
  });
process.once("SIGTERM", stop);
process.once("SIGINT", stop);

// Whichever role starts first creates the chain's topics (as every chainsift stage does).
const admin = transport.admin();
await admin.connect();
await ensureTopics(admin, config.chain, prefix);
await admin.disconnect();

if (role === "ingest") {
  const kinds = ["blocks", "transactions", "logs"] as const;
  const schemas = new Map(await Promise.all(kinds.map(async (k) => [k, await schemaOf(k)] as const)));
  /** The records of block `n` in their wire shape: chainsift's transform (excluded from the measure). */
  const recordsOf = (n: number): Array<{ kind: (typeof kinds)[number]; key: string; record: unknown }> =>
    excluded(() => {
      const fb = blockAt(n);
      const b = toBlockBundle(fb.block, fb.receipts);
      return [
        { kind: "blocks", key: b.block.hash, record: toWire(b.block) },
        ...b.transactions.map((t) => ({ kind: "transactions" as const, key: t.hash, record: toWire(t) })),
        ...b.logs.map((l) => ({ kind: "logs" as const, key: logId(l), record: toWire(l) })),
      ];
    });
  const p = await producer();
  stops.push(() => p.disconnect());
  const from = numberArg(args, "--from", start);
  const to = numberArg(args, "--to", start + copies * base.length - 1);
  const concurrency = config.ingest.concurrency;
  let id = 0;
  /** One JSON-RPC batch for the block with its transactions and its receipts, parsed. */
  const fetchBlock = async (n: number): Promise<unknown> => {
    const hex = `0x${n.toString(16)}`;
    const res = await fetch(config.ingest.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        { jsonrpc: "2.0", id: ++id, method: "eth_getBlockByNumber", params: [hex, true] },
        { jsonrpc: "2.0", id: ++id, method: "eth_getBlockReceipts", params: [hex] },
      ]),
    });
    const body = JSON.parse(await res.text()) as Array<{ result?: unknown }>;
    if (!Array.isArray(body) || body.some((r) => r.result === null || r.result === undefined)) throw new Error(`block ${n}: no answer`);
    return body;
  };
  console.log(JSON.stringify({ role, pid: process.pid, ready: true }));
  let seq = 0;
  const chunk = (n: number) => Array.from({ length: Math.max(0, Math.min(concurrency, to - n + 1)) }, (_, i) => n + i);
  // The next chunk is fetched while the current one is produced, as chainsift's backfill does.
  let next: Promise<unknown[]> | undefined = Promise.all(chunk(from).map(fetchBlock));
  for (let n = from; n <= to && next; n += concurrency) {
    const numbers = chunk(n);
    await next;
    next = n + concurrency <= to ? Promise.all(chunk(n + concurrency).map(fetchBlock)) : undefined;
    next?.catch(() => {});
    const slab = newEncodeSlab();
    const messages: Out[] = [];
    for (const num of numbers) {
      const headers = { [SEQ_HEADER]: String(++seq) };
      const records = recordsOf(num);
      if (batched) {
        for (const kind of kinds) {
          const of = records.filter((r) => r.kind === kind);
          const s = schemas.get(kind) as { id: number; type: avro.Type };
          if (of.length > 0) messages.push(batchMessage(kind, of, s, slab, headers));
        }
      } else
        for (const r of records) {
          const s = schemas.get(r.kind) as { id: number; type: avro.Type };
          messages.push({ topic: topic(r.kind), key: r.key, value: encodeFramed(s.type, s.id, r.record, slab), headers });
        }
    }
    await sendAll(p, messages);
  }
  console.log(JSON.stringify({ msg: "backfill done", excludedCpuS: excludedUs / 1e6 }));
  await p.disconnect();
  process.exit(0);
}

/** A consumer of a chainsift-like group that runs `handle` per fetched batch (offsets resolved per batch, committed after it). */
async function consume(
  group: string,
  kinds: TopicKind[],
  handle: (messages: Array<{ kind: TopicKind; key: string; value: Buffer; seq: string | undefined }>) => Promise<void>,
): Promise<void> {
  const consumer = transport.consumer({ groupId: `${config.kafka.groupPrefix}.floor.${group}`, maxBytesPerPartition: 4 * 1024 * 1024 });
  await consumer.connect();
  stops.push(() => consumer.disconnect());
  const kindOf = new Map(kinds.map((k) => [topic(k), k] as const));
  await consumer.subscribe([...kindOf.keys()], true);
  let joined: () => void = () => {};
  const ready = new Promise<void>((done) => {
    joined = done;
  });
  consumer.on("groupJoin", () => joined());
  await consumer.run({
    eachBatch: async (batch, control) => {
      const kind = kindOf.get(batch.topic) as TopicKind;
      await handle(
        batch.messages.map((m) => ({
          kind,
          key: String(m.key),
          value: m.value as Buffer,
          seq: m.headers?.[SEQ_HEADER]?.toString(),
        })),
      );
      const last = batch.messages.at(-1);
      if (last) control.resolveOffset(last.offset);
    },
  });
  await ready;
}

if (role === "decode") {
  const decoder = createDecoder({ chainId: 1 });
  /** The event of a decoded log in its wire shape: chainsift's decoder (excluded from the measure). */
  const eventOf = (log: LogRecord): { key: string; record: unknown } | undefined =>
    excluded(() => {
      const ev = decoder.decode(log);
      return ev ? { key: eventId(ev), record: toWire(ev) } : undefined;
    });
  const { type: logWriter } = await schemaOf("logs");
  // Read as chainsift's bus reads: the reader schema without the wire fields, resolved against the writer's.
  const logReader = typeOf(stripWireFields(TOPICS.logs.schema), { omitRecordMethods: true });
  const logResolver = logReader.createResolver(logWriter);
  const ev = await schemaOf("events");
  const p = await producer();
  stops.push(() => p.disconnect());
  await consume("decode", ["logs"], async (messages) => {
    const slab = newEncodeSlab();
    const out: Out[] = [];
    for (const m of messages) {
      const decoded = logReader.fromBuffer(m.value.subarray(5), logResolver) as LogRecord | LogRecord[];
      if (Array.isArray(decoded)) {
        const evs = decoded.flatMap((l) => eventOf(l) ?? []);
        if (evs.length > 0) out.push(batchMessage("events", evs, ev, slab, m.seq === undefined ? {} : { [SEQ_HEADER]: m.seq }));
        continue;
      }
      const e = eventOf(decoded);
      if (e)
        out.push({
          topic: topic("events"),
          key: e.key,
          value: encodeFramed(ev.type, ev.id, e.record, slab),
          headers: m.seq === undefined ? {} : { [SEQ_HEADER]: m.seq },
        });
    }
    await sendAll(p, out);
    // What chainsift's own code took so far (the decoder), for the benchmark to leave out.
    console.log(JSON.stringify({ msg: "excluded", excludedCpuS: excludedUs / 1e6 }));
  });
  console.log(JSON.stringify({ role, pid: process.pid, ready: true }));
}

if (role === "index") {
  const es = new Client({ node: config.elasticsearch.url });
  stops.push(() => es.close());
  await ensureIndices(es, config.chain, config.elasticsearch.indexPrefix);
  const metrics = new Registry();
  const written = new Counter({ name: "chainsift_index_documents_total", help: "documents", labelNames: ["result"], registers: [metrics] });
  const server = createServer((_req, res) => {
    void metrics.metrics().then((text) => res.writeHead(200, { "content-type": metrics.contentType }).end(text));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  stops.push(() => new Promise<void>((done) => server.close(() => done())));
  const kinds: Array<[TopicKind, RecordKind]> = [
    ["blocks", "block"],
    ["transactions", "tx"],
    ["logs", "log"],
    ["events", "event"],
  ];
  const readers = new Map(
    await Promise.all(
      kinds.map(async ([k, recordKind]) => {
        const { type: writer } = await schemaOf(k);
        const reader = typeOf(stripWireFields(TOPICS[k].schema), { omitRecordMethods: true });
        const resolver = reader.createResolver(writer);
        return [k, { recordKind, read: (b: Buffer) => reader.fromBuffer(b, resolver) as Rec | Rec[] }] as const;
      }),
    ),
  );
  const indexOf = new Map(kinds.map(([k, rk]) => [k, indexName(config.chain, rk, config.elasticsearch.indexPrefix)] as const));
  type Rec = Record<string, unknown>;
  type Doc = { index: string; id: string; version: number | undefined; doc: Record<string, unknown> };
  await consume(
    "index",
    kinds.map(([k]) => k),
    async (messages) => {
      const docs: Doc[] = messages.flatMap((m) => {
        const r = readers.get(m.kind) as { recordKind: RecordKind; read: (b: Buffer) => Rec | Rec[] };
        const read = r.read(m.value.subarray(5));
        return (Array.isArray(read) ? read : [read]).map((doc) => ({
          index: indexOf.get(m.kind) as string,
          id: recordId(r.recordKind, doc as never),
          version: m.seq === undefined ? undefined : Number(m.seq),
          doc,
        }));
      });
      const stats = await es.helpers.bulk<Doc>({
        datasource: docs,
        onDocument: (d) =>
          [
            d.version === undefined
              ? { index: { _index: d.index, _id: d.id } }
              : { index: { _index: d.index, _id: d.id, version: d.version, version_type: "external_gte" } },
            d.doc,
          ] as never,
        flushBytes: 5 * 1024 * 1024,
        filter_path: "errors,items.*.status,items.*.error",
      });
      written.inc({ result: "written" }, stats.successful);
      if (stats.failed > 0) console.error(`floor index: ${stats.failed} documents refused`);
    },
  );
  console.log(
    JSON.stringify({ role, pid: process.pid, ready: true, metrics: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics` }),
  );
}
