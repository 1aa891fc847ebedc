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
 * | `PagerDuty` | `POST` of `pagerDutyEvent` (lib/alerting/incident.ts) as JSON to path `/v2/enqueue` of the operator's Events API base URL: `trigger` for pending and confirmed, `resolve` for removed |
 * | `Teams` | `POST` of `parameters.url` as written; body `teamsBody` (lib/alerting/teams.ts, one Adaptive Card) as JSON |
 * | `Opsgenie` | `POST` of `opsgenieRequest` to `/v2/alerts` (create) or `/v2/alerts/<alias>/close?identifierType=alias` (removed) of the operator's Alert API base URL; the API key header is the sender's |
 * | `Kafka` | brokers, topic, record key (`kafkaRecordKey`) and the value: `webhookJson` (format `json`), or the Avro record `kafkaAvroRecord` as JSON (format `avro`, encoded by the sender) |
 *
 * Chat and e-mail messages follow the action's `template` (and Email `subject`) when it has one
 * (`lib/alerting/template.ts`), else the default layout. Signature headers (per-account secrets)
 * and e-mail headers are added by the sender, not here.
 * @module
 */
import { NonRetryableError } from "../errors.js";
import type { AlertDefinition, AlertType } from "../rules/model.js";
import type { Alert } from "./alert.js";
import { CS_ACTION_INVALID, channelOf } from "./channels.js";
import type { MessageOptions } from "./render.js";

export { CS_ACTION_INVALID };

/** A rendered HTTP action (webhooks and chat): every type but those with their own shape below. */
export interface RenderedRequest {
  type: Exclude<AlertType, RenderedEmail["type"] | RenderedTelegram["type"] | RenderedIncident["type"] | RenderedKafka["type"]>;
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

/** A rendered incident-tool action: a request to a path of the operator's API base URL (config `notify.pagerdutyApiUrl`, `notify.opsgenieApiUrl`). */
export interface RenderedIncident {
  type: "PagerDuty" | "Opsgenie";
  method: "POST";
  /** Path and query under the API base URL: `/v2/enqueue`, `/v2/alerts`, `/v2/alerts/<alias>/close?identifierType=alias`. */
  path: string;
  /** The exact JSON text sent as the body. */
  body: string;
}

/** A rendered `Kafka` action: one record on the user's cluster (the sender connects with the action's TLS and SASL settings, never shown here). */
export type RenderedKafka = {
  type: "Kafka";
  /** Bootstrap servers, `host:port`, as written. */
  brokers: string[];
  topic: string;
  /** The record key: the rule id or the entity id (`kafkaRecordKey`, lib/alerting/channels.ts). */
  key: string;
} & (
  | {
      format: "json";
      /** The exact JSON text produced as the value (`webhookJson`, lib/alerting/webhook.ts). */
      value: string;
    }
  | {
      /** Avro with the alerts topic's schema, Confluent wire format (the sender registers the schema and encodes). */
      format: "avro";
      /** The schema registry (redacted as `redactUrl` does). */
      schemaRegistryUrl: string;
      /** The record encoded, as JSON text (`kafkaAvroRecord`, lib/alerting/channels.ts). */
      value: string;
    }
);

/** What one action sends. */
export type RenderedAction = RenderedRequest | RenderedTelegram | RenderedEmail | RenderedIncident | RenderedKafka;

/**
 * Renders one action of an alert (see the module table) with its channel's `render`
 * (lib/alerting/channels.ts).
 * @param alert - the alert; `entity` fills the URL tokens of webhooks.
 * @param action - one of `alert.actions`.
 * @param options - the block-explorer base URLs of the messages' links (default Etherscan for
 *   ethereum mainnet and testnets, `DEFAULT_EXPLORER_URLS` of lib/config/index.ts).
 * @returns what the channel of `action.type` sends.
 * @throws {NonRetryableError} {@link CS_ACTION_INVALID} for a webhook or Slack action without url,
 *   an e-mail action without a valid recipient, a Telegram action without a valid chatId, or an
 *   action type no renderer knows; the `CS_TEMPLATE_*` codes of `renderUrl` (lib/alerting/render.ts) for a URL
 *   template, and `CS_TEMPLATE_UNKNOWN_FIELD` for a message template, that cannot be filled.
 */
export function renderAction(alert: Alert, action: AlertDefinition, options: MessageOptions = {}): RenderedAction {
  const channel = channelOf(action);
  if (!channel) {
    throw new NonRetryableError(CS_ACTION_INVALID, `no renderer for action type ${JSON.stringify((action as { type?: unknown }).type)}`);
  }
  return channel.render(alert, action, options);
}
