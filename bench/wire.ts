/**
 * `npm run bench -- wire [--copies N] [--rounds R]`: the CPU per record of the Kafka wire path
 * before and after issue 23's ingest-side cuts, in one process without Kafka or the registry, on
 * every record the mainnet fixture blocks make (blocks, transactions, logs, traces, decoded events;
 * N copies, default 10):
 * - `encode before`: the generic `toWire` walk, avsc's `toBuffer` and the Confluent framing of
 *   @kafkajs/confluent-schema-registry's `encode` (`Buffer.concat`), two awaits per record as the
 *   registry client's `encode` and `bus.encode` had;
 * - `encode after`: `compileToWire` per topic schema and `encodeFramed` into a shared slab
 *   (pipeline/kafka/bus.ts), synchronous;
 * - `decode before` / `after`: the writer's `fromBuffer` then `fromWire`, against the current
 *   schema without the wire fields as the reader (`stripWireFields` + avsc's resolver);
 * - `partition before` / `after`: kafkajs's `DefaultPartitioner` murmur2 (64-bit `Long`
 *   emulation) against pipeline/kafka/partitioner.ts's `Math.imul` murmur2, on every record key.
 * CPU time (`process.cpuUsage`, user + system) per record in µs; each pair alternated round by
 * round (default 5 rounds), medians printed, with the ratio. Pure CPU: load on the machine inflates
 * both sides alike, so the ratio is the figure to read.
 * @module
 */
import { createRequire } from "node:module";
import { encode as confluentFrame } from "@kafkajs/confluent-schema-registry/dist/wireEncoder.js";
import avro from "avsc";
import { logId } from "../lib/records.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { bundleToMessages } from "../pipeline/ingest/ingest.js";
import { toBlockBundle } from "../pipeline/ingest/transform.js";
import { encodeFramed, newEncodeSlab } from "../pipeline/kafka/bus.js";
import { murmur2 } from "../pipeline/kafka/partitioner.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { TOPICS, type TopicKind } from "../topics/index.js";
import { compileToWire, fromWire, stripWireFields, toWire } from "../topics/wire.js";
import { numberArg } from "./support/data.js";

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** CPU µs of `fn` (user + system). */
async function cpuUs(fn: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  await fn();
  const d = process.cpuUsage(before);
  return d.user + d.system;
}

/** Runs the wire benchmark (module notes). */
export async function benchWire(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const copies = numberArg(args, "--copies", 10);
  const rounds = numberArg(args, "--rounds", 5);
  const decoder = createDecoder({ chainId: 1 }); // the fixtures are Ethereum mainnet (EIP-155 chain id 1)
  const one: Array<{ kind: TopicKind; key: string; record: unknown }> = [];
  for (const fb of loadCompleteBlocks()) {
    const bundle = toBlockBundle(fb.block, fb.receipts, fb.traces);
    for (const m of bundleToMessages(bundle)) one.push({ kind: m.kind, key: m.key, record: m.record });
    for (const log of bundle.logs) {
      const event = decoder.decode(log);
      if (event) one.push({ kind: "events", key: logId(log), record: event });
    }
  }
  const records = Array.from({ length: copies }, () => one).flat();
  const id = 7;
  const kinds = Object.keys(TOPICS) as TopicKind[];
  const writer = new Map(kinds.map((k) => [k, avro.Type.forSchema(TOPICS[k].schema as avro.Schema)] as const));
  const compiled = new Map(kinds.map((k) => [k, compileToWire(TOPICS[k].schema)] as const));
  const readers = new Map(
    kinds.map((k) => {
      const reader = avro.Type.forSchema(stripWireFields(TOPICS[k].schema) as avro.Schema, { omitRecordMethods: true });
      return [k, { reader, resolver: reader.createResolver(writer.get(k) as avro.Type) }] as const;
    }),
  );
  const type = (k: TopicKind) => writer.get(k) as avro.Type;
  const bodies = records.map((r) => type(r.kind).toBuffer(toWire(r.record)));
  const kafkajsMurmur2 = createRequire(import.meta.url)("kafkajs/src/producer/partitioners/default/murmur2.js") as (key: string) => number;
  const perKind = new Map<TopicKind, number>();
  for (const r of one) perKind.set(r.kind, (perKind.get(r.kind) ?? 0) + 1);
  console.log(
    `bench wire: ${records.length} records (${[...perKind].map(([k, n]) => `${k} ${n * copies}`).join(", ")}), ${rounds} rounds alternated, CPU µs per record (median)`,
  );

  let sink = 0;
  const pairs: Array<{ label: string; before: () => unknown; after: () => unknown }> = [
    {
      label: "encode",
      before: () =>
        Promise.all(
          records.map(async (r) => {
            await undefined; // bus.encode's await of the schema id
            await undefined; // the registry client's await of its schema cache
            return confluentFrame(id, type(r.kind).toBuffer(toWire(r.record)));
          }),
        ),
      after: () => {
        const slab = newEncodeSlab();
        for (const r of records)
          sink += encodeFramed(type(r.kind), id, (compiled.get(r.kind) as (x: unknown) => unknown)(r.record), slab).length;
      },
    },
    {
      label: "decode",
      before: () => {
        for (const [i, r] of records.entries()) sink += fromWire(type(r.kind).fromBuffer(bodies[i] as Buffer)) ? 1 : 0;
      },
      after: () => {
        for (const [i, r] of records.entries()) {
          const { reader, resolver } = readers.get(r.kind) as { reader: avro.Type; resolver: ReturnType<avro.Type["createResolver"]> };
          sink += reader.fromBuffer(bodies[i] as Buffer, resolver) ? 1 : 0;
        }
      },
    },
    {
      label: "partition",
      before: () => {
        for (const r of records) sink ^= kafkajsMurmur2(r.key);
      },
      after: () => {
        for (const r of records) sink ^= murmur2(r.key);
      },
    },
  ];
  for (const p of pairs) {
    const before: number[] = [];
    const after: number[] = [];
    for (let i = 0; i < rounds; i++) {
      before.push((await cpuUs(p.before)) / records.length);
      after.push((await cpuUs(p.after)) / records.length);
    }
    const b = median(before);
    const a = median(after);
    console.log(`  ${p.label.padEnd(9)}: before ${b.toFixed(2)} µs, after ${a.toFixed(2)} µs per record (${(a / b).toFixed(2)}x)`);
  }
  if (sink === 0.5) console.log(""); // keeps the work observable
}
