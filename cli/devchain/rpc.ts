/**
 * JSON-RPC helpers of the dev chain, tests and benchmarks (anvil's own methods, e.g. `anvil_reorg`,
 * `evm_setIntervalMining`, which ethers does not wrap), over chainsift's one JSON-RPC client
 * (lib/rpc/client.ts) with no retry (a dev call such as `anvil_mine` or `eth_sendTransaction` must
 * not be sent twice) and no hedge. These clients are the dev chain's, not a served chain's: they
 * speak to an anvil before (or beside) any chain context (lib/chain-context.ts), whose client is the
 * served chain's one.
 * @module
 */
import { createRpcClient, type RpcClient } from "../../lib/rpc/client.js";

/** How long {@link rpcCall} waits for an answer, ms (undici's own default header timeout: a dev call may mine many blocks). */
const DEV_CALL_TIMEOUT_MS = 300_000;

/** The settings of a dev client: one try, no hedged copies. */
const devClient = (rpcUrl: string, timeoutMs: number): RpcClient =>
  createRpcClient({ urls: [rpcUrl], timeoutMs, attempts: 1, hedgeAfterMs: 0 });

/** {@link rpcCall}'s clients by URL (an idle client holds no timer nor socket beyond keep-alive). */
const clients = new Map<string, RpcClient>();

/**
 * Asks a node for its chain id with one `eth_chainId` request.
 * @param rpcUrl HTTP JSON-RPC endpoint, e.g. `http://127.0.0.1:8545`.
 * @param timeoutMs Abort the request after this many milliseconds (default 2000).
 * @returns The chain id as a number (e.g. 31337 for anvil).
 * @throws {Error} when the node cannot be reached, times out, answers with a non-2xx status,
 *   a JSON-RPC error, or a result that is not a hex quantity.
 */
export async function fetchChainId(rpcUrl: string, timeoutMs = 2000): Promise<number> {
  const client = devClient(rpcUrl, timeoutMs);
  try {
    const result = await client.request("eth_chainId", []);
    if (typeof result !== "string" || !/^0x[0-9a-fA-F]+$/.test(result)) {
      throw new Error(`eth_chainId: unexpected result ${JSON.stringify(result)} from ${rpcUrl}`);
    }
    return Number.parseInt(result, 16);
  } finally {
    client.destroy();
  }
}

/**
 * Sends one JSON-RPC request and returns its `result` (tests, benchmarks and dev tools that talk
 * to anvil's own methods, e.g. `anvil_reorg`, `evm_setIntervalMining`, which ethers does not wrap).
 * Concurrent calls to one URL may go out as one JSON-RPC batch.
 * @param rpcUrl HTTP JSON-RPC endpoint, e.g. `http://127.0.0.1:8545`.
 * @throws {Error} `<method>: <message>` when the node answers a JSON-RPC error (lib/rpc/transport.ts
 *   `RpcAnswerError`); a `RetryableError` `<method> failed: …` when it cannot be reached or gives no
 *   answer within 300 s.
 */
export async function rpcCall(rpcUrl: string, method: string, params: unknown[] = []): Promise<unknown> {
  let client = clients.get(rpcUrl);
  if (!client) {
    client = devClient(rpcUrl, DEV_CALL_TIMEOUT_MS);
    clients.set(rpcUrl, client);
  }
  return client.request(method, params);
}
