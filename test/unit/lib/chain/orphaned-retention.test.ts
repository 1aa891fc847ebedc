/**
 * Ingest remembers orphaned blocks (lib/chain/state.ts `orphaned`) as long as the topics the index
 * stage reads can still hold their records: a topic that keeps records longer would let a rebuild
 * from the topics write orphaned records again after the set forgot them (docs/reorgs.md).
 */
import { describe, expect, it } from "vitest";
import {
  createMemoryChainState,
  KAFKA_DEFAULT_SEGMENT_MS,
  ORPHANED_RETENTION_MS,
  RECORD_TOPICS_RETENTION_MS,
} from "../../../../lib/chain/state.js";
import { TOPICS, type TopicKind } from "../../../../topics/index.js";

/** The topics the index stage consumes by default (pipeline/index/indexer.ts `startIndexStage`). */
const INDEXED: TopicKind[] = ["blocks", "transactions", "logs", "events", "traces", "reorgs"];

describe("how long orphaned blocks are remembered", () => {
  it.each(INDEXED)("covers every record the %s topic can still hold", (kind) => {
    const config = TOPICS[kind].config;
    expect(Number(config["retention.ms"])).toBeLessThanOrEqual(RECORD_TOPICS_RETENTION_MS);
    expect(Number(config["segment.ms"] ?? KAFKA_DEFAULT_SEGMENT_MS)).toBeLessThanOrEqual(KAFKA_DEFAULT_SEGMENT_MS);
  });
  it("is the longest retention plus a segment's lifetime: 14 days", () => {
    expect(ORPHANED_RETENTION_MS).toBe(
      Math.max(...INDEXED.map((k) => Number(TOPICS[k].config["retention.ms"]))) + KAFKA_DEFAULT_SEGMENT_MS,
    );
    expect(ORPHANED_RETENTION_MS).toBe(14 * 24 * 3600 * 1000);
  });

  it("in memory too: an orphaned block voids the records numbered before its announcement, not those after", async () => {
    const state = createMemoryChainState(100);
    const before = await state.reserveSeq(3); // 100..102
    await state.announce([{ number: 5, hash: "0xAA", replacedBy: null }]);
    const after = await state.reserveSeq(1);
    expect(before).toBe(100);
    expect(after).toBe(103);
    expect(await state.orphanedSince(["0xaa", "0xbb"])).toEqual(new Map([["0xaa", 103]]));
    await state.prune(10, 10);
    expect((await state.orphanedSince(["0xAA"])).get("0xaa")).toBe(103);
    await state.reset();
    expect((await state.orphanedSince(["0xaa"])).size).toBe(0);
  });
});
