/**
 * Call traces come from a second JSON-RPC call, which a load-balanced provider may answer from a
 * backend on another branch (issue 19 §1, a hole found by the transport's review): traces that do
 * not belong to the block's transactions are fetched again with the block, never attached to the
 * wrong transactions and never dead-lettered as malformed. Runs on real mainnet fixture blocks and
 * their recorded callTracer frames (skips without ../shared).
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../lib/logger.js";
import { createIngester, TRACE_MATCH_ATTEMPTS } from "../../../../pipeline/ingest/ingest.js";
import type { ChainSource } from "../../../../pipeline/ingest/rpc.js";
import { tracesMismatch } from "../../../../pipeline/ingest/transform.js";
import { type FixtureBlock, hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { recordingProducer } from "../../../support/scripted-chain.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** The frames a node's debug_traceBlockByNumber gives for a fixture block, each naming its transaction. */
const framesOf = (fb: FixtureBlock) =>
  (fb.traces ?? []).map((r, i) => ({ ...r, txHash: (fb.block.transactions as Array<{ hash: string }>)[i]?.hash }));

describe("tracesMismatch (pure)", () => {
  const txs = [{ hash: "0xAA" }, { hash: "0xbb" }];
  it("accepts frames that name the block's transactions in order (case-insensitive) or name none", () => {
    expect(tracesMismatch([{ txHash: "0xaa" }, { txHash: "0xBB" }], txs)).toBeNull();
    expect(tracesMismatch([{}, {}], txs)).toBeNull();
  });
  it("refuses another count of frames and a frame naming another transaction", () => {
    expect(tracesMismatch([{ txHash: "0xaa" }], txs)).toBe("1 call traces for 2 transactions");
    expect(tracesMismatch([{ txHash: "0xbb" }, { txHash: "0xaa" }], txs)).toMatch(/^call trace 0 is of transaction 0xbb/);
  });
});

describe.skipIf(!fixtures)("the ingester with traces from another branch (mainnet fixture blocks)", () => {
  const traced = fixtures ? loadCompleteBlocks().filter((b) => (b.traces?.length ?? 0) > 1) : [];

  /** A source over two fixture blocks whose trace call answers with `answers` in turn (then the right frames). */
  const sourceOf = (fb: FixtureBlock, answers: Array<Record<string, unknown>[]>): ChainSource => ({
    chainId: async () => 1,
    headNumber: async () => fb.number,
    blockHash: async () => fb.hash,
    fetchBlock: async () => ({ block: fb.block, receipts: fb.receipts ?? [] }),
    fetchTraces: async () => answers.shift() ?? framesOf(fb),
    destroy: () => {},
  });
  const ingesterOf = (source: ChainSource, registry: Registry) => {
    const { producer, sent } = recordingProducer();
    const ingester = createIngester({ source, producer, logger: createLogger("silent", "test"), traces: true, registry });
    return { ingester, sent };
  };
  const mismatched = async (registry: Registry) =>
    (await registry.getSingleMetric("chainsift_ingest_traces_mismatched_total")?.get())?.values[0]?.value ?? 0;

  it("fetches again when the traces are another block's (same count, other transactions) and attaches the right ones", async () => {
    const [fb, other] = traced.filter((b, _, all) => all.some((o) => o !== b && o.traces?.length === b.traces?.length)).slice(0, 2);
    const target = fb ?? traced[0]!;
    // Another block's frames cut or padded to the same count: a backend on another branch.
    const foreign = framesOf(other ?? traced[1]!);
    const sameCount = Array.from({ length: target.traces!.length }, (_, i) => foreign[i % foreign.length]!);
    const registry = new Registry();
    const { ingester, sent } = ingesterOf(sourceOf(target, [sameCount]), registry);
    const bundle = await ingester.ingestBlock(target.number);
    const txHashes = (target.block.transactions as Array<{ hash: string }>).map((t) => t.hash.toLowerCase());
    expect(bundle?.traces.map((t) => t.transactionHash)).toEqual(txHashes);
    expect(bundle?.traces.map((t) => t.frameJson)).toEqual(target.traces!.map((f) => JSON.stringify(f)));
    expect(sent.filter((m) => m.kind === "dead-letter")).toEqual([]);
    expect(await mismatched(registry)).toBe(1);
  });

  it("another count of frames is fetched again too; traces that never match leave the block produced without them, not dead-lettered", async () => {
    const target = traced[0]!;
    const short = framesOf(target).slice(1);
    const registry = new Registry();
    const { ingester, sent } = ingesterOf(
      sourceOf(
        target,
        Array.from({ length: TRACE_MATCH_ATTEMPTS }, () => short),
      ),
      registry,
    );
    const bundle = await ingester.ingestBlock(target.number);
    expect(bundle?.block.hash).toBe(target.hash);
    expect(bundle?.traces).toEqual([]);
    expect(sent.filter((m) => m.kind === "dead-letter")).toEqual([]);
    expect(sent.filter((m) => m.kind === "blocks")).toHaveLength(1);
    expect(await mismatched(registry)).toBe(TRACE_MATCH_ATTEMPTS);
  });
});
