import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryableError } from "../../../../lib/errors.js";
import { createRpcSource } from "../../../../pipeline/ingest/rpc.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { startRpcReplay } from "../../../support/rpc-replay.js";
import { type ScriptedRpc, startScriptedRpc, syntheticBlock } from "../../../support/scripted-rpc.js";

type Raw = Record<string, unknown>;

/**
 * fetchBlock checks what the node answered before anything is produced (docs/reorgs.md "Faults"):
 * an answer mixing backends (a load balancer) is a RetryableError, counted by reason.
 */
describe("fetchBlock consistency checks", () => {
  let server: ScriptedRpc;
  /** What the server answers for block 7 next: a mutation of a consistent block. */
  let mutate: (b: { block: Raw; receipts: Raw[] }) => void = () => {};
  beforeAll(async () => {
    server = await startScriptedRpc({
      answer(call) {
        const b = syntheticBlock(7, 3);
        mutate(b);
        if (call.method === "eth_getBlockByNumber") return b.block;
        if (call.method === "eth_getBlockReceipts") return b.receipts;
        return undefined;
      },
    });
  });
  afterAll(() => server.close());

  const fetch7 = async () => {
    const registry = new Registry();
    const source = createRpcSource({ rpcUrl: server.url, registry });
    try {
      const result = await source.fetchBlock(7).catch((err: unknown) => err);
      const counted = (await registry.getSingleMetric("chainsift_ingest_rpc_inconsistent_total")?.get())?.values ?? [];
      return { result, counted: counted.filter((v) => v.value > 0).map((v) => `${v.labels.reason}=${v.value}`) };
    } finally {
      source.destroy();
    }
  };

  it("passes a consistent block", async () => {
    mutate = () => {};
    const { result, counted } = await fetch7();
    expect((result as { receipts: Raw[] }).receipts).toHaveLength(3);
    expect(counted).toEqual([]);
  });

  const cases: Array<[string, string, (b: { block: Raw; receipts: Raw[] }) => void]> = [
    [
      "a receipt of another block",
      "receipt_block_hash",
      (b) => {
        (b.receipts[1] as Raw).blockHash = `0x${"c".repeat(64)}`;
      },
    ],
    [
      "a log of another block",
      "log_block_hash",
      (b) => {
        ((b.receipts[2] as Raw).logs as Raw[])[0]!.blockHash = `0x${"c".repeat(64)}`;
      },
    ],
    ["a receipt missing", "receipt_count", (b) => void b.receipts.pop()],
    ["receipts out of order", "receipt_order", (b) => void b.receipts.reverse()],
    [
      "a receipt with the wrong transactionIndex",
      "receipt_order",
      (b) => {
        (b.receipts[1] as Raw).transactionIndex = "0x2";
      },
    ],
    [
      "cumulativeGasUsed other than the block's gasUsed",
      "gas_used",
      (b) => {
        b.block.gasUsed = "0x1";
      },
    ],
  ];
  for (const [what, reason, m] of cases) {
    it(`retries, never returns, ${what} (reason ${reason})`, async () => {
      mutate = m;
      const { result, counted } = await fetch7();
      expect(result).toBeInstanceOf(RetryableError);
      expect((result as Error).message).toContain(reason);
      expect(counted).toEqual([`${reason}=1`]);
    });
  }

  it("leaves malformed values to the transform (dead-lettered there, not retried for ever)", async () => {
    mutate = (b) => {
      b.block.gasUsed = "not a quantity";
      (b.receipts[0] as Raw).cumulativeGasUsed = 12;
    };
    const { result, counted } = await fetch7();
    expect((result as { receipts: Raw[] }).receipts).toHaveLength(3);
    expect(counted).toEqual([]);
  });
});

describe.skipIf(!hasMainnetFixtures())("fetchBlock consistency checks on the mainnet fixtures", () => {
  for (const blockReceipts of [true, false]) {
    it(`every complete fixture block passes (${blockReceipts ? "eth_getBlockReceipts" : "per-transaction receipts"})`, async () => {
      const blocks = loadCompleteBlocks();
      expect(blocks).toHaveLength(15);
      const replay = await startRpcReplay({ blocks, blockReceipts });
      const source = createRpcSource({ rpcUrl: replay.url });
      try {
        for (const b of blocks) {
          const got = await source.fetchBlock(b.number);
          expect(got?.receipts.length, `block ${b.number}`).toBe((b.block.transactions as unknown[]).length);
        }
      } finally {
        source.destroy();
        await replay.close();
      }
    });
  }
});
if (!hasMainnetFixtures()) console.warn(SKIP_NO_FIXTURES);
