/**
 * The wire fields (topics/wire.ts): exact decimals for every quantity and int/uint event argument,
 * `timestampMs` for the block time, written to Kafka with the Avro schemas and removed again for
 * chainsift's own stages. On the mainnet fixtures the doubles (`num`) of some transaction values
 * are inexact; `dec` equals the hex exactly for every one.
 */
import avro from "avsc";
import { describe, expect, it } from "vitest";
import { toBlockBundle } from "../../../pipeline/ingest/transform.js";
import { eventSchema, transactionSchema } from "../../../topics/schemas.js";
import { fromWire, toWire } from "../../../topics/wire.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

describe("wire fields", () => {
  it("adds dec to int/uint event argument values (two's complement for int) and removes it again", () => {
    const event = {
      event: "Swap",
      timestamp: "2023-04-13T08:39:11",
      args: [
        { name: "amount0", pos: 0, value: { hex: `0x${"f".repeat(63)}6`, num: -10, scaled: null, type: "int256" } },
        { name: "to", pos: 1, value: { hex: "0x00000000000000000000000000000000000000aa", num: null, scaled: null, type: "address" } },
        { name: "v", pos: 2, value: { hex: "0xde0b6b3a7640000", num: 1e18, scaled: 1, type: "uint256" } },
      ],
    };
    const wire = toWire(event) as { timestampMs: number; args: Array<{ value: { dec: string | null } }> };
    expect(wire.args.map((a) => a.value.dec)).toEqual(["-10", null, "1000000000000000000"]);
    expect(wire.timestampMs).toBe(Date.UTC(2023, 3, 13, 8, 39, 11));
    expect(fromWire(wire)).toEqual(event);
    expect(event.args[0]?.value).not.toHaveProperty("dec"); // the input is not mutated
  });

  it("round-trips through the event schema with the wire fields", () => {
    const type = avro.Type.forSchema(eventSchema as avro.Schema);
    const record = {
      event: "Transfer",
      signature: "Transfer(address,address,uint256)",
      standard: "ERC-20",
      source: "standard",
      args: [{ name: "value", pos: 2, value: { hex: "0x1", num: 1, scaled: null, type: "uint256" } }],
      logIndex: { num: 1, raw: "0x1" },
      transactionIndex: { num: 2, raw: "0x2" },
      transactionHash: "0xaa",
      address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
      blockHash: "0xbb",
      blockNumber: { num: 3, raw: "0x3" },
      error: null,
      str: "",
      timestamp: "2023-04-13T08:39:11",
    };
    const decoded = type.fromBuffer(type.toBuffer(toWire(record))) as Record<string, unknown>;
    expect(decoded.timestampMs).toBe(Date.UTC(2023, 3, 13, 8, 39, 11));
    expect((decoded.blockNumber as { dec: string }).dec).toBe("3");
    expect(fromWire(decoded)).toEqual(record);
  });
});

describe.skipIf(!fixtures)("exact values on the mainnet fixtures", () => {
  it("dec equals the hex of every transaction value, where num does not always", () => {
    const type = avro.Type.forSchema(transactionSchema as avro.Schema);
    let inexact = 0;
    let count = 0;
    for (const fb of loadCompleteBlocks()) {
      for (const tx of toBlockBundle(fb.block, fb.receipts).transactions) {
        const read = type.fromBuffer(type.toBuffer(toWire(tx))) as { value: { num: number; raw: string; dec: string } };
        expect(read.value.dec).toBe(BigInt(tx.value.raw).toString());
        if (BigInt(Math.round(read.value.num)) !== BigInt(tx.value.raw)) inexact++;
        count++;
      }
    }
    expect(count).toBeGreaterThan(1000);
    expect(inexact).toBeGreaterThan(0); // what dec is for: the doubles are not exact
  });
});
