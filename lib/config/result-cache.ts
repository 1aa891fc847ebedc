/**
 * The result-cache variables of `loadConfig` (lib/config/index.ts, `config.api.resultCache`; issue 30):
 * the API's cache of search answers without hits (api/search/result-cache.ts, docs/api.md "Result cache").
 * @module
 */
import { bool, int } from "./parse.js";

/**
 * Settings of the API's result cache (api/search/result-cache.ts): answers of searches without
 * hits (size 0 after rewriting), kept per exact Elasticsearch request and dropped when the index
 * stage reports a write to one of their indices (docs/api.md "Result cache").
 */
export interface ResultCacheConfig {
  /** Whether the cache is used. Env `CHAINSIFT_RESULT_CACHE`, default true. */
  enabled: boolean;
  /** Total bytes of cached answers (least recently used dropped first). Env `CHAINSIFT_RESULT_CACHE_MAX_BYTES`, default 67108864 (64 MiB); 0 caches nothing. */
  maxBytes: number;
  /** Largest answer kept, in bytes (Elasticsearch's response). Env `CHAINSIFT_RESULT_CACHE_MAX_ENTRY_BYTES`, default 1048576 (1 MiB). */
  maxEntryBytes: number;
  /** Longest time an answer is served, in ms (a bound on any invalidation missed). Env `CHAINSIFT_RESULT_CACHE_MAX_AGE_MS`, default 300000 (5 min). */
  maxAgeMs: number;
  /**
   * The indices' refresh interval, in ms: how long after a write its documents may still be
   * invisible to searches. Env `CHAINSIFT_ES_REFRESH_INTERVAL_MS`, default 1000 (Elasticsearch's
   * `index.refresh_interval` default, which chainsift's indices keep:
   * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/index-modules.html#index-refresh-interval-setting).
   */
  refreshIntervalMs: number;
  /** Added to {@link refreshIntervalMs} for a refresh that runs late, in ms. Env `CHAINSIFT_RESULT_CACHE_MARGIN_MS`, default 1000. */
  marginMs: number;
}

/** Reads {@link ResultCacheConfig} from `env`. @throws {ConfigError} for a value that is not a number of the right range or a boolean. */
export function resultCacheOf(env: NodeJS.ProcessEnv): ResultCacheConfig {
  return {
    enabled: bool(env, "CHAINSIFT_RESULT_CACHE", true),
    maxBytes: int(env, "CHAINSIFT_RESULT_CACHE_MAX_BYTES", 64 * 1024 * 1024, 0),
    maxEntryBytes: int(env, "CHAINSIFT_RESULT_CACHE_MAX_ENTRY_BYTES", 1024 * 1024, 1),
    maxAgeMs: int(env, "CHAINSIFT_RESULT_CACHE_MAX_AGE_MS", 300_000, 1),
    refreshIntervalMs: int(env, "CHAINSIFT_ES_REFRESH_INTERVAL_MS", 1000, 1),
    marginMs: int(env, "CHAINSIFT_RESULT_CACHE_MARGIN_MS", 1000, 0),
  };
}
