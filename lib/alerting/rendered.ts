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
 * | `Email` | recipients (trimmed), subject, text and HTML of `emailMessage` |
 *
 * Signature headers (per-account secrets) and e-mail headers are added by the sender, not here.
 * @module
 */
import { isEmailAddress } from "../email.js";
import { NonRetryableError } from "../errors.js";
import type { AlertDefinition } from "../rules/model.js";
import type { Alert } from "./alert.js";
import { emailMessage, renderUrl, slackBody } from "./render.js";
import { webhookJson } from "./webhook.js";

/** An action that can never be delivered as written (no url, no valid recipient, unknown type). Non-retryable. */
export const CS_ACTION_INVALID = "CS_ACTION_INVALID";

/** A rendered HTTP action (webhooks and chat). */
export interface RenderedRequest {
  type: "Webhook (GET)" | "Webhook (POST)" | "Slack";
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

/** What one action sends. */
export type RenderedAction = RenderedRequest | RenderedEmail;

function invalid(message: string): NonRetryableError {
  return new NonRetryableError(CS_ACTION_INVALID, message);
}

/**
 * Renders one action of an alert (see the module table).
 * @param alert - the alert; `entity` fills the URL tokens of webhooks.
 * @param action - one of `alert.actions`.
 * @returns what the channel of `action.type` sends.
 * @throws {NonRetryableError} {@link CS_ACTION_INVALID} for a webhook or Slack action without url,
 *   an e-mail action without a valid recipient, or an action type no renderer knows; the
 *   `CS_TEMPLATE_*` codes of {@link renderUrl} for a URL template that cannot be filled.
 */
export function renderAction(alert: Alert, action: AlertDefinition): RenderedAction {
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
      const params = { url: p.url, text: String(p.text ?? ""), channel: String(p.channel ?? ""), username: String(p.username ?? "") };
      return { type: "Slack", method: "POST", url: p.url, body: JSON.stringify(slackBody(alert, params)) };
    }
    case "Email": {
      const r = (action.parameters as { recipients?: unknown }).recipients;
      if (!Array.isArray(r) || r.length === 0 || !r.every((x) => typeof x === "string" && isEmailAddress(x.trim()))) {
        throw invalid("Email action needs a non-empty list of e-mail addresses in recipients");
      }
      const recipients = r.map((x: string) => x.trim());
      return { type: "Email", recipients, ...emailMessage(alert, { recipients }) };
    }
    default:
      throw invalid(`no renderer for action type ${JSON.stringify((action as { type?: unknown }).type)}`);
  }
}
