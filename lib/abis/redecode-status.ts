/**
 * The re-decode of history that follows an ABI registration (pipeline/decode/redecode.ts), as
 * Redis records: the lock that lets one decode process of the group run it, and its status, which
 * the ABI routes show (`redecode` of `GET /abis/<address>`). Shared by the decode stage (writes)
 * and the API (reads).
 *
 * | key (under `<prefix>abis:`)                         | type   | content                                                       |
 * | --------------------------------------------------- | ------ | ------------------------------------------------------------- |
 * | `redecode:<namespace>:<address>:<updatedAt>`         | string | lock of one registration's re-decode: a lease (PX 60 s, renewed while it runs), PX 24 h once done, deleted on failure |
 * | `redecode-status:<namespace>:<address>`              | string | JSON {@link RedecodeStatus} of the latest re-decode; EX 30 days |
 * @module
 */

/** The subset of a node-redis v5 client the store uses. */
export interface RedecodeStatusRedis {
  set(
    key: string,
    value: string,
    options?: { expiration?: { type: "PX" | "EX"; value: number }; condition?: "NX" | "XX" },
  ): Promise<string | null>;
  get(key: string): Promise<string | null>;
  exists(key: string): Promise<number>;
  del(key: string | string[]): Promise<number>;
  scanIterator(options: { MATCH: string; COUNT: number }): AsyncIterable<string[]>;
}

/** Where the re-decode of a registration stands. */
export interface RedecodeStatus {
  /**
   * `running` (a decode process holds the lock), `done`, `failed` (the last attempt failed; see
   * `nextAttemptAt`), or `gave_up` (every attempt failed: register the ABI again to retry).
   */
  state: "running" | "done" | "failed" | "gave_up";
  /** `updatedAt` of the registration this re-decode is for (ISO 8601 UTC). */
  registrationAt: string;
  /** Attempts so far, the current one included. */
  attempts: number;
  /** Logs read from the log index (`done` only). */
  logs?: number;
  /** Events produced (`done` only). */
  events?: number;
  /** Whether `CHAINSIFT_ABI_REDECODE_MAX_LOGS` stopped it before the end (`done` only). */
  truncated?: boolean;
  /** Message of the last failed attempt, also after a later success; null when none failed. */
  lastError: string | null;
  /** When the next attempt is due (ISO 8601 UTC), `failed` only; null otherwise. */
  nextAttemptAt: string | null;
  /** When this status was written (ISO 8601 UTC). */
  at: string;
}

/** The lock and status of re-decodes. Every method may reject with a Redis error. */
export interface RedecodeStatusStore {
  /**
   * Takes the lock of the re-decode of registration (`namespace`, `address`, `registrationAt`) as
   * a lease of {@link REDECODE_LEASE_MS} (renew it with {@link RedecodeStatusStore.renew} while the
   * re-decode runs, so a crashed process frees it) and records it `running`; false when another
   * process holds it (running, or done within 24 h).
   * @param attempts The attempt number this claim starts (1 for the first).
   * @param lastError The previous attempt's error, kept in the status.
   */
  claim(namespace: string, address: string, registrationAt: string, attempts: number, lastError?: string | null): Promise<boolean>;
  /** Extends the lease of a running re-decode by {@link REDECODE_LEASE_MS}; false when the lock is gone. */
  renew(namespace: string, address: string, registrationAt: string): Promise<boolean>;
  /** Whether the lock of a registration's re-decode is held (running, or done within 24 h). */
  locked(namespace: string, address: string, registrationAt: string): Promise<boolean>;
  /** Records success; the lock is kept 24 h, so no other process repeats the re-decode. */
  succeeded(
    namespace: string,
    address: string,
    registrationAt: string,
    attempts: number,
    result: { logs: number; events: number; truncated: boolean },
    lastError?: string | null,
  ): Promise<void>;
  /**
   * Records a failed attempt and deletes the lock, so the re-decode can run again.
   * @param nextAttemptAtMs When it will be tried again (ms since the epoch), or null when no more attempts are made (`gave_up`).
   */
  failed(
    namespace: string,
    address: string,
    registrationAt: string,
    attempts: number,
    error: string,
    nextAttemptAtMs: number | null,
  ): Promise<void>;
  /** The latest status of the re-decodes of an address in a namespace, or null when none was recorded. */
  get(namespace: string, address: string): Promise<RedecodeStatus | null>;
  /** Every recorded status (SCAN of the status keys), e.g. to resume re-decodes whose process stopped. */
  list(): Promise<Array<{ namespace: string; address: string; status: RedecodeStatus }>>;
}

