/**
 * The API's result cache: Elasticsearch's answers to searches without hits (`size: 0` after
 * rewriting: aggregations, counts), kept in memory by the exact request sent, so that repeated
 * dashboard aggregations are answered without a round trip to Elasticsearch. The semantics are
 * those of Elasticsearch's own shard request cache
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/shard-request-cache.html): only
 * `size: 0` requests, none whose answer depends on the time (`now` in date math), and never an
 * answer staler than Elasticsearch's own would be (see "Invalidation"). Described for operators
 * in docs/api.md "Result cache".
 *
 * **Key.** The final request sent to Elasticsearch (JSON text of the `estypes.SearchRequest`,
 * built in a fixed key order by api/search/search.ts `buildSearchRequest`): its indices after
 * pruning, its body after every rewriting, `typed_keys`, `track_total_hits`, `timeout`. Whatever
 * changes the answer is in the request, so two requests with one key have one answer; what the
 * API does with the answer (the contract's envelope, Elasticsearch's shape, `filter_path`) runs
 * again on each use, exactly as on a miss: what is kept is Elasticsearch's response bytes.
 *
 * **Not cached** ({@link bypassReason}): requests with hits (`size` > 0), a scroll or point in
 * time, `profile`, `request_cache: false`, any string starting with `now` in the request (date
 * math, `"now-1d/d"`); answers that `timed_out`, have failed shards, or are errors; answers larger
 * than {@link ResultCacheOptions.maxEntryBytes}.
 *
 * **Invalidation.** The index stage publishes the aliases it wrote after each bulk or delete
 * (pipeline/index/publish.ts); every API instance subscribes (api/plugins/result-cache.ts) and
 * calls {@link ResultCache.invalidate}: the entries of those aliases are dropped and the aliases
 * are not cached for {@link ResultCacheOptions.refreshIntervalMs} + {@link ResultCacheOptions.marginMs}
 * (documents become visible to searches only at the next refresh). An answer whose request started
 * before an invalidation of one of its aliases is not kept (it may predate the write). While the
 * subscriber is not connected ({@link ResultCache.setConnected}), everything is dropped and
 * nothing is cached; once connected again, nothing is cached for that same window (writes made
 * meanwhile were not heard). Writers other than chainsift's index stage are not heard:
 * {@link ResultCacheOptions.maxAgeMs} bounds how long their changes can be missed.
 * @module
 */
import type { estypes } from "@elastic/elasticsearch";
import { LRUCache } from "lru-cache";
import { aliasOfIndex } from "../../es/partitions.js";

/** How one search used the cache (the `x-chainsift-cache` answer header). */
export type CacheOutcome = "hit" | "miss" | "bypass";

/** Options of {@link ResultCache} (config `api.resultCache`, lib/config/index.ts). */
export interface ResultCacheOptions {
  /** Total bytes of cached answers (least recently used dropped first); 0 caches nothing. */
  maxBytes: number;
  /** Largest answer kept, in bytes. */
  maxEntryBytes: number;
  /** Longest time an answer is served, in ms. */
  maxAgeMs: number;
  /** The indices' refresh interval, in ms (Elasticsearch's default 1000). */
  refreshIntervalMs: number;
  /** Added to the refresh interval, in ms, for a refresh that runs late. */
  marginMs: number;
  /** Clock in ms (tests); default `Date.now`. */
  now?: () => number;
  /** Called on each outcome (metrics); requests that are never cached (hits, scroll, point in time) have none. */
  onOutcome?: (outcome: CacheOutcome) => void;
}

/** A search's use of a cache: the cache, and how it was used (set by {@link ResultCache.withBytes}). */
export interface CacheUse {
  cache: ResultCache;
  outcome?: CacheOutcome;
}

/** Date math anchored at the current time: `now`, `now-1d`, `now/d`, … (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#date-math). */
const NOW = /^now(?:[-+/]|$)/;

/**
 * Whether a value (a request body) holds a string starting with `now` date math anywhere, object
 * keys included; such answers depend on the time and are not cached (as Elasticsearch's cache).
 * Pure. A term query for the text `"now"` counts too (not cached: safe).
 */
