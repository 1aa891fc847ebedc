/**
 * Token metadata read from the chain for the match stage's Token entities: `name()`, `symbol()` and
 * (ERC-20 only) `decimals()` by eth_call at the block of the first sighting, through chainsift's one
 * implementation, lib/chain/token-metadata.ts (bytes32 symbols and names, reverts, garbage).
 * @module
 */
import { readTokenMetadata } from "../../lib/chain/token-metadata.js";
import { type RpcTarget, rpcClientOf } from "../../lib/rpc/client.js";
import type { TokenMetadataSource } from "./tokens.js";

/**
 * A {@link TokenMetadataSource} over a JSON-RPC node. A call that reverts or returns garbage (the
 * contract lacks the optional function) gives null for that field; a node failure throws a
 * `RetryableError` (the token tracker then retries at the next Transfer).
 * @param rpc - the chain's JSON-RPC client (lib/rpc/client.ts, e.g. the chain context's), or its
 *   endpoint URLs (a client is made for the source, failing over between them in order of preference).
 */
export function rpcTokenMetadataSource(rpc: RpcTarget): TokenMetadataSource {
  const { client } = rpcClientOf(rpc);
  return {
    async fetch(address, standard, at) {
      const fields = standard === "erc20" ? (["name", "symbol", "decimals"] as const) : (["name", "symbol"] as const);
      const [read] = await readTokenMetadata(client, [{ address, blockNumber: at.blockNumber }], { fields });
      return { name: read?.name ?? null, symbol: read?.symbol ?? null, decimals: read?.decimals ?? null };
    },
  };
}
