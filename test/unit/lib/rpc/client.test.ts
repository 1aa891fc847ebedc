/**
 * The one JSON-RPC client (lib/rpc/client.ts) and the readers that used to post their own requests
 * to the first URL only: token metadata (lib/chain/token-metadata.ts, pipeline/match/token-metadata.ts),
 * proxy slots (pipeline/decode/proxy.ts) and the dev chain helpers (cli/devchain/rpc.ts). Against
 * scripted JSON-RPC servers on 127.0.0.1 (test/support/scripted-rpc.ts).
 */
import { AbiCoder } from "ethers";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { fetchChainId, rpcCall } from "../../../../cli/devchain/rpc.js";
import { readTokenMetadata, TOKEN_METADATA_SELECTORS } from "../../../../lib/chain/token-metadata.js";
import { RetryableError } from "../../../../lib/errors.js";
import { createRpcClient, type RpcClient } from "../../../../lib/rpc/client.js";
import { RpcAnswerError } from "../../../../lib/rpc/transport.js";
import { EIP1967_IMPLEMENTATION_SLOT, rpcImplementationReader } from "../../../../pipeline/decode/proxy.js";
import { ingestMetricsOf } from "../../../../pipeline/ingest/metrics.js";
import { createRpcSource } from "../../../../pipeline/ingest/rpc.js";
import { rpcTokenMetadataSource } from "../../../../pipeline/match/token-metadata.js";
import { type HttpAction, type ScriptedCall, type ScriptedRpc, startScriptedRpc } from "../../../support/scripted-rpc.js";

const abi = AbiCoder.defaultAbiCoder();
const TOKEN = "0x00000000000000000000000000000000000000a1";
const PROXY = "0x00000000000000000000000000000000000000b1";
const IMPLEMENTATION = "0x00000000000000000000000000000000000000c1";

/** A healthy node: a token with 6 decimals, symbol "SIX", name "Six"; PROXY's EIP-1967 slot holds IMPLEMENTATION; chain id 31337. */
function answer(call: ScriptedCall): unknown {
  if (call.method === "eth_chainId") return "0x7a69";
  if (call.method === "eth_blockNumber") return "0x10";
  if (call.method === "eth_call") {
    const data = (call.params[0] as { data: string }).data;
    if (data === TOKEN_METADATA_SELECTORS.decimals) return abi.encode(["uint8"], [6]);
    return abi.encode(["string"], [data === TOKEN_METADATA_SELECTORS.symbol ? "SIX" : "Six"]);
  }
  if (call.method === "eth_getStorageAt") {
    const [address, slot] = call.params as [string, string];
    return address === PROXY && slot === EIP1967_IMPLEMENTATION_SLOT ? abi.encode(["address"], [IMPLEMENTATION]) : `0x${"0".repeat(64)}`;
  }
  return undefined;
}

const unavailable: HttpAction = { status: 503, body: "upstream unavailable" };

