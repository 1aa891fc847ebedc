/**
 * Which contracts of a batch of logs need on-chain token metadata, and the per-batch lookup built
 * from what was resolved (pure; the decode stage's shell does the one resolve per batch).
 *
 * A log needs its emitting contract's decimals when it fits a layout with a scaled argument
 * ({@link EVENT_SPECS} `scaled`: 3-topic ERC-20 Transfer/Approval, 2-topic WETH Deposit/Withdrawal)
 * and the bundled token list (lib/chain/tokens.ts) does not know the contract on the chain.
 * @module
 */
import { type EventFragment, Interface } from "ethers";
import type { TokenMetadata, TokenMetadataRequest } from "../../lib/chain/token-metadata.js";
import { lookupToken, type TokenLookup } from "../../lib/chain/tokens.js";
import type { LogRecord } from "../../lib/records.js";
import { EVENT_SPECS } from "./events.js";

let scaledLayouts: Map<string, Set<number>> | undefined;

/** topic0 → topic counts of the layouts with a scaled argument; built once per process. */
function scaled(): Map<string, Set<number>> {
  if (scaledLayouts) return scaledLayouts;
  const out = new Map<string, Set<number>>();
  for (const spec of EVENT_SPECS) {
    if (!spec.scaled?.length) continue;
    const fragment = new Interface([spec.abi]).fragments[0] as EventFragment;
    const topic0 = fragment.topicHash.toLowerCase();
    const counts = out.get(topic0) ?? new Set<number>();
    counts.add(1 + fragment.inputs.filter((i) => i.indexed).length);
    out.set(topic0, counts);
  }
  scaledLayouts = out;
  return out;
}

/**
 * The contracts of `logs` whose token amounts need decimals the bundled list does not have, each
 * with the lowest block it is seen at in `logs` (where its metadata is read).
 * @param logs - consumed records; anything that is not a well-formed log is skipped.
 * @param chainId - EIP-155 chain id selecting the bundled list's entries (the decoder's).
 * @param known - the decoder's own lookup (default the bundled list); contracts it knows are skipped.
 * @returns one request per lower-case address, in order of first appearance.
 */
export function tokenRequests(logs: readonly unknown[], chainId: number, known: TokenLookup = lookupToken): TokenMetadataRequest[] {
  const table = scaled();
  const out = new Map<string, TokenMetadataRequest>();
  for (const l of logs) {
    const log = l as Partial<LogRecord> | null;
    const topics = log?.topics;
    if (!Array.isArray(topics) || typeof topics[0] !== "string" || typeof log?.address !== "string") continue;
    if (!table.get(topics[0].toLowerCase())?.has(topics.length)) continue;
    const blockNumber = log.blockNumber?.num;
    if (typeof blockNumber !== "number") continue;
    const address = log.address.toLowerCase();
    const seen = out.get(address);
    if (seen) seen.blockNumber = Math.min(seen.blockNumber, blockNumber);
    else if (!known(address, chainId)) out.set(address, { address, blockNumber });
  }
  return [...out.values()];
}

/**
 * A {@link TokenLookup} over resolved metadata (the decoder's per-call fallback): a token with
 * known decimals, its symbol or `""` when it has none; undefined otherwise (then `scaled` is null).
 * @param resolved - lower-case address → metadata, e.g. a {@link TokenMetadataCache} answer.
 */
export function lookupOf(resolved: ReadonlyMap<string, TokenMetadata>): TokenLookup {
  return (address) => {
    const m = resolved.get(address);
    return m && m.decimals !== null ? { symbol: m.symbol ?? "", decimals: m.decimals } : undefined;
  };
}
