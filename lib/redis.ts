/**
 * The one Redis client library of chainsift, and the one way to open a client.
 *
 * **Library: node-redis v5 (`redis`)**, the client maintained by Redis itself. It was already what
 * the stores (rules, accounts), the ingest state, the match and notify stages and their tests used;
 * the API's rate limiter and readiness check were the only users of `ioredis`, because
 * `@fastify/rate-limit` ships its Redis store for ioredis. That store is now a small node-redis one
 * (api/plugins/rate-limit.ts, one Lua INCR + PEXPIRE script), so one library, one set of command
 * names (`hSet`, `eval(script, {keys, arguments})`), one error type (`WatchError`, `ErrorReply`) and
 * one set of connection semantics serve the whole house. node-redis pipelines the commands issued in
 * the same tick on its own (what ioredis calls auto-pipelining); where a caller needs a bound on a
 * command's duration (ioredis' `commandTimeout`), {@link withTimeout} gives one.
 *
 * Connection semantics ({@link connectRedisClient}): the first connection must succeed (no retry, so
 * a CLI or a process start fails fast); once connected, the client reconnects with backoff (100 ms
 * doubling, at most 5 s) and, while disconnected, commands fail at once instead of queueing (so the
 * API answers 503 rather than hang, and stages retry their batch).
 *
 * One process, one general-purpose client: lib/common.ts holds it ({@link lazyRedis}) and hands it to
 * the API and the stages. Only connections that cannot be shared open their own through
 * {@link connectRedisClient}: the rule store's (WATCH/MULTI is per connection) and subscribers.
 * @module
 */
import { createClient } from "redis";
import type { Logger } from "./logger.js";

/** A node-redis v5 client as {@link connectRedisClient} creates it. */
export type RedisClient = ReturnType<typeof createClient>;

/** Options of {@link connectRedisClient}. */
export interface ConnectRedisOptions {
  /** Receives connection errors after the first connection (as `warn`); default: ignored. */
  logger?: Pick<Logger, "warn">;
  /** Prefix of those log messages, e.g. `rules`. */
  label?: string;
  /** TCP connect timeout, ms (default 5000). */
  connectTimeoutMs?: number;
}

/** A dedicated client and an idempotent close. */
export interface ConnectedRedis {
  client: RedisClient;
  /** Closes the connection (waits for pending replies). Idempotent. */
  close(): Promise<void>;
}

/**
 * Connects a dedicated client to `url` (semantics in the module notes).
 * @param url - e.g. `redis://127.0.0.1:6379` (config.redisUrl).
 * @param options - logger and label for later connection errors, connect timeout.
 * @returns the connected client and its idempotent `close`.
 * @throws the client's connection error when Redis cannot be reached.
 */
export async function connectRedisClient(url: string, options: ConnectRedisOptions = {}): Promise<ConnectedRedis> {
  let connected = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 5000,
      reconnectStrategy: (retries) => (connected ? Math.min(100 * 2 ** retries, 5000) : false),
    },
  });
  client.on("error", (err: unknown) => {
    if (connected) options.logger?.warn({ err }, `${options.label ?? "redis"}: redis connection error`);
  });
  await client.connect();
  connected = true;
  let closing: Promise<void> | undefined;
  return {
    client,
    close() {
      closing ??= client.isOpen ? client.close() : Promise.resolve();
      return closing;
    },
  };
}

/** What a store that owns its Redis connection (the account and rule stores) takes besides the URL. */
export interface StoreConnectionOptions {
  /** Receives Redis connection errors after the first connection (as `warn`); default: ignored. */
  logger?: Logger;
  /** TCP connect timeout, ms (default 5000). */
  connectTimeoutMs?: number;
  /** Clock passed to the store (tests). */
  now?: () => Date;
}

/** A store with the Redis connection it owns. */
export interface ConnectedStore<S> {
  store: S;
  /** Closes the Redis connection (waits for pending replies). Idempotent. */
  close(): Promise<void>;
}

/** What every store built on a connection of its own gets: the client, the key prefix and the clock when given. */
export interface StoreConnection {
  redis: RedisClient;
  keyPrefix: string;
  now?: () => Date;
}

/**
 * Connects a store's own Redis client ({@link connectRedisClient}: log messages labelled `label`,
 * the logger and connect timeout of `options` when given) and builds the store over it with
 * `create`; when `create` throws, the connection is closed and the error rethrown.
 * @param config - `redisUrl` (e.g. `redis://127.0.0.1:6379`) and `redisKeyPrefix` of a Config.
 * @throws the client's connection error when Redis cannot be reached; what `create` throws.
 */
export async function connectStore<S>(
  config: { redisUrl: string; redisKeyPrefix: string },
  label: string,
  options: StoreConnectionOptions,
  create: (connection: StoreConnection) => S,
): Promise<ConnectedStore<S>> {
  const { client, close } = await connectRedisClient(config.redisUrl, {
    label,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
  });
  try {
    return { store: create({ redis: client, keyPrefix: config.redisKeyPrefix, ...(options.now ? { now: options.now } : {}) }), close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * `client` when given (its `close` then does nothing: the owner closes it), else a dedicated client
 * from {@link connectRedisClient}. For components that take an optional shared client.
 * @param client - the shared client, e.g. the process's (lib/common.ts).
 * @param url - Redis URL to connect to when `client` is absent.
 * @param options - as for {@link connectRedisClient}.
 * @returns the client and a `close` that closes only a client connected here.
 * @throws the connection error when a client must be connected and Redis cannot be reached.
 */
export async function sharedOrConnect(
  client: RedisClient | undefined,
  url: string,
  options: ConnectRedisOptions = {},
): Promise<ConnectedRedis> {
  return client ? { client, close: async () => {} } : connectRedisClient(url, options);
}

/** A client connected on first use (see {@link lazyRedis}). */
export interface LazyRedis {
  /**
   * The client, connected by the first call; later calls share it. A failed connection is not
   * kept: the next call tries again.
   * @throws the connection error of {@link connectRedisClient}.
   */
  client(): Promise<RedisClient>;
  /** Whether a connection was opened (and not closed yet). */
  readonly opened: boolean;
  /** Closes the client if one was opened (waits for pending replies). Idempotent; a later {@link LazyRedis.client} reconnects. */
  close(): Promise<void>;
}

/**
 * A lazily connected client: nothing is opened until {@link LazyRedis.client} is first called.
 * @param url - Redis URL (config.redisUrl).
 * @param options - as for {@link connectRedisClient}.
 * @returns the handle; never throws itself.
 */
export function lazyRedis(url: string, options: ConnectRedisOptions = {}): LazyRedis {
  let connecting: Promise<ConnectedRedis> | undefined;
  return {
    client() {
      connecting ??= connectRedisClient(url, options).catch((err: unknown) => {
        connecting = undefined;
        throw err;
      });
      return connecting.then((c) => c.client);
    },
    get opened() {
      return connecting !== undefined;
    },
    async close() {
      const current = connecting;
      connecting = undefined;
      await (await current?.catch(() => undefined))?.close();
    },
  };
}

/**
 * Settles like `promise`, or rejects with `Error("timed out after <ms> ms")` once `ms` passed.
 * The command itself is not cancelled (node-redis has no reply timeout); its late reply is ignored.
 * @param promise - e.g. a Redis command.
 * @param ms - the bound, in milliseconds.
 * @throws the promise's own rejection, or the timeout error.
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
