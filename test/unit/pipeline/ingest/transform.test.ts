import { describe, expect, it } from "vitest";
import { MalformedRpcDataError, quantity } from "../../../../lib/chain/rpc-values.js";
import { logId } from "../../../../lib/records.js";
import { bundleToMessages } from "../../../../pipeline/ingest/ingest.js";
import { isoTimestamp, toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

describe("quantity and timestamps", () => {
  it("parses hex quantities and re-renders raw without leading zeros", () => {
    expect(quantity("0x01036640", "x")).toEqual({ num: 17000000, raw: "0x1036640" });
    expect(quantity("0x0", "x")).toEqual({ num: 0, raw: "0x0" });
  });
  it("rejects non-hex with the path", () => {
    expect(() => quantity("12", "block.number")).toThrow(MalformedRpcDataError);
    expect(() => quantity(undefined, "block.number")).toThrow(/block\.number/);
  });
  it("renders ISO 8601 without zone", () => {
    expect(isoTimestamp(1681338455)).toBe("2023-04-12T22:27:35");
  });
});

describe.skipIf(!fixtures)("toBlockBundle on real mainnet blocks", () => {
  const blocks = fixtures ? loadCompleteBlocks() : [];

  it("keeps one transaction per tx and one log per receipt log, for every complete block", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(15);
    for (const fb of blocks) {
      const bundle = toBlockBundle(fb.block, fb.receipts);
      const rawTxs = fb.block.transactions as Array<Record<string, unknown>>;
      expect(bundle.block.number.num).toBe(fb.number);
      expect(bundle.block.hash).toBe(fb.hash);
      expect(bundle.transactions.map((t) => t.hash)).toEqual(rawTxs.map((t) => String(t.hash).toLowerCase()));
      const rawLogCount = (fb.receipts ?? []).reduce((n, r) => n + (r.logs as unknown[]).length, 0);
      expect(bundle.logs).toHaveLength(rawLogCount);
      // Log ids are unique within a block (they are Kafka keys and ES _ids).
      expect(new Set(bundle.logs.map(logId)).size).toBe(rawLogCount);
      // gasUsed of the block equals the last receipt's cumulativeGasUsed.
      const last = bundle.transactions.at(-1);
      if (last) expect(last.cumulativeGasUsed?.num).toBe(bundle.block.gasUsed.num);
    }
  });

  it("renders block 17000000 as the contract describes (102 txs, 237 logs, checksummed addresses)", () => {
    const fb = blocks.find((b) => b.number === 17_000_000);
    expect(fb).toBeDefined();
    const bundle = toBlockBundle(fb!.block, fb!.receipts);
    expect(bundle.transactions).toHaveLength(102);
    expect(bundle.logs).toHaveLength(237);
    expect(bundle.block.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    expect(bundle.block.timestamp).toBe(isoTimestamp(Number(fb!.block.timestamp)));
    const tx = bundle.transactions[0]!;
    expect(tx.from).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(tx.from).not.toBe(tx.from.toLowerCase()); // EIP-55 mixed case
    expect(tx.blockNumber).toEqual({ num: 17_000_000, raw: "0x1036640" });
    expect(tx.status).toBe(1);
    const messages = bundleToMessages(bundle);
    expect(messages.filter((m) => m.kind === "blocks")).toHaveLength(1);
    expect(messages.filter((m) => m.kind === "transactions")).toHaveLength(102);
    expect(messages.filter((m) => m.kind === "logs").map((m) => m.key)).toEqual(bundle.logs.map(logId));
  });

  it("handles pre-Byzantium receipts (status null, root set) of block 47219", () => {
    const fb = blocks.find((b) => b.number === 47219);
    const bundle = toBlockBundle(fb!.block, fb!.receipts);
    expect(bundle.transactions.every((t) => t.status === null)).toBe(true);
    expect(bundle.block.baseFeePerGas).toBeNull();
    expect(bundle.block.withdrawalsCount).toBeNull();
  });

  it("refuses receipts that do not match the transactions", () => {
    const fb = blocks.find((b) => b.number === 17_000_000)!;
    expect(() => toBlockBundle(fb.block, fb.receipts!.slice(1))).toThrow(MalformedRpcDataError);
    const swapped = [...fb.receipts!];
    [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
    expect(() => toBlockBundle(fb.block, swapped)).toThrow(/receipt is for/);
  });

  it("refuses a block with transaction hashes only", () => {
    const fb = blocks.find((b) => b.number === 17_000_000)!;
    const hashesOnly = { ...fb.block, transactions: (fb.block.transactions as Array<{ hash: string }>).map((t) => t.hash) };
    expect(() => toBlockBundle(hashesOnly, null)).toThrow(/full transaction object/);
  });

  it("pairs real geth callTracer traces with their transactions", () => {
    const traced = blocks.filter((b) => b.traces);
    expect(traced.length).toBeGreaterThanOrEqual(8);
    for (const fb of traced) {
      const bundle = toBlockBundle(fb.block, fb.receipts, fb.traces);
      expect(bundle.traces).toHaveLength(bundle.transactions.length);
      bundle.traces.forEach((t, i) => {
        expect(t.transactionHash).toBe(bundle.transactions[i]?.hash);
        const frame = JSON.parse(t.frameJson) as { from: string; type: string };
        expect(frame.from.toLowerCase()).toBe(bundle.transactions[i]?.from.toLowerCase());
        expect(frame.type).toMatch(/^(CALL|CREATE|CREATE2)$/);
      });
    }
    const fb = traced[0]!;
    expect(() => toBlockBundle(fb.block, fb.receipts, fb.traces!.slice(1))).toThrow(/call traces/);
  });
});
