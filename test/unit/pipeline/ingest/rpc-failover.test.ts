import { setTimeout as sleep } from "node:timers/promises";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcSource, type RpcSource } from "../../../../pipeline/ingest/rpc.js";
import { type HttpAction, type ScriptedCall, type ScriptedRpc, startScriptedRpc, syntheticBlock } from "../../../support/scripted-rpc.js";

/** What one scripted endpoint does: its head, which blocks it answers null for, its HTTP faults. */
interface Node {
  head: number;
  /** eth_chainId answer; default 0x1. */
  chainId?: string;
  nullBlocks?: Set<number>;
  inconsistent?: boolean;
  http?: (n: number, calls: ScriptedCall[]) => HttpAction;
}

/**
 * Several endpoints per chain (docs/reorgs.md "The transport and failover"): calls go to the first
 * available endpoint that is not behind and fail over on errors, inconsistent answers and null
 * blocks another endpoint's head covers; each endpoint's health is in the metrics.
 */
describe("JSON-RPC failover between endpoints", () => {
  const servers: ScriptedRpc[] = [];
  let source: RpcSource | undefined;
  afterEach(async () => {
    source?.destroy();
    source = undefined;
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  const start = async (node: Node) => {
    const s = await startScriptedRpc({
      answer(call) {
        const n = Number(call.params[0]);
        if (call.method === "eth_blockNumber") return `0x${node.head.toString(16)}`;
        if (call.method === "eth_chainId") return node.chainId ?? "0x1";
        if (n > node.head || node.nullBlocks?.has(n)) return call.method === "eth_getBlockReceipts" ? null : null;
        const b = syntheticBlock(n, 2);
        if (node.inconsistent) b.block.gasUsed = "0x1";
        if (call.method === "eth_getBlockByNumber") return b.block;
        if (call.method === "eth_getBlockReceipts") return b.receipts;
        return undefined;
      },
      http: node.http,
    });
    servers.push(s);
    return s;
  };
  /** headNumber answers with the first endpoint's head; the others' heads count once they came. */
  const headsKnown = (s: RpcSource) => vi.waitFor(() => expect(s.endpoints().every((e) => e.head !== null)).toBe(true));
  const blockCalls = (s: ScriptedRpc) => s.requests.flat().filter((c) => c.method === "eth_getBlockByNumber").length;
  const metric = async (registry: Registry, name: string) =>
    ((await registry.getSingleMetric(name)?.get())?.values ?? [])
      .filter((v) => v.value !== 0)
      .map((v) => `${Object.values(v.labels).join(" ")}=${v.value}`)
      .sort();

  it("reads through the second endpoint while the first is dead, and says so in the metrics", async () => {
    const dead = await start({ head: 0 });
    const deadUrl = dead.url;
    await dead.close();
    servers.pop();
    const b = await start({ head: 10 });
    const registry = new Registry();
    source = createRpcSource({ rpcUrls: [deadUrl, b.url], registry });
    expect(await source.headNumber()).toBe(10);
    expect((await source.fetchBlock(10))?.receipts).toHaveLength(2);
    expect(await source.blockHash(9)).toMatch(/^0xbb/);
    expect(await metric(registry, "chainsift_rpc_endpoint_up")).toEqual([`${b.url}=1`]);
    expect(await metric(registry, "chainsift_rpc_endpoint_errors_total")).toEqual([`${deadUrl} connection=1`]);
    expect(source.endpoints().map((e) => [e.endpoint, e.up, e.head])).toEqual([
      [deadUrl, false, null],
      [b.url, true, 10],
    ]);
  });

  it("fails over on 503 and avoids the failing endpoint while it cools down, then probes it again", async () => {
    let failing = true;
    const a = await start({ head: 10, http: () => (failing ? { status: 503, body: "down" } : undefined) });
    const b = await start({ head: 10 });
    const registry = new Registry();
    source = createRpcSource({ rpcUrls: [a.url, b.url], registry, cooldownMs: 300 });
    expect(await source.headNumber()).toBe(10);
    for (const n of [8, 9, 10]) expect((await source.fetchBlock(n))?.block.hash).toBe(syntheticBlock(n).block.hash);
    expect(a.requests).toHaveLength(1); // asked once (the head), then avoided
    expect(blockCalls(b)).toBe(3);
    expect(await metric(registry, "chainsift_rpc_endpoint_errors_total")).toEqual([`${a.url} http_5xx=1`]);
    failing = false;
    await sleep(350); // past the cooldown: the next head poll asks it again
    await source.headNumber();
    await vi.waitFor(() => expect(source?.endpoints().map((e) => e.up)).toEqual([true, true]));
    await source.fetchBlock(10);
    expect(blockCalls(a)).toBe(1); // preferred again (first in order)
  });

  it("prefers an endpoint that is not behind, and one whose head has the block", async () => {
    const a = await start({ head: 100 });
    const b = await start({ head: 110 });
    source = createRpcSource({ rpcUrls: [a.url, b.url] });
    await source.headNumber();
    await headsKnown(source);
    expect(await source.headNumber()).toBe(110);
    await source.fetchBlock(105); // a has no block 105 yet
    await source.fetchBlock(90); // a has it, but is 10 blocks behind
    expect(blockCalls(a)).toBe(0);
    expect(blockCalls(b)).toBe(2);
  });

  it("asks another endpoint for a block the first answers null for (a lagging backend), and returns null when none has it", async () => {
    const a = await start({ head: 10, nullBlocks: new Set([10]) });
    const b = await start({ head: 10 });
    const registry = new Registry();
    source = createRpcSource({ rpcUrls: [a.url, b.url], registry });
    await source.headNumber();
    await headsKnown(source);
    expect((await source.fetchBlock(10))?.block.hash).toBe(syntheticBlock(10).block.hash);
    expect(await source.blockHash(10)).toBe(syntheticBlock(10).block.hash);
    expect(await source.fetchBlock(11)).toBeNull();
    expect(await metric(registry, "chainsift_rpc_failovers_total")).toEqual([`${a.url} null_block=2`]);
  });

  it("fails over on an inconsistent answer", async () => {
    const a = await start({ head: 10, inconsistent: true });
    const b = await start({ head: 10 });
    const registry = new Registry();
    source = createRpcSource({ rpcUrls: [a.url, b.url], registry });
    expect((await source.fetchBlock(10))?.block.hash).toBe(syntheticBlock(10).block.hash);
    expect(await metric(registry, "chainsift_rpc_failovers_total")).toEqual([`${a.url} inconsistent=1`]);
    expect(await metric(registry, "chainsift_ingest_rpc_inconsistent_total")).toEqual(["gas_used=1"]);
  });

  it("asks the next endpoint too when the first does not answer a block read in time (hedge), without waiting for its timeout", async () => {
    const a = await start({ head: 10, http: (_, calls) => (calls.some((c) => c.method === "eth_getBlockByNumber") ? "hang" : undefined) });
    const b = await start({ head: 10 });
    const registry = new Registry();
    source = createRpcSource({ rpcUrls: [a.url, b.url], registry, hedgeAfterMs: 100, timeoutMs: 600_000 });
    expect((await source.fetchBlock(10))?.block.hash).toBe(syntheticBlock(10).block.hash);
    expect(blockCalls(a)).toBe(1); // still hanging: its answer never came
    expect(blockCalls(b)).toBe(1);
    expect(await metric(registry, "chainsift_rpc_failovers_total")).toEqual([`${a.url} slow=1`]);
  });

  it("refuses endpoints of different chains (chainId asks every endpoint)", async () => {
    const a = await start({ head: 10 });
    const b = await start({ head: 10, chainId: "0x5" });
    source = createRpcSource({ rpcUrls: [a.url, b.url] });
    await expect(source.chainId()).rejects.toThrow(`JSON-RPC endpoints of different chains: ${a.url} chain 1, ${b.url} chain 5`);
    source.destroy();
    source = createRpcSource({ rpcUrls: [a.url, "http://127.0.0.1:1"] });
    expect(await source.chainId()).toBe(1); // an endpoint that does not answer is no contradiction
  });

  it("never shows credentials in labels; userinfo is sent as Basic authentication", async () => {
    const a = await start({ head: 10 });
    const registry = new Registry();
    const withUser = a.url.replace("http://", "http://reader:s3cret@");
    source = createRpcSource({ rpcUrls: [`${a.url}/?apikey=secret`, withUser], registry });
    await source.headNumber();
    await headsKnown(source);
    expect(await metric(registry, "chainsift_rpc_endpoint_up")).toEqual([`${a.url}=1`, `${a.url}?***=1`]);
    expect(a.headers.map((h) => h.authorization)).toContain(`Basic ${Buffer.from("reader:s3cret").toString("base64")}`);
  });
});
