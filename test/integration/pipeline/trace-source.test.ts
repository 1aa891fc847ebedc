/**
 * Traces wherever the node has them (issue #9 §2): the RPC source probes debug_traceBlockByNumber
 * (callTracer), then parity-style trace_block, and says `none` when the node has neither. Both
 * sources give the same call records on every mainnet fixture block with recorded traces: the
 * replay server (a real HTTP JSON-RPC server on 127.0.0.1) answers trace_block with the recorded
 * callTracer frames converted to the parity shape (test/support/parity-traces.ts). One difference is
 * the format's: parity gives no gasUsed for a frame that failed without output (`result: null`;
 * a revert keeps its output and gasUsed).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flattenCallTrace, traceContextOf } from "../../../lib/chain/calltrace.js";
import { createRpcSource } from "../../../pipeline/ingest/rpc.js";
import { toBlockBundle } from "../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";
import { type RpcReplay, startRpcReplay } from "../../support/rpc-replay.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

describe.skipIf(!fixtures)("trace source probe and parity traces (replay of mainnet fixtures)", () => {
  const blocks = fixtures ? loadCompleteBlocks() : [];
  const traced = blocks.filter((b) => b.traces !== null);
  const servers: Partial<Record<"debug" | "parity" | "none", RpcReplay>> = {};

  beforeAll(async () => {
    servers.debug = await startRpcReplay({ blocks, traces: "debug" });
    servers.parity = await startRpcReplay({ blocks, traces: "parity" });
    servers.none = await startRpcReplay({ blocks });
  });
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((s) => s?.close()));
  });

  it("probes debug first, then trace_block, else none", async () => {
    const head = traced.at(-1)!.number;
    for (const [mode, expected] of [
      ["debug", "debug_traceBlockByNumber"],
      ["parity", "trace_block"],
      ["none", "none"],
    ] as const) {
      const source = createRpcSource({ rpcUrl: servers[mode]!.url });
      expect(await source.probeTraces!(head), mode).toBe(expected);
      source.destroy();
    }
    // A node that has the method but cannot trace the probed block (pruned state: -32000) still has it.
    const untraced = blocks.find((b) => b.traces === null)!;
    for (const [mode, expected] of [
      ["debug", "debug_traceBlockByNumber"],
      ["parity", "trace_block"],
    ] as const) {
      const source = createRpcSource({ rpcUrl: servers[mode]!.url });
      expect(await source.probeTraces!(untraced.number), `${mode} at an untraced block`).toBe(expected);
      source.destroy();
    }
    // The parity node was asked for debug once per source (method not found), then only trace_block.
    expect(servers.parity!.calls.get("debug_traceBlockByNumber")).toBe(2);
  });

  it("gives the same call records from trace_block as from the callTracer, on every traced fixture block", async () => {
    expect(traced.length).toBeGreaterThanOrEqual(5);
    const debug = createRpcSource({ rpcUrl: servers.debug!.url });
    const parity = createRpcSource({ rpcUrl: servers.parity!.url });
    let calls = 0;
    let reverted = 0;
    for (const fb of traced) {
      const recordsOf = async (frames: Awaited<ReturnType<typeof debug.fetchTraces>>) =>
        toBlockBundle(fb.block, fb.receipts, frames).traces.flatMap((t) =>
          flattenCallTrace(
            JSON.parse(t.frameJson),
            traceContextOf(toBlockBundle(fb.block, fb.receipts).transactions[Number(t.transactionIndex.num)]!),
          ),
        );
      const a = await recordsOf(await debug.fetchTraces(fb.number));
      const b = await recordsOf(await parity.fetchTraces(fb.number));
      expect(b.map((c) => c.entityId)).toEqual(a.map((c) => c.entityId));
      // Parity answers a frame that failed without output (not a revert) with `result: null`: its gasUsed is not known there.
      // An empty output is "0x" or absent depending on the geth version; the records compare them alike.
      const formatOnly = (c: (typeof a)[number]) => (c.output === "0x" || c.type === "SELFDESTRUCT" ? { ...c, output: null } : c);
      const failedGasUnknown = (c: (typeof a)[number]) => (typeof c.error === "string" && c.output == null ? { ...c, gasUsed: null } : c);
      // Older geth versions give no revertReason; chainsift decodes one from the output (Error(string)).
      // geth also "decodes" malformed Error(string) data (replacement characters); chainsift gives none there.
      const malformed = (r: string | null | undefined) => r == null || r.includes("\ufffd");
      const sameReasonSource = (c: (typeof b)[number], i: number) =>
        malformed(a[i]?.revertReason) ? { ...c, revertReason: a[i]?.revertReason ?? null } : c;
      expect(b.map(sameReasonSource).map(formatOnly)).toEqual(a.map(failedGasUnknown).map(formatOnly));
      calls += a.length;
      reverted += a.filter((c) => typeof c.error === "string").length;
    }
    debug.destroy();
    parity.destroy();
    expect(calls).toBeGreaterThan(1000);
    expect(reverted).toBeGreaterThan(0); // reverted frames keep their error through both paths
  });
});
