/**
 * Scrolls and points in time of the Elasticsearch-compatible routes (api/routes/es/): the search
 * contexts a client opens in Elasticsearch through chainsift, bounded and private.
 *
 * - **Opaque ids.** A client never sees Elasticsearch's id: it gets chainsift's own, random
 *   (`css_…` for a scroll, `csp_…` for a point in time, 32 characters of base64url after the
 *   prefix), bound in Redis to Elasticsearch's id, the account that opened it, the chain and the
 *   kinds (key `<redisKeyPrefix>ctx:<id>`, a JSON {@link ContextRecord}, expiring with the
 *   keep-alive (plus a tenth, {@link TTL_MARGIN}) and renewed by uses that give a keep-alive once
 *   less than the keep-alive is left). An id used by another account, on another chain's path,
 *   expired or closed answers 404 `CS_CONTEXT_NOT_FOUND`, the same for all. The binding lives in
 *   Redis, so any API instance serves any context.
 * - **Read from Redis at most once per {@link BINDING_CACHE_MS} per instance.** An instance keeps the
 *   bindings it read or wrote for {@link BINDING_CACHE_MS} (never past their expiry), so consecutive
 *   pages of one export cost no Redis read each (bench export: a point-in-time page spent ~1.6 ms
 *   on that GET under load). The checks (type, account, chain) are made on every use all the same.
 *   What another instance changes is seen at the latest {@link BINDING_CACHE_MS} later: a context it
 *   closed is also closed in Elasticsearch, which answers the next use 404, answered
 *   `CS_CONTEXT_NOT_FOUND` here too (and the binding dropped).
 * - **Bounded.** Each account holds at most `maxPerAccount` open contexts (a sorted set
 *   `<redisKeyPrefix>ctx:acct:<account>` of ids scored by their expiry, so expired ones stop counting
 *   without a sweeper); one more is 429 `CS_CONTEXT_LIMIT`. A keep-alive above `maxKeepAliveMs` is
 *   400 `CS_KEEP_ALIVE_INVALID`.
 * - **Closed.** Each instance closes in Elasticsearch the contexts it opened and that are still open
 *   when it shuts down ({@link SearchContexts.closeAll}, from the app's onClose hook).
 * - **Counted.** `<redisKeyPrefix>ctx:open:<type>` (ids scored by expiry) counts the open contexts of
 *   every instance, which `/metrics` reports ({@link SearchContexts.openCounts}).
 * Elasticsearch's own expiry of a context (a 404 `search_context_missing_exception`) is answered
 * `CS_CONTEXT_NOT_FOUND` too, and the binding dropped.
 * Sources: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/paginate-search-results.html
 * (scroll, point in time), https://www.elastic.co/guide/en/elasticsearch/reference/8.19/api-conventions.html#time-units.
 * @module
 */
import { randomBytes } from "node:crypto";
import { type Client, errors as esErrors } from "@elastic/elasticsearch";
import type { RecordKind } from "../../lib/records.js";
import { type RedisClient, withTimeout } from "../../lib/redis.js";
import { apiError } from "../errors.js";
import type { ShapeOptions } from "./envelope.js";

/** The two kinds of search context. */
export type ContextType = "scroll" | "pit";

/** Id prefix of each context type. */
export const CONTEXT_ID_PREFIX: Readonly<Record<ContextType, string>> = { scroll: "css_", pit: "csp_" };

/** How the later pages of a scroll are answered: as its first page was asked. */
export interface ScrollAnswer {
  /** Hit shaping (`_source` includes/excludes, sort values, doc-value fields). */
  shape: Omit<ShapeOptions, "unitScores">;
  /** `_source: false` or `stored_fields: "_none_"`: hits without `_source`. */
  noSource?: boolean;
  /** `stored_fields: "_none_"`: hits with only `_index`, `_id`, `_score`. */
  metadataOnly?: boolean;
  /** `track_total_hits` of the first request (true when absent). */
  trackTotalHits?: boolean | number;
}