describe("the one JSON-RPC client", () => {
  const servers: ScriptedRpc[] = [];
  const clients: RpcClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  const node = async (http?: (n: number, calls: ScriptedCall[]) => HttpAction) => {
    const s = await startScriptedRpc({ answer, http });
    servers.push(s);
    return s;
  };
  const client = (urls: string[], registry?: Registry) => {
    const c = createRpcClient({ urls, metrics: registry ? ingestMetricsOf(registry) : undefined });
    clients.push(c);
    return c;
  };
  const values = async (registry: Registry, name: string) =>
    ((await registry.getSingleMetric(name)?.get())?.values ?? [])
      .filter((v) => v.value !== 0)
      .map((v) => `${Object.values(v.labels).join(" ")}=${v.value}`)
      .sort();

  it("request: the result; a JSON-RPC error answer is an RpcAnswerError with the node's code (not failed over)", async () => {
    const a = await node();
    const b = await node();
    const c = client([a.url, b.url]);
    expect(await c.request("eth_chainId")).toBe("0x7a69");
    const err = await c.request("eth_nothing", [1]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcAnswerError);
    expect((err as RpcAnswerError).code).toBe(-32601);
    expect((err as Error).message).toBe("eth_nothing: the method eth_nothing does not exist");
    expect(b.requests).toHaveLength(0);
  });

  it("request fails over to the second endpoint when the first answers 503, and counts it", async () => {
    const a = await node(() => unavailable);
    const b = await node();
    const registry = new Registry();
    const c = client([a.url, b.url], registry);
    expect(await c.request("eth_chainId")).toBe("0x7a69");
    expect(a.requests).toHaveLength(1); // not retried in place: another endpoint was available
    expect(b.requests).toHaveLength(1);
    expect(await values(registry, "chainsift_rpc_failovers_total")).toEqual([`${a.url} http_5xx=1`]);
    expect(c.endpoints().map((e) => e.up)).toEqual([false, true]);
  });

  it("request: a RetryableError naming the method when no endpoint answers", async () => {
    const a = await node(() => unavailable);
    const c = createRpcClient({ urls: [a.url], attempts: 2 });
    clients.push(c);
    const err = await c.request("eth_chainId").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(/^eth_chainId failed: .*HTTP 503/);
    expect(a.requests).toHaveLength(2);
  });

  it("batch: one HTTP request, replies in call order, per-call errors are replies; the whole batch fails over", async () => {
    const a = await node((n) => (n === 1 ? unavailable : undefined));
    const b = await node((_, calls) => ({
      status: 200,
      // answered in reverse order, the second call with an error
      body: JSON.stringify(
        calls
          .map((call, i) =>
            i === 1
              ? { jsonrpc: "2.0", id: call.id, error: { code: 3, message: "execution reverted" } }
              : { jsonrpc: "2.0", id: call.id, result: `0x0${i}` },
          )
          .reverse(),
      ),
    }));
    const c = client([a.url, b.url]);
    const replies = await c.batch([
      { method: "eth_call", params: [{ to: TOKEN, data: "0x" }, "latest"] },
      { method: "eth_call", params: [{ to: TOKEN, data: "0x" }, "latest"] },
      { method: "eth_call", params: [{ to: TOKEN, data: "0x" }, "latest"] },
    ]);
    expect(replies).toEqual([{ result: "0x00" }, { error: { code: 3, message: "execution reverted" } }, { result: "0x02" }]);
    expect(a.requests.map((r) => r.length)).toEqual([3]);
    expect(b.requests.map((r) => r.length)).toEqual([3]);
  });

  it("batch: a node refusing the whole request with one error object gives that error to every call", async () => {
    const a = await node(() => ({
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32601, message: "batches are not supported" } }),
    }));
    const replies = await client([a.url]).batch([
      { method: "eth_blockNumber", params: [] },
      { method: "eth_chainId", params: [] },
    ]);
    expect(replies).toEqual([
      { error: { code: -32601, message: "batches are not supported" } },
      { error: { code: -32601, message: "batches are not supported" } },
    ]);
  });
});