/** Lease of a running re-decode's lock, in ms (renewed every third of it while it runs). */
export const REDECODE_LEASE_MS = 60_000;
/** Lifetime of the lock of a re-decode that is done: one day, as before. */
const DONE_MS = 86_400_000;
/** Lifetime of a status record, in seconds (30 days). */
const STATUS_TTL_SEC = 30 * 24 * 3600;

/**
 * Creates the {@link RedecodeStatusStore}.
 * @param deps.redis A connected client (not closed by the store).
 * @param deps.keyPrefix Config `redisKeyPrefix`.
 */
export function createRedecodeStatusStore(deps: { redis: RedecodeStatusRedis; keyPrefix: string }): RedecodeStatusStore {
  const { redis } = deps;
  const lockKey = (ns: string, address: string, at: string) => `${deps.keyPrefix}abis:redecode:${ns}:${address}:${at}`;
  const statusKey = (ns: string, address: string) => `${deps.keyPrefix}abis:redecode-status:${ns}:${address}`;
  const statusPrefix = `${deps.keyPrefix}abis:redecode-status:`;
  const write = async (ns: string, address: string, status: RedecodeStatus) => {
    await redis.set(statusKey(ns, address), JSON.stringify(status), { expiration: { type: "EX", value: STATUS_TTL_SEC } });
  };
  const parse = (raw: string | null): RedecodeStatus | null => {
    if (!raw) return null;
    try {
      return JSON.parse(raw) as RedecodeStatus;
    } catch {
      return null;
    }
  };
  const now = () => new Date().toISOString();
  return {
    async claim(ns, address, registrationAt, attempts, lastError = null) {
      const taken = await redis.set(lockKey(ns, address, registrationAt), "1", {
        expiration: { type: "PX", value: REDECODE_LEASE_MS },
        condition: "NX",
      });
      if (taken !== "OK") return false;
      await write(ns, address, { state: "running", registrationAt, attempts, lastError, nextAttemptAt: null, at: now() });
      return true;
    },
    async renew(ns, address, registrationAt) {
      const r = await redis.set(lockKey(ns, address, registrationAt), "1", {
        expiration: { type: "PX", value: REDECODE_LEASE_MS },
        condition: "XX",
      });
      return r === "OK";
    },
    async locked(ns, address, registrationAt) {
      return (await redis.exists(lockKey(ns, address, registrationAt))) > 0;
    },
    async succeeded(ns, address, registrationAt, attempts, result, lastError = null) {
      await redis.set(lockKey(ns, address, registrationAt), "1", { expiration: { type: "PX", value: DONE_MS } });
      await write(ns, address, { state: "done", registrationAt, attempts, ...result, lastError, nextAttemptAt: null, at: now() });
    },
    async failed(ns, address, registrationAt, attempts, error, nextAttemptAtMs) {
      await redis.del(lockKey(ns, address, registrationAt));
      await write(ns, address, {
        state: nextAttemptAtMs === null ? "gave_up" : "failed",
        registrationAt,
        attempts,
        lastError: error,
        nextAttemptAt: nextAttemptAtMs === null ? null : new Date(nextAttemptAtMs).toISOString(),
        at: now(),
      });
    },
    async get(ns, address) {
      return parse(await redis.get(statusKey(ns, address)));
    },
    async list() {
      const out: Array<{ namespace: string; address: string; status: RedecodeStatus }> = [];
      for await (const keys of redis.scanIterator({ MATCH: `${statusPrefix}*`, COUNT: 500 })) {
        for (const key of keys) {
          const rest = key.slice(statusPrefix.length);
          const cut = rest.lastIndexOf(":");
          const status = parse(await redis.get(key));
          if (cut > 0 && status) out.push({ namespace: rest.slice(0, cut), address: rest.slice(cut + 1), status });
        }
      }
      return out;
    },
  };
}