export function usesNow(value: unknown): boolean {
  if (typeof value === "string") return NOW.test(value.trim());
  if (Array.isArray(value)) return value.some(usesNow);
  if (value !== null && typeof value === "object")
    return Object.entries(value as Record<string, unknown>).some(([k, v]) => NOW.test(k) || usesNow(v));
  return false;
}

/**
 * Why a request is not cached, or undefined when it may be (see the module notes): `size`
 * (hits asked, or no size), `scroll`, `pit`, `profile`, `request_cache` (false), `now`. Pure.
 */
export function bypassReason(req: estypes.SearchRequest): string | undefined {
  if (req.size !== 0) return "size";
  if (req.scroll !== undefined) return "scroll";
  if (req.pit !== undefined) return "pit";
  if (req.profile === true) return "profile";
  if (req.request_cache === false) return "request_cache";
  if (usesNow(req)) return "now";
  return undefined;
}

/** The {@link bypassReason}s of requests that are never cached whatever the cache's state: not counted as outcomes. */
const NEVER_CACHED = new Set(["size", "scroll", "pit"]);

/** The cache key of a request: its JSON text (see the module notes). Pure. */
export function cacheKey(req: estypes.SearchRequest): string {
  return JSON.stringify(req);
}

/** The aliases a request searches (backing indices mapped to their alias, es/partitions.ts `aliasOfIndex`), without duplicates. Pure. */
export function aliasesOf(req: estypes.SearchRequest): string[] {
  const index = req.index === undefined ? [] : Array.isArray(req.index) ? req.index : req.index.split(",");
  return [...new Set(index.map((i) => aliasOfIndex(i.trim())))];
}

