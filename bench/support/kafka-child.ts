/**
 * One side of `npm run bench -- kafka` (bench/kafka.ts): the Kafka client's work alone on the real
 * payloads, in its own process, through the pipeline's transport of the client named by
 * `CHAINSIFT_KAFKA_CLIENT` (pipeline/kafka/select.ts, as the stages get it from the bus):
 * `node --import tsx bench/support/kafka-child.ts <produce|consume> --copies N --start S [--records R]`,
 * with the environment of `configEnv` (test/support/stage-process.ts).
 *
 * - `produce`: the ingest stage's messages of blocks S..S+N×15−1 (the fixture copies: blocks,
 *   transactions, logs, keyed and with a `chainsift-seq` header, Avro with Confluent framing),
 *   4 blocks per send as ingest's default concurrency, each send split into requests of at most
 *   768 KiB (createRecordProducer's limit), through an idempotent producer (acks all). Building and
 *   encoding the records is chainsift's code: timed apart (`process.cpuUsage`) and left out.
 * - `consume`: a consumer group on the three topics from the beginning, `eachBatch` with the
 *   stages' settings (3 partitions at once, 4 MiB per partition, offsets resolved per batch and
 *   committed at most every 500 ms), until R messages were read; each message's key, value and
 *   header are touched, nothing decoded.
 *
 * Prints `{"done":true,"role","client","records","cpuS","excludedS","wallS"}`, `cpuS` being the
 * process's CPU (user + system) from connected to done, the left-out part already subtracted, then exits.
 * @module
 */
import { loadConfig } from "../../lib/config/index.js";
import { createLogger } from "../../lib/logger.js";
import { bundleToMessages } from "../../pipeline/ingest/ingest.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";
import { createBus, newEncodeSlab } from "../../pipeline/kafka/bus.js";
import type { OutgoingMessage, TopicMessages } from "../../pipeline/kafka/transport.js";
import { type FixtureBlock, loadCompleteBlocks } from "../../test/support/fixtures.js";
import { SEQ_HEADER, type TopicKind } from "../../topics/index.js";
import { copyBlock, numberArg } from "./data.js";

const args = process.argv.slice(2);
const role = args[0];
if (role !== "produce" && role !== "consume") throw new Error(`kafka-child: unknown role ${role}`);
const config = loadConfig(process.env);
const logger = createLogger("warn", `kafka-${role}`);
const bus = await createBus({ config, logger, setup: role === "produce" });
const kinds = ["blocks", "transactions", "logs"] as const satisfies readonly TopicKind[];
const cpuS = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Largest request, bytes of keys and values (createRecordProducer's default). */
const MAX_REQUEST_BYTES = 768 * 1024;

const done = (records: number, cpu0: number, wall0: number, excludedS: number) => {
  console.log(
    JSON.stringify({
      done: true,
      role,
      client: bus.transport.name,
      records,
      cpuS: cpuS() - cpu0 - excludedS,
      excludedS,
      wallS: (Date.now() - wall0) / 1000,
    }),
  );
};

if (role === "produce") {
  const base = loadCompleteBlocks();
  const start = numberArg(args, "--start", 20_000_000);
  const copies = numberArg(args, "--copies", 10);
  const last = start + copies * base.length - 1;
  const encoders = new Map(await Promise.all(kinds.map(async (k) => [k, await bus.encoder(k)] as const)));
  const producer = bus.transport.producer({ idempotent: true });
  await producer.connect();
  let excludedS = 0;
  let records = 0;
  let seq = 0;
  const cpu0 = cpuS();
  const wall0 = Date.now();
  for (let n = start; n <= last; n += 4) {
    // chainsift's part: the records of 4 blocks and their Avro bytes (left out).
    const t0 = cpuS();
    const slab = newEncodeSlab();
    const requests: TopicMessages[][] = [];
    let byTopic = new Map<string, OutgoingMessage[]>();
    let bytes = 0;
    for (let b = n; b <= Math.min(last, n + 3); b++) {
      const k = b - start;
      const fb = copyBlock(base[k % base.length] as FixtureBlock, Math.floor(k / base.length), 0, b);
      const headers = { [SEQ_HEADER]: String(++seq) };
      for (const m of bundleToMessages(toBlockBundle(fb.block, fb.receipts))) {
        const encode = encoders.get(m.kind as (typeof kinds)[number]);
        if (!encode) continue;
        const value = encode(m.record, slab);
        if (bytes > 0 && bytes + value.length + m.key.length > MAX_REQUEST_BYTES) {
          requests.push([...byTopic].map(([topic, messages]) => ({ topic, messages })));
          byTopic = new Map();
          bytes = 0;
        }
        const topic = bus.topic(m.kind);
        const list = byTopic.get(topic) ?? [];
        byTopic.set(topic, list);
        list.push({ key: m.key, value, headers });
        bytes += value.length + m.key.length;
        records++;
      }
    }
    if (byTopic.size > 0) requests.push([...byTopic].map(([topic, messages]) => ({ topic, messages })));
    excludedS += cpuS() - t0;
    // The client's part.
    for (const r of requests) await producer.sendBatch(r);
  }
  done(records, cpu0, wall0, excludedS);
  await producer.disconnect();
  process.exit(0);
}

if (role === "consume") {
  const expected = numberArg(args, "--records", 0);
  const consumer = bus.transportOf("consume").consumer({ groupId: bus.groupId("kafka-bench"), maxBytesPerPartition: 4 * 1024 * 1024 });
  await consumer.connect();
  await consumer.subscribe(
    kinds.map((k) => bus.topic(k)),
    true,
  );
  let read = 0;
  let sink = 0;
  const cpu0 = cpuS();
  const wall0 = Date.now();
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  await consumer.run({
    partitionsConsumedConcurrently: 3,
    autoCommitIntervalMs: 500,
    eachBatch: async (batch, control) => {
      for (const m of batch.messages) {
        sink += (m.key?.length ?? 0) + (m.value?.length ?? 0) + (m.headers?.[SEQ_HEADER] ? 1 : 0);
        read++;
      }
      const lastMessage = batch.messages.at(-1);
      if (lastMessage) control.resolveOffset(lastMessage.offset);
      await control.commitOffsetsIfNecessary();
      if (read >= expected) finish();
    },
  });
  await finished;
  done(read, cpu0, wall0, 0);
  if (sink < 0) console.log("");
  await consumer.disconnect();
  process.exit(0);
}
