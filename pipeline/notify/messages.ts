/**
 * The chat and e-mail messages an alert posted, so that a retraction can change them where people
 * read them (docs/alerting-delivery.md, "Retractions people can see"): when a `pending` alert's
 * Discord, Telegram, Slack or e-mail message is delivered, the channel stores what identifies it;
 * when the match's `removed` alert comes, the channel edits that message (Discord, Telegram, Slack
 * with a bot token), posts a follow-up naming it (Slack incoming webhook) or answers it in the
 * same thread (e-mail `In-Reply-To`/`References`).
 *
 * Redis key `<prefix>notify:msg:<match key>:<actionIndex>` (a JSON {@link PostedMessage}), with a
 * TTL ({@link DEFAULT_MESSAGE_TTL_SEC}, 7 days, as the redelivery guard); the match key is the hex
 * SHA-256 of `ruleId|entityId|blockHash`, shared by a match's `pending` and `removed` alerts.
 * @module
 */
import { type Alert, matchKey } from "../../lib/alerting/alert.js";

/** How long a posted message is remembered, in seconds: 7 days (a retraction comes within the confirmation depth). */
export const DEFAULT_MESSAGE_TTL_SEC = 7 * 24 * 3600;

/** What identifies a delivered message, per channel. `at` is when it was delivered (ISO 8601 UTC). */
export type PostedMessage =
  /** Discord "Execute Webhook" with `?wait=true` answers the message; its `id` (a snowflake). */
  | { kind: "discord"; id: string; at: string }
  /** Telegram `sendMessage` answers the `Message`: `chat.id` and `message_id`. */
  | { kind: "telegram"; chatId: string | number; messageId: number; at: string }
  /** Slack Web API `chat.postMessage` answers `channel` (the id) and `ts` (the message's timestamp id). */
  | { kind: "slack-api"; channel: string; ts: string; at: string }
  /** A Slack incoming webhook answers only `ok`: the alert id and time name the message. */
  | { kind: "slack-webhook"; alertId: string; at: string }
  /** An e-mail: its `Message-ID` (with the angle brackets) and subject. */
  | { kind: "email"; messageId: string; subject: string; at: string };

/** The Redis commands used (a structural subset of a node-redis v5 client). */
export interface MessageRedis {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options?: { expiration?: { type: "EX"; value: number } }): Promise<string | null>;
}

/** The posted-message store. */
export interface MessageStore {
  /** The message that action `actionIndex` posted for the alert's match, or null (none, expired, unreadable). */
  get(alert: Pick<Alert, "ruleId" | "entityId" | "blockHash">, actionIndex: number): Promise<PostedMessage | null>;
  /** Remembers the message action `actionIndex` posted for the alert's match (overwrites, renews the TTL). */
  put(alert: Pick<Alert, "ruleId" | "entityId" | "blockHash">, actionIndex: number, message: PostedMessage): Promise<void>;
}

/** The match key (lib/alerting/alert.ts): hex SHA-256 of `ruleId|entityId|blockHash`, the same for a match's pending and removed alerts. */
export { matchKey };

/** Redis key of a posted message. */
export function messageKey(keyPrefix: string, alert: Pick<Alert, "ruleId" | "entityId" | "blockHash">, actionIndex: number): string {
  return `${keyPrefix}notify:msg:${matchKey(alert)}:${actionIndex}`;
}

/**
 * Creates the Redis-backed {@link MessageStore}.
 * @param ttlSec How long a message is kept, in seconds (default {@link DEFAULT_MESSAGE_TTL_SEC}).
 */
export function createMessageStore(redis: MessageRedis, keyPrefix: string, ttlSec = DEFAULT_MESSAGE_TTL_SEC): MessageStore {
  return {
    async get(alert, actionIndex) {
      const raw = await redis.get(messageKey(keyPrefix, alert, actionIndex));
      if (raw === null) return null;
      try {
        const m = JSON.parse(raw) as PostedMessage;
        return typeof m?.kind === "string" ? m : null;
      } catch {
        return null;
      }
    },
    async put(alert, actionIndex, message) {
      await redis.set(messageKey(keyPrefix, alert, actionIndex), JSON.stringify(message), { expiration: { type: "EX", value: ttlSec } });
    },
  };
}

/** Whether an alert's delivered message is worth remembering: only a `pending` one can be retracted later. */
export function remembers(alert: Pick<Alert, "status">): boolean {
  return alert.status === "pending";
}

/**
 * Remembers a posted message, never failing the delivery: a store error only means a later
 * retraction is posted as a new message instead of an edit.
 */
export async function rememberQuietly(
  store: MessageStore | undefined,
  alert: Alert,
  actionIndex: number,
  message: PostedMessage | null,
): Promise<void> {
  if (!store || !message || !remembers(alert)) return;
  await store.put(alert, actionIndex, message).catch(() => {});
}
