/**
 * One way to open a node-redis (v5) client for a chainsift component: the first connection must
 * succeed (no retry, so a CLI or a process start fails fast); once connected, the client reconnects
 * with backoff (100 ms doubling, at most 5 s) and, while disconnected, commands fail at once
 * instead of queueing (so the API answers 503 rather than hang, and stages retry).
 * @module
 */
import { createClient } from "redis";
import type { Logger } from "./logger.js";

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
  client: ReturnType<typeof createClient>;
  /** Closes the connection (waits for pending replies). Idempotent. */
  close(): Promise<void>;
}

/**
 * Connects a dedicated client to `url` (e.g. `redis://127.0.0.1:6379`).
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
