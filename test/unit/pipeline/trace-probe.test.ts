import { describe, expect, it } from "vitest";
import { type ChainSource, createRpcSource, type TraceSource } from "../../../pipeline/ingest/rpc.js";
import { probeTraceSource } from "../../../pipeline/runtime.js";

/** A source whose probe fails `failures` times without a JSON-RPC answer, then answers `answer`. */
function flakySource(failures: number, answer: TraceSource) {
  let probes = 0;
  const source = {
    headNumber: async () => 100,
    probeTraces: async () => {
      probes++;
      if (probes <= failures) throw new Error("fetch failed: connect ECONNREFUSED 127.0.0.1:8545");
      return answer;
    },
  } as unknown as ChainSource;
  return { source, probes: () => probes };
}

describe("probeTraceSource: a probe without an answer decides nothing", () => {
  it("probes again until the node answers", async () => {
    const { source, probes } = flakySource(2, "trace_block");
    expect(await probeTraceSource(source, { firstDelayMs: 1 })).toBe("trace_block");
    expect(probes()).toBe(3);
  });

  it("gives up after the attempts: traces off for the run", async () => {
    const { source, probes } = flakySource(10, "debug_traceBlockByNumber");
    expect(await probeTraceSource(source, { attempts: 3, firstDelayMs: 1 })).toBe("none");
    expect(probes()).toBe(3);
  });

  it("the RPC source rethrows a transport failure of its probe and remembers nothing", async () => {
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    const source = createRpcSource({ rpcUrl: "http://127.0.0.1:9", attempts: 1 }); // one try: no transport retries
    try {
      await expect(source.probeTraces!(1)).rejects.toThrow();
      await expect(source.probeTraces!(1)).rejects.toThrow();
    } finally {
      source.destroy();
    }
  });
});
