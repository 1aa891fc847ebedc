/**
 * The read-ahead variables of `loadConfig` (lib/config/index.ts, `config.api.readAhead`; issue 30):
 * the API fetching the next page of a point in time or a scroll while the client reads the current one
 * (api/search/read-ahead.ts, api/search/scroll-ahead.ts, docs/api.md "Point in time").
 * @module
 */
import { bool, int } from "./parse.js";

/** Settings of the API's read-ahead of point-in-time and scroll pages (api/search/read-ahead.ts, api/search/scroll-ahead.ts). */
export interface ReadAheadConfig {
  /** Whether the next page of a point in time or a scroll is fetched ahead. Env `CHAINSIFT_API_READ_AHEAD`, default true. */
  enabled: boolean;
  /**
   * Most bytes of Elasticsearch answers an API instance holds ahead, over all points in time (and, apart, over all scrolls); none is
   * fetched ahead while they reach it. Env `CHAINSIFT_API_READ_AHEAD_MAX_BYTES`, default 67108864 (64 MiB).
   */
  maxBytes: number;
  /** How long a page fetched ahead waits for its request, in ms; then it is dropped. Env `CHAINSIFT_API_READ_AHEAD_TTL_MS`, default 60000. */
  ttlMs: number;
}

/** Reads {@link ReadAheadConfig} from `env`. @throws {ConfigError} for a value that is not a number of the right range or a boolean. */
export function readAheadOf(env: NodeJS.ProcessEnv): ReadAheadConfig {
  return {
    enabled: bool(env, "CHAINSIFT_API_READ_AHEAD", true),
    maxBytes: int(env, "CHAINSIFT_API_READ_AHEAD_MAX_BYTES", 64 * 1024 * 1024, 0),
    ttlMs: int(env, "CHAINSIFT_API_READ_AHEAD_TTL_MS", 60_000, 1),
  };
}
