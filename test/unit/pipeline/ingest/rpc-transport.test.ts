import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { RetryableError } from "../../../../lib/errors.js";
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
});
