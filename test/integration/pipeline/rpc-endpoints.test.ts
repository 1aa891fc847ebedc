import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { rpcCall } from "../../../cli/devchain/rpc.js";
import type { BlockBundle } from "../../../pipeline/ingest/transform.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { type ChainFixture, chainFixture } from "../../support/chain-fixture.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { type ScriptedRpc, startScriptedRpc, syntheticBlock } from "../../support/scripted-rpc.js";

const up = await probeStack();

/** An HTTP proxy in front of `target` that answers every other request with 503 (deterministic, no seed). */
async function flakyProxy(target: string) {
  let n = 0;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (n++ % 2 === 0) {
      res.writeHead(503).end("backend unavailable");
      return;
    }
    const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body: Buffer.concat(chunks) });
    res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(!up.ok)("ingest through several JSON-RPC endpoints (real Kafka, anvil)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let pipeline: Pipeline;
  const registry = new Registry();
  let chain: ChainFixture | undefined;

  beforeAll(async () => {
    h = createHarness();
    // No cooldown: the failing endpoint stays first in line, so every other call fails over.
    h.config.ingest = { ...h.config.ingest, rpc: { ...h.config.ingest.rpc, cooldownMs: 0 } };
    chain = chainFixture(h.config, h.logger, registry);
    anvil = await startAnvil({ blockTimeSec: 0 });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: [], chain: chain.context });
  });
  afterAll(async () => {
    await pipeline?.stop();
    chain?.close();
    await anvil?.stop();
    await h?.cleanup();
  });

  it("follows the head through a failing endpoint and a good one: every block produced once, in order", { timeout: 120_000 }, async () => {
    const flaky = await flakyProxy(anvil.rpcUrl);
    const seen: BlockBundle[] = [];
    const { ingester, close } = await pipeline.createIngester([flaky.url, anvil.rpcUrl], { traces: false });
    const controller = new AbortController();
    const run = ingester.follow({ from: 1, pollIntervalMs: 50, signal: controller.signal, onBlock: (b) => seen.push(b) });
    try {
      for (let i = 0; i < 10; i++) {
        await rpcCall(anvil.rpcUrl, "anvil_mine", ["0x3"]);
        await waitFor(async () => seen.at(-1)?.block.number.num === 3 * (i + 1), 30_000, 20);
      }
    } finally {
      controller.abort();
      await run;
      await close();
      await flaky.close();
    }
    expect(seen.map((b) => b.block.number.num)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    for (let i = 1; i < seen.length; i++) expect(seen[i]?.block.parentHash).toBe(seen[i - 1]?.block.hash);
    const count = async (name: string) =>
      ((await registry.getSingleMetric(name)?.get())?.values ?? [])
        .filter((v) => v.labels.endpoint === flaky.url)
        .reduce((n, v) => n + v.value, 0);
    expect(flaky.requests()).toBeGreaterThan(0);
    expect(await count("chainsift_rpc_endpoint_errors_total")).toBeGreaterThan(0);
    expect(await count("chainsift_rpc_failovers_total")).toBeGreaterThan(0);
  });

  it("still dead-letters malformed block data with its raw answer (the consistency checks leave it to the transform)", async () => {
    let server: ScriptedRpc | undefined;
    server = await startScriptedRpc({
      answer(call) {
        const b = syntheticBlock(7, 1); // consistent, but no header fields: malformed for the transform
        if (call.method === "eth_getBlockByNumber") return b.block;
        if (call.method === "eth_getBlockReceipts") return b.receipts;
        if (call.method === "eth_blockNumber") return "0x7";
        return undefined;
      },
    });
    const { ingester, close } = await pipeline.createIngester(server.url, { traces: false });
    try {
      const stats = await ingester.ingestBlocks([7]);
      expect(stats).toMatchObject({ blocks: 0, deadLettered: 1 });
    } finally {
      await close();
      await server.close();
      server = undefined;
    }
  });
});
