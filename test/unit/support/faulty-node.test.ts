/**
 * The faulty node (test/support/faulty-node.ts) in front of the replay server (test/support/rpc-replay.ts)
 * with ten synthetic blocks of one transaction each: each mode injects what it says, only where it
 * applies, counts it, and the same seed gives the same faults.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultMode, type FaultyNode, startFaultyNode } from "../../support/faulty-node.js";
import type { FixtureBlock } from "../../support/fixtures.js";
import { type RpcReplay, startRpcReplay } from "../../support/rpc-replay.js";

const HEAD = 9;
const hash = (n: number, salt = "b") => `0x${salt.repeat(2)}${n.toString(16).padStart(62, "0")}`;
const blocks: FixtureBlock[] = Array.from({ length: HEAD + 1 }, (_, n) => {
  const tx = { hash: hash(n, "7"), blockHash: hash(n), blockNumber: `0x${n.toString(16)}`, transactionIndex: "0x0" };
  const receipt = {
    transactionHash: tx.hash,
    blockHash: hash(n),
    blockNumber: tx.blockNumber,
    cumulativeGasUsed: "0x5208",
    logs: [{ blockHash: hash(n), logIndex: "0x0" }],
  };
  return {
    number: n,
    hash: hash(n),
    block: { number: `0x${n.toString(16)}`, hash: hash(n), parentHash: hash(n - 1), gasUsed: "0x5208", transactions: [tx] },
    receipts: [receipt],
  };
});

type Answer = { id: number; result?: unknown; error?: unknown };
const call = (method: string, params: unknown[] = [], id = 1) => ({ jsonrpc: "2.0", id, method, params });

async function post(url: string, body: unknown, timeoutMs = 5000): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("faulty node", () => {
  let upstream: RpcReplay;
  const nodes: FaultyNode[] = [];
  const start = async (mode: Parameters<FaultyNode["setFaults"]>[0], rate: number, seed = 42, extra = {}) => {
    const n = await startFaultyNode({ upstream: upstream.url, seed, mode, rate, log: () => {}, ...extra });
    nodes.push(n);
    return n;
  };
  /** eth_blockNumber once, so the node knows the head (lagging and stale-branch act relative to it). */
  const learnHead = async (n: FaultyNode) => JSON.parse((await post(n.url, call("eth_blockNumber"))).text) as Answer;

  beforeAll(async () => {
    upstream = await startRpcReplay({ blocks, chainId: 31337 });
  });
  afterAll(async () => {
    for (const n of nodes) await n.close();
    await upstream.close();
  });

  it("none: forwards single calls and batches unchanged, injects nothing", async () => {
    const n = await start("none", 1);
    const single = await post(n.url, call("eth_getBlockByNumber", ["0x3", true]));
    expect(JSON.parse(single.text).result.hash).toBe(hash(3));
    const batch = JSON.parse(
      (await post(n.url, [call("eth_blockNumber", [], 1), call("eth_getBlockReceipts", ["0x9"], 2)])).text,
    ) as Answer[];
    expect(batch.find((a) => a.id === 1)?.result).toBe("0x9");
    expect(batch.find((a) => a.id === 2)?.result).toHaveLength(1);
    expect(n.total()).toBe(0);
    expect(n.requests).toBe(2);
    expect(n.calls).toBe(3);
    expect(n.upstreamHead).toBe(HEAD);
  });

  it("rate-limit: 429 with Retry-After: 1", async () => {
    const n = await start("rate-limit", 1);
    const res = await post(n.url, call("eth_blockNumber"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(n.injected["rate-limit"]).toBe(1);
  });

  it("unavailable: 503", async () => {
    const n = await start("unavailable", 1);
    expect((await post(n.url, [call("eth_blockNumber")])).status).toBe(503);
    expect(n.injected.unavailable).toBe(1);
  });

  it("truncated: 200 whose body is not JSON", async () => {
    const n = await start("truncated", 1);
    for (let i = 0; i < 20; i++) {
      const res = await post(n.url, [call("eth_getBlockByNumber", ["0x2", true]), call("eth_getBlockReceipts", ["0x2"], 2)]);
      expect(res.status).toBe(200);
      expect(() => JSON.parse(res.text)).toThrow();
    }
    expect(n.injected.truncated).toBe(20);
  });

  it("hang: no answer before the client's timeout; the node closes the socket later", async () => {
    const n = await start("hang", 1, 42, { hangMs: 300 });
    await expect(post(n.url, call("eth_blockNumber"), 100)).rejects.toThrow(/abort|timeout/i);
    // Without a client timeout the request still ends: the node closes the socket.
    await expect(post(n.url, call("eth_blockNumber"), 30_000)).rejects.toThrow();
    expect(n.injected.hang).toBe(2);
  });

  it("lagging: null for the newest laggingDepth blocks (block and receipts), the head passed through", async () => {
    const n = await start("lagging", 1, 42, { laggingDepth: 2 });
    expect((await learnHead(n)).result).toBe("0x9");
    const ask = async (num: number) =>
      JSON.parse(
        (
          await post(n.url, [
            call("eth_getBlockByNumber", [`0x${num.toString(16)}`, true], 1),
            call("eth_getBlockReceipts", [`0x${num.toString(16)}`], 2),
          ])
        ).text,
      ) as Answer[];
    for (const num of [9, 8]) for (const a of await ask(num)) expect(a.result).toBeNull();
    for (const a of await ask(7)) expect(a.result).not.toBeNull();
    expect(n.injected.lagging).toBe(4);
    expect(n.injectedOn).toEqual({ "lagging:block": 2, "lagging:receipts": 2 });
    expect((await learnHead(n)).result).toBe("0x9");
  });

  it("stale-branch: a recent block gets a made-up hash, recent receipts contradict the real block; older heights untouched", async () => {
    const n = await start("stale-branch", 1, 7, { recentDepth: 4 });
    await learnHead(n);
    for (let i = 0; i < 10; i++) {
      const [b, r] = JSON.parse(
        (await post(n.url, [call("eth_getBlockByNumber", ["0x9", true], 1), call("eth_getBlockReceipts", ["0x9"], 2)])).text,
      ) as Answer[];
      const block = b?.result as { hash: string; transactions: Array<{ blockHash: string }> };
      expect(block.hash).not.toBe(hash(9));
      expect(block.hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(block.transactions[0]?.blockHash).toBe(block.hash);
      const receipts = r?.result as Array<{ blockHash: string; logs: Array<{ blockHash: string }> }>;
      // Either one receipt short, or every receipt and log on a made-up block.
      if (receipts.length === 1) {
        expect(receipts[0]?.blockHash).not.toBe(hash(9));
        expect(receipts[0]?.logs[0]?.blockHash).toBe(receipts[0]?.blockHash);
      } else expect(receipts).toEqual([]);
      // The block hash alone (full = false) is made up too.
      const h = JSON.parse((await post(n.url, call("eth_getBlockByNumber", ["0x8", false]))).text) as Answer;
      expect((h.result as { hash: string }).hash).not.toBe(hash(8));
    }
    const old = JSON.parse((await post(n.url, call("eth_getBlockByNumber", ["0x5", true]))).text) as Answer;
    expect((old.result as { hash: string }).hash).toBe(hash(5));
    expect(n.injected["stale-branch"]).toBe(30);
  });

  it("head-backwards: eth_blockNumber below the highest answered before", async () => {
    const n = await start("head-backwards", 1);
    expect((await learnHead(n)).result).toBe("0x9");
    for (let i = 0; i < 5; i++) {
      const head = Number((await learnHead(n)).result);
      expect(head).toBeLessThan(HEAD);
      expect(head).toBeGreaterThanOrEqual(HEAD - 3);
    }
    expect(n.injected["head-backwards"]).toBe(5);
  });

  /** 200 batches of [eth_blockNumber, block and receipts of the head]: status per request, the node's counts. */
  const drive = async (n: FaultyNode, requests = 200) => {
    const statuses: number[] = [];
    for (let i = 0; i < requests; i++) {
      const res = await post(
        n.url,
        [call("eth_blockNumber", [], 1), call("eth_getBlockByNumber", ["0x9", true], 2), call("eth_getBlockReceipts", ["0x9"], 3)],
        5000,
      ).catch(() => ({ status: 0 })); // 0: no answer (a hang: the node closes the socket after hangMs)
      statuses.push(res.status);
    }
    return statuses;
  };

  it("a rate is a probability per request: about 20 % of 200 requests, the same faults for the same seed", async () => {
    const a = await start("unavailable", 0.2, 1234);
    const b = await start("unavailable", 0.2, 1234);
    const sa = await drive(a);
    const sb = await drive(b);
    expect(sa).toEqual(sb);
    expect(a.injected.unavailable).toBe(sa.filter((s) => s === 503).length);
    expect(a.injected.unavailable).toBeGreaterThan(20);
    expect(a.injected.unavailable).toBeLessThan(60);
  });

  it("several modes: each at the rate on its own, each counted", async () => {
    const n = await start("none", 0, 5);
    await learnHead(n);
    n.setFaults(["lagging", "unavailable", "head-backwards"], 0.3);
    const statuses = await drive(n, 200);
    expect(n.injected.unavailable).toBe(statuses.filter((s) => s === 503).length);
    // Each rolls on its own: about 30 % of 200 requests (60) for 503; lagging and head-backwards only on answered requests.
    for (const mode of ["lagging", "unavailable", "head-backwards"] as FaultMode[]) expect(n.injected[mode], mode).toBeGreaterThan(20);
    expect(n.injected["rate-limit"] + n.injected.hang + n.injected.truncated + n.injected["stale-branch"]).toBe(0);
  });

  it("mixed: every mode gets drawn and counted; unfaulted requests pass", async () => {
    const n = await start("none", 0, 99, { hangMs: 60 });
    await learnHead(n);
    n.setFaults("mixed", 0.7);
    const statuses = await drive(n, 300);
    for (const mode of ["lagging", "stale-branch", "rate-limit", "unavailable", "hang", "truncated", "head-backwards"] as FaultMode[])
      expect(n.injected[mode], mode).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 429).length).toBe(n.injected["rate-limit"]);
    expect(statuses.filter((s) => s === 0).length).toBe(n.injected.hang);
    expect(n.total()).toBeLessThan(300);
  });
});