describe("readers over the one client: every endpoint of the chain, not the first only", () => {
  const servers: ScriptedRpc[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  /** The first endpoint answers 503 to everything, the second is healthy. */
  const pair = async () => {
    const down = await startScriptedRpc({ answer, http: () => unavailable });
    const up = await startScriptedRpc({ answer });
    servers.push(down, up);
    return { down, up, urls: [down.url, up.url] };
  };

  it("token metadata read fails over to the second URL when the first answers 503", async () => {
    const { down, up, urls } = await pair();
    expect(await readTokenMetadata(urls, [{ address: TOKEN, blockNumber: 5 }])).toEqual([
      { address: TOKEN, decimals: 6, symbol: "SIX", name: "Six", unavailable: false },
    ]);
    expect(down.requests).toHaveLength(1);
    expect(up.requests.map((r) => r.map((c) => c.method))).toEqual([["eth_call", "eth_call", "eth_call"]]);
  });

  it("token metadata read through a shared client", async () => {
    const { urls } = await pair();
    const c = createRpcClient({ urls });
    try {
      const [read] = await readTokenMetadata(c, [{ address: TOKEN, blockNumber: 5 }]);
      expect(read?.symbol).toBe("SIX");
    } finally {
      c.destroy();
    }
  });

  it("the match stage's token source fails over too", async () => {
    const { up, urls } = await pair();
    const source = rpcTokenMetadataSource(urls);
    expect(await source.fetch(TOKEN, "erc721", { blockNumber: 5, blockHash: `0x${"1".repeat(64)}` })).toEqual({
      name: "Six",
      symbol: "SIX",
      decimals: null,
    });
    expect(up.requests.flat()).toHaveLength(2); // name and symbol only for ERC-721
  });

  it("proxy slots are read through the second URL when the first answers 503", async () => {
    const { down, up, urls } = await pair();
    const reader = rpcImplementationReader(urls);
    const got = await reader([PROXY, TOKEN]);
    expect(Object.fromEntries(got)).toEqual({ [PROXY]: IMPLEMENTATION, [TOKEN]: null });
    expect(down.requests).toHaveLength(1);
    expect(up.requests.map((r) => r.length)).toEqual([4]);
  });

  it("proxy slots: a JSON-RPC error of a slot read is a RetryableError", async () => {
    const s = await startScriptedRpc({ answer: (call) => (call.method === "eth_getStorageAt" ? undefined : answer(call)) });
    servers.push(s);
    const err = await rpcImplementationReader(s.url)([PROXY]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toBe("eth_getStorageAt failed: the method eth_getStorageAt does not exist");
  });
});

describe("ingest's chain source on a shared client", () => {
  it("shares the endpoints' health with the other readers; destroying the source leaves the client usable", async () => {
    const down = await startScriptedRpc({ answer, http: () => unavailable });
    const up = await startScriptedRpc({ answer });
    const client = createRpcClient({ urls: [down.url, up.url] });
    try {
      const source = createRpcSource({ client });
      expect(await source.chainId()).toBe(31337); // asks both: the first fails, the second answers
      expect(source.endpoints().map((e) => e.up)).toEqual([false, true]);
      source.destroy();
      // The first endpoint cools down after its 503: token metadata goes straight to the second.
      const before = down.requests.length;
      const [read] = await readTokenMetadata(client, [{ address: TOKEN, blockNumber: 5 }]);
      expect(read?.decimals).toBe(6);
      expect(down.requests.length).toBe(before);
    } finally {
      client.destroy();
      await Promise.all([down.close(), up.close()]);
    }
  });
});

describe("dev chain helpers over the one client", () => {
  let server: ScriptedRpc | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("rpcCall: the result, or `<method>: <message>` for a JSON-RPC error; never sent twice", async () => {
    server = await startScriptedRpc({ answer });
    expect(await rpcCall(server.url, "eth_blockNumber")).toBe("0x10");
    await expect(rpcCall(server.url, "anvil_mine", ["0x1"])).rejects.toThrow(/^anvil_mine: the method anvil_mine does not exist$/);
    await server.close();
    server = await startScriptedRpc({ answer, http: () => unavailable });
    await expect(rpcCall(server.url, "anvil_mine", ["0x1"])).rejects.toThrow(/anvil_mine failed: .*HTTP 503/);
    expect(server.requests).toHaveLength(1);
  });

  it("fetchChainId: the node's chain id; an error when it does not answer", async () => {
    server = await startScriptedRpc({ answer });
    expect(await fetchChainId(server.url)).toBe(31337);
    await expect(fetchChainId("http://127.0.0.1:9", 500)).rejects.toThrow(/eth_chainId failed/);
  });
});
