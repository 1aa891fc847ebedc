import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { rpcCall } from "../../../cli/devchain/rpc.js";
import type { BlockBundle } from "../../../pipeline/ingest/transform.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

describe.skipIf(!up.ok)("ingest follows the head of a real node and unwinds reorgs (anvil)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let pipeline: Pipeline;

  const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);

  beforeAll(async () => {
    h = createHarness();
    anvil = await startAnvil({ blockTimeSec: 0 });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: [] });
  });
  afterAll(async () => {
    await pipeline?.stop();
    await anvil?.stop();
    await h?.cleanup();
  });

  it("ingests new blocks as they are mined and re-ingests the new branch after anvil_reorg", async () => {
    const seen: BlockBundle[] = [];
    const { ingester, close } = await pipeline.createIngester(anvil.rpcUrl);
    const controller = new AbortController();
    const run = ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal, onBlock: (b) => seen.push(b) });
    await rpc("anvil_mine", ["0x5"]);
    await waitFor(async () => seen.some((b) => b.block.number.num === 5), 20_000, 50);
    const before = new Map(seen.map((b) => [b.block.number.num, b.block.hash]));

    // Replace the last 2 blocks (4 and 5) with a new branch of the same height.
    await rpc("anvil_reorg", [2, []]);
    await waitFor(async () => seen.filter((b) => b.block.number.num === 5).length >= 2, 20_000, 50);
    controller.abort();
    const stats = await run;
    await close();

    expect(stats.reorgs).toBeGreaterThanOrEqual(1);
    const latest = new Map(seen.map((b) => [b.block.number.num, b.block.hash]));
    expect(latest.get(3)).toBe(before.get(3)); // below the fork: untouched
    expect(latest.get(4)).not.toBe(before.get(4));
    expect(latest.get(5)).not.toBe(before.get(5));
    // The re-ingested branch is consistent: every block's parent is the block produced before it.
    const reingested = seen.slice(seen.findIndex((b, i) => i > 0 && b.block.number.num <= seen[i - 1]!.block.number.num));
    expect(reingested[0]?.block.number.num).toBe(4);
    expect(reingested[0]?.block.parentHash).toBe(before.get(3));
    expect(reingested[1]?.block.parentHash).toBe(reingested[0]?.block.hash);
  });
});
