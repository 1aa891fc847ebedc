/**
 * The API's result cache (api/search/result-cache.ts; docs/api.md "Result cache"): decorates the
 * app with `resultCache` (undefined when config `api.resultCache.enabled` is false), subscribes to
 * the index stage's write notices (lib/index-writes.ts) on a connection of its own (a duplicate of
 * `app.redis`), and reports the metrics:
 * - `chainsift_search_cache_requests_total{outcome="hit"|"miss"|"bypass"}` (counter): searches
 *   answered from the cache, sent to Elasticsearch and kept, sent without the cache;
 * - `chainsift_search_cache_bytes` and `chainsift_search_cache_entries` (gauges): what it holds.
 *
 * The subscription counts as connected only once a probe published on the channel (through
 * `app.redis`) came back through it: at startup, after any error or reconnection of the
 * subscriber, the cache is emptied and bypassed until then, and for the refresh window after
 * (`ResultCache.setConnected`). Probes are retried every {@link PROBE_INTERVAL_MS}. The connection
 * is closed when the app closes.
 * @module
 */
import { randomBytes } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Config } from "../../lib/config/index.js";
import { indexWritesChannel, parseIndexWrites } from "../../lib/index-writes.js";
import type { RedisClient } from "../../lib/redis.js";
import { type CacheOutcome, type CacheUse, ResultCache } from "../search/result-cache.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The result cache (api/search/result-cache.ts), or undefined when turned off. */
    resultCache: ResultCache | undefined;
    /** The Redis client id of the result cache's subscriber connection, once connected (tests disconnect it with `CLIENT KILL ID`). */
    resultCacheSubscriberId: () => number | undefined;
  }
}

/** Options of {@link resultCachePlugin}. */
export interface ResultCachePluginOptions {
  /** Uses `api.resultCache` and `redisKeyPrefix`. */
  config: Config;
}

/** How often a probe is published while the subscription is not confirmed, in ms. */
export const PROBE_INTERVAL_MS = 250;

/** Name of the outcome counter. */
export const CACHE_REQUESTS_METRIC = "chainsift_search_cache_requests_total";

/** The answer header that tells how a search used the cache. */
export const CACHE_HEADER = "x-chainsift-cache";

/** Which cache each registry's gauges report: the last app registered on it. */
const sources = new WeakMap<Registry, ResultCache>();

/** A use of the app's cache for one search, or undefined when the cache is off. */
export function cacheUse(cache: ResultCache | undefined): CacheUse | undefined {
  return cache ? { cache } : undefined;
}

/** Creates (or finds) the cache's metrics in a registry. */
function cacheMetrics(registry: Registry): Counter<"outcome"> {
  const found = registry.getSingleMetric(CACHE_REQUESTS_METRIC) as Counter<"outcome"> | undefined;
  if (found) return found;
  const gauge = (name: string, help: string, read: (c: ResultCache) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const cache = sources.get(registry);
        this.set(cache ? read(cache) : 0);
      },
    });
  gauge("chainsift_search_cache_bytes", "Bytes of answers held by the API's result cache.", (c) => c.stats().bytes);
  gauge("chainsift_search_cache_entries", "Answers held by the API's result cache.", (c) => c.stats().entries);
  return new Counter({
    name: CACHE_REQUESTS_METRIC,
    help: "Searches without hits by how they used the result cache: hit (answered from it), miss (sent to Elasticsearch), bypass (not cached: request_cache=false, profile, now, a write's refresh window, or disconnected). Searches with hits, scrolls and points in time are not counted.",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
}

/** Registers `app.resultCache` and its subscriber (needs `app.redis`, `app.metrics`; non-encapsulated). */
export const resultCachePlugin: FastifyPluginAsync<ResultCachePluginOptions> = globalPlugin(async (app, { config }) => {
  const settings = config.api.resultCache;
  if (!settings.enabled) {
    app.decorate("resultCache", undefined);
    app.decorate("resultCacheSubscriberId", () => undefined);
    return;
  }
  const requests = cacheMetrics(app.metrics.registry);
  const cache = new ResultCache({ ...settings, onOutcome: (outcome: CacheOutcome) => requests.inc({ outcome }) });
  sources.set(app.metrics.registry, cache);
  app.decorate("resultCache", cache);

  const channel = indexWritesChannel(config.redisKeyPrefix);
  const sub: RedisClient = app.redis.duplicate();
  let subscriberId: number | undefined;
  app.decorate("resultCacheSubscriberId", () => subscriberId);
  let probe: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  /** Publishes a probe until one comes back (then the cache is connected). */
  const startProbing = () => {
    if (closed || timer) return;
    const send = () => {
      timer = undefined;
      if (closed || cache.isConnected) return;
      probe = randomBytes(8).toString("hex");
      app.redis.publish(channel, JSON.stringify({ probe })).catch(() => {});
      timer = setTimeout(send, PROBE_INTERVAL_MS);
      timer.unref();
    };
    send();
  };
  const lost = () => {
    cache.setConnected(false);
    startProbing();
  };
  sub.on("error", (err: unknown) => {
    app.log.warn({ err }, "result cache: redis subscriber error (cache bypassed until it is back)");
    lost();
  });
  sub.on("end", () => cache.setConnected(false));
  sub.on("reconnecting", lost);
  sub.on("ready", startProbing);

  const listener = (message: string) => {
    const m = parseIndexWrites(message);
    if (!m) return;
    if ("indices" in m) cache.invalidate(m.indices);
    else if (m.probe === probe && !cache.isConnected) cache.setConnected(true);
  };
  // In the background: registration does not wait for (nor fail on) the subscriber.
  const connecting = (async () => {
    await sub.connect();
    subscriberId = await sub.clientId();
    await sub.subscribe(channel, listener);
    startProbing();
  })().catch((err: unknown) => {
    if (!closed) app.log.warn({ err }, "result cache: cannot subscribe to index writes (cache bypassed)");
  });

  app.addHook("onClose", async () => {
    closed = true;
    if (timer) clearTimeout(timer);
    cache.setConnected(false);
    // destroy, not close: a subscriber still connecting (Redis down) would keep close waiting.
    if (sub.isOpen) sub.destroy();
    await connecting;
  });
}, "chainsift-result-cache");
