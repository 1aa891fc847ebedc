/**
 * Token metadata (symbol, decimals) used to scale token amounts of decoded events.
 *
 * Source: the maintained Uniswap default token list, npm package `@uniswap/default-token-list`
 * (https://github.com/Uniswap/default-token-list, Token Lists schema https://tokenlists.org/),
 * imported as JSON. The list covers many EVM chains; entries are indexed by their `chainId`
 * (EIP-155, https://eips.ethereum.org/EIPS/eip-155) so a chain never gets another chain's decimals.
 * Which list version is bundled is reported by {@link TOKEN_LIST_VERSION}.
 * @module
 */
import tokenList from "@uniswap/default-token-list" with { type: "json" };

/** Metadata of one ERC-20 token (https://eips.ethereum.org/EIPS/eip-20). */
export interface TokenInfo {
  /** Ticker, e.g. `USDT`, as the token list spells it. */
  symbol: string;
  /**
   * Number of decimals of the token's base unit: an on-chain amount `a` is `a / 10^decimals`
   * whole tokens (USDT 6, WETH 18). An integer from 0 to 255.
   */
  decimals: number;
}

/**
 * Looks up the token deployed at `address` on EVM chain `chainId`.
 * @param address the contract address, `0x`-prefixed, lower-case (callers normalise it).
 * @param chainId the EIP-155 chain id, e.g. 1 for Ethereum mainnet.
 * @returns the token's metadata, or undefined when the token is unknown.
 */
export type TokenLookup = (address: string, chainId: number) => TokenInfo | undefined;

/** Version of the bundled token list, e.g. `22.21.0`, and its publication timestamp (ISO 8601). */
export const TOKEN_LIST_VERSION: { version: string; timestamp: string } = {
  version: `${tokenList.version.major}.${tokenList.version.minor}.${tokenList.version.patch}`,
  timestamp: tokenList.timestamp,
};

let byChain: Map<number, Map<string, TokenInfo>> | undefined;

function index(): Map<number, Map<string, TokenInfo>> {
  if (byChain) return byChain;
  const out = new Map<number, Map<string, TokenInfo>>();
  for (const t of tokenList.tokens) {
    if (!Number.isInteger(t.decimals) || t.decimals < 0 || t.decimals > 255) continue;
    let chain = out.get(t.chainId);
    if (!chain) {
      chain = new Map();
      out.set(t.chainId, chain);
    }
    chain.set(t.address.toLowerCase(), { symbol: t.symbol, decimals: t.decimals });
  }
  byChain = out;
  return out;
}

/**
 * The default {@link TokenLookup}: the bundled Uniswap default token list, filtered by chain id.
 * Built once on first use (a map per chain keyed by lower-case address), then O(1) per call.
 * @example lookupToken("0xdac17f958d2ee523a2206206994597c13d831ec7", 1) // { symbol: "USDT", decimals: 6 }
 */
export const lookupToken: TokenLookup = (address, chainId) => index().get(chainId)?.get(address.toLowerCase());

/** A {@link TokenLookup} that knows no token (the bundled list switched off). */
export const noTokens: TokenLookup = () => undefined;

/**
 * The bundled token list's lookup for a configuration (lib/config/index.ts): {@link lookupToken}, or
 * {@link noTokens} when `decode.tokenList` is false (a chains file's `tokenDecimals` without `tokenList`).
 */
export function bundledTokens(config: { decode: { tokenList: boolean } }): TokenLookup {
  return config.decode.tokenList ? lookupToken : noTokens;
}

/**
 * The method decoding options (lib/chain/methods.ts `DecodeMethodOptions`) of a configuration:
 * its `chainId` and {@link bundledTokens}. What the match stage, the index stage's call documents
 * and rule backtests decode Method/Call arguments with.
 */
export function methodDecodingOf(config: { chainId: number; decode: { tokenList: boolean } }): { chainId: number; tokens: TokenLookup } {
  return { chainId: config.chainId, tokens: bundledTokens(config) };
}
