/**
 * Token metadata read from the chain: `name()`, `symbol()` and `decimals()` (EIP-20
 * https://eips.ethereum.org/EIPS/eip-20; ERC-721 metadata extension
 * https://eips.ethereum.org/EIPS/eip-721) by eth_call at the block of the first sighting.
 * @module
 */
import { Contract, JsonRpcProvider } from "ethers";
import type { TokenMetadataSource } from "./tokens.js";

const METADATA_ABI = [
  "function name() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
];

/**
 * A {@link TokenMetadataSource} over a JSON-RPC node. A call that reverts or returns undecodable
 * data (the contract lacks the optional function) gives null for that field; a node failure throws
 * (the token tracker then retries at the next Transfer).
 * @param node a JSON-RPC URL or an ethers provider.
 */
export function rpcTokenMetadataSource(node: string | JsonRpcProvider): TokenMetadataSource {
  const provider = typeof node === "string" ? new JsonRpcProvider(node, undefined, { staticNetwork: true }) : node;
  const optional = async <T>(p: Promise<T>): Promise<T | null> => {
    try {
      return await p;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "CALL_EXCEPTION" || code === "BAD_DATA") return null;
      throw err;
    }
  };
  return {
    async fetch(address, standard, at) {
      const c = new Contract(address, METADATA_ABI, provider);
      const overrides = { blockTag: at.blockNumber };
      const [name, symbol, decimals] = await Promise.all([
        optional(c.getFunction("name").staticCall(overrides) as Promise<string>),
        optional(c.getFunction("symbol").staticCall(overrides) as Promise<string>),
        standard === "erc20" ? optional(c.getFunction("decimals").staticCall(overrides) as Promise<bigint>) : Promise.resolve(null),
      ]);
      return { name, symbol, decimals: decimals === null ? null : Number(decimals) };
    },
  };
}
