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
 * @module
 */
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedTelegram, renderAction } from "../../../lib/alerting/rendered.js";
import type { SecretSource } from "../deliver.js";
import { CS_DELIVERY_HTTP_STATUS } from "../outcome.js";
import type { Channel } from "./channel.js";
import { retryAfterFromJson } from "./discord.js";
import type { HttpSender } from "./http.js";

/** A Telegram action while no bot token is configured; dead-letter it (final: false) and replay once configured. */
export const CS_TELEGRAM_UNCONFIGURED = "CS_TELEGRAM_UNCONFIGURED";

/** The operator's Telegram settings (config `notify.telegramBotToken`, `notify.telegramApiUrl`). */
export interface TelegramConfig {
  /** Bot token `<bot id>:<secret>`; undefined: Telegram actions end with {@link CS_TELEGRAM_UNCONFIGURED}. */
  botToken: string | undefined;
  /** Bot API base URL without trailing slash, default `https://api.telegram.org`. */
  apiUrl: string;
}

/** The Telegram channel over `send`, signing with the account's secret from `secrets` (Telegram ignores the headers). */
export function createTelegramChannel(
  send: HttpSender,
  secrets: SecretSource,
  telegram: TelegramConfig,
  options: MessageOptions = {},
): Channel {
  return {
    types: ["Telegram"],
    async prepare(alert, action) {
      const { body } = renderAction(alert, action, options) as RenderedTelegram;
      if (!telegram.botToken) {
        return { ok: false, attempts: 0, final: false, code: CS_TELEGRAM_UNCONFIGURED, error: "no Telegram bot token is configured" };
      }
      const url = `${telegram.apiUrl}/bot${telegram.botToken}/sendMessage`;
      const secret = await secrets.getOrCreate(alert.accountId);
      return async () => {
        const out = await send("POST", url, secret, alert.id, body, { retryAfterFromBody: retryAfterFromJson });
        if (!out.ok && (out.status === 401 || out.status === 404)) {
          return { ...out, retryable: true, code: CS_DELIVERY_HTTP_STATUS, error: `${out.error} (check CHAINSIFT_TELEGRAM_BOT_TOKEN)` };
        }
        return out;
      };
    },
  };
}
