/**
 * Implementation addresses of proxies, read from their storage slots with `eth_getStorageAt`:
 * - EIP-1967 (https://eips.ethereum.org/EIPS/eip-1967): slot
 *   `bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1)`, read first;
 * - EIP-1822 (https://eips.ethereum.org/EIPS/eip-1822, UUPS): slot `keccak256("PROXIABLE")`.
 * Beacon proxies (EIP-1967's beacon slot) are not followed.
 * @module
 */
import { RetryableError } from "../../lib/errors.js";
import { type RpcReply, type RpcTarget, rpcClientOf } from "../../lib/rpc/client.js";

/** EIP-1967 implementation slot. */
export const EIP1967_IMPLEMENTATION_SLOT = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
/** EIP-1822 (UUPS) `PROXIABLE` slot. */
export const EIP1822_PROXIABLE_SLOT = "0xc5f16f0fcc639fa48a6947836d9850f504798523bf8c9a3a87d5876cf622bcf7";

/** The address in the low 20 bytes of a storage word, lower-case, or null for zero / not a word. */
export function addressInSlot(word: unknown): string | null {
  if (typeof word !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(word)) return null;
  const hex = word.slice(2).padStart(64, "0").slice(24).toLowerCase();
  return /^0+$/.test(hex) ? null : `0x${hex}`;
}

/** Reads implementation addresses; see {@link rpcImplementationReader}. */
export type ImplementationReader = (addresses: readonly string[]) => Promise<Map<string, string | null>>;

/**
 * An {@link ImplementationReader} over the chain's JSON-RPC client: one batch request with two
 * `eth_getStorageAt(address, slot, "latest")` calls per address, failed over between the client's
 * endpoints (lib/rpc/client.ts).
 * @param rpc - the chain's client (e.g. the chain context's), or its endpoint URLs (config
 *   `ingest.rpcUrls`; a client is made for the reader, failing over in order of preference).
 * @param timeoutMs - per request when `rpc` is URLs; default 10000.
 * @returns a reader giving each address its implementation (EIP-1967 slot, else EIP-1822 slot), or null when both are empty.
 * @throws {RetryableError} when no endpoint can be reached or the node answers an error.
 */
export function rpcImplementationReader(rpc: RpcTarget, timeoutMs = 10_000): ImplementationReader {
  const { client } = rpcClientOf(rpc, { timeoutMs });
  return async (addresses) => {
    const out = new Map<string, string | null>();
    if (addresses.length === 0) return out;
    const calls = addresses.flatMap((a) => [
      { method: "eth_getStorageAt", params: [a, EIP1967_IMPLEMENTATION_SLOT, "latest"] },
      { method: "eth_getStorageAt", params: [a, EIP1822_PROXIABLE_SLOT, "latest"] },
    ]);
    let replies: RpcReply[];
    try {
      replies = await client.batch(calls);
    } catch (err) {
      throw new RetryableError(`cannot read proxy slots: ${(err as Error).message}`, { cause: err });
    }
    addresses.forEach((a, i) => {
      const e1967 = replies[2 * i];
      const e1822 = replies[2 * i + 1];
      if (e1967?.error || e1822?.error) throw new RetryableError(`eth_getStorageAt failed: ${(e1967?.error ?? e1822?.error)?.message}`);
      out.set(a, addressInSlot(e1967?.result) ?? addressInSlot(e1822?.result));
    });
    return out;
  };
}
