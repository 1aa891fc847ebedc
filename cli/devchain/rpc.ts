/**
 * Raw JSON-RPC helpers that need no ethers provider (used before a node is known to be up).
 * @module
 */

/**
 * Asks a node for its chain id with one `eth_chainId` request.
 * @param rpcUrl HTTP JSON-RPC endpoint, e.g. `http://127.0.0.1:8545`.
 * @param timeoutMs Abort the request after this many milliseconds (default 2000).
 * @returns The chain id as a number (e.g. 31337 for anvil).
 * @throws {Error} when the node cannot be reached, times out, answers with a non-2xx status,
 *   a JSON-RPC error, or a result that is not a hex quantity.
 */
export async function fetchChainId(rpcUrl: string, timeoutMs = 2000): Promise<number> {
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) throw new Error(`eth_chainId: HTTP ${res.status} from ${rpcUrl}`);
  const body = (await res.json()) as { result?: unknown; error?: { message?: string } };
  if (body.error) throw new Error(`eth_chainId: ${body.error.message ?? JSON.stringify(body.error)}`);
  if (typeof body.result !== "string" || !/^0x[0-9a-fA-F]+$/.test(body.result)) {
    throw new Error(`eth_chainId: unexpected result ${JSON.stringify(body.result)} from ${rpcUrl}`);
  }
  return Number.parseInt(body.result, 16);
}

/**
 * Sends one JSON-RPC request and returns its `result` (tests, benchmarks and dev tools that talk
 * to anvil's own methods, e.g. `anvil_reorg`, `evm_setIntervalMining`, which ethers does not wrap).
 * @param rpcUrl HTTP JSON-RPC endpoint, e.g. `http://127.0.0.1:8545`.
 * @throws {Error} `<method>: <message>` when the node answers a JSON-RPC error; fetch errors as thrown.
 */
export async function rpcCall(rpcUrl: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}
