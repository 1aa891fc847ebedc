/**
 * The stages' fast wire path (topics/wire.ts `compileToWire` + pipeline/kafka/bus.ts
 * `encodeFramed`; `stripWireFields` as the reader schema) against the path before it (the generic
 * `toWire` walk, avsc's `toBuffer` and the Confluent header of @kafkajs/confluent-schema-registry's
 * `encode`; `fromWire` of the writer's decoding): the same bytes for every record of every fixture
 * block (blocks, transactions, logs, traces, decoded events) and for reorg, dead-letter and alert
 * records, and the same records decoded. Also kafkajs's murmur2 against the partitioner's.
 */
import { createRequire } from "node:module";
import { encode as confluentFrame } from "@kafkajs/confluent-schema-registry/dist/wireEncoder.js";
import avro from "avsc";
import { describe, expect, it } from "vitest";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { bundleToMessages } from "../../../pipeline/ingest/ingest.js";
import { toBlockBundle } from "../../../pipeline/ingest/transform.js";
import { encodeFramed, newEncodeSlab } from "../../../pipeline/kafka/bus.js";
import { murmur2 } from "../../../pipeline/kafka/partitioner.js";
import { TOPICS, type TopicKind } from "../../../topics/index.js";
import { compileToWire, fromWire, stripWireFields, toWire } from "../../../topics/wire.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** Records of every kind that are not read from the fixtures. */
const synthetic: Array<{ kind: TopicKind; record: unknown }> = [
  {
    kind: "reorgs",
    record: {
      number: 7,
      orphanedHash: "0xaa",
      replacedBy: null,
      ancestorNumber: 6,
      ancestorHash: "0xbb",
      depth: 1,
      detectedAt: "2026-01-01T00:00:00.000Z",
    },
  },
  {
    kind: "dead-letter",
    record: {
      sourceTopic: "rpc:eth_getBlockByNumber",
      partition: -1,
      offset: "7",
      key: null,
      value: Buffer.from("{}"),
      stage: "ingest",
      errorCode: "CS_MALFORMED_RPC_DATA",
      errorMessage: "bad",
      failedAt: "2026-01-01T00:00:00.000Z",
    },
  },
  {
    kind: "alerts",
    record: {
      id: "a1",
      ruleId: "r1",
      ruleVersion: 1,
      ruleName: null,
      accountId: "acc",
      sequence: 3,
      status: "pending",
      confirmations: 0,
      maxConfirmationCount: 12,
      chain: { technology: "evm", blockchain: "ethereum", network: "mainnet" },
      targetType: "Transaction",
      entityId: "0xcc",
      blockHash: "0xdd",
      blockNumber: 7,
      payloadJson: "{}",
      entityJson: "{}",
      actionsJson: "[]",
      emittedAt: "2026-01-01T00:00:00.000Z",
    },
  },
];

/** Every fixture record as ingest and decode produce it, plus {@link synthetic}. */
function allRecords(): Array<{ kind: TopicKind; record: unknown }> {
  const out = [...synthetic];
  if (!fixtures) return out;
  const decoder = createDecoder({ chainId: 1 }); // the fixtures are Ethereum mainnet (EIP-155 chain id 1)
  for (const fb of loadCompleteBlocks()) {
    const bundle = toBlockBundle(fb.block, fb.receipts, fb.traces);
    for (const m of bundleToMessages(bundle)) out.push({ kind: m.kind, record: m.record });
    for (const log of bundle.logs) {
      const event = decoder.decode(log);
      if (event) out.push({ kind: "events", record: event });
    }
  }
  return out;
}

describe("compiled wire transforms and framed encoding", () => {
  const records = allRecords();
  const id = 4242;

  it("encode every record kind to the same bytes as toWire + registry.encode", () => {
    const seen = new Set<TopicKind>();
    // A small slab: many records overflow it, so the slab replacement is exercised too.
    const slab = newEncodeSlab();
    slab.buf = Buffer.alloc(64);
    for (const kind of Object.keys(TOPICS) as TopicKind[]) {
      const type = avro.Type.forSchema(TOPICS[kind].schema as avro.Schema);
      const wire = compileToWire(TOPICS[kind].schema);
      for (const r of records.filter((x) => x.kind === kind)) {
        const before = confluentFrame(id, type.toBuffer(toWire(r.record)));
        const after = encodeFramed(type, id, wire(r.record), slab);
        expect(after.equals(before), `${kind} record differs`).toBe(true);
        seen.add(kind);
      }
    }
    const expected: TopicKind[] = ["reorgs", "dead-letter", "alerts"];
    if (fixtures) expected.push("blocks", "transactions", "logs", "traces", "events");
    for (const kind of expected) expect(seen, kind).toContain(kind);
    if (fixtures) expect(records.length).toBeGreaterThan(3000);
  });

  it("do not mutate their input", () => {
    for (const r of records.slice(0, 500)) {
      const before = JSON.stringify(r.record);
      compileToWire(TOPICS[r.kind].schema)(r.record);
      expect(JSON.stringify(r.record)).toBe(before);
    }
  });

  it("decode with the stripped reader schema to what fromWire made of the writer's record", () => {
    for (const kind of Object.keys(TOPICS) as TopicKind[]) {
      const writer = avro.Type.forSchema(TOPICS[kind].schema as avro.Schema);
      const reader = avro.Type.forSchema(stripWireFields(TOPICS[kind].schema) as avro.Schema, { omitRecordMethods: true });
      const resolver = reader.createResolver(writer);
      for (const r of records.filter((x) => x.kind === kind)) {
        const body = writer.toBuffer(toWire(r.record));
        const expected = fromWire(writer.fromBuffer(body));
        const actual = reader.fromBuffer(body, resolver);
        expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
        expect(actual).toEqual(expected);
      }
    }
  });
});

describe("the key-hash partitioner's murmur2", () => {
  const kafkajsMurmur2 = createRequire(import.meta.url)("kafkajs/src/producer/partitioners/default/murmur2.js") as (
    key: Buffer | string,
  ) => number;

  it("equals kafkajs's on record keys, every length 0..40, non-ASCII strings and bytes", () => {
    const keys: Array<string | Buffer> = ["", "a", "ab", "abc", "é", "日本語のキー", Buffer.from([0xff, 0x00, 0x80, 0x7f, 0x01])];
    for (let n = 0; n <= 40; n++) keys.push("0123456789abcdefghijklmnopqrstuvwxyz!#$%&".slice(0, n));
    for (const r of allRecords().slice(0, 2000)) {
      const rec = r.record as { hash?: string; transactionHash?: string };
      if (rec.hash) keys.push(rec.hash);
      if (rec.transactionHash) keys.push(`${rec.transactionHash}_l_7`);
    }
    for (const key of keys) expect(murmur2(key), String(key)).toBe(kafkajsMurmur2(key));
  });
});