/** What the opaque id of a context is bound to (stored in Redis as JSON). */
export interface ContextRecord {
  type: ContextType;
  /** The account that opened it (`request.account.id`). */
  account: string;
  /** The chain of the path it was opened on (`technology/blockchain/network`). */
  chain: string;
  /** Elasticsearch's id (the latest it answered). */
  esId: string;
  /** The kinds it searches. */
  kinds: RecordKind[];
  /** Scrolls: how later pages are answered. */
  answer?: ScrollAnswer;
  /** When the binding expires (ms since the epoch), as last saved; see {@link SearchContexts.needsRenewal}. */
  expiresAt?: number;
}

/** The binding's TTL over the keep-alive: renewals can then be skipped while it outlives the context by this margin. */
export const TTL_MARGIN = 1.1;

/** How long an instance reuses a binding it read or wrote before reading it from Redis again, in ms. */
export const BINDING_CACHE_MS = 1000;
/** Most bindings an instance keeps in memory (the oldest go first). */
const BINDING_CACHE_MAX = 10_000;

/** Options of {@link SearchContexts}. */
export interface SearchContextsOptions {
  redis: RedisClient;
  es: Client;
  /** `config.redisKeyPrefix`. */
  keyPrefix: string;
  /** `config.api.searchContextsMax`: open contexts per account. */
  maxPerAccount: number;
  /** `config.api.searchContextMaxKeepAliveMs`: longest keep-alive, in ms. */
  maxKeepAliveMs: number;
  /** `config.elasticsearch.requestTimeoutMs`: client-side timeout of each Elasticsearch call. */
  requestTimeoutMs: number;
  /** Timeout of each Redis command, in ms. */
  redisTimeoutMs: number;
}

const UNITS: Readonly<Record<string, number>> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, ms: 1, micros: 1e-3, nanos: 1e-6 };

/**
 * Parses an Elasticsearch time value (`30s`, `5m`, `1h`, `100ms`, `2d`, `micros`, `nanos`) into ms
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/api-conventions.html#time-units).
 * @param value - the time value.
 * @param maxMs - the largest keep-alive allowed.
 * @param path - where it was given (`querystring.scroll`, `pit.keep_alive`, …).
 * @returns the duration in ms (at least 1).
 * @throws {ApiError} 400 CS_KEEP_ALIVE_INVALID for a missing, malformed, zero or too long value.
 */
export function keepAliveMs(value: unknown, maxMs: number, path: string): number {
  const m = typeof value === "string" ? /^(\d+)(d|h|m|s|ms|micros|nanos)$/.exec(value.trim()) : null;
  if (!m) throw apiError("CS_KEEP_ALIVE_INVALID", `${path} must be a time value such as 30s, 5m or 1h`, path);
  const ms = Math.ceil(Number(m[1]) * (UNITS[m[2] as string] as number));
  if (ms < 1) throw apiError("CS_KEEP_ALIVE_INVALID", `${path} must be longer than 0`, path);
  if (ms > maxMs)
    throw apiError(
      "CS_KEEP_ALIVE_INVALID",
      `${path} ${value} is longer than the longest keep-alive, ${maxMs} ms (CHAINSIFT_SEARCH_CONTEXT_MAX_KEEP_ALIVE_MS)`,
      path,
    );
  return ms;
}

/** A new opaque id of a context type (see the module notes). */
export function newContextId(type: ContextType): string {
  return `${CONTEXT_ID_PREFIX[type]}${randomBytes(24).toString("base64url")}`;
}

/** The context type an id claims by its prefix, or undefined for anything else. */
export function contextTypeOf(id: string): ContextType | undefined {
  if (id.startsWith(CONTEXT_ID_PREFIX.scroll)) return "scroll";
  if (id.startsWith(CONTEXT_ID_PREFIX.pit)) return "pit";
  return undefined;
}

/** Whether an Elasticsearch error says the context is gone (expired, freed, or never existed). */
function contextMissing(err: unknown): boolean {
  return (
    err instanceof esErrors.ResponseError && (err.statusCode === 404 || JSON.stringify(err.body ?? "").includes("search_context_missing"))
  );
}

const notFound = (type: ContextType, path: string | null) =>
  apiError(
    "CS_CONTEXT_NOT_FOUND",
    `no open ${type === "scroll" ? "scroll" : "point in time"} has this id for this account and chain (unknown, expired or closed)`,
    path,
  );

