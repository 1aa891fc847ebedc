/**
 * Redis helpers of the accounts integration tests: reachability probe and cleanup of a key prefix.
 * @module
 */
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll } from "vitest";

/** Whether Redis answers PING at `url` within 3 s. */
export async function redisUp(url: string): Promise<boolean> {
  const client = createClient({ url, socket: { connectTimeout: 3000, reconnectStrategy: false } });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    if (client.isOpen) await client.close().catch(() => {});
  }
}

/** Message for tests skipped because Redis is down. */
export function redisSkipMessage(url: string): string {
  return `skipped: Redis not reachable at ${url}; start it with \`npm run stack -- up redis\``;
}

/** Deletes every key starting with `prefix` (SCAN + DEL; never FLUSH). @returns how many were deleted. */
export async function deletePrefix(url: string, prefix: string): Promise<number> {
  if (!/^[A-Za-z0-9_-]+:$/.test(prefix)) throw new Error(`refusing to delete keys of prefix ${JSON.stringify(prefix)}`);
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  let deleted = 0;
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
      if (keys.length > 0) deleted += await client.del(keys);
    }
  } finally {
    await client.close();
  }
  return deleted;
}

/** Keys currently under `prefix`. */
export async function keysOf(url: string, prefix: string): Promise<string[]> {
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  const all: string[] = [];
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) all.push(...keys);
  } finally {
    await client.close();
  }
  return all.sort();
}

/**
 * A client of the calling test file: connected before its tests, and after them every key under
 * `prefix` deleted ({@link deletePrefix}) and the client closed; nothing when `up` is false.
 * Call it at the top level of the file (it registers `beforeAll` and `afterAll`).
 * @returns the client (valid inside tests).
 */
export function redisForFile(url: string, prefix: string, up: boolean): () => RedisClientType {
  let client: RedisClientType | undefined;
  beforeAll(async () => {
    if (!up) return;
    client = createClient({ url }) as RedisClientType;
    client.on("error", () => {});
    await client.connect();
  });
  afterAll(async () => {
    if (!up) return;
    await deletePrefix(url, prefix);
    await client?.close();
  });
  return () => {
    if (client === undefined) throw new Error("redisForFile: no client outside the file's tests");
    return client;
  };
}
