/**
 * Watchlists in Redis: named sets of values (addresses, or any strings) per account, for rule
 * conditions and searches (docs/alerting.md "Watchlists"). Keys, under the configured prefix (`cs:`):
 *
 * - `<prefix>watchlists:<accountId>`: hash, watchlist id → JSON {@link Watchlist} metadata;
 * - `<prefix>watchlist:<accountId>:<id>:members`: set of the normalised members;
 * - `<prefix>watchlist:<accountId>:<id>:rev` and `…:changes`: the list's revision and its log of
 *   changes (lib/watchlists/changes.ts), which the match stage's copies of the list follow;
 * - channel `<prefix>watchlists:changes`: `<rev> <accountId> NUL <id>` after every change (and `0 …`
 *   after a delete), written by the same script as the change (lib/watchlists/revision-feed.ts).
 *
 * A set makes a membership check O(1) for any list size (SISMEMBER / SMISMEMBER).
 * @module
 */
import { randomUUID } from "node:crypto";
import { DEFAULT_WATCHLISTS_CONFIG, type WatchlistsConfig } from "../config/watchlists.js";
import { ChainsiftError } from "../errors.js";
import { type ConnectedStore, connectStore, type StoreConnectionOptions } from "../redis.js";
import {
  CHANGE_LOG_ENTRIES,
  changeMessage,
  changePayload,
  changesSince,
  DELETE_SCRIPT,
  type WatchlistChanges,
  WRITE_SCRIPT,
  WRITE_SCRIPT_MEMBERS,
} from "./changes.js";

/** The kinds of values a watchlist holds: `address` (0x + 40 hex digits, lowercased) or `string` (1–256 characters, trimmed). */
export const WATCHLIST_KINDS = ["address", "string"] as const;
/** One of {@link WATCHLIST_KINDS}. */
export type WatchlistKind = (typeof WATCHLIST_KINDS)[number];

/** A watchlist's metadata as stored and answered (the members are counted, not listed). */
export interface Watchlist {
  /** Server-assigned UUID v4. */
  id: string;
  /** Owning account. */
  accountId: string;
  /** Free name, 1–200 characters. */
  name: string;
  /** What the members are. */
  kind: WatchlistKind;
  /** ISO 8601 creation time. */
  createdAt: string;
}

