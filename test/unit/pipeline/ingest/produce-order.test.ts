/**
 * Ingest produces a block's transactions, logs and traces before its block record, in a send of
 * their own: a consumer that reads a block record finds the block's records already in their topics
 * (the match stage's settled height, pipeline/match/settled.ts). Real mainnet fixture blocks.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../lib/logger.js";
import { createIngester } from "../../../../pipeline/ingest/ingest.js";
import type { ChainSource } from "../../../../pipeline/ingest/rpc.js";
import type { OutgoingRecord } from "../../../../pipeline/kafka/bus.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { recordingProducer } from "../../../support/scripted-chain.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

describe.skipIf(!fixtures)("ingest's produce order", () => {
  it("sends a block's records, then (once they are acknowledged) its block record", async () => {
    const fb = loadCompleteBlocks().find((b) => (b.receipts ?? []).some((r) => ((r as { logs?: unknown[] }).logs ?? []).length > 0));
    if (fb === undefined) throw new Error("no fixture block with logs");
    const source: ChainSource = {
      chainId: async () => 1,
      headNumber: async () => fb.number,
      blockHash: async () => fb.hash,
      fetchBlock: async () => ({ block: fb.block, receipts: fb.receipts ?? [] }),
      fetchTraces: async () => [],
      destroy: () => {},
    };
    const calls: OutgoingRecord[][] = [];
    const recording = recordingProducer();
    const producer = { ...recording.producer, send: async (records: OutgoingRecord[]) => void calls.push([...records]) };
    await createIngester({ source, producer, logger: createLogger("silent", "test"), traces: false }).ingestBlock(fb.number);
    expect(calls.map((c) => [...new Set(c.map((m) => m.kind))].sort())).toEqual([["logs", "transactions"], ["blocks"]]);
    expect(calls[1]?.map((m) => m.key)).toEqual([fb.hash]);
  });
});
