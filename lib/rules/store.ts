/**
 * Alerting rules, persisted in Redis (the source of truth; the stack runs Redis with AOF, so rules
 * survive a restart of every process), with a change feed on Redis pub/sub for the match stage.
 * Rules are stored as JSON documents, extra top-level properties verbatim. Layout of the keys (all
 * under the configured prefix, `cs:` by default):
 *
 * | key                       | type       | content                                                                |
 * | ------------------------- | ---------- | ---------------------------------------------------------------------- |
 * | `rule:<id>`               | string     | the {@link Rule} as JSON                                               |
 * | `account:<id>:rules`      | sorted set | the account's rules, all scores 0, members `<createdAt>\|<rule id>`     |
 * | `rules`                   | set        | ids of all rules (the match stage's full load)                         |
 * | `rules:changes` (channel) | pub/sub    | {@link RuleChange} JSON, published in the same MULTI as every write   |
 *
 * The per-account index is a sorted set with equal scores so that members sort lexicographically,
 * i.e. by creation time then id, which gives stable cursor pagination in O(log n) per page.
 *
 * Input is expected to have passed `validateRuleInput` (`./validate.ts`); the store does not
 * validate rule content.
 * @module
 */

import { randomUUID } from "node:crypto";
import { WatchError } from "redis";
import type { Config } from "../config/index.js";
import { ChainsiftError } from "../errors.js";
import { type ConnectedStore, connectStore, type StoreConnectionOptions } from "../redis.js";
import type { Rule, RuleInput } from "./model.js";
import { extraPropertyErrors, RESERVED_RULE_FIELDS, RULE_FIELDS, type RulePatch } from "./validate.js";

/**
 * The Redis commands the store uses: a structural subset of a node-redis v5 client
 * (`createClient()` from `redis`), so any such client, or a test double, can be passed.
 */
export interface RuleRedis {
  get(key: string): Promise<string | null>;
  mGet(keys: string[]): Promise<(string | null)[]>;
  sMembers(key: string): Promise<string[]>;
  zCard(key: string): Promise<number>;
  zRange(key: string, min: string, max: string, options: { BY: "LEX"; LIMIT: { offset: number; count: number } }): Promise<string[]>;
  watch(key: string): Promise<unknown>;
  unwatch(): Promise<unknown>;
  multi(): RuleRedisMulti;
  /** A new, unconnected client with the same options (used for the subscriber connection). */
  duplicate(): RuleRedisSubscriber;
}

/** The MULTI/EXEC transaction subset the store uses (commands queue, then run atomically on `exec`). */
export interface RuleRedisMulti {
  set(key: string, value: string): RuleRedisMulti;
  del(key: string): RuleRedisMulti;
  sAdd(key: string, member: string): RuleRedisMulti;
  sRem(key: string, member: string): RuleRedisMulti;
  zAdd(key: string, member: { score: number; value: string }): RuleRedisMulti;
  zRem(key: string, member: string): RuleRedisMulti;
  publish(channel: string, message: string): RuleRedisMulti;
  /** Rejects (node-redis: `WatchError`) when a watched key changed since WATCH. */
  exec(): Promise<unknown>;
}

/** The subscriber-connection subset of a node-redis v5 client. */
export interface RuleRedisSubscriber {
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => unknown): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<unknown>;
  readonly isOpen: boolean;
  on(event: "error", listener: (err: unknown) => void): unknown;
  on(event: "ready", listener: () => void): unknown;
}

