/**
 * A JSON-RPC server on 127.0.0.1 whose answers a test scripts call by call: a real HTTP peer for
 * the transport's unit tests (HTTP status codes, `Retry-After`, truncated bodies, hangs, batches).
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One JSON-RPC request as received (a batch is split into its calls). */
export interface ScriptedCall {
  id: unknown;
  method: string;
  params: unknown[];
}

/**
 * What the server does with one HTTP request (a single call or a whole batch):
 * - `{ result }` per call via {@link ScriptedRpcOptions.answer} (the default);
 * - `{ status, headers?, body? }`: a raw HTTP answer for the whole request (e.g. 429, 503, truncated JSON);
 * - `"hang"`: never answers (until the server closes);
 * - `"reset"`: destroys the connection without an answer.
 */
export type HttpAction = { status: number; headers?: Record<string, string>; body?: string } | "hang" | "reset" | undefined;

/** Options of {@link startScriptedRpc}. */
export interface ScriptedRpcOptions {
  /** The JSON-RPC result of one call (`undefined` → JSON-RPC error -32601 method not found). */
  answer(call: ScriptedCall): unknown;
  /** A JSON-RPC error to answer the call with instead (e.g. a pruned node's `missing trie node`); undefined: {@link answer} answers. */
  error?(call: ScriptedCall): { code: number; message: string } | undefined;
  /**
   * Decides, before any call is answered, what happens to HTTP request number `n` (1-based) holding
   * `calls`; `undefined` answers normally.
   */
  http?(n: number, calls: ScriptedCall[]): HttpAction;
}

/** A running scripted server. */
export interface ScriptedRpc {
  url: string;
  /** Every HTTP request received, in order, with its calls. */
  requests: ScriptedCall[][];
  /** The headers of every HTTP request received, in order. */
  headers: IncomingMessage["headers"][];
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 with a free port. */
export async function startScriptedRpc(opts: ScriptedRpcOptions): Promise<ScriptedRpc> {
  const requests: ScriptedCall[][] = [];
  const headers: IncomingMessage["headers"][] = [];
  const hanging = new Set<ServerResponse>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    const batch = Array.isArray(body);
    const calls = (batch ? body : [body]).map((c) => {
      const o = c as { id?: unknown; method?: unknown; params?: unknown };
      return { id: o.id ?? null, method: String(o.method), params: Array.isArray(o.params) ? o.params : [] };
    });
    requests.push(calls);
    headers.push(req.headers);
    const action = opts.http?.(requests.length, calls);
    if (action === "hang") {
      hanging.add(res);
      return;
    }
    if (action === "reset") {
      req.socket.destroy();
      return;
    }
    if (action) {
      res.writeHead(action.status, { "content-type": "application/json", ...action.headers });
      res.end(action.body ?? "");
      return;
    }
    const answers = calls.map((c) => {
      const error = opts.error?.(c);
      if (error) return { jsonrpc: "2.0", id: c.id, error };
      const result = opts.answer(c);
      return result === undefined
        ? { jsonrpc: "2.0", id: c.id, error: { code: -32601, message: `the method ${c.method} does not exist` } }
        : { jsonrpc: "2.0", id: c.id, result };
    });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(batch ? answers : answers[0]));
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    headers,
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A minimal consistent block `number` with `txs` transactions, and its receipts (one log each), as a node answers them. */
export function syntheticBlock(number: number, txs = 2): { block: Record<string, unknown>; receipts: Array<Record<string, unknown>> } {
  const hex = (n: number) => `0x${n.toString(16)}`;
  const h = (tag: string, n: number) => `0x${tag.repeat(2)}${n.toString(16).padStart(62, "0")}`;
  const hash = h("b", number);
  const transactions = Array.from({ length: txs }, (_, i) => ({ hash: h("a", number * 1000 + i), transactionIndex: hex(i) }));
  const receipts = transactions.map((t, i) => ({
    transactionHash: t.hash,
    transactionIndex: hex(i),
    blockHash: hash,
    blockNumber: hex(number),
    cumulativeGasUsed: hex(21_000 * (i + 1)),
    logs: [{ blockHash: hash, transactionHash: t.hash, logIndex: hex(i) }],
  }));
  return { block: { number: hex(number), hash, gasUsed: hex(21_000 * txs), transactions }, receipts };
}
