/**
 * A JSON-RPC server that answers like an Ethereum node from recorded mainnet responses, so the
 * ingest stage is fed exactly as a node would feed it (single calls and batches).
 * Methods: eth_chainId, net_version, eth_blockNumber, eth_getBlockByNumber, eth_getBlockByHash,
 * eth_getBlockReceipts, eth_getTransactionReceipt. Anything else: -32601 method not found.
 * @module
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FixtureBlock, RpcObject } from "./fixtures.js";
import { callFramesToParity } from "./parity-traces.js";

/** Options of {@link startRpcReplay}. */
export interface RpcReplayOptions {
  blocks: FixtureBlock[];
  /** Answer eth_getBlockReceipts (default true); false makes clients fall back to per-tx receipts. */
  blockReceipts?: boolean;
  /** Chain id reported (default 1, mainnet). */
  chainId?: number;
  /**
   * Answer debug_traceBlockByNumber (callTracer) from the fixtures' traces (`true` or `"debug"`), or
   * parity-style trace_block with the same frames converted (`"parity"`; debug_traceBlockByNumber is
   * then method not found, like on a node without the debug API); default false: neither. Blocks
   * without recorded traces answer -32000, as a node with pruned state would.
   */
  traces?: boolean | "debug" | "parity";
}

/** A running replay server. */
export interface RpcReplay {
  url: string;
  /** Number of JSON-RPC calls answered, per method. */
  calls: Map<string, number>;
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 with a free port. */
export async function startRpcReplay(opts: RpcReplayOptions): Promise<RpcReplay> {
  const byNumber = new Map<number, FixtureBlock>();
  const byHash = new Map<string, FixtureBlock>();
  const receiptByTx = new Map<string, RpcObject>();
  for (const b of opts.blocks) {
    byNumber.set(b.number, b);
    byHash.set(b.hash, b);
    for (const r of b.receipts ?? []) receiptByTx.set(String(r.transactionHash).toLowerCase(), r);
  }
  const head = Math.max(0, ...byNumber.keys());
  const calls = new Map<string, number>();

  const blockParam = (p: unknown): FixtureBlock | undefined => {
    if (p === "latest" || p === "safe" || p === "finalized") return byNumber.get(head);
    if (typeof p === "string" && /^0x[0-9a-f]{64}$/i.test(p)) return byHash.get(p.toLowerCase());
    return typeof p === "string" ? byNumber.get(Number(p)) : undefined;
  };

  // Results are serialised once and spliced into responses: the replay server must not be the
  // bottleneck of the ingest benchmark.
  const json = new Map<unknown, string>();
  const serialised = (value: unknown): string => {
    if (value === null || value === undefined) return "null";
    let out = json.get(value);
    if (out === undefined) {
      out = JSON.stringify(value);
      json.set(value, out);
    }
    return out;
  };

  const answer = (req: { id?: unknown; method?: unknown; params?: unknown[] }): string => {
    const method = String(req.method);
    calls.set(method, (calls.get(method) ?? 0) + 1);
    const params = Array.isArray(req.params) ? req.params : [];
    const id = JSON.stringify(req.id ?? null);
    const ok = (result: unknown) =>
      `{"jsonrpc":"2.0","id":${id},"result":${typeof result === "string" ? JSON.stringify(result) : serialised(result)}}`;
    switch (method) {
      case "eth_chainId":
        return ok(`0x${(opts.chainId ?? 1).toString(16)}`);
      case "net_version":
        return ok(String(opts.chainId ?? 1));
      case "eth_blockNumber":
        return ok(`0x${head.toString(16)}`);
      case "eth_getBlockByNumber":
      case "eth_getBlockByHash":
        return ok(blockParam(params[0])?.block ?? null);
      case "eth_getBlockReceipts":
        if (opts.blockReceipts !== false) return ok(blockParam(params[0])?.receipts ?? null);
        break;
      case "eth_getTransactionReceipt":
        return ok(receiptByTx.get(String(params[0]).toLowerCase()) ?? null);
      case "trace_block": {
        if (opts.traces !== "parity") break;
        const b = blockParam(params[0]);
        if (!b?.traces)
          return JSON.stringify({ jsonrpc: "2.0", id: req.id ?? null, error: { code: -32000, message: "historical state not available" } });
        return ok(callFramesToParity(b.traces, b.block.transactions as RpcObject[], b.hash, b.number));
      }
      case "debug_traceBlockByNumber": {
        if (!opts.traces || opts.traces === "parity") break;
        const b = blockParam(params[0]);
        if (!b?.traces)
          return JSON.stringify({ jsonrpc: "2.0", id: req.id ?? null, error: { code: -32000, message: "historical state not available" } });
        const txs = b.block.transactions as RpcObject[];
        return ok(b.traces.map((result, i) => ({ txHash: txs[i]?.hash, result })));
      }
    }
    return JSON.stringify({
      jsonrpc: "2.0",
      id: req.id ?? null,
      error: { code: -32601, message: `the method ${method} does not exist/is not available` },
    });
  };

  const server: Server = createServer((httpReq, res) => {
    const chunks: Buffer[] = [];
    httpReq.on("data", (c: Buffer) => chunks.push(c));
    httpReq.on("end", () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }));
        return;
      }
      const out = Array.isArray(body) ? `[${body.map(answer).join(",")}]` : answer(body as never);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