/** Dependencies of {@link createRuleStore}. */
export interface RuleStoreDeps {
  /**
   * A connected Redis client (see {@link RuleRedis}); the store does not close it. The store's
   * transactions rely on WATCH, which is per connection: the store serialises its own writes, but the
   * client must not run other transactions concurrently (give the store its own client, as
   * {@link connectRuleStore} does).
   */
  redis: RuleRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`); tests use a unique one. */
  keyPrefix: string;
  /** Clock (default `() => new Date()`); decides `createdAt` and `updatedAt`. */
  now?: () => Date;
  /**
   * Most rules one account may have; a create beyond it fails with `CS_RULE_LIMIT_REACHED`.
   * Default {@link DEFAULT_MAX_RULES_PER_ACCOUNT} (config `rules.maxPerAccount`, env
   * `CHAINSIFT_MAX_RULES_PER_ACCOUNT`). An integer >= 1.
   */
  maxRulesPerAccount?: number;
}

/** Default of {@link RuleStoreDeps.maxRulesPerAccount}: 1000 rules per account. */
export const DEFAULT_MAX_RULES_PER_ACCOUNT = 1000;

/** A change notification, published on `<prefix>rules:changes` in the same transaction as the write. */
export interface RuleChange {
  /** `upsert` after a create or update, `delete` after a delete. */
  op: "upsert" | "delete";
  /** Rule id. */
  id: string;
  /** The rule's version after the change (for `delete`, the last version it had). */
  version: number;
}

/** Options of {@link RuleStore.list}. */
export interface ListRulesOptions {
  /** Page size, an integer from 1 to {@link MAX_LIST_LIMIT}; default {@link DEFAULT_LIST_LIMIT}. */
  limit?: number;
  /** `nextCursor` of the previous page; absent or null for the first page. */
  cursor?: string | null;
}

/** A page of rules, oldest first (by `createdAt`, then `id`). */
export interface RulePage {
  rules: Rule[];
  /** Opaque cursor of the next page, or `null` when this page is the last. */
  nextCursor: string | null;
}

/** Options of {@link RuleStore.subscribe}. */
export interface SubscribeOptions {
  /** Receives errors of the subscriber connection (it reconnects by itself); default: ignored. */
  onError?: (err: unknown) => void;
  /**
   * Called when the subscriber connection is ready again after a disconnection. Changes published
   * while disconnected are lost, so a consumer should reload everything ({@link RuleStore.all}) here.
   */
  onReconnect?: () => void;
}

/** Default page size of {@link RuleStore.list}. */
export const DEFAULT_LIST_LIMIT = 50;
/** Largest page size of {@link RuleStore.list}. */
export const MAX_LIST_LIMIT = 500;

/**
 * Stable codes of {@link RuleStoreError} (the API answers each with the status of its code in
 * api/routes/rules/errors.ts `RULES_ERROR_CODES`):
 * - `CS_RULE_NOT_FOUND`: no rule with that id for that account (also another account's rule);
 * - `CS_RULE_VERSION_CONFLICT`: the expected version is not the stored one (stale PUT);
 * - `CS_RULE_IMMUTABLE_FIELD`: an update tried to change technology, blockchain or network;
 * - `CS_RULE_INVALID_PAGE`: a list `limit` outside 1–500 or a malformed `cursor`;
 * - `CS_RULE_LIMIT_REACHED`: a create for an account that already has {@link RuleStoreDeps.maxRulesPerAccount} rules;
 * - `CS_RULE_EXTRA_PROPERTIES`: an update would leave the rule with more additional top-level
 *   properties than `RULE_LIMITS` allows (`details.field`: the property that crosses the limit).
 */
export const RULE_STORE_ERROR_CODES = [
  "CS_RULE_NOT_FOUND",
  "CS_RULE_VERSION_CONFLICT",
  "CS_RULE_IMMUTABLE_FIELD",
  "CS_RULE_INVALID_PAGE",
  "CS_RULE_LIMIT_REACHED",
  "CS_RULE_EXTRA_PROPERTIES",
] as const;

/** One of {@link RULE_STORE_ERROR_CODES}. */
export type RuleStoreErrorCode = (typeof RULE_STORE_ERROR_CODES)[number];

/** A refused store operation. Redis/connection failures are not wrapped: they surface as the client's own errors (answer 503). */
export class RuleStoreError extends ChainsiftError<RuleStoreErrorCode> {
  constructor(
    /** Stable code, see {@link RuleStoreErrorCode}. */
    readonly code: RuleStoreErrorCode,
    message: string,
    /**
     * Extra facts: `field` for `CS_RULE_IMMUTABLE_FIELD` and `CS_RULE_EXTRA_PROPERTIES` (a JSON path),
     * `currentVersion` for `CS_RULE_VERSION_CONFLICT`, `limit` for `CS_RULE_LIMIT_REACHED`, `id`
     * (the rule id asked for) for `CS_RULE_NOT_FOUND` and `CS_RULE_VERSION_CONFLICT` of an update.
     */
    readonly details: { field?: string; currentVersion?: number; limit?: number; id?: string } = {},
  ) {
    super(message);
    this.name = "RuleStoreError";
  }
}

/** Whether `err` is a {@link RuleStoreError} (optionally with that code). */
export function isRuleStoreError(err: unknown, code?: RuleStoreErrorCode): err is RuleStoreError {
  return err instanceof RuleStoreError && (code === undefined || err.code === code);
}

/** Alerting rules of all accounts. Every method reads or writes Redis directly; nothing is cached. */
export interface RuleStore {
  /**
   * Stores a new rule: id = random UUID, `version` 1, `createdAt` = `updatedAt` = now. Defaults:
   * `state` `enabled`, `sendPendingAlerts` false, `description` null. A `version` in the input is
   * ignored, as are `id`, `accountId`, `createdAt`, `updatedAt`; other properties are kept verbatim.
   * Publishes `{op: "upsert"}`. The account's rule count is checked in the same transaction
   * (WATCH on the account's index), so concurrent creates never exceed the limit.
   * @param accountId owner (a non-empty string; the API passes the authenticated account's id).
   * @throws {RuleStoreError} `CS_RULE_LIMIT_REACHED` when the account already has
   *   {@link RuleStoreDeps.maxRulesPerAccount} rules (`details.limit`); `CS_RULE_VERSION_CONFLICT`
   *   when the account's rules kept changing during 10 attempts.
   */
  create(accountId: string, input: RuleInput): Promise<Rule>;
  /** The rule, or `null` when there is none with that id, the id is not a UUID, or it belongs to another account. */
  get(accountId: string, id: string): Promise<Rule | null>;
  /**
   * The rule with that id whatever its account, or `null` (also for ids that are not UUIDs). For
   * internal consumers, e.g. the match stage fetching a rule named by a {@link RuleChange}; the API
   * must use {@link RuleStore.get}, which hides other accounts' rules.
   */
  getById(id: string): Promise<Rule | null>;
  /**
   * One page of an account's rules, oldest first (`createdAt`, then `id`), stable under concurrent writes.
   * @throws {RuleStoreError} `CS_RULE_INVALID_PAGE` for a limit outside 1–500 or a malformed cursor.
   */
  list(accountId: string, options?: ListRulesOptions): Promise<RulePage>;
  /**
   * Merges `patch` into the stored rule at the top level (`config` is replaced as a whole; properties
   * whose value is `undefined` are skipped), increments `version` and sets `updatedAt`, atomically
   * (WATCH/MULTI, retried when another writer got in between). Publishes `{op: "upsert"}`.
   * `version` in the patch is not stored: it is the expected version when `expectedVersion` is not given.
   * `technology`, `blockchain`, `network` may be in the patch only with the stored values.
   * @param expectedVersion the version the client last saw; default `patch.version`; when neither is given, last write wins.
   * @returns the rule as now stored.
   * @throws {RuleStoreError} `CS_RULE_NOT_FOUND` (none, or another account's), `CS_RULE_VERSION_CONFLICT`
   *   (stale version; `details.currentVersion`), `CS_RULE_IMMUTABLE_FIELD` (`details.field`),
   *   `CS_RULE_EXTRA_PROPERTIES` (the patch sets additional properties and the merged rule would
   *   have too many or too large ones; `details.field`; a patch without additional properties is
   *   never refused for them, so rules stored before the limits stay editable).
   */
  update(accountId: string, id: string, patch: RulePatch, expectedVersion?: number): Promise<Rule>;
  /**
   * Deletes a rule (atomically with its index entries) and publishes `{op: "delete"}`.
   * @returns `true` when deleted, `false` when there was no such rule for that account.
   */
  delete(accountId: string, id: string): Promise<boolean>;
  /** Every rule of every account (enabled and disabled), oldest first: the match stage's full load. */
  all(): Promise<Rule[]>;
  /**
   * Listens to the change feed on a dedicated connection (a duplicate of the store's client).
   * Malformed messages are dropped. Delivery is at most once: after a disconnection, reload with
   * {@link RuleStore.all} (see {@link SubscribeOptions.onReconnect}); consumers should also reload
   * periodically.
   * Resolves once subscribed (the connection retries like the store's client, so this waits while Redis is down).
   * @returns a function that unsubscribes and closes the connection (idempotent).
   * @throws the client's error when subscribing fails.
   */
  subscribe(onChange: (change: RuleChange) => void, options?: SubscribeOptions): Promise<() => Promise<void>>;
}

/** The Redis keys of the store under a prefix (exported for tests, cleanup and docs). */
export function ruleKeys(prefix: string) {
  return {
    /** String: one rule as JSON. */
    rule: (id: string) => `${prefix}rule:${id}`,
    /** Sorted set (scores 0) of one account's rules, members `<createdAt>|<id>`. */
    accountRules: (accountId: string) => `${prefix}account:${accountId}:rules`,
    /** Set of all rule ids. */
    rules: `${prefix}rules`,
    /** Pub/sub channel of {@link RuleChange} messages. */
    changes: `${prefix}rules:changes`,
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MEMBER = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How often a write is tried when other writers keep touching the rule between WATCH and EXEC. */
const MAX_ATTEMPTS = 10;
/** Retry n waits a random 0 to n × this many ms. */
const RETRY_BASE_MS = 5;
const MGET_CHUNK = 500;
const CHAIN_FIELDS = ["technology", "blockchain", "network"] as const;

function member(rule: Pick<Rule, "createdAt" | "id">): string {
  return `${rule.createdAt}|${rule.id}`;
}

function parseRule(raw: string | null): Rule | null {
  if (raw === null) return null;
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
    const r = v as Rule;
    return typeof r.id === "string" && typeof r.accountId === "string" && typeof r.version === "number" ? r : null;
  } catch {
    return null;
  }
}

function byCreation(a: Rule, b: Rule): number {
  const x = member(a);
  const y = member(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** node-redis rejects EXEC with a `WatchError` (its `name` is plain "Error"); test doubles may name theirs. */
function isWatchError(err: unknown): boolean {
  return err instanceof WatchError || (err instanceof Error && err.name === "WatchError");
}

function stripReserved(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    if (v !== undefined && !RESERVED_RULE_FIELDS.includes(k) && k !== "version") out[k] = v;
  }
  return out;
}

function requireAccountId(accountId: string): void {
  if (typeof accountId !== "string" || accountId === "") throw new TypeError("accountId must be a non-empty string");
}

/**
 * Creates the store over an existing, connected Redis client (no I/O until a method is called).
 * @param deps see {@link RuleStoreDeps}.
 */
export function createRuleStore(deps: RuleStoreDeps): RuleStore {
  const { redis } = deps;
  const now = deps.now ?? (() => new Date());
  const k = ruleKeys(deps.keyPrefix);
  const maxRules = deps.maxRulesPerAccount ?? DEFAULT_MAX_RULES_PER_ACCOUNT;
  if (!Number.isInteger(maxRules) || maxRules < 1) throw new RangeError(`maxRulesPerAccount must be an integer >= 1, got ${maxRules}`);

  // WATCH is per connection and EXEC clears every watch of the connection: run this store's
  // transactions one at a time so one never commits inside another's WATCH window.
  let tail: Promise<unknown> = Promise.resolve();
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = tail.then(fn, fn);
    tail = run.catch(() => {});
    return run;
  }

  /**
   * WATCHes a key, reads what `decide` needs (`read`) and lets `decide` queue a transaction (or finish
   * without one). Retries on a WatchError (up to {@link MAX_ATTEMPTS} times, then
   * `CS_RULE_VERSION_CONFLICT` with `conflict` as message); `decide` sees fresh data on every
   * attempt, so an expected version or a count is re-checked each time.
   */
  async function transact<R, T>(
    key: string,
    read: () => Promise<R>,
    decide: (current: R) => { tx?: RuleRedisMulti; result: T },
    conflict: string,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const outcome = await serial(async (): Promise<{ done: true; result: T } | { done: false }> => {
        await redis.watch(key);
        let decision: { tx?: RuleRedisMulti; result: T };
        try {
          decision = decide(await read());
        } catch (err) {
          await redis.unwatch().catch(() => {});
          throw err;
        }
        if (!decision.tx) {
          await redis.unwatch();
          return { done: true, result: decision.result };
        }
        try {
          await decision.tx.exec();
          return { done: true, result: decision.result };
        } catch (err) {
          if (isWatchError(err)) return { done: false };
          throw err;
        }
      });
      if (outcome.done) return outcome.result;
      if (attempt >= MAX_ATTEMPTS) throw new RuleStoreError("CS_RULE_VERSION_CONFLICT", conflict);
      // Back off a little (jittered, growing) outside the lock so the other writer can finish.
      await new Promise((r) => setTimeout(r, Math.random() * RETRY_BASE_MS * attempt));
    }
  }

  /** {@link transact} on one rule: WATCHes `rule:<id>` and hands `decide` the stored rule (or null). */
  function watched<T>(id: string, decide: (current: Rule | null) => { tx?: RuleRedisMulti; result: T }): Promise<T> {
    return transact(k.rule(id), async () => parseRule(await redis.get(k.rule(id))), decide, `rule ${id} kept changing concurrently; retry`);
  }

  function change(c: RuleChange): string {
    return JSON.stringify(c);
  }

  async function load(ids: string[]): Promise<Rule[]> {
    const rules: Rule[] = [];
    for (let i = 0; i < ids.length; i += MGET_CHUNK) {
      const chunk = ids.slice(i, i + MGET_CHUNK);
      if (chunk.length === 0) continue;
      for (const raw of await redis.mGet(chunk.map((id) => k.rule(id)))) {
        const rule = parseRule(raw);
        if (rule) rules.push(rule);
      }
    }
    return rules;
  }

  return {
    async create(accountId, input) {
      requireAccountId(accountId);
      const at = now().toISOString();
      const fields = stripReserved(input as Record<string, unknown>);
      const rule = {
        id: randomUUID(),
        accountId,
        ...fields,
        state: fields.state ?? "enabled",
        sendPendingAlerts: fields.sendPendingAlerts ?? false,
        description: fields.description ?? null,
        version: 1,
        createdAt: at,
        updatedAt: at,
      } as Rule;
      // WATCH the account's index: a concurrent create (or delete) for the account retries the count.
      const accountKey = k.accountRules(accountId);
      return transact(
        accountKey,
        () => redis.zCard(accountKey),
        (count) => {
          if (count >= maxRules) {
            throw new RuleStoreError(
              "CS_RULE_LIMIT_REACHED",
              `the account has ${count} rules, the most it may have (${maxRules}); delete one first`,
              { limit: maxRules },
            );
          }
          const tx = redis
            .multi()
            .set(k.rule(rule.id), JSON.stringify(rule))
            .zAdd(accountKey, { score: 0, value: member(rule) })
            .sAdd(k.rules, rule.id)
            .publish(k.changes, change({ op: "upsert", id: rule.id, version: rule.version }));
          return { tx, result: rule };
        },
        "the account's rules kept changing concurrently; retry",
      );
    },

    async get(accountId, id) {
      if (typeof id !== "string" || !UUID.test(id)) return null;
      const rule = parseRule(await redis.get(k.rule(id)));
      return rule && rule.accountId === accountId ? rule : null;
    },

    async getById(id) {
      if (typeof id !== "string" || !UUID.test(id)) return null;
      return parseRule(await redis.get(k.rule(id)));
    },

    async list(accountId, options = {}) {
      const limit = options.limit ?? DEFAULT_LIST_LIMIT;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
        throw new RuleStoreError(
          "CS_RULE_INVALID_PAGE",
          `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(limit)}`,
        );
      }
      let min = "-";
      if (options.cursor !== undefined && options.cursor !== null) {
        const after = Buffer.from(options.cursor, "base64url").toString("utf8");
        if (!MEMBER.test(after) || Buffer.from(after, "utf8").toString("base64url") !== options.cursor) {
          throw new RuleStoreError("CS_RULE_INVALID_PAGE", "cursor is not a cursor returned by a previous page");
        }
        min = `(${after}`;
      }
      const members = await redis.zRange(k.accountRules(accountId), min, "+", { BY: "LEX", LIMIT: { offset: 0, count: limit + 1 } });
      const page = members.slice(0, limit);
      const rules = (await load(page.map((m) => m.slice(m.indexOf("|") + 1)))).filter((r) => r.accountId === accountId);
      const last = page[page.length - 1];
      return { rules, nextCursor: members.length > limit && last ? Buffer.from(last, "utf8").toString("base64url") : null };
    },

    async update(accountId, id, patch, expectedVersion) {
      const expected = expectedVersion ?? (typeof patch.version === "number" ? patch.version : undefined);
      const fields = stripReserved(patch as Record<string, unknown>);
      if (typeof id !== "string" || !UUID.test(id))
        throw new RuleStoreError("CS_RULE_NOT_FOUND", `no rule with id ${JSON.stringify(id)}`, { id });
      return watched(id, (current) => {
        if (!current || current.accountId !== accountId)
          throw new RuleStoreError("CS_RULE_NOT_FOUND", `no rule with id ${JSON.stringify(id)}`, { id });
        if (expected !== undefined && expected !== current.version) {
          throw new RuleStoreError("CS_RULE_VERSION_CONFLICT", `rule ${id} is at version ${current.version}, not ${expected}`, {
            id,
            currentVersion: current.version,
          });
        }
        for (const f of CHAIN_FIELDS) {
          if (f in fields && fields[f] !== current[f]) {
            throw new RuleStoreError("CS_RULE_IMMUTABLE_FIELD", `${f} cannot be changed (it is ${JSON.stringify(current[f])})`, {
              field: f,
            });
          }
        }
        const next = { ...current, ...fields, version: current.version + 1, updatedAt: now().toISOString() } as Rule;
        // Only a patch that sets additional properties can break their limits; one that does not
        // leaves them as they are (a rule stored before the limits existed stays editable).
        const extra = Object.keys(fields).some((key) => !RULE_FIELDS.includes(key)) ? extraPropertyErrors(next)[0] : undefined;
        if (extra) throw new RuleStoreError("CS_RULE_EXTRA_PROPERTIES", extra.message, { field: extra.path });
        const tx = redis
          .multi()
          .set(k.rule(id), JSON.stringify(next))
          .publish(k.changes, change({ op: "upsert", id, version: next.version }));
        return { tx, result: next };
      });
    },

    async delete(accountId, id) {
      if (typeof id !== "string" || !UUID.test(id)) return false;
      return watched(id, (current) => {
        if (!current || current.accountId !== accountId) return { result: false };
        const tx = redis
          .multi()
          .del(k.rule(id))
          .zRem(k.accountRules(accountId), member(current))
          .sRem(k.rules, id)
          .publish(k.changes, change({ op: "delete", id, version: current.version }));
        return { tx, result: true };
      });
    },

    async all() {
      return (await load(await redis.sMembers(k.rules))).sort(byCreation);
    },

    async subscribe(onChange, options = {}) {
      const sub = redis.duplicate();
      let ready = false;
      sub.on("error", (err) => options.onError?.(err));
      sub.on("ready", () => {
        if (ready) options.onReconnect?.();
      });
      await sub.connect();
      const listener = (message: string) => {
        let c: unknown;
        try {
          c = JSON.parse(message);
        } catch {
          return;
        }
        const v = c as RuleChange;
        if (typeof c !== "object" || c === null || (v.op !== "upsert" && v.op !== "delete") || typeof v.id !== "string") return;
        if (typeof v.version !== "number") return;
        onChange({ op: v.op, id: v.id, version: v.version });
      };
      try {
        await sub.subscribe(k.changes, listener);
      } catch (err) {
        if (sub.isOpen) await sub.close().catch(() => {});
        throw err;
      }
      ready = true;
      let closing: Promise<void> | undefined;
      return () => {
        closing ??= (async () => {
          if (!sub.isOpen) return;
          await sub.unsubscribe(k.changes).catch(() => {});
          await sub.close().catch(() => {});
        })();
        return closing;
      };
    },
  };
}

/**
 * A {@link RuleStore} with the Redis connection it owns. Its `close` closes only that connection:
 * subscriptions have their own connections, call their unsubscribe.
 */
export type ConnectedRuleStore = ConnectedStore<RuleStore>;

/** Options of {@link connectRuleStore}. */
export interface ConnectRuleStoreOptions extends StoreConnectionOptions {
  /** See {@link RuleStoreDeps.maxRulesPerAccount} (default {@link DEFAULT_MAX_RULES_PER_ACCOUNT}). */
  maxRulesPerAccount?: number;
}

/**
 * Connects a dedicated Redis client and returns a store over it (a dedicated client, because the
 * store's WATCH/MULTI transactions need a connection no one else runs transactions on).
 * The first connection must succeed (no retry); once connected, the client reconnects with backoff
 * (100 ms doubling, at most 5 s) and, while disconnected, commands fail at once instead of queueing
 * (so the API can answer 503 rather than hang). Subscriber connections inherit these settings.
 * @param config `redisUrl` (e.g. `redis://127.0.0.1:6379`) and `redisKeyPrefix` of a {@link Config}.
 * @throws the client's connection error when Redis cannot be reached; a `RangeError` (after closing
 *   the connection) for a `maxRulesPerAccount` that is not an integer >= 1.
 */
export function connectRuleStore(
  config: Pick<Config, "redisUrl" | "redisKeyPrefix">,
  options: ConnectRuleStoreOptions = {},
): Promise<ConnectedRuleStore> {
  return connectStore(config, "rules", options, (connection) =>
    createRuleStore({
      ...connection,
      ...(options.maxRulesPerAccount !== undefined ? { maxRulesPerAccount: options.maxRulesPerAccount } : {}),
    }),
  );
}