/** The head of an answer that may be kept: not timed out, no failed shard. */
const KEEPABLE =
  /^\{"took":\d+,"timed_out":false,(?:"terminated_early":(?:true|false),)?"_shards":\{"total":\d+,"successful":\d+,"skipped":\d+,"failed":0\}/;

/** Whether Elasticsearch's response bytes may be kept: `timed_out: false` and `_shards.failed: 0`, read from the head. Pure. */
export function keepableAnswer(bytes: Buffer): boolean {
  return KEEPABLE.test(bytes.toString("latin1", 0, Math.min(bytes.length, 256)));
}

interface Entry {
  bytes: Buffer;
  aliases: string[];
}

/** The cache (see the module notes). */
export class ResultCache {
  private readonly lru: LRUCache<string, Entry> | undefined;
  /** Alias → keys of the entries that search it. */
  private readonly byAlias = new Map<string, Set<string>>();
  /** Alias → until when (ms) it is not cached, and when it was last invalidated. */
  private readonly writes = new Map<string, { until: number; at: number }>();
  /** Nothing is cached until then (ms): after a (re)connection. */
  private globalUntil = 0;
  /** Bumped at each disconnection: answers of requests started before it are not kept. */
  private epoch = 0;
  private connected = false;
  private readonly now: () => number;
  readonly options: ResultCacheOptions;

  /** @param options - sizes, ages and the refresh window ({@link ResultCacheOptions}). */
  constructor(options: ResultCacheOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.lru =
      options.maxBytes > 0
        ? new LRUCache<string, Entry>({
            maxSize: options.maxBytes,
            maxEntrySize: options.maxEntryBytes,
            sizeCalculation: (e, key) => e.bytes.length + key.length,
            ttl: options.maxAgeMs,
            ttlResolution: 0,
            perf: { now: () => this.now() },
            dispose: (e, key) => {
              for (const a of e.aliases) {
                const keys = this.byAlias.get(a);
                keys?.delete(key);
                if (keys?.size === 0) this.byAlias.delete(a);
              }
            },
          })
        : undefined;
  }

  /** How long nothing is cached for an alias after a write, or for everything after a (re)connection, in ms. */
  get windowMs(): number {
    return this.options.refreshIntervalMs + this.options.marginMs;
  }

  /** Whether the invalidation subscriber is connected (nothing is cached while it is not). */
  get isConnected(): boolean {
    return this.connected;
  }

  /**
   * The subscriber's state. Disconnected: every entry dropped, nothing cached. Connected (again):
   * nothing cached for {@link windowMs} (writes meanwhile were not heard).
   */
  setConnected(connected: boolean): void {
    if (connected && !this.connected) this.globalUntil = this.now() + this.windowMs;
    if (!connected) {
      this.epoch++;
      this.clear();
    }
    this.connected = connected;
  }

  /** Drops the entries of these aliases (names of backing indices count for their alias) and bypasses them for {@link windowMs}. */
  invalidate(indices: readonly string[]): void {
    const now = this.now();
    for (const alias of new Set(indices.map(aliasOfIndex))) {
      this.writes.set(alias, { until: now + this.windowMs, at: now });
      for (const key of [...(this.byAlias.get(alias) ?? [])]) this.lru?.delete(key);
    }
    // Keep the map small: forget windows long past (at is only compared with running requests' starts).
    if (this.writes.size > 10_000) for (const [a, w] of this.writes) if (w.until + this.options.maxAgeMs < now) this.writes.delete(a);
  }

  /** Drops every entry. */
  clear(): void {
    this.lru?.clear();
    this.byAlias.clear();
  }

  /** Entries and their total size in bytes (metrics, tests). */
  stats(): { entries: number; bytes: number } {
    return { entries: this.lru?.size ?? 0, bytes: this.lru?.calculatedSize ?? 0 };
  }

  /** Whether an alias is in its bypass window at `now`. */
  private bypassed(aliases: readonly string[], now: number): boolean {
    if (!this.connected || now < this.globalUntil) return true;
    return aliases.some((a) => (this.writes.get(a)?.until ?? 0) > now);
  }

  /**
   * Runs a search through the cache: a kept answer is handed to `use` at once; else `fetch` sends
   * the request and hands its response bytes to the function it is given, which keeps a copy when
   * allowed (see the module notes) and calls `use`. `trace.outcome` is set to how it went, except for
   * a request that is never cached (hits, a scroll or a point in time): no outcome, not counted.
   * @param req - the exact request `fetch` sends.
   * @param fetch - sends `req` and calls its argument with the response bytes (only valid during that call).
   * @param use - makes the answer of the response bytes (only valid during the call).
   * @throws what `fetch` and `use` throw (nothing is kept then).
   */
  async withBytes<T>(
    req: estypes.SearchRequest,
    fetch: (use: (bytes: Buffer) => T) => Promise<T>,
    use: (bytes: Buffer) => T,
    trace?: CacheUse,
  ): Promise<T> {
    const started = this.now();
    const outcome = (o: CacheOutcome) => {
      if (trace) trace.outcome = o;
      this.options.onOutcome?.(o);
    };
    const lru = this.lru;
    const reason = bypassReason(req);
    // A search with hits, a scroll or a point in time is never cacheable: not counted at all, so that
    // `bypass` counts the searches the cache could have answered (opted out, `now`, or a write's window).
    if (reason !== undefined && NEVER_CACHED.has(reason)) return fetch(use);
    const aliases = lru && reason === undefined ? aliasesOf(req) : undefined;
    if (!lru || !aliases || this.bypassed(aliases, started)) {
      outcome("bypass");
      return fetch(use);
    }
    const key = cacheKey(req);
    const hit = lru.get(key);
    if (hit) {
      outcome("hit");
      return use(hit.bytes);
    }
    outcome("miss");
    const epoch = this.epoch;
    return fetch((bytes) => {
      const answer = use(bytes);
      // Kept only when no invalidation of its aliases nor disconnection came while it ran.
      const now = this.now();
      const fresh = epoch === this.epoch && !this.bypassed(aliases, now) && aliases.every((a) => (this.writes.get(a)?.at ?? -1) < started);
      if (fresh && bytes.length <= this.options.maxEntryBytes && keepableAnswer(bytes)) {
        this.lru?.set(key, { bytes: Buffer.from(bytes), aliases });
        if (this.lru?.has(key))
          for (const a of aliases) {
            const keys = this.byAlias.get(a) ?? new Set<string>();
            keys.add(key);
            this.byAlias.set(a, keys);
          }
      }
      return answer;
    });
  }
}
