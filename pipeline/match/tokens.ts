/**
 * Token entities: a token contract seen for the first time. The first decoded ERC-20 or ERC-721
 * `Transfer` event emitted by an address produces one {@link TokenEntity}; name, symbol and
 * decimals come from a pluggable {@link TokenMetadataSource} (in production, `eth_call` of
 * `name()`, `symbol()`, `decimals()`).
 *
 * "Seen" is recorded in Redis, key `<keyPrefix>match:<technology>/<blockchain>/<network>:token:<address lower-case>`
 * (a string holding the first sighting as JSON), so the entity is produced once per chain across
 * restarts and instances. Limitation: if the block of the first sighting is later reorganised out,
 * the confirmation tracker drops the Token match, and the token is not produced again.
 * @module
 */
import type { TokenMetadata } from "../../lib/chain/token-metadata.js";
import { lookupToken } from "../../lib/chain/tokens.js";
import type { ChainId } from "../../lib/config/index.js";
import type { TokenEntity } from "../../lib/match/entities.js";
import type { EventRecord } from "../../lib/records.js";
import { chainKeyPrefix } from "./keys.js";
import { luaScript, runLua } from "./lua.js";
import type { MatchRedis } from "./redis.js";

export type { TokenMetadata };

/** Where token metadata comes from. */
export interface TokenMetadataSource {
  /**
   * Reads a token's metadata.
   * @param address the contract, EIP-55 (as event records carry it).
   * @param standard `erc20` or `erc721`.
   * @param at the block of the first sighting (a source may read state at that block).
   * @returns the metadata; fields the contract does not provide are null.
   * @throws on transient failures (e.g. the node is unreachable): the sighting is then not recorded
   *   and the next Transfer of the token retries.
   */
  fetch(address: string, standard: "erc20" | "erc721", at: { blockNumber: number; blockHash: string }): Promise<TokenMetadata>;
}

/**
 * A {@link TokenMetadataSource} backed by the bundled token list (`lib/chain/tokens.ts`):
 * symbol and decimals of listed ERC-20 tokens, name always null, everything null for others.
 * For tests and as a fallback; production uses eth_call.
 * @param chainId EIP-155 chain id, default 1.
 */
export function tokenListMetadataSource(chainId: number): TokenMetadataSource {
  return {
    async fetch(address, standard) {
      const t = standard === "erc20" ? lookupToken(address.toLowerCase(), chainId) : undefined;
      return { name: null, symbol: t?.symbol ?? null, decimals: t?.decimals ?? null };
    },
  };
}

/** Dependencies of {@link createTokenTracker}. */
export interface TokenTrackerDeps {
  /** A connected Redis client; not closed by the tracker. */
  redis: MatchRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`). */
  keyPrefix: string;
  /** The chain served (part of every key). */
  chain: ChainId;
  metadata: TokenMetadataSource;
  /** Addresses remembered in memory to skip Redis for known tokens; default 200000 (the memory is cleared when full). */
  cacheSize?: number;
}

/** Produces Token entities from decoded events. */
export interface TokenTracker {
  /**
   * Looks at one decoded event: when it is an ERC-20/721 `Transfer` (no decoding error) from an
   * address not seen before, fetches the metadata, records the sighting (SET NX) and returns the
   * Token entity; otherwise null. Concurrent calls for the same new token yield one entity.
   * @throws when the metadata source or Redis fails (nothing recorded; safe to retry).
   */
  observe(ev: EventRecord): Promise<TokenEntity | null>;
}

/** 1 when the token's sighting is recorded. */
const SEEN = luaScript({ keys: ["token"], args: [] }, `return redis.call('EXISTS', token)`);
/** Records the first sighting; 1 when this call recorded it, 0 when one was recorded already. */
const RECORD = luaScript(
  { keys: ["token"], args: ["sighting"] },
  `if redis.call('SET', token, sighting, 'NX') then return 1 else return 0 end`,
);

/** Creates a {@link TokenTracker}. */
export function createTokenTracker(deps: TokenTrackerDeps): TokenTracker {
  const base = `${chainKeyPrefix(deps.keyPrefix, deps.chain)}token:`;
  const cacheSize = deps.cacheSize ?? 200_000;
  const known = new Set<string>();
  const remember = (a: string) => {
    if (known.size >= cacheSize) known.clear();
    known.add(a);
  };
  return {
    async observe(ev) {
      if (ev.event !== "Transfer" || ev.error !== null || (ev.standard !== "erc20" && ev.standard !== "erc721")) return null;
      const lower = ev.address.toLowerCase();
      if (known.has(lower)) return null;
      const key = base + lower;
      if (Number(await runLua(deps.redis, SEEN, { token: key })) === 1) {
        remember(lower);
        return null;
      }
      const meta = await deps.metadata.fetch(ev.address, ev.standard, { blockNumber: ev.blockNumber.num, blockHash: ev.blockHash });
      const sighting = JSON.stringify({ blockHash: ev.blockHash, blockNumber: ev.blockNumber.num, transactionHash: ev.transactionHash });
      const recorded = Number(await runLua(deps.redis, RECORD, { token: key, sighting })) === 1;
      remember(lower);
      if (!recorded) return null;
      const decimals = typeof meta.decimals === "number" && Number.isInteger(meta.decimals) && meta.decimals >= 0 && meta.decimals <= 255;
      return {
        entityId: `${ev.transactionHash}_token_${lower}`,
        address: ev.address,
        name: meta.name ?? null,
        symbol: meta.symbol ?? null,
        decimals: decimals ? meta.decimals : null,
        standard: ev.standard,
        transactionHash: ev.transactionHash,
        logIndex: ev.logIndex,
        blockHash: ev.blockHash,
        blockNumber: ev.blockNumber,
        timestamp: ev.timestamp,
      };
    },
  };
}
