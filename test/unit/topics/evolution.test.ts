/**
 * The record schemas evolve BACKWARD-compatibly (issue #9): a consumer with the current schema reads
 * messages written with the schema before the fields of later forks were added, and gets null for
 * them (or their declared default: an event's `source` reads as `standard`). The "old" schema is the
 * current one without the added fields (listed here: the fields added since the first release);
 * decoding resolves writer → reader schema as the Confluent deserializer does (Avro spec "Schema
 * Resolution").
 */
import avro from "avsc";
import { describe, expect, it } from "vitest";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../../pipeline/ingest/transform.js";
import { type AvroSchema, blockSchema, eventSchema, transactionSchema } from "../../../topics/schemas.js";
import { fromWire, toWire } from "../../../topics/wire.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** Fields added after the first release, per schema. */
const ADDED = {
  block: [
    "logsBloom",
    "totalDifficulty",
    "sha3Uncles",
    "mixHash",
    "withdrawalsRoot",
    "withdrawals",
    "parentBeaconBlockRoot",
    "blobGasUsed",
    "excessBlobGas",
    "requestsHash",
    "timestampMs",
  ],
  transaction: [
    "chainId",
    "v",
    "r",
    "s",
    "yParity",
    "accessList",
    "maxFeePerBlobGas",
    "blobVersionedHashes",
    "authorizationList",
    "root",
    "logsBloom",
    "blobGasUsed",
    "blobGasPrice",
    "timestampMs",
  ],
  event: ["timestampMs", "source"],
};

/** What an added field reads as in an old message: its declared default, null unless listed here. */
const OLD_VALUE: Record<string, unknown> = { source: "standard" };

/** The schema without the added fields, also inside the Quantity and EventArgValue records (`dec`). */
function without(schema: AvroSchema, names: readonly string[]): AvroSchema {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (typeof v !== "object" || v === null) return v;
    const o = v as Record<string, unknown>;
    const out = Object.fromEntries(Object.entries(o).map(([k, x]) => [k, strip(x)]));
    if (o.type === "record" && (o.name === "Quantity" || o.name === "EventArgValue")) {
      out.fields = (out.fields as Array<{ name: string }>).filter((f) => f.name !== "dec");
    }
    return out;
  };
  const top = { ...schema, fields: (schema.fields as Array<{ name: string }>).filter((f) => !names.includes(f.name)) };
  return strip(top) as AvroSchema;
}

describe.skipIf(!fixtures)("Avro schema evolution (BACKWARD)", () => {
  const shanghai = fixtures ? loadCompleteBlocks().find((b) => b.number === 17_053_184) : undefined;
  const bundle = shanghai ? toBlockBundle(shanghai.block, shanghai.receipts) : undefined;
  const decoder = createDecoder({ chainId: 1 });
  const event = () => bundle!.logs.map((l) => decoder.decode(l)).find((e) => e !== null && e.error === null)!;

  for (const [kind, schema, record] of [
    ["block", blockSchema, () => bundle!.block],
    ["transaction", transactionSchema, () => bundle!.transactions[0]!],
    ["event", eventSchema, event],
  ] as const) {
    it(`reads ${kind} messages written before the new fields with the current schema (new fields null or their default)`, () => {
      const added = ADDED[kind];
      for (const name of added)
        expect((schema.fields as Array<{ name: string; default?: unknown }>).find((f) => f.name === name)?.default).toEqual(
          OLD_VALUE[name] ?? null,
        );
      const oldType = avro.Type.forSchema(without(schema, added) as avro.Schema);
      const newType = avro.Type.forSchema(schema as avro.Schema);
      const full = record() as unknown as Record<string, unknown>;
      const oldRecord = Object.fromEntries(Object.entries(full).filter(([k]) => !added.includes(k)));
      const written = oldType.toBuffer(oldRecord);
      const read = newType.fromBuffer(written, newType.createResolver(oldType)) as Record<string, unknown>;
      for (const name of added) expect(read[name], name).toEqual(OLD_VALUE[name] ?? null);
      expect((read.timestamp as string).length).toBeGreaterThan(0);
      const { timestampMs: _, ...rest } = fromWire(read) as Record<string, unknown>;
      for (const [k, v] of Object.entries(oldRecord)) expect(rest[k], k).toEqual(v);
      // And the current schema round-trips the full record, new fields and wire fields included.
      expect(fromWire(newType.fromBuffer(newType.toBuffer(toWire(full))))).toEqual(full);
    });
  }
});
