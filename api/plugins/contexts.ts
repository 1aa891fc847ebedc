/**
 * The scrolls and points in time of the API (api/search/contexts.ts): decorates the app with
 * `contexts`, closes the contexts this instance opened when the app closes (onClose), and reports
 * the open ones of every instance as the gauge `chainsift_search_contexts_open{type="scroll"|"pit"}`
 * (read from Redis when `/metrics` is scraped). Also decorates the app with `readAhead`, the
 * read-ahead of point-in-time pages (api/search/read-ahead.ts; undefined when config
 * `api.readAhead.enabled` is false) and `scrollAhead`, that of scroll pages (api/search/scroll-ahead.ts),
 * counted as `chainsift_search_read_ahead_total{outcome="hit"|"handoff"|"miss"}` and emptied when the
 * app closes (scroll pages still being handed over are written to Redis first).
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Config } from "../../lib/config/index.js";
import { type ContextType, SearchContexts } from "../search/contexts.js";
import { ReadAhead } from "../search/read-ahead.js";
import { ScrollAhead } from "../search/scroll-ahead.js";
import { globalPlugin } from "./plugin.js";
import { REDIS_COMMAND_TIMEOUT_MS } from "./redis.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Scrolls and points in time (see api/search/contexts.ts). */
    contexts: SearchContexts;
    /** The read-ahead of point-in-time pages (api/search/read-ahead.ts), or undefined when turned off. */
    readAhead: ReadAhead | undefined;
    /** The read-ahead of scroll pages (api/search/scroll-ahead.ts), or undefined when turned off. */
    scrollAhead: ScrollAhead | undefined;
  }
}

/** Options of {@link contextsPlugin}. */
export interface ContextsPluginOptions {
  /** Uses `redisKeyPrefix`, `api.searchContextsMax`, `api.searchContextMaxKeepAliveMs`, `elasticsearch.requestTimeoutMs`. */
  config: Config;
}

/** Name of the open-contexts gauge. */
export const OPEN_CONTEXTS_METRIC = "chainsift_search_contexts_open";

/** Name of the read-ahead outcome counter. */
export const READ_AHEAD_METRIC = "chainsift_search_read_ahead_total";

/** Which contexts each registry's gauge reports: the last app registered on it. */
const sources = new WeakMap<Registry, SearchContexts>();

/** Registers `app.contexts` (needs `app.es`, `app.redis`, `app.metrics`; non-encapsulated). */
export const contextsPlugin: FastifyPluginAsync<ContextsPluginOptions> = globalPlugin(async (app, { config }) => {
  const contexts = new SearchContexts({
    redis: app.redis,
    es: app.es,
    keyPrefix: config.redisKeyPrefix,
    maxPerAccount: config.api.searchContextsMax,
    maxKeepAliveMs: config.api.searchContextMaxKeepAliveMs,
    requestTimeoutMs: config.elasticsearch.requestTimeoutMs,
    redisTimeoutMs: REDIS_COMMAND_TIMEOUT_MS,
  });
  app.decorate("contexts", contexts);
  const registry = app.metrics.registry;
  sources.set(registry, contexts);
  if (!registry.getSingleMetric(OPEN_CONTEXTS_METRIC))
    new Gauge({
      name: OPEN_CONTEXTS_METRIC,
      help: "Open scrolls and points in time of the Elasticsearch-compatible routes, all API instances (from Redis), by type.",
      labelNames: ["type"] as const,
      registers: [registry],
      async collect() {
        const counts = await sources
          .get(registry)
          ?.openCounts()
          .catch(() => undefined);
        for (const type of ["scroll", "pit"] as ContextType[]) if (counts) this.set({ type }, counts[type]);
      },
    });
  const settings = config.api.readAhead;
  let readAhead: ReadAhead | undefined;
  let scrollAhead: ScrollAhead | undefined;
  if (settings.enabled) {
    const outcomes =
      (registry.getSingleMetric(READ_AHEAD_METRIC) as Counter<"outcome"> | undefined) ??
      new Counter({
        name: READ_AHEAD_METRIC,
        help: "Point-in-time and scroll pages read ahead, by outcome: hit (a request answered from this instance's), handoff (a scroll page from another instance's, through Redis), miss (dropped unused: another request, expired, or failed).",
        labelNames: ["outcome"] as const,
        registers: [registry],
      });
    const onOutcome = (outcome: string) => outcomes.inc({ outcome });
    readAhead = new ReadAhead({ maxBytes: settings.maxBytes, ttlMs: settings.ttlMs, onOutcome });
    // The hand-over channel's own connection (a subscriber cannot run commands), connected in the
    // background: the API starts without Redis, and reads no scroll ahead until it is subscribed.
    const subscriber = app.redis.duplicate();
    scrollAhead = new ScrollAhead({
      redis: app.redis,
      subscriber,
      keyPrefix: config.redisKeyPrefix,
      maxBytes: settings.maxBytes,
      ttlMs: settings.ttlMs,
      waitMs: config.elasticsearch.requestTimeoutMs,
      onOutcome,
    });
    const ahead = scrollAhead;
    let subscribed = false;
    subscriber.on("error", () => ahead.setReady(false));
    subscriber.on("reconnecting", () => ahead.setReady(false));
    subscriber.on("ready", () => ahead.setReady(subscribed)); // node-redis subscribes again on reconnection
    void subscriber
      .connect()
      .then(() => ahead.open())
      .then(() => {
        subscribed = true;
        ahead.setReady(true);
      })
      .catch(() => {});
  }
  app.decorate("readAhead", readAhead);
  app.decorate("scrollAhead", scrollAhead);
  app.addHook("onClose", async () => {
    readAhead?.clear();
    await scrollAhead?.close();
    await contexts.closeAll();
  });
}, "chainsift-contexts");
