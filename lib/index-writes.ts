/**
 * Write notices of the index stage, on a Redis pub/sub channel: after each bulk or delete, the
 * index stage publishes the aliases it wrote (pipeline/index/indexer.ts), and every API instance
 * drops its cached answers of those aliases (api/search/result-cache.ts, docs/api.md "Result cache").
 *
 * Channel: `<redisKeyPrefix>index:writes` ({@link indexWritesChannel}); message: JSON
 * `{"indices": ["<alias>", …]}` ({@link IndexWrites}), or `{"probe": "<id>"}` (a subscriber's own
 * check that its subscription works, ignored by everyone else). Pub/sub delivers a message only to
 * the subscribers connected when it is published: a subscriber that was disconnected must assume
 * it missed some.
 * @module
 */

/** A write notice: the aliases (or index names) written. */
export interface IndexWrites {
  indices: string[];
}

/** A probe message (a subscriber checking its own subscription). */
export interface IndexWritesProbe {
  probe: string;
}

/** The channel of the write notices under a Redis key prefix (config `redisKeyPrefix`, e.g. `cs:` → `cs:index:writes`). */
export function indexWritesChannel(keyPrefix: string): string {
  return `${keyPrefix}index:writes`;
}

/** What can publish on a channel (a node-redis client). */
export interface Publisher {
  publish(channel: string, message: string): Promise<unknown>;
}

/**
 * Publishes a write notice (nothing when `indices` is empty).
 * @param redis - a connected client.
 * @param keyPrefix - the Redis key prefix (config `redisKeyPrefix`).
 * @param indices - the aliases or index names written (duplicates removed).
 * @throws the client's error when Redis cannot be reached.
 */
export async function publishIndexWrites(redis: Publisher, keyPrefix: string, indices: Iterable<string>): Promise<void> {
  const list = [...new Set(indices)].sort();
  if (list.length === 0) return;
  await redis.publish(indexWritesChannel(keyPrefix), JSON.stringify({ indices: list } satisfies IndexWrites));
}

/**
 * A message of the channel, read: a write notice, a probe, or undefined for anything else. Pure.
 * @param message - the message text.
 */
export function parseIndexWrites(message: string): IndexWrites | IndexWritesProbe | undefined {
  let v: unknown;
  try {
    v = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.probe === "string") return { probe: o.probe };
  if (Array.isArray(o.indices) && o.indices.every((i) => typeof i === "string")) return { indices: o.indices as string[] };
  return undefined;
}
