/**
 * User ABI registrations in Redis (the source of truth, like the rules: lib/rules/store.ts), with a
 * change feed on Redis pub/sub for the decode stage. Keys, under the configured prefix (`cs:`):
 *
 * | key                        | type    | content                                                        |
 * | -------------------------- | ------- | -------------------------------------------------------------- |
 * | `abis:<namespace>`         | hash    | address (lower-case, or `any`) → {@link AbiRegistration} JSON   |
 * | `abis:namespaces`          | set     | namespaces that have (or had) a registration                   |
 * | `abis:changes` (channel)   | pub/sub | {@link AbiChange} JSON, published by the same script as a write |
 *
 * A namespace is an account id, or `global` for the registrations only the admin token writes.
 * A write and its change notification run in one Lua script (atomic; the per-account limit is
 * checked inside it).
 * @module
 */

import type { Config } from "../config/index.js";
import { ChainsiftError } from "../errors.js";
import { type ConnectedStore, connectStore, type StoreConnectionOptions } from "../redis.js";
import { type AbiRegistration, eventFragments, GLOBAL_NAMESPACE } from "./model.js";
import type { AbiRegistrationBody } from "./schema.js";

/** The node-redis v5 commands the store uses (a structural subset of `createClient()`). */
export interface AbiRedis {
  hGet(key: string, field: string): Promise<string | null>;
  hGetAll(key: string): Promise<Record<string, string>>;
  sMembers(key: string): Promise<string[]>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** The subscriber connection the store opens for {@link AbiStore.subscribe} (a node-redis client). */
export interface AbiSubscriber {
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string) => unknown): Promise<unknown>;
  close(): Promise<unknown>;
  on(event: "error", listener: (err: unknown) => void): unknown;
  on(event: "ready", listener: () => void): unknown;
}

