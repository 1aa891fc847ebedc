import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { RetryableError } from "../../../../lib/errors.js";
import { HEDGE_FLOOR_MS, hedgeDelayMs } from "../../../../lib/rpc/transport.js";
import { createRpcSource } from "../../../../pipeline/ingest/rpc.js";
import { type HttpAction, type ScriptedCall, type ScriptedRpc, startScriptedRpc, syntheticBlock } from "../../../support/scripted-rpc.js";

/**
 * The transport of one endpoint (docs/reorgs.md "The transport and failover"): 429 after its
 * Retry-After, 5xx, resets, timeouts and bodies that are not JSON are retried within the attempts;
 * a failed batch is sent again whole.
 */
describe("JSON-RPC transport retries", () => {
  let server: ScriptedRpc | undefined;
  afterEach(() => server?.close());

  const answer = (call: ScriptedCall): unknown => {
    const b = syntheticBlock(Number(call.params[0] ?? 7), 2);
    if (call.method === "eth_blockNumber") return "0x64";
    if (call.method === "eth_getBlockByNumber") return b.block;
    if (call.method === "eth_getBlockReceipts") return b.receipts;
    return undefined;
  };
  /** A server whose HTTP requests 1…n get the scripted actions in turn, then answer normally; arrival times in `at`. */
  const scripted = async (...actions: HttpAction[]) => {
    const at: number[] = [];
    server = await startScriptedRpc({
      answer,
      http: (n) => {
        at.push(Date.now());
        return actions[n - 1];
      },
    });
    return { url: server.url, at, requests: server.requests };
  };
  const errorsOf = async (registry: Registry) =>
    ((await registry.getSingleMetric("chainsift_rpc_endpoint_errors_total")?.get())?.values ?? []).map(
      (v) => `${v.labels.kind}=${v.value}`,
    );

  it("waits for a 429's Retry-After, then sends the whole batch again (no call lost)", async () => {
    const s = await scripted({ status: 429, headers: { "retry-after": "1" }, body: "slow down" });
    const registry = new Registry();
    const source = createRpcSource({ rpcUrl: s.url, registry });
    try {
      const got = await source.fetchBlock(7);
      expect(got?.receipts).toHaveLength(2);
      // block and receipts went out as one batch, twice
      expect(s.requests.map((r) => r.map((c) => c.method).sort())).toEqual([
        ["eth_getBlockByNumber", "eth_getBlockReceipts"],
        ["eth_getBlockByNumber", "eth_getBlockReceipts"],
      ]);
      expect((s.at[1] as number) - (s.at[0] as number)).toBeGreaterThanOrEqual(990);
      expect(await errorsOf(registry)).toEqual(["http_429=1"]);
    } finally {
      source.destroy();
    }
  });

  it("retries 5xx, a reset connection, a timeout and a truncated body", async () => {
    const s = await scripted({ status: 503, body: "busy" }, "reset", "hang", { status: 200, body: '{"jsonrpc":"2.0","id":1,"res' });
    const registry = new Registry();
    const source = createRpcSource({ rpcUrl: s.url, registry, timeoutMs: 300, attempts: 5 });
    try {
      expect(await source.headNumber()).toBe(100);
      expect(s.requests).toHaveLength(5);
      expect((await errorsOf(registry)).sort()).toEqual(["connection=1", "http_5xx=1", "malformed=1", "timeout=1"]);
    } finally {
      source.destroy();
    }
  });

  it("gives up after the attempts with a RetryableError (malformed JSON surfaces as before)", async () => {
    const bad = { status: 200, body: "<html>bad gateway</html>" };
    const s = await scripted(bad, bad, bad, bad, bad);
    const source = createRpcSource({ rpcUrl: s.url, attempts: 3 });
    try {
      const err = await source.headNumber().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect((err as Error).message).toContain("not JSON");
      expect(s.requests).toHaveLength(3);
    } finally {
      source.destroy();
    }
  });

  it("does not retry another 4xx in place (e.g. a wrong API key)", async () => {
    const s = await scripted({ status: 401, body: "invalid key" });
    const source = createRpcSource({ rpcUrl: s.url });
    try {
      const err = await source.headNumber().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect((err as Error).message).toContain("HTTP 401");
      expect(s.requests).toHaveLength(1);
    } finally {
      source.destroy();
    }
  });

  it("a lone endpoint's hanging block read is sent once more (a load balancer's other backend answers); a trace is re-sent up to twice; other calls are not doubled", async () => {
    // The first request hangs; with the request timeout at 10 min only the re-sent request can answer in the test's time.
    const s = await scripted("hang");
    const registry = new Registry();
    const source = createRpcSource({ rpcUrl: s.url, timeoutMs: 600_000, hedgeAfterMs: 100, registry });
    try {
      const fetched = await source.fetchBlock(7);
      expect(fetched?.block.hash).toBe(syntheticBlock(7, 2).block.hash);
      expect(s.requests).toHaveLength(2);
      expect(s.requests[1]?.map((c) => c.method).sort()).toEqual(["eth_getBlockByNumber", "eth_getBlockReceipts"]);
      const failovers = (await registry.getSingleMetric("chainsift_rpc_failovers_total")?.get())?.values ?? [];
      expect(failovers.map((v) => `${v.labels.reason}=${v.value}`)).toEqual(["slow=1"]);
      expect(await errorsOf(registry)).toEqual([]);
    } finally {
      source.destroy();
    }
    // A trace (issue 32): re-sent once after the hedge delay, like a block read, instead of waiting out the
    // (here 10 min) timeout; counted as a re-send of kind "traces".
    await server?.close();
    const t = await startScriptedRpc({
      answer: (call) => (call.method === "debug_traceBlockByNumber" ? [] : undefined),
      http: (n) => (n === 1 ? "hang" : undefined),
    });
    server = t;
    const traceRegistry = new Registry();
    const traced = createRpcSource({ rpcUrl: t.url, timeoutMs: 600_000, hedgeAfterMs: 100, registry: traceRegistry });
    try {
      expect(await traced.fetchTraces(7)).toEqual([]);
      expect(t.requests).toHaveLength(2);
      expect(await errorsOf(traceRegistry)).toEqual([]);
      const resends = (await traceRegistry.getSingleMetric("chainsift_rpc_resends_total")?.get())?.values ?? [];
      expect(resends.map((v) => `${v.labels.kind}=${v.value}`)).toEqual(["traces=1"]);
    } finally {
      traced.destroy();
    }
    // The first copy and its re-send both hang: a third copy, one more delay later, answers (a trace gets up to
    // SECOND_CHANCE_COPIES = 3 copies in flight), rather than the (10 min) timeout.
    await server?.close();
    const h = await startScriptedRpc({
      answer: (call) => (call.method === "debug_traceBlockByNumber" ? [] : undefined),
      http: (n) => (n <= 2 ? "hang" : undefined),
    });
    server = h;
    const thirdRegistry = new Registry();
    const third = createRpcSource({ rpcUrl: h.url, timeoutMs: 600_000, hedgeAfterMs: 100, registry: thirdRegistry });
    try {
      expect(await third.fetchTraces(7)).toEqual([]);
      expect(h.requests).toHaveLength(3);
      expect(await errorsOf(thirdRegistry)).toEqual([]);
      const resends = (await thirdRegistry.getSingleMetric("chainsift_rpc_resends_total")?.get())?.values ?? [];
      expect(resends.map((v) => `${v.labels.kind}=${v.value}`)).toEqual(["traces=2"]);
    } finally {
      third.destroy();
    }
    // The re-sent copy fails (503) while the first still hangs: another copy after the next delay answers,
    // rather than the first copy's (10 min) timeout.
    await server?.close();
    const u = await startScriptedRpc({
      answer: (call) => (call.method === "debug_traceBlockByNumber" ? [] : undefined),
      http: (n) => (n === 1 ? "hang" : n === 2 ? { status: 503 } : undefined),
    });
    server = u;
    const againRegistry = new Registry();
    const again = createRpcSource({ rpcUrl: u.url, timeoutMs: 600_000, hedgeAfterMs: 100, registry: againRegistry });
    try {
      expect(await again.fetchTraces(7)).toEqual([]);
      expect(u.requests).toHaveLength(3);
      expect(await errorsOf(againRegistry)).toEqual(["http_5xx=1"]);
      const resends = (await againRegistry.getSingleMetric("chainsift_rpc_resends_total")?.get())?.values ?? [];
      expect(resends.map((v) => `${v.labels.kind}=${v.value}`)).toEqual(["traces=2"]);
    } finally {
      again.destroy();
    }
    // Neither a block read nor a trace or eth_call (eth_chainId): not re-sent early. Its hanging request runs
    // into the (short) timeout, is counted as one (kind "other"), and only then is retried.
    await server?.close();
    const c = await startScriptedRpc({
      answer: (call) => (call.method === "eth_chainId" ? "0x7a69" : undefined),
      http: (n) => (n === 1 ? "hang" : undefined),
    });
    server = c;
    const chainRegistry = new Registry();
    const chained = createRpcSource({ rpcUrl: c.url, timeoutMs: 500, hedgeAfterMs: 100, registry: chainRegistry });
    try {
      expect(await chained.chainId()).toBe(31337);
      expect(c.requests).toHaveLength(2);
      expect(await errorsOf(chainRegistry)).toEqual(["timeout=1"]);
      const timeouts = (await chainRegistry.getSingleMetric("chainsift_rpc_timeouts_total")?.get())?.values ?? [];
      expect(timeouts.map((v) => `${v.labels.kind}=${v.value}`)).toEqual(["other=1"]);
    } finally {
      chained.destroy();
    }
  });
});

describe("hedgeDelayMs (pure): when a lone endpoint's block read is sent again", () => {
  it("waits the configured cap until 8 answers were seen", () => {
    expect(hedgeDelayMs(undefined, 2000)).toBe(2000);
    expect(hedgeDelayMs([10, 10, 10, 10, 10, 10, 10], 2000)).toBe(2000);
  });
  it("is 4 × the 90th percentile of recent answers, at least the floor, at most the cap", () => {
    const hundred = Array.from({ length: 10 }, (_, i) => (i < 9 ? 100 : 5000)); // one slow outlier above p90
    expect(hedgeDelayMs(hundred, 2000)).toBe(2000); // p90 of 10 samples is the 10th: the outlier, capped
    const twenty = Array.from({ length: 20 }, (_, i) => (i < 19 ? 100 : 5000));
    expect(hedgeDelayMs(twenty, 2000)).toBe(400);
    expect(hedgeDelayMs(Array(20).fill(5), 2000)).toBe(HEDGE_FLOOR_MS);
    expect(hedgeDelayMs(Array(20).fill(900), 2000)).toBe(2000);
  });
});
