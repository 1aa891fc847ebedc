/**
 * The chains one API serves: every chain of the chains file (docs/chains.md) when there is one,
 * else the one chain of the environment shorthand. Search paths, rules, backtests, ABIs and the
 * delivery log all serve each of them; the path (`/<technology>/<blockchain>/<network>/…`) or the
 * rule's fields pick one. Accounts, tokens and the rule store are shared by all.
 * @module
 */
import type { DecodeMethodOptions } from "../lib/chain/methods.js";
import { methodDecodingOf } from "../lib/chain/tokens.js";
import type { ChainId, Config } from "../lib/config/index.js";

/** A chain the API serves. */
export interface ServedChain extends ChainId {
  /** Its EIP-155 chain id, when known (the chains file's `chainId`, or `config.chainId`); null otherwise. */
  chainId: number | null;
  /**
   * How rule backtests of this chain decode Method/Call arguments (`scaled` values): its chain id and
   * token decimals source, the same as its match stage's; undefined when the chain id is unknown
   * (a plain {@link ChainId} passed by a caller): backtests of that chain are then refused
   * (`CS_BACKTEST_TARGET_UNSUPPORTED`), never decoded with an assumed chain id.
   */
  decode: DecodeMethodOptions | undefined;
}

/** The `technology/blockchain/network` key of a chain. */
const keyOf = (c: ChainId) => `${c.technology}/${c.blockchain}/${c.network}`;

/**
 * The served chains of a configuration: each entry of `config.chainsFile` (chain id and
 * `tokenDecimals` from the file), or `config.chain` alone. `ownDecode` (e.g. `npm start`'s embedded
 * chain with the tokens it deployed) replaces the decoding of `config.chain`.
 * @param config - uses `chain`, `chainId`, `decode.tokenList` and `chainsFile`.
 * @param ownDecode - the decoding of `config.chain`; default `methodDecodingOf(config)` (lib/chain/tokens.ts).
 */
export function servedChainsOf(
  config: Pick<Config, "chain" | "chainId" | "decode" | "chainsFile">,
  ownDecode: DecodeMethodOptions = methodDecodingOf(config),
): ServedChain[] {
  const own = keyOf(config.chain);
  const entries = config.chainsFile?.chains ?? [];
  if (entries.length === 0) return [{ ...config.chain, chainId: config.chainId, decode: ownDecode }];
  return entries.map((e) => {
    const chain = { technology: e.technology, blockchain: e.blockchain, network: e.network };
    const tokenList = (e.tokenDecimals ?? ["tokenList", "calls"]).includes("tokenList");
    const decode = keyOf(chain) === own ? ownDecode : methodDecodingOf({ chainId: e.chainId, decode: { tokenList } });
    return { ...chain, chainId: e.chainId, decode };
  });
}

/**
 * The served chains of {@link ApiDeps}-style input: `chains` as given (plain chain ids get
 * `config.chainId` and `ownDecode` when they are `config.chain`, else chain id null and no
 * decoding), or {@link servedChainsOf} when `chains` is absent or empty.
 */
export function resolveServedChains(
  config: Pick<Config, "chain" | "chainId" | "decode" | "chainsFile">,
  chains: ReadonlyArray<ChainId | ServedChain> | undefined,
  ownDecode: DecodeMethodOptions = methodDecodingOf(config),
): ServedChain[] {
  if (!chains || chains.length === 0) return servedChainsOf(config, ownDecode);
  const own = keyOf(config.chain);
  return chains.map((c) => {
    const ids = { technology: c.technology, blockchain: c.blockchain, network: c.network };
    if ("decode" in c) return { ...ids, chainId: c.chainId, decode: c.decode };
    return keyOf(c) === own ? { ...ids, chainId: config.chainId, decode: ownDecode } : { ...ids, chainId: null, decode: undefined };
  });
}

/** The served chain a rule's or a path's chain fields name (exact match), or undefined. */
export function servedChain(chains: readonly ServedChain[], chain: ChainId): ServedChain | undefined {
  const k = keyOf(chain);
  return chains.find((c) => keyOf(c) === k);
}