/** The scrolls and points in time of the API (see the module notes). */
export class SearchContexts {
  readonly #o: SearchContextsOptions;
  /** Contexts opened by this instance and not closed here yet: id → type. */
  readonly #local = new Map<string, ContextType>();
  /** Bindings read or written lately: id → the record and until when it may be reused (ms since the epoch). */
  readonly #cache = new Map<string, { record: ContextRecord; until: number }>();

  constructor(options: SearchContextsOptions) {
    this.#o = options;
  }

  #key(id: string): string {
    return `${this.#o.keyPrefix}ctx:${id}`;
  }
  #accountKey(account: string): string {
    return `${this.#o.keyPrefix}ctx:acct:${account}`;
  }
  #openKey(type: ContextType): string {
    return `${this.#o.keyPrefix}ctx:open:${type}`;
  }
  /** Keeps a binding for {@link BINDING_CACHE_MS}, never past its expiry (unknown expiry: not kept). */
  #remember(id: string, record: ContextRecord): void {
    this.#cache.delete(id);
    if (record.expiresAt === undefined) return;
    if (this.#cache.size >= BINDING_CACHE_MAX) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(id, { record, until: Math.min(Date.now() + BINDING_CACHE_MS, record.expiresAt) });
  }
  #redis<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, this.#o.redisTimeoutMs);
  }
  #es() {
    return { requestTimeout: this.#o.requestTimeoutMs };
  }

  /** Checks a keep-alive against the cap ({@link keepAliveMs}). */
  keepAlive(value: unknown, path: string): number {
    return keepAliveMs(value, this.#o.maxKeepAliveMs, path);
  }

  /**
   * Counts a new context against the account's cap and returns its id; call {@link save} once
   * Elasticsearch opened it, or {@link forget} when it could not.
   * @throws {ApiError} 429 CS_CONTEXT_LIMIT when the account holds `maxPerAccount` open contexts.
   */
  async reserve(type: ContextType, account: string, ttlMs: number): Promise<string> {
    const id = newContextId(type);
    const key = this.#accountKey(account);
    const now = Date.now();
    const replies = await this.#redis(
      this.#o.redis
        .multi()
        .zRemRangeByScore(key, "-inf", now)
        .zAdd(key, { score: now + ttlMs, value: id })
        .zCard(key)
        .pExpire(key, this.#o.maxKeepAliveMs + 60_000)
        .exec(),
    );
    const count = Number(replies[2]);
    if (count > this.#o.maxPerAccount) {
      await this.#redis(this.#o.redis.zRem(key, id));
      throw apiError(
        "CS_CONTEXT_LIMIT",
        `this account already has ${this.#o.maxPerAccount} open scrolls and points in time (CHAINSIFT_SEARCH_CONTEXTS_MAX); close one (DELETE _search/scroll, DELETE _pit) or let it expire`,
      );
    }
    return id;
  }

  /** Uncounts a reserved context that Elasticsearch did not open. Best effort. */
  async forget(id: string, account: string): Promise<void> {
    await this.#redis(this.#o.redis.zRem(this.#accountKey(account), id)).catch(() => {});
  }

  /**
   * Stores the binding of a context for `ttlMs` (a new keep-alive), or with `ttlMs` undefined only
   * its new content, keeping its expiry (a use without keep-alive, which Elasticsearch does not extend).
   * @param opened - the context was just opened by this instance (closed by {@link closeAll}).
   */
  async save(id: string, record: ContextRecord, ttlMs: number | undefined, opened = false): Promise<void> {
    if (ttlMs === undefined) {
      await this.#redis(this.#o.redis.set(this.#key(id), JSON.stringify(record), { expiration: "KEEPTTL" }));
      this.#remember(id, record);
      return;
    }
    const ttl = Math.ceil(ttlMs * TTL_MARGIN);
    const expires = Date.now() + ttl;
    const saved: ContextRecord = { ...record, expiresAt: expires };
    this.#cache.delete(id);
    await this.#redis(
      this.#o.redis
        .multi()
        .set(this.#key(id), JSON.stringify(saved), { expiration: { type: "PX", value: ttl } })
        .zAdd(this.#accountKey(record.account), { score: expires, value: id })
        .zAdd(this.#openKey(record.type), { score: expires, value: id })
        .pExpire(this.#openKey(record.type), this.#o.maxKeepAliveMs + 60_000)
        .exec(),
    );
    this.#remember(id, saved);
    if (opened) this.#local.set(id, record.type);
  }

  /**
   * Whether a use with a new keep-alive must renew the binding: when it would expire before the
   * context (less than `keepAliveMs` left). Bindings are saved for {@link TTL_MARGIN} × the
   * keep-alive, so consecutive pages renew at most once per tenth of it (one Redis write less per page).
   */
  needsRenewal(record: ContextRecord, keepAliveMs: number | undefined, now = Date.now()): boolean {
    return keepAliveMs !== undefined && (record.expiresAt === undefined || record.expiresAt - now < keepAliveMs);
  }

  /**
   * The binding of an id, if it is open, of `type`, the account's and the chain's (from this
   * instance's memory when it read or wrote it less than {@link BINDING_CACHE_MS} ago, else from Redis).
   * @throws {ApiError} 404 CS_CONTEXT_NOT_FOUND otherwise (the same answer whatever the reason).
   */
  async load(id: unknown, type: ContextType, account: string, chain: string, path: string | null): Promise<ContextRecord> {
    if (typeof id !== "string" || contextTypeOf(id) !== type) throw notFound(type, path);
    const cached = this.#cache.get(id);
    let record: ContextRecord;
    if (cached && cached.until > Date.now()) record = cached.record;
    else {
      const raw = await this.#redis(this.#o.redis.get(this.#key(id)));
      if (!raw) {
        this.#cache.delete(id);
        throw notFound(type, path);
      }
      record = JSON.parse(raw) as ContextRecord;
      this.#remember(id, record);
    }
    if (record.type !== type || record.account !== account || record.chain !== chain) throw notFound(type, path);
    return record;
  }

  /** Deletes the binding of a context (not the Elasticsearch context). */
  async drop(id: string, record: Pick<ContextRecord, "account" | "type">): Promise<void> {
    this.#local.delete(id);
    this.#cache.delete(id);
    await this.#redis(
      this.#o.redis.multi().del(this.#key(id)).zRem(this.#accountKey(record.account), id).zRem(this.#openKey(record.type), id).exec(),
    );
  }

  /**
   * Runs an Elasticsearch call on a context; when Elasticsearch says the context is gone, drops the
   * binding and throws 404 CS_CONTEXT_NOT_FOUND.
   */
  async use<T>(id: string, record: ContextRecord, path: string | null, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (!contextMissing(err)) throw err;
      await this.drop(id, record).catch(() => {});
      throw notFound(record.type, path);
    }
  }

  /** Closes a context in Elasticsearch (best effort: a context already gone counts as closed) and drops its binding. */
  async close(id: string, record: ContextRecord): Promise<void> {
    try {
      if (record.type === "scroll") await this.#o.es.clearScroll({ scroll_id: record.esId }, this.#es());
      else await this.#o.es.closePointInTime({ id: record.esId }, this.#es());
    } catch (err) {
      if (!contextMissing(err)) throw err;
    }
    await this.drop(id, record);
  }

  /** The ids of an account's open contexts (for `DELETE _search/scroll` with `_all`). */
  async accountIds(account: string): Promise<string[]> {
    return this.#redis(this.#o.redis.zRangeByScore(this.#accountKey(account), Date.now(), "+inf"));
  }

  /** Open contexts of every instance, by type (expired ones are not counted). */
  async openCounts(): Promise<Record<ContextType, number>> {
    const now = Date.now();
    const [scroll, pit] = await Promise.all(
      (["scroll", "pit"] as const).map((t) => this.#redis(this.#o.redis.zCount(this.#openKey(t), now, "+inf"))),
    );
    return { scroll: Number(scroll), pit: Number(pit) };
  }

  /** Closes every context this instance opened that is still open (shutdown). Never throws. */
  async closeAll(): Promise<void> {
    const ids = [...this.#local.keys()];
    await Promise.all(
      ids.map(async (id) => {
        try {
          const raw = await this.#redis(this.#o.redis.get(this.#key(id)));
          if (raw) await this.close(id, JSON.parse(raw) as ContextRecord);
        } catch {
          // best effort: Elasticsearch frees it at its keep-alive anyway
        }
      }),
    );
    this.#local.clear();
  }
}
