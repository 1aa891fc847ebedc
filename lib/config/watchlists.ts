/**
 * Settings of the watchlists (`/alerting/watchlists/`, docs/alerting.md "Watchlists"). The store's
 * and routes' limits are not read from the environment yet: the routes take
 * {@link DEFAULT_WATCHLISTS_CONFIG} unless given others. The match process's copies of the lists
 * are ({@link watchlistCopiesOf}, `loadConfig`'s `config.watchlistCopies`).
 * @module
 */
import { int } from "./parse.js";

/** Limits of the watchlist store and routes. */
export interface WatchlistsConfig {
  /** Most watchlists one account may hold; one more answers 409 `CS_WATCHLIST_LIMIT_REACHED`. Default 100. */
  maxPerAccount: number;
  /** Most members one watchlist may hold; an upload past it answers 409 `CS_WATCHLIST_FULL`. Default 5,000,000. */
  maxMembers: number;
  /** Most members one add/remove request may carry; more answers 413 `CS_WATCHLIST_BATCH_TOO_LARGE`. Default 100,000. */
  maxMembersPerRequest: number;
  /** Largest add/remove request body, in bytes (a CSV of 100,000 addresses is ~4.3 MB). Default 8 MiB. */
  bodyMaxBytes: number;
}

/** The defaults of {@link WatchlistsConfig}. */
export const DEFAULT_WATCHLISTS_CONFIG: WatchlistsConfig = {
  maxPerAccount: 100,
  maxMembers: 5_000_000,
  maxMembersPerRequest: 100_000,
  bodyMaxBytes: 8 * 1024 * 1024,
};

/** Default of {@link WatchlistCopiesConfig.copyMaxBytes}: 512 MiB (ten lists of a million addresses, or one of 5,000,000 at 384 MiB). */
export const DEFAULT_WATCHLIST_COPY_MAX_BYTES = 512 * 2 ** 20;

/** Settings of the watchlist copies the match process keeps (lib/match/watchlist-filters.ts). */
export interface WatchlistCopiesConfig {
  /**
   * Most bytes the exact copies of address lists may take in one match process (48 MiB per million
   * addresses, lib/watchlists/address-set.ts); a list whose copy would pass it gets a Bloom filter
   * instead, whose "maybe"s are confirmed in Redis. Env `CHAINSIFT_WATCHLIST_COPY_MAX_BYTES`, default
   * 536870912 (512 MiB).
   */
  copyMaxBytes: number;
}

/**
 * Reads {@link WatchlistCopiesConfig} from `env`.
 * @param env - the environment (`process.env` in `loadConfig`).
 * @throws {ConfigError} for a value that is not an integer ≥ 0.
 */
export function watchlistCopiesOf(env: NodeJS.ProcessEnv): WatchlistCopiesConfig {
  return { copyMaxBytes: int(env, "CHAINSIFT_WATCHLIST_COPY_MAX_BYTES", DEFAULT_WATCHLIST_COPY_MAX_BYTES, 0) };
}
