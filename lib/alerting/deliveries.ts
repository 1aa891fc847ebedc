/**
 * Delivery log and redelivery guard, in Redis: written by the notify stage, read by the API's
 * deliveries endpoint.
 *
 * | key (under the configured prefix)           | type   | content                                                              |
 * | ------------------------------------------- | ------ | -------------------------------------------------------------------- |
 * | `notify:deliveries:<ruleId>`                | list   | JSON {@link DeliveryLogEntry}, newest first, at most `maxPerRule`    |
 * | `notify:delivered:<alertId>:<actionIndex>`  | string | ISO time of the successful delivery; expires after `dedupTtlSec`     |
 *
 * The log backs `GET /alerting/rules/<rule_id>/deliveries/`. The guard keeps a redelivered Kafka
 * message from re-sending an action that already succeeded. It narrows duplicates but cannot remove
 * them: a crash between a successful send and {@link DeliveryLog.markDelivered} re-sends on restart
 * (delivery stays at least once; receivers deduplicate by the alert id).
 * @module
 */
import type { AlertType } from "../rules/model.js";
import type { AlertStatus } from "./status.js";

/** One delivery of one action of one alert, as listed by the deliveries endpoint. */
export interface DeliveryLogEntry {
  alertId: string;
  /** The alert's per-rule sequence number. */
  sequence: number;
  status: AlertStatus;
  /** Index of the action in the rule's `config.alerts` (as in {@link Alert.actions}). */
  actionIndex: number;
  type: AlertType;
  /** Redacted destination (`describeDestination` of lib/alerting/channels.ts). */
  destination: string;
  ok: boolean;
  /** Attempts made (0 when the action could not be rendered). */
  attempts: number;
  /** true unless the failure is retryable later (then the alert was dead-lettered). */
  final?: boolean;
  /** HTTP status or SMTP reply code of the last answered attempt. */
  httpStatus?: number;
  error?: string;
  code?: string;
  /** ISO 8601 UTC time the delivery finished. */
  at: string;
  /**
   * Storm control (lib/alerting/storm.ts): `throttled` — the alert was held back by the action's
   * throttle or digest and is in the window's digest (code `CS_THROTTLED`); `digest` — this entry is
   * the digest message itself (`alertId` is the digest id; `sequence`/`status` its last alert's).
   * Absent for an alert sent on its own.
   */
  state?: "throttled" | "digest";
  /** With `state: "digest"`: how many alerts the digest accounts for. */
  digestCount?: number;
}

/** A page of the log. */
export interface DeliveryLogPage {
  /** Entries currently kept for the rule (at most `maxPerRule`). */
  total: number;
  /** Newest first. */
  entries: DeliveryLogEntry[];
}

/**
 * The Redis commands used: a structural subset of a node-redis v5 client, or a test double.
 */
export interface DeliveryLogRedis {
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  lLen(key: string): Promise<number>;
  exists(key: string): Promise<number>;
  set(key: string, value: string, options?: { expiration?: { type: "EX"; value: number }; condition?: "NX" }): Promise<string | null>;
  multi(): DeliveryLogMulti;
}

/** The MULTI/EXEC subset used (queued, run atomically on `exec`). */
export interface DeliveryLogMulti {
  lPush(key: string, value: string): DeliveryLogMulti;
  lTrim(key: string, start: number, stop: number): DeliveryLogMulti;
  exec(): Promise<unknown>;
}

/** Dependencies of {@link createDeliveryLog}. */
export interface DeliveryLogDeps {
  /** A connected Redis client; not closed by the log. */
  redis: DeliveryLogRedis;
  /** Prepended to every key (config `redisKeyPrefix`); tests use a unique one. */
  keyPrefix: string;
  /** Entries kept per rule (older ones are trimmed). Default 1000. */
  maxPerRule?: number;
  /** Lifetime of a "delivered" mark, in seconds. Default 604800 (7 days). */
  dedupTtlSec?: number;
}

/** Options of {@link DeliveryLog.list}. */
export interface ListOptions {
  /** Entries to return, 1–1000. Default 50. */
  limit?: number;
  /** Entries to skip from the newest. Default 0. */
  offset?: number;
}

/** The delivery log and redelivery guard. */
export interface DeliveryLog {
  /** Prepends an entry to the rule's log and trims it to `maxPerRule` (one MULTI). */
  record(ruleId: string, entry: DeliveryLogEntry): Promise<void>;
  /** A page of the rule's log, newest first; an unknown rule gives `{total: 0, entries: []}`. */
  list(ruleId: string, options?: ListOptions): Promise<DeliveryLogPage>;
  /** Whether action `actionIndex` of alert `alertId` was delivered within the last `dedupTtlSec`. */
  alreadyDelivered(alertId: string, actionIndex: number): Promise<boolean>;
  /** Marks the action as delivered (SET NX EX); returns false when it was already marked. */
  markDelivered(alertId: string, actionIndex: number, at?: Date): Promise<boolean>;
}

/** Default of {@link DeliveryLogDeps.maxPerRule}. */
export const DEFAULT_MAX_PER_RULE = 1000;
/** Default of {@link DeliveryLogDeps.dedupTtlSec}: 7 days. */
export const DEFAULT_DEDUP_TTL_SEC = 7 * 24 * 3600;

/** Key names of the log (exported for tests and cleanup). */
export function deliveryLogKeys(keyPrefix: string) {
  return {
    deliveries: (ruleId: string) => `${keyPrefix}notify:deliveries:${ruleId}`,
    delivered: (alertId: string, actionIndex: number) => `${keyPrefix}notify:delivered:${alertId}:${actionIndex}`,
  };
}

/** Creates the Redis-backed {@link DeliveryLog}. */
export function createDeliveryLog(deps: DeliveryLogDeps): DeliveryLog {
  const { redis } = deps;
  const max = Math.max(1, Math.floor(deps.maxPerRule ?? DEFAULT_MAX_PER_RULE));
  const ttl = Math.max(1, Math.floor(deps.dedupTtlSec ?? DEFAULT_DEDUP_TTL_SEC));
  const keys = deliveryLogKeys(deps.keyPrefix);
  return {
    async record(ruleId, entry) {
      const key = keys.deliveries(ruleId);
      await redis
        .multi()
        .lPush(key, JSON.stringify(entry))
        .lTrim(key, 0, max - 1)
        .exec();
    },
    async list(ruleId, options = {}) {
      const limit = Math.min(1000, Math.max(1, Math.floor(options.limit ?? 50)));
      const offset = Math.max(0, Math.floor(options.offset ?? 0));
      const key = keys.deliveries(ruleId);
      const [total, raw] = await Promise.all([redis.lLen(key), redis.lRange(key, offset, offset + limit - 1)]);
      const entries: DeliveryLogEntry[] = [];
      for (const r of raw) {
        try {
          entries.push(JSON.parse(r) as DeliveryLogEntry);
        } catch {
          // a corrupt entry is skipped rather than failing the listing
        }
      }
      return { total, entries };
    },
    async alreadyDelivered(alertId, actionIndex) {
      return (await redis.exists(keys.delivered(alertId, actionIndex))) > 0;
    },
    async markDelivered(alertId, actionIndex, at = new Date()) {
      const r = await redis.set(keys.delivered(alertId, actionIndex), at.toISOString(), {
        expiration: { type: "EX", value: ttl },
        condition: "NX",
      });
      return r !== null;
    },
  };
}
