/**
 * The `Telegram` channel: Bot API `sendMessage` (https://core.telegram.org/bots/api#sendmessage)
 * from the operator's one bot: `POST <api>/bot<token>/sendMessage` with JSON
 * `{chat_id, text, link_preview_options, message_thread_id?}` (`telegramBody`, rendered by
 * `renderAction`, lib/alerting/rendered.ts, which never sees the token), answered
 * `{"ok": true, "result": <Message>}`. Requests are made as the Bot API describes
 * (https://core.telegram.org/bots/api#making-requests).
 *
 * The bot token is the operator's (`CHAINSIFT_TELEGRAM_BOT_TOKEN`), never a rule's: rules name only
 * the chat, so the token is in no rule, API answer, alert record or delivery log, and it is never
 * logged (errors carry only the API's `description`, the destination is shown as
 * `telegram chat <chatId>`). Without a token, Telegram actions end with
 * {@link CS_TELEGRAM_UNCONFIGURED} and are dead-lettered for a replay once it is set.
 *
 * Answers: 2xx delivered; 429 (flood control) and 5xx retried, waiting `parameters.retry_after`
 * seconds from the JSON body (https://core.telegram.org/bots/api#responseparameters); 401 and 404
 * (the bot token is revoked or wrong: the operator's setting, not the rule's) retried, so the alert
 * is dead-lettered and can be replayed once the token is fixed; other 4xx (`chat not found`, the
 * bot was blocked or removed from the chat) final.
 *
 * Retractions people can see: the `Message` a `pending` alert's `sendMessage` answers (`chat.id`,
 * `message_id`) is remembered (`messages.ts`); the match's `removed` alert then calls
 * `editMessageText` (https://core.telegram.org/bots/api#editmessagetext) with the retraction text.
 * When Telegram cannot find the message (400 `message to edit not found`) or none is remembered,
 * the retraction is sent as a new message; `message is not modified` counts as delivered.
 * @module
 */
import { type MessageOptions, TELEGRAM_TEXT_MAX } from "../../../lib/alerting/render.js";
import { type RenderedTelegram, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText } from "../../../lib/alerting/storm.js";
import type { SecretSource } from "../deliver.js";
import { type MessageStore, type PostedMessage, rememberQuietly, remembers } from "../messages.js";
import { type AttemptOutcome, CS_DELIVERY_HTTP_STATUS } from "../outcome.js";
import type { Channel } from "./channel.js";
import { retryAfterFromJson } from "./discord.js";
import type { HttpSender, SendOutcome } from "./http.js";

/** A Telegram action while no bot token is configured; dead-letter it (final: false) and replay once configured. */
export const CS_TELEGRAM_UNCONFIGURED = "CS_TELEGRAM_UNCONFIGURED";

/** The operator's Telegram settings (config `notify.telegramBotToken`, `notify.telegramApiUrl`). */
export interface TelegramConfig {
  /** Bot token `<bot id>:<secret>`; undefined: Telegram actions end with {@link CS_TELEGRAM_UNCONFIGURED}. */
  botToken: string | undefined;
  /** Bot API base URL without trailing slash, default `https://api.telegram.org`. */
  apiUrl: string;
}

/** The posted message of a `sendMessage` answer (`{"ok": true, "result": {"message_id", "chat": {"id"}}}`), or null. */
function postedOf(out: SendOutcome, at: string): PostedMessage | null {
  try {
    const r = (JSON.parse(out.responseBody ?? "") as { result?: { message_id?: unknown; chat?: { id?: unknown } } }).result;
    const chatId = r?.chat?.id;
    if (!Number.isSafeInteger(r?.message_id) || (typeof chatId !== "number" && typeof chatId !== "string")) return null;
    return { kind: "telegram", chatId, messageId: r!.message_id as number, at };
  } catch {
    return null;
  }
}

/** A revoked or wrong bot token (401, 404) is the operator's to fix: retried, then dead-lettered for a replay. */
function operatorFailure(out: AttemptOutcome): AttemptOutcome {
  if (!out.ok && (out.status === 401 || out.status === 404)) {
    return { ...out, retryable: true, code: CS_DELIVERY_HTTP_STATUS, error: `${out.error} (check CHAINSIFT_TELEGRAM_BOT_TOKEN)` };
  }
  return out;
}

/**
 * The Telegram channel over `send`, signing with the account's secret from `secrets` (Telegram
 * ignores the headers). With `messages`, pending alerts' messages are remembered and retractions
 * edit them.
 */
export function createTelegramChannel(
  send: HttpSender,
  secrets: SecretSource,
  telegram: TelegramConfig,
  options: MessageOptions = {},
  messages?: MessageStore,
): Channel {
  const opts = { retryAfterFromBody: retryAfterFromJson };
  return {
    async prepare(alert, action, actionIndex) {
      const { body } = renderAction(alert, action, options) as RenderedTelegram;
      if (!telegram.botToken) {
        return { ok: false, attempts: 0, final: false, code: CS_TELEGRAM_UNCONFIGURED, error: "no Telegram bot token is configured" };
      }
      const api = `${telegram.apiUrl}/bot${telegram.botToken}`;
      const secret = await secrets.getOrCreate(alert.accountId);
      const keep = !!messages && remembers(alert);
      const post = async (): Promise<AttemptOutcome> => {
        const out = await send("POST", `${api}/sendMessage`, secret, alert.id, body, { ...opts, keepBody: keep });
        if (out.ok && keep) await rememberQuietly(messages, alert, actionIndex, postedOf(out, new Date().toISOString()));
        return operatorFailure(out);
      };
      const posted = alert.status === "removed" && messages ? await messages.get(alert, actionIndex) : null;
      if (posted?.kind !== "telegram") return post;
      const { text, link_preview_options } = JSON.parse(body) as { text: string; link_preview_options: unknown };
      const edit = JSON.stringify({ chat_id: posted.chatId, message_id: posted.messageId, text, link_preview_options });
      return async () => {
        const out = await send("POST", `${api}/editMessageText`, secret, alert.id, edit, opts);
        if (!out.ok && out.status === 400 && /message is not modified/i.test(out.error)) return { ok: true, status: 200 };
        if (!out.ok && out.status === 400 && /message to edit not found/i.test(out.error)) return post();
        return operatorFailure(out);
      };
    },
    async prepareDigest(digest) {
      if (!telegram.botToken) {
        return { ok: false, attempts: 0, final: false, code: CS_TELEGRAM_UNCONFIGURED, error: "no Telegram bot token is configured" };
      }
      const p = digest.action.parameters as { chatId?: unknown; messageThreadId?: unknown };
      const body = JSON.stringify({
        chat_id: String(p.chatId ?? ""),
        text: digestChatText(digest, "plain", TELEGRAM_TEXT_MAX),
        link_preview_options: { is_disabled: true },
        ...(Number.isSafeInteger(p.messageThreadId) ? { message_thread_id: p.messageThreadId } : {}),
      });
      const secret = await secrets.getOrCreate(digest.accountId);
      return async () =>
        operatorFailure(await send("POST", `${telegram.apiUrl}/bot${telegram.botToken}/sendMessage`, secret, digest.id, body, opts));
    },
  };
}