/** Dependencies of {@link createAbiStore}. */
export interface AbiStoreDeps {
  /** A connected client; the store does not close it. */
  redis: AbiRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`). */
  keyPrefix: string;
  /**
   * Most registrations one account namespace may hold (addresses plus `any`); one more is refused
   * with `CS_ABI_LIMIT_REACHED`. The global namespace has no limit. Default
   * {@link DEFAULT_MAX_ABIS_PER_ACCOUNT} (config `abis.maxPerAccount`).
   */
  maxPerAccount?: number;
  /** Clock; default `() => new Date()`. */
  now?: () => Date;
}

/** Default of {@link AbiStoreDeps.maxPerAccount}: 100 registrations per account. */
export const DEFAULT_MAX_ABIS_PER_ACCOUNT = 100;

/** A change notification on `<prefix>abis:changes`. */
export interface AbiChange {
  /** `put` after a registration or replacement, `delete` after a removal. */
  op: "put" | "delete";
  namespace: string;
  /** Lower-case address or `any`. */
  address: string;
  /** The registration's `updatedAt` (put) or the removal time (delete). */
  at: string;
}

/** Codes of {@link AbiStoreError}: `CS_ABI_LIMIT_REACHED` (409 on the API). */
export type AbiStoreErrorCode = "CS_ABI_LIMIT_REACHED";

/** A refused store operation. */
export class AbiStoreError extends ChainsiftError<AbiStoreErrorCode> {
  constructor(
    readonly code: AbiStoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "AbiStoreError";
  }
}

/** The registry of user ABIs. */
export interface AbiStore {
  /**
   * Registers (or replaces) the ABI of `address` in `namespace`. A replacement keeps `createdAt`.
   * @param body - a body that passed `validateAbiBody` (lib/abis/model.ts).
   * @returns the stored registration and whether it is new.
   * @throws {AbiStoreError} `CS_ABI_LIMIT_REACHED` when an account namespace is full and `address` is new in it.
   */
  put(namespace: string, address: string, body: AbiRegistrationBody): Promise<{ registration: AbiRegistration; created: boolean }>;
  /** The registration of `address` in `namespace`, or null. */
  get(namespace: string, address: string): Promise<AbiRegistration | null>;
  /** Every registration of `namespace`, by address. */
  list(namespace: string): Promise<AbiRegistration[]>;
  /** Removes a registration. @returns whether there was one. */
  remove(namespace: string, address: string): Promise<boolean>;
  /** Every registration of every namespace (the decode stage's full load). */
  all(): Promise<AbiRegistration[]>;
  /**
   * Subscribes to changes on a connection of its own (`duplicate` of a node-redis client).
   * `onReconnect` runs when the subscriber is ready again after a disconnection (changes published
   * meanwhile are lost: reload everything then).
   * @returns a function that unsubscribes and closes that connection.
   */
  subscribe(
    subscriber: AbiSubscriber,
    listener: (change: AbiChange) => void,
    options?: { onReconnect?: () => void; onError?: (err: unknown) => void },
  ): Promise<() => Promise<void>>;
}

const PUT = `
local exists = redis.call('HEXISTS', KEYS[1], ARGV[1])
local max = tonumber(ARGV[3])
if exists == 0 and max > 0 and redis.call('HLEN', KEYS[1]) >= max then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[6])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return exists`;

const DEL = `
local n = redis.call('HDEL', KEYS[1], ARGV[1])
if n == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return n`;

function parse(json: string | null): AbiRegistration | null {
  return json === null ? null : (JSON.parse(json) as AbiRegistration);
}

const byAddress = (a: AbiRegistration, b: AbiRegistration) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

/**
 * Creates the store over a connected client.
 * @param deps - client, key prefix, per-account limit and clock ({@link AbiStoreDeps}).
 */
export function createAbiStore(deps: AbiStoreDeps): AbiStore {
  const { redis, keyPrefix } = deps;
  const max = deps.maxPerAccount ?? DEFAULT_MAX_ABIS_PER_ACCOUNT;
  const now = deps.now ?? (() => new Date());
  const hash = (namespace: string) => `${keyPrefix}abis:${namespace}`;
  const namespaces = `${keyPrefix}abis:namespaces`;
  const channel = `${keyPrefix}abis:changes`;
  return {
    async put(namespace, address, body) {
      const at = now().toISOString();
      const previous = parse(await redis.hGet(hash(namespace), address));
      const registration: AbiRegistration = {
        namespace,
        address,
        name: body.name ?? null,
        abi: body.abi,
        events: eventFragments(body.abi).length,
        createdAt: previous?.createdAt ?? at,
        updatedAt: at,
      };
      const change: AbiChange = { op: "put", namespace, address, at };
      const limit = namespace === GLOBAL_NAMESPACE ? 0 : max;
      const res = Number(
        await redis.eval(PUT, {
          keys: [hash(namespace), namespaces],
          arguments: [address, JSON.stringify(registration), String(limit), channel, JSON.stringify(change), namespace],
        }),
      );
      if (res < 0)
        throw new AbiStoreError(
          "CS_ABI_LIMIT_REACHED",
          `the account already has ${max} registered ABIs (the most it may have); remove one first`,
        );
      return { registration, created: res === 0 };
    },
    async get(namespace, address) {
      return parse(await redis.hGet(hash(namespace), address));
    },
    async list(namespace) {
      return Object.values(await redis.hGetAll(hash(namespace)))
        .map((j) => JSON.parse(j) as AbiRegistration)
        .sort(byAddress);
    },
    async remove(namespace, address) {
      const change: AbiChange = { op: "delete", namespace, address, at: now().toISOString() };
      const n = Number(await redis.eval(DEL, { keys: [hash(namespace)], arguments: [address, channel, JSON.stringify(change)] }));
      return n === 1;
    },
    async all() {
      const out: AbiRegistration[] = [];
      for (const ns of (await redis.sMembers(namespaces)).sort()) out.push(...(await this.list(ns)));
      return out;
    },
    async subscribe(subscriber, listener, options = {}) {
      let connectedOnce = false;
      subscriber.on("error", (err) => options.onError?.(err));
      subscriber.on("ready", () => {
        if (connectedOnce) options.onReconnect?.();
        connectedOnce = true;
      });
      await subscriber.connect();
      await subscriber.subscribe(channel, (message) => {
        try {
          listener(JSON.parse(message) as AbiChange);
        } catch (err) {
          options.onError?.(err);
        }
      });
      return async () => {
        await subscriber.close();
      };
    },
  };
}

/** An {@link AbiStore} with the Redis connection it owns. */
export type ConnectedAbiStore = ConnectedStore<AbiStore>;

/**
 * Connects a dedicated Redis client (fails fast when Redis is unreachable, like the account store's)
 * and returns a store over it (the CLI's).
 * @param config - `redisUrl`, `redisKeyPrefix` and `abis.maxPerAccount` of a Config.
 * @throws the client's connection error when Redis cannot be reached.
 */
export function connectAbiStore(
  config: Pick<Config, "redisUrl" | "redisKeyPrefix" | "abis">,
  options: StoreConnectionOptions = {},
): Promise<ConnectedAbiStore> {
  return connectStore(config, "abis", options, (connection) => createAbiStore({ ...connection, maxPerAccount: config.abis.maxPerAccount }));
}
