/**
 * Settings of the watchlists (`/alerting/watchlists/`, docs/alerting.md "Watchlists"). Not read
 * from the environment yet: the routes take {@link DEFAULT_WATCHLISTS_CONFIG} unless given others.
 * @module
 */

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