/** The node-redis v5 commands the store uses (a structural subset of `createClient()`). */
export interface WatchlistRedis {
  hGet(key: string, field: string): Promise<string | null>;
  hVals(key: string): Promise<string[]>;
  hLen(key: string): Promise<number>;
  hSet(key: string, field: string, value: string): Promise<number>;
  hDel(key: string, field: string): Promise<number>;
  sCard(key: string): Promise<number>;
  smIsMember(key: string, members: string[]): Promise<number[]>;
  sMembers(key: string): Promise<string[]>;
  sScan(key: string, cursor: string, options: { COUNT: number }): Promise<{ cursor: string; members: string[] }>;
  get(key: string): Promise<string | null>;
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** A refusal of the store, with its stable API error code. */
export class WatchlistStoreError extends ChainsiftError {
  /**
   * @param code `CS_WATCHLIST_LIMIT_REACHED` or `CS_WATCHLIST_FULL`.
   * @param message human-readable detail.
   */
  constructor(
    readonly code: "CS_WATCHLIST_LIMIT_REACHED" | "CS_WATCHLIST_FULL",
    message: string,
  ) {
    super(message);
  }
}

/**
 * The normalised form of a member, or null when it is not a valid member of that kind.
 * @param kind the watchlist's kind.
 * @param raw the value as sent.
 */
export function normalizeMember(kind: WatchlistKind, raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  const v = raw.trim();
  if (kind === "address") return /^0x[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : null;
  return v.length >= 1 && v.length <= 256 ? v : null;
}

/** Dependencies of {@link createWatchlistStore}. */
export interface WatchlistStoreDeps {
  /** A connected client; the store does not close it. */
  redis: WatchlistRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`). */
  keyPrefix: string;
  /** Limits (lib/config/watchlists.ts). */
  limits: Pick<WatchlistsConfig, "maxPerAccount" | "maxMembers">;
  /** Clock; default `() => new Date()`. */
  now?: () => Date;
}

/** The watchlist store ({@link createWatchlistStore}). */
export interface WatchlistStore {
  /** Creates a watchlist; throws {@link WatchlistStoreError} `CS_WATCHLIST_LIMIT_REACHED` past `maxPerAccount`. */
  create(accountId: string, input: { name: string; kind: WatchlistKind }): Promise<Watchlist>;
  /** The account's watchlists, oldest first. */
  list(accountId: string): Promise<Watchlist[]>;
  /** One watchlist, or null (also for another account's). */
  get(accountId: string, id: string): Promise<Watchlist | null>;
  /** Deletes the watchlist and its members; false when there was none. */
  delete(accountId: string, id: string): Promise<boolean>;
  /** Number of members (SCARD). */
  count(accountId: string, id: string): Promise<number>;
  /**
   * Adds normalised members; answers how many were new and the new count. Throws `CS_WATCHLIST_FULL`
   * when the new members would pass `maxMembers` (checked before writing; concurrent uploads may
   * overshoot by at most one request's new members).
   */
  add(accountId: string, id: string, members: string[]): Promise<{ added: number; count: number }>;
  /** Removes members; answers how many were there and the new count. */
  remove(accountId: string, id: string, members: string[]): Promise<{ removed: number; count: number }>;
  /** Membership of each value (SMISMEMBER), in order. */
  contains(accountId: string, id: string, members: string[]): Promise<boolean[]>;
  /** Every member (SMEMBERS, unordered), or null when the account has no such watchlist (a search's `terms` by watchlist). */
  members(accountId: string, id: string): Promise<string[] | null>;
  /** The Redis key of a watchlist's member set (for the match stage's batched SMISMEMBER). */
  membersKey(accountId: string, id: string): string;
  /** The pub/sub channel of change messages (see the module comment). */
  readonly changesChannel: string;
  /** The list's revision (lib/watchlists/changes.ts): raised by every add or remove that changed the set; 0 when never (or deleted). */
  revision(accountId: string, id: string): Promise<number>;
  /** The changes after revision `since` up to at least `to` (lib/watchlists/changes.ts `changesSince`), or null: rebuild from the set. */
  changesSince(accountId: string, id: string, since: number, to: number): Promise<WatchlistChanges | null>;
  /** Every member, in chunks (SSCAN, COUNT 10,000; a member may come twice; members added meanwhile may be missed). */
  scanMembers(accountId: string, id: string): AsyncIterable<string[]>;
}

/**
 * A watchlist store over Redis.
 * @param deps see {@link WatchlistStoreDeps}.
 */
export function createWatchlistStore(deps: WatchlistStoreDeps): WatchlistStore {
  const { redis, keyPrefix, limits } = deps;
  const now = deps.now ?? (() => new Date());
  const metaKey = (accountId: string) => `${keyPrefix}watchlists:${accountId}`;
  const membersKey = (accountId: string, id: string) => `${keyPrefix}watchlist:${accountId}:${id}:members`;
  const revKey = (accountId: string, id: string) => `${keyPrefix}watchlist:${accountId}:${id}:rev`;
  const logKey = (accountId: string, id: string) => `${keyPrefix}watchlist:${accountId}:${id}:changes`;
  const changesChannel = `${keyPrefix}watchlists:changes`;
  /**
   * Adds (`+`) or removes (`-`) members with their revision, log entry and message, one script per
   * {@link WRITE_SCRIPT_MEMBERS}; answers how many changed.
   */
  const write = async (op: "+" | "-", accountId: string, id: string, members: string[]): Promise<number> => {
    let changed = 0;
    for (let i = 0; i < members.length; i += WRITE_SCRIPT_MEMBERS) {
      const chunk = members.slice(i, i + WRITE_SCRIPT_MEMBERS);
      const reply = (await redis.eval(WRITE_SCRIPT, {
        keys: [membersKey(accountId, id), revKey(accountId, id), logKey(accountId, id)],
        arguments: [op, changePayload(chunk), String(CHANGE_LOG_ENTRIES), changesChannel, changeMessage(accountId, id), ...chunk],
      })) as [number, number];
      changed += reply[0];
    }
    return changed;
  };
  return {
    membersKey,
    changesChannel,
    async revision(accountId, id) {
      return Number((await redis.get(revKey(accountId, id))) ?? 0);
    },
    async changesSince(accountId, id, since, to) {
      return changesSince(await redis.lRange(logKey(accountId, id), 0, -1), since, to);
    },
    async *scanMembers(accountId, id) {
      let cursor = "0";
      do {
        const reply = await redis.sScan(membersKey(accountId, id), cursor, { COUNT: 10_000 });
        cursor = reply.cursor;
        if (reply.members.length > 0) yield reply.members;
      } while (cursor !== "0");
    },
    async create(accountId, input) {
      if ((await redis.hLen(metaKey(accountId))) >= limits.maxPerAccount) {
        throw new WatchlistStoreError("CS_WATCHLIST_LIMIT_REACHED", `an account may hold at most ${limits.maxPerAccount} watchlists`);
      }
      const w: Watchlist = { id: randomUUID(), accountId, name: input.name, kind: input.kind, createdAt: now().toISOString() };
      await redis.hSet(metaKey(accountId), w.id, JSON.stringify(w));
      return w;
    },
    async list(accountId) {
      const all = (await redis.hVals(metaKey(accountId))).map((s) => JSON.parse(s) as Watchlist);
      return all.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    },
    async get(accountId, id) {
      const s = await redis.hGet(metaKey(accountId), id);
      return s === null ? null : (JSON.parse(s) as Watchlist);
    },
    async delete(accountId, id) {
      const gone = (await redis.hDel(metaKey(accountId), id)) > 0;
      await redis.eval(DELETE_SCRIPT, {
        keys: [membersKey(accountId, id), revKey(accountId, id), logKey(accountId, id)],
        arguments: [changesChannel, changeMessage(accountId, id)],
      });
      return gone;
    },
    count: (accountId, id) => redis.sCard(membersKey(accountId, id)),
    async add(accountId, id, members) {
      const key = membersKey(accountId, id);
      if (members.length === 0) return { added: 0, count: await redis.sCard(key) };
      const before = await redis.sCard(key);
      if (before + members.length > limits.maxMembers) {
        const present = await redis.smIsMember(key, members);
        const fresh = new Set(members.filter((_, i) => present[i] !== 1)).size;
        if (before + fresh > limits.maxMembers) {
          throw new WatchlistStoreError(
            "CS_WATCHLIST_FULL",
            `the watchlist has ${before} members; ${fresh} more would pass its limit of ${limits.maxMembers}`,
          );
        }
      }
      const added = await write("+", accountId, id, members);
      return { added, count: await redis.sCard(key) };
    },
    async remove(accountId, id, members) {
      const key = membersKey(accountId, id);
      const removed = members.length === 0 ? 0 : await write("-", accountId, id, members);
      return { removed, count: await redis.sCard(key) };
    },
    async members(accountId, id) {
      if ((await redis.hGet(metaKey(accountId), id)) === null) return null;
      return redis.sMembers(membersKey(accountId, id));
    },
    async contains(accountId, id, members) {
      if (members.length === 0) return [];
      return (await redis.smIsMember(membersKey(accountId, id), members)).map((x) => x === 1);
    },
  };
}

/**
 * Connects a watchlist store with a Redis client of its own (the CLI's; the API shares its client).
 * @param config - `redisUrl`, `redisKeyPrefix` of a Config.
 * @param limits - default {@link DEFAULT_WATCHLISTS_CONFIG} (what the API applies).
 * @throws when Redis cannot be reached.
 */
export function connectWatchlistStore(
  config: { redisUrl: string; redisKeyPrefix: string },
  limits: WatchlistsConfig = DEFAULT_WATCHLISTS_CONFIG,
  options: StoreConnectionOptions = {},
): Promise<ConnectedStore<WatchlistStore>> {
  return connectStore(config, "watchlists", options, (c) =>
    createWatchlistStore({ redis: c.redis, keyPrefix: c.keyPrefix, limits, ...(c.now ? { now: c.now } : {}) }),
  );
}
