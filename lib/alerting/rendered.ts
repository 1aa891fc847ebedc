/**
 * What one alert action sends, rendered (pure): the request of a webhook or chat action, the
 * message of an e-mail action. The notify stage's channels (`pipeline/notify/channels/`) send
 * exactly this, and rule backtests (`lib/match/backtest.ts`) show it without sending, so a
 * backtest's rendering is the delivery's.
 *
 * | action type | rendered |
 * |---|---|
 * | `Webhook (GET)` | `GET` of `parameters.url` with its `{field}` tokens filled ({@link renderUrl}); no body |
 * | `Webhook (POST)` | `POST` of that URL; body `webhookJson(alert)` (lib/alerting/webhook.ts) |
 * | `Slack` | `POST` of `parameters.url` as written (chat URLs are not templated); body `slackBody` as JSON |
 * | `Discord` | `POST` of `parameters.url` as written; body `discordBody` as JSON (Discord "Execute Webhook") |
 * | `Telegram` | the chat and the `sendMessage` body `telegramBody` as JSON; the URL (`<api>/bot<token>/sendMessage`) is the sender's, so the operator's bot token is never part of a rendering |
 * | `Email` | recipients (trimmed), subject, text and HTML of `emailMessage` |
 *
 * Chat and e-mail messages follow the action's `template` (and Email `subject`) when it has one
 * (`lib/alerting/template.ts`), else the default layout. Signature headers (per-account secrets)
 * and e-mail headers are added by the sender, not here.
 * @module
 */
import { isEmailAddress } from "../email.js";
import { NonRetryableError } from "../errors.js";
import type { AlertDefinition } from "../rules/model.js";
import { TELEGRAM_CHAT_PATTERN } from "../rules/schema.js";
import type { Alert } from "./alert.js";
import { discordBody, type EmailTemplates, emailMessage, type MessageOptions, renderUrl, slackBody, telegramBody } from "./render.js";
import { webhookJson } from "./webhook.js";

/** An action that can never be delivered as written (no url, no valid recipient, unknown type). Non-retryable. */
export const CS_ACTION_INVALID = "CS_ACTION_INVALID";

/** A rendered HTTP action (webhooks and chat). */
export interface RenderedRequest {
  type: "Webhook (GET)" | "Webhook (POST)" | "Slack" | "Discord";
  method: "GET" | "POST";
  /** The URL called (templated for webhooks). */
  url: string;
  /** The exact JSON text sent as the body; absent for GET. */
  body?: string;
}

/** A rendered e-mail action. */
export interface RenderedEmail {
  type: "Email";
  /** The recipients, trimmed. */
  recipients: string[];
  subject: string;
  text: string;
  html: string;
}

/** A rendered Telegram action: a Bot API `sendMessage` from the operator's bot (the sender adds the URL). */
export interface RenderedTelegram {
  type: "Telegram";
  method: "POST";
  /** `parameters.chatId`. */
  chatId: string;
  /** The exact JSON text sent as the body (`telegramBody`). */
  body: string;
}

/** What one action sends. */
export type RenderedAction = RenderedRequest | RenderedTelegram | RenderedEmail;

/** A Telegram chat id or `@username`, as the rule schema accepts it. */
const TELEGRAM_CHAT = new RegExp(TELEGRAM_CHAT_PATTERN);

/** The optional string parameters `names` of an action that are strings (templates, username). */
function strings<K extends string>(parameters: unknown, names: readonly K[]): Partial<Record<K, string>> {
  const p = (parameters ?? {}) as Record<string, unknown>;
  return Object.fromEntries(names.filter((n) => typeof p[n] === "string").map((n) => [n, p[n]])) as Partial<Record<K, string>>;
}

function invalid(message: string): NonRetryableError {
  return new NonRetryableError(CS_ACTION_INVALID, message);
}

/**
 * Renders one action of an alert (see the module table).
 * @param alert - the alert; `entity` fills the URL tokens of webhooks.
 * @param action - one of `alert.actions`.
 * @param options - the block-explorer base URLs of the messages' links (default Etherscan for
 *   ethereum mainnet and testnets, `DEFAULT_EXPLORER_URLS` of lib/config.ts).
 * @returns what the channel of `action.type` sends.
 * @throws {NonRetryableError} {@link CS_ACTION_INVALID} for a webhook or Slack action without url,
 *   an e-mail action without a valid recipient, a Telegram action without a valid chatId, or an
 *   action type no renderer knows; the `CS_TEMPLATE_*` codes of {@link renderUrl} for a URL
 *   template, and `CS_TEMPLATE_UNKNOWN_FIELD` for a message template, that cannot be filled.
 */
export function renderAction(alert: Alert, action: AlertDefinition, options: MessageOptions = {}): RenderedAction {
  switch (action.type) {
    case "Webhook (GET)":
    case "Webhook (POST)": {
      const template = (action.parameters as { url?: unknown }).url;
      if (typeof template !== "string" || template === "") throw invalid(`${action.type} action has no url`);
      const url = renderUrl(template, alert.entity ?? {});
      if (action.type === "Webhook (GET)") return { type: action.type, method: "GET", url };
      return { type: action.type, method: "POST", url, body: webhookJson(alert) };
    }
    case "Slack": {
      const p = action.parameters as { url?: unknown; text?: unknown; channel?: unknown; username?: unknown };
      if (typeof p.url !== "string" || p.url === "") throw invalid("Slack action has no url");
      const params = {
        url: p.url,
        text: String(p.text ?? ""),
        channel: String(p.channel ?? ""),
        username: String(p.username ?? ""),
        ...strings(action.parameters, ["template"]),
      };
      return { type: "Slack", method: "POST", url: p.url, body: JSON.stringify(slackBody(alert, params, options)) };
    }
    case "Discord": {
      const url = (action.parameters as { url?: unknown }).url;
      if (typeof url !== "string" || url === "") throw invalid("Discord action has no url");
      const body = discordBody(alert, strings(action.parameters, ["template", "username"]), options);
      return { type: "Discord", method: "POST", url, body: JSON.stringify(body) };
    }
    case "Telegram": {
      const p = action.parameters as { chatId?: unknown; messageThreadId?: unknown };
      if (typeof p.chatId !== "string" || !TELEGRAM_CHAT.test(p.chatId))
        throw invalid("Telegram action needs a chatId: a chat id or @username");
      const thread = Number.isSafeInteger(p.messageThreadId) ? { messageThreadId: p.messageThreadId as number } : {};
      const body = telegramBody(alert, { chatId: p.chatId, ...strings(action.parameters, ["template"]), ...thread }, options);
      return { type: "Telegram", method: "POST", chatId: p.chatId, body: JSON.stringify(body) };
    }
    case "Email": {
      const r = (action.parameters as { recipients?: unknown }).recipients;
      if (!Array.isArray(r) || r.length === 0 || !r.every((x) => typeof x === "string" && isEmailAddress(x.trim()))) {
        throw invalid("Email action needs a non-empty list of e-mail addresses in recipients");
      }
      const recipients = r.map((x: string) => x.trim());
      const templates: EmailTemplates = { recipients, ...strings(action.parameters, ["subject", "template"]) };
      return { type: "Email", recipients, ...emailMessage(alert, templates, options) };
    }
    default:
      throw invalid(`no renderer for action type ${JSON.stringify((action as { type?: unknown }).type)}`);
  }
}
