/**
 * One descriptor per alert channel (issue 36 §1): everything the rest of the code asks about an
 * action type — what its parameters are, what it sends, where it sends it (the destination key of
 * health and concurrency, and the redacted text of the delivery log), whether it is throttled by
 * default, whether a retraction changes its earlier message, which operator settings it needs.
 * The lists and `switch`es that used to name the types (`renderAction`, `destinationKey`,
 * `describeDestination`, storm control's default throttle) read this table, and
 * `satisfies Record<AlertType, ChannelDescriptor>` makes the compiler ask for every part of a new type.
 *
 * A new channel: its type in `ALERT_TYPES` and its parameters in `ActionParametersByType`
 * (lib/rules/model.ts), the schema of its parameters in `ACTION_PARAMETERS_SCHEMAS`
 * (lib/rules/schema.ts), its descriptor here, and its sender in `pipeline/notify/channels/`
 * registered in `createDeliverer` (docs/architecture.md, "A new notification channel"). The
 * lib/rules tables stay there: this module imports lib/rules/schema.ts (the parameter schemas, the
 * Telegram chat pattern), so the rule schema importing this one would make an import cycle. And
 * lib/alerting/deliveries.ts and destinations.ts never import it: the web console imports their
 * types, so they stay free of Node modules, which this module reaches through the renderers.
 * @module
 */
import { createHash } from "node:crypto";
import type { TObject } from "typebox";
import type { Config } from "../config/index.js";
import { isEmailAddress } from "../email.js";
import { NonRetryableError } from "../errors.js";
import type { AlertDefinition, AlertType } from "../rules/model.js";
import {
  ACTION_PARAMETERS_SCHEMAS,
  OPSGENIE_API_KEY_PATTERN,
  OPSGENIE_PRIORITIES,
  PAGERDUTY_ROUTING_KEY_PATTERN,
  PAGERDUTY_SEVERITIES,
  TELEGRAM_CHAT_PATTERN,
} from "../rules/schema.js";
import type { Alert } from "./alert.js";
import { type AlertAvro, alertToAvro } from "./avro.js";
import { opsgenieRequest, pagerDutyEvent } from "./incident.js";
import { discordBody, type EmailTemplates, emailMessage, type MessageOptions, renderUrl, slackBody, telegramBody } from "./render.js";
import type { RenderedAction, RenderedKafka } from "./rendered.js";
import { teamsBody } from "./teams.js";
import { webhookJson } from "./webhook.js";

/** An action that can never be delivered as written (no url, no valid recipient, unknown type). Non-retryable. */
export const CS_ACTION_INVALID = "CS_ACTION_INVALID";

/** What an alert channel is, for every part of chainsift that handles its actions. */
export interface ChannelDescriptor {
  /** One line saying what the action does (docs, OpenAPI descriptions). */
  readonly description: string;
  /** The TypeBox schema of the action's `parameters` (the entry of `ACTION_PARAMETERS_SCHEMAS`, lib/rules/schema.ts). */
  readonly parameters: TObject;
  /**
   * A chat or e-mail channel read by people: throttled by default at `DEFAULT_CHAT_THROTTLE`
   * (lib/alerting/storm.ts) unless the action says otherwise. Webhooks (false) get every alert.
   */
  readonly chat: boolean;
  /** Whether a storm-control digest can be sent through it (false: storm control never applies, e.g. `Webhook (GET)` has no body). */
  readonly digests: boolean;
  /**
   * Whether a `removed` alert changes the message its `pending` alert posted (edits it, names it in
   * a follow-up, or answers it in its thread): the sender then gets the posted-message store
   * (pipeline/notify/messages.ts). False: a retraction is a new message or request.
   */
  readonly editsOnRetraction: boolean;
  /**
   * The operator's settings the sender needs (keys of `config.notify`, lib/config/index.ts): bot tokens,
   * API base URLs, the SMTP server. Without them the action ends with the sender's `CS_…_UNCONFIGURED`
   * code and is dead-lettered for a replay. Empty: the rule's parameters are enough.
   */
  readonly credentials: readonly (keyof Config["notify"])[];
  /**
   * The destination an action delivers to, for health and concurrency: a URL origin
   * (`scheme://host:port`), a fixed key for an operator's service (`smtp`, `telegram`), or
   * `invalid` when the action names none that parses.
   */
  destinationKey(parameters: Record<string, unknown>): string;
  /**
   * The destination as the delivery log shows it, redacted (no credentials, query or secret path;
   * never an operator's token). `url`: the webhook URL rendered for the alert, when known.
   */
  describeDestination(parameters: Record<string, unknown>, url?: string): string;
  /**
   * What the action sends for an alert (pure; backtests show it, the sender sends it).
   * @throws {NonRetryableError} {@link CS_ACTION_INVALID} when the action can never be delivered as
   *   written; the `CS_TEMPLATE_*` codes of lib/alerting/render.ts for a template that cannot be filled.
   */
  render(alert: Alert, action: AlertDefinition, options: MessageOptions): RenderedAction;
}

function invalid(message: string): NonRetryableError {
  return new NonRetryableError(CS_ACTION_INVALID, message);
}

/** The optional string parameters `names` of an action that are strings (templates, username). */
function strings<K extends string>(parameters: unknown, names: readonly K[]): Partial<Record<K, string>> {
  const p = (parameters ?? {}) as Record<string, unknown>;
  return Object.fromEntries(names.filter((n) => typeof p[n] === "string").map((n) => [n, p[n]])) as Partial<Record<K, string>>;
}

/**
 * The origin (`scheme://host:port`, lower-case host, default port omitted as WHATWG URL does) of a
 * `url` parameter, or `invalid` (the destination key of the URL channels, and of an action of unknown type). `{field}` tokens are allowed only in the path and query, so the
 * origin of the template is the origin of every URL rendered from it.
 */
export function urlOrigin(parameters: Record<string, unknown>): string {
  const url = parameters.url;
  if (typeof url !== "string") return "invalid";
  try {
    // Tokens replaced by a letter so that `https://h/{a}` parses; a token in the host would change
    // the origin per alert, which rule validation and renderUrl refuse.
    const origin = new URL(url.replace(/\{[^{}]*\}/g, "x")).origin;
    return origin === "null" ? "invalid" : origin;
  } catch {
    return "invalid";
  }
}

/**
 * A URL made safe to show in logs: credentials removed, the query replaced by `?…` and the fragment
 * dropped (query strings often carry API keys). Unparseable input gives `(invalid URL)`.
 * @param keepPath false to also replace the path by `/…` (chat webhook URLs are secrets in their path).
 */
export function redactUrl(url: string, keepPath = true): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(invalid URL)";
  }
  const path = keepPath ? u.pathname : u.pathname === "/" ? "/" : "/…";
  return `${u.protocol}//${u.host}${path}${u.search ? "?…" : ""}`;
}

/** A webhook's destination for the log: the (rendered) URL, redacted. */
function describeWebhook(p: Record<string, unknown>, url?: string): string {
  return typeof p.url === "string" ? redactUrl(url ?? p.url) : "(no url)";
}

/** A chat webhook's destination for the log: scheme, host and `/…` (the path of a chat webhook URL is its secret). */
function describeChatUrl(p: Record<string, unknown>): string {
  return typeof p.url === "string" ? redactUrl(p.url, false) : "(no url)";
}

/** Renders a `Webhook (GET)` or `Webhook (POST)` action: the URL with its tokens filled; POST carries `webhookJson`. */
function renderWebhook(alert: Alert, action: AlertDefinition): RenderedAction {
  const template = (action.parameters as { url?: unknown }).url;
  if (typeof template !== "string" || template === "") throw invalid(`${action.type} action has no url`);
  const url = renderUrl(template, alert.entity ?? {});
  if (action.type === "Webhook (GET)") return { type: action.type, method: "GET", url };
  return { type: "Webhook (POST)", method: "POST", url, body: webhookJson(alert) };
}

/** The webhook descriptors differ only in their method and digests. */
const webhook = {
  parameters: ACTION_PARAMETERS_SCHEMAS["Webhook (POST)"],
  chat: false,
  editsOnRetraction: false,
  credentials: [],
  destinationKey: urlOrigin,
  describeDestination: describeWebhook,
  render: renderWebhook,
} as const;

/** What the chat and e-mail channels share: read by people (throttled by default), digests, retractions change the message. */
const chatChannel = { chat: true, digests: true, editsOnRetraction: true } as const;

/** A Telegram chat id or `@username`, as the rule schema accepts it. */
const TELEGRAM_CHAT = new RegExp(TELEGRAM_CHAT_PATTERN);

/** A PagerDuty routing key as the rule schema accepts it. */
const PAGERDUTY_ROUTING_KEY = new RegExp(PAGERDUTY_ROUTING_KEY_PATTERN);
/** An Opsgenie API key as the rule schema accepts it. */
const OPSGENIE_API_KEY = new RegExp(OPSGENIE_API_KEY_PATTERN);

/**
 * A secret parameter (routing key, API key) shown in the log as a fingerprint: the first 8 hex
 * digits of its SHA-256, enough to tell two destinations apart and useless to an attacker.
 */
function fingerprint(secret: unknown): string {
  return typeof secret === "string" ? createHash("sha256").update(secret).digest("hex").slice(0, 8) : "none";
}

/** The optional enumerated parameter `value` when it is one of `allowed`. */
function oneOf<T extends string>(value: unknown, allowed: readonly T[]): { value?: T } {
  return typeof value === "string" && (allowed as readonly string[]).includes(value) ? { value: value as T } : {};
}

/**
 * What the incident tools share: not chat (every alert is sent; the tool groups them itself),
 * digests when the action opts into storm control, and no posted-message store: a retraction
 * resolves or closes the incident by its key (`incidentKey`, lib/alerting/incident.ts), which
 * the alert itself gives.
 */
const incidentChannel = { chat: false, digests: true, editsOnRetraction: false } as const;
/** The parameters of a `Kafka` action that say where it produces: brokers, topic and the client's security settings. */
interface KafkaTarget {
  brokers: string[];
  topic: string;
  ssl: boolean;
  sasl?: { mechanism: string; username: string; password: string };
}

/** A Kafka action's brokers (strings, as written) or an empty list. */
function kafkaBrokers(p: Record<string, unknown>): string[] {
  return Array.isArray(p.brokers) ? p.brokers.filter((b): b is string => typeof b === "string") : [];
}

/**
 * The record key of a `Kafka` action for an alert: the rule id (`key` absent or `ruleId`) or the
 * matched entity's id (`entityId`). Every status of a match (`pending`, `confirmed`, `removed`) has
 * the same rule and entity, so a retraction has its `pending` record's key (and partition).
 */
export function kafkaRecordKey(alert: Pick<Alert, "ruleId" | "entityId">, parameters: Record<string, unknown>): string {
  return parameters.key === "entityId" ? alert.entityId : alert.ruleId;
}

/**
 * A Kafka action's cluster and topic, checked: at least one `host:port` broker, a topic, and a
 * complete `sasl` when present.
 * @throws {NonRetryableError} {@link CS_ACTION_INVALID} otherwise.
 */
export function kafkaTarget(parameters: Record<string, unknown>): KafkaTarget {
  const brokers = kafkaBrokers(parameters);
  if (brokers.length === 0 || brokers.some((b) => !/^.+:\d{1,5}$/.test(b))) throw invalid("Kafka action needs brokers as host:port");
  if (typeof parameters.topic !== "string" || parameters.topic === "") throw invalid("Kafka action has no topic");
  const sasl = parameters.sasl as { mechanism?: unknown; username?: unknown; password?: unknown } | undefined;
  if (sasl !== undefined) {
    const { mechanism, username, password } = sasl ?? {};
    if (typeof mechanism !== "string" || typeof username !== "string" || typeof password !== "string") {
      throw invalid("Kafka action's sasl needs a mechanism, username and password");
    }
    return { brokers, topic: parameters.topic, ssl: parameters.ssl === true, sasl: { mechanism, username, password } };
  }
  return { brokers, topic: parameters.topic, ssl: parameters.ssl === true };
}

/**
 * The Avro record a `Kafka` action with `avro` produces: the alert's record on the alerts
 * topic (`alertToAvro`, lib/alerting/avro.ts; schema `alertSchema` of topics/schemas.ts) with
 * `actionsJson` `[]` — the rule's actions hold credentials (this action's SASL password among them)
 * and never leave chainsift.
 */
export function kafkaAvroRecord(alert: Alert): AlertAvro {
  return alertToAvro({ ...alert, actions: [] });
}

/**
 * Renders a `Kafka` action: the topic, the key and the value — the `Webhook (POST)` body (`json`), or
 * the JSON text of {@link kafkaAvroRecord} (with `avro`: the sender encodes it with the registered schema).
 */
function renderKafka(alert: Alert, action: AlertDefinition): RenderedKafka {
  const p = action.parameters as unknown as Record<string, unknown>;
  const { brokers, topic } = kafkaTarget(p);
  const key = kafkaRecordKey(alert, p);
  if (p.avro !== undefined) {
    const registry = (p.avro as { schemaRegistryUrl?: unknown } | null)?.schemaRegistryUrl;
    if (typeof registry !== "string") throw invalid("Kafka action's avro has no schemaRegistryUrl");
    const value = JSON.stringify(kafkaAvroRecord(alert));
    return { type: "Kafka", brokers, topic, key, format: "avro", schemaRegistryUrl: redactUrl(registry), value };
  }
  return { type: "Kafka", brokers, topic, key, format: "json", value: webhookJson(alert) };
}

/** Every alert channel, by action type (the order of `ALERT_TYPES`, lib/rules/model.ts). */
export const CHANNELS = {
  "Webhook (GET)": {
    ...webhook,
    description: "a GET of the action's URL with its {field} tokens filled from the matched entity; no body",
    parameters: ACTION_PARAMETERS_SCHEMAS["Webhook (GET)"],
    digests: false,
  },
  "Webhook (POST)": {
    ...webhook,
    description: "a POST of the alert as JSON to the action's URL with its {field} tokens filled",
    digests: true,
  },
  Email: {
    description: "one e-mail to the action's recipients through the operator's SMTP server",
    parameters: ACTION_PARAMETERS_SCHEMAS.Email,
    ...chatChannel,
    credentials: ["smtpUrl", "mailFrom"],
    destinationKey: () => "smtp",
    describeDestination(p) {
      const n = Array.isArray(p.recipients) ? p.recipients.length : 0;
      return `${n} recipient${n === 1 ? "" : "s"}`;
    },
    render(alert, action, options) {
      const r = (action.parameters as { recipients?: unknown }).recipients;
      if (!Array.isArray(r) || r.length === 0 || !r.every((x) => typeof x === "string" && isEmailAddress(x.trim()))) {
        throw invalid("Email action needs a non-empty list of e-mail addresses in recipients");
      }
      const recipients = r.map((x: string) => x.trim());
      const templates: EmailTemplates = { recipients, ...strings(action.parameters, ["subject", "template"]) };
      return { type: "Email", recipients, ...emailMessage(alert, templates, options) };
    },
  },
  Slack: {
    description: "a Slack incoming-webhook message, or chat.postMessage with the operator's bot token",
    parameters: ACTION_PARAMETERS_SCHEMAS.Slack,
    ...chatChannel,
    credentials: ["slackBotToken", "slackApiUrl"],
    destinationKey: urlOrigin,
    describeDestination: describeChatUrl,
    render(alert, action, options) {
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
    },
  },
  Discord: {
    description: "a Discord webhook message (Execute Webhook)",
    parameters: ACTION_PARAMETERS_SCHEMAS.Discord,
    ...chatChannel,
    credentials: [],
    destinationKey: urlOrigin,
    describeDestination: describeChatUrl,
    render(alert, action, options) {
      const url = (action.parameters as { url?: unknown }).url;
      if (typeof url !== "string" || url === "") throw invalid("Discord action has no url");
      const body = discordBody(alert, strings(action.parameters, ["template", "username"]), options);
      return { type: "Discord", method: "POST", url, body: JSON.stringify(body) };
    },
  },
  Telegram: {
    description: "a message from the operator's Telegram bot to the action's chat (Bot API sendMessage)",
    parameters: ACTION_PARAMETERS_SCHEMAS.Telegram,
    ...chatChannel,
    credentials: ["telegramBotToken", "telegramApiUrl"],
    // The operator's one bot: Telegram's flood limits are per bot.
    destinationKey: () => "telegram",
    // The bot token is the operator's and never shown.
    describeDestination: (p) => (typeof p.chatId === "string" ? `telegram chat ${p.chatId}` : "(no chat)"),
    render(alert, action, options) {
      const p = action.parameters as { chatId?: unknown; messageThreadId?: unknown };
      if (typeof p.chatId !== "string" || !TELEGRAM_CHAT.test(p.chatId))
        throw invalid("Telegram action needs a chatId: a chat id or @username");
      const thread = Number.isSafeInteger(p.messageThreadId) ? { messageThreadId: p.messageThreadId as number } : {};
      const body = telegramBody(alert, { chatId: p.chatId, ...strings(action.parameters, ["template"]), ...thread }, options);
      return { type: "Telegram", method: "POST", chatId: p.chatId, body: JSON.stringify(body) };
    },
  },
  PagerDuty: {
    description:
      "a PagerDuty Events API v2 trigger per pending or confirmed alert, deduplicated per match, resolved when a reorg retracts the match",
    parameters: ACTION_PARAMETERS_SCHEMAS.PagerDuty,
    ...incidentChannel,
    credentials: ["pagerdutyApiUrl"],
    // The operator's one Events API: its rate limits are per routing key, its health one service's.
    destinationKey: () => "pagerduty",
    // The routing key is a secret: only its fingerprint is shown.
    describeDestination: (p) => `pagerduty routing key #${fingerprint(p.routingKey)}`,
    render(alert, action, options) {
      const p = action.parameters as { routingKey?: unknown; severity?: unknown };
      if (typeof p.routingKey !== "string" || !PAGERDUTY_ROUTING_KEY.test(p.routingKey))
        throw invalid("PagerDuty action needs a routingKey: the 32-character integration key of an Events API v2 integration");
      const severity = oneOf(p.severity, PAGERDUTY_SEVERITIES).value;
      const params = { routingKey: p.routingKey, ...(severity ? { severity } : {}), ...strings(action.parameters, ["template"]) };
      return { type: "PagerDuty", method: "POST", path: "/v2/enqueue", body: JSON.stringify(pagerDutyEvent(alert, params, options)) };
    },
  },
  Opsgenie: {
    description: "an Opsgenie alert per match (created with an alias, deduplicated by it), closed when a reorg retracts the match",
    parameters: ACTION_PARAMETERS_SCHEMAS.Opsgenie,
    ...incidentChannel,
    credentials: ["opsgenieApiUrl"],
    destinationKey: () => "opsgenie",
    // The API key is a secret: only its fingerprint is shown.
    describeDestination: (p) => `opsgenie api key #${fingerprint(p.apiKey)}`,
    render(alert, action, options) {
      const p = action.parameters as { apiKey?: unknown; priority?: unknown };
      if (typeof p.apiKey !== "string" || !OPSGENIE_API_KEY.test(p.apiKey))
        throw invalid("Opsgenie action needs an apiKey: the key of an Opsgenie API integration");
      const priority = oneOf(p.priority, OPSGENIE_PRIORITIES).value;
      const req = opsgenieRequest(alert, { ...(priority ? { priority } : {}), ...strings(action.parameters, ["template"]) }, options);
      return { type: "Opsgenie", method: "POST", path: req.path, body: JSON.stringify(req.body) };
    },
  },
  Teams: {
    description:
      "an Adaptive Card in a Microsoft Teams channel through a Workflows (or incoming) webhook; a retraction is a follow-up card",
    parameters: ACTION_PARAMETERS_SCHEMAS.Teams,
    ...chatChannel,
    // A webhook cannot edit its card: the retraction card names what it retracts from the alert alone.
    editsOnRetraction: false,
    credentials: [],
    destinationKey: urlOrigin,
    describeDestination: describeChatUrl,
    render(alert, action, options) {
      const url = (action.parameters as { url?: unknown }).url;
      if (typeof url !== "string" || url === "") throw invalid("Teams action has no url");
      return {
        type: "Teams",
        method: "POST",
        url,
        body: JSON.stringify(teamsBody(alert, strings(action.parameters, ["template"]), options)),
      };
    },
  },
  Kafka: {
    description:
      "a record produced to a topic on the user's Kafka cluster (idempotent producer; key the rule or entity id; the webhook JSON or Avro as value)",
    parameters: ACTION_PARAMETERS_SCHEMAS.Kafka,
    // A data stream: every alert, no default throttle; a digest (when asked for) is a record too.
    chat: false,
    digests: true,
    // A retraction is a new `removed` record with the same key.
    editsOnRetraction: false,
    credentials: [],
    // One cluster: its brokers, as written, sorted (the SASL user and TLS do not change the cluster).
    destinationKey: (p) => {
      const brokers = kafkaBrokers(p);
      return brokers.length === 0
        ? "invalid"
        : `kafka://${[...brokers]
            .map((b) => b.toLowerCase())
            .sort()
            .join(",")}`;
    },
    // Brokers and topic; never the SASL username or password.
    describeDestination(p) {
      const brokers = kafkaBrokers(p);
      if (brokers.length === 0 || typeof p.topic !== "string") return "(no brokers or topic)";
      return `kafka topic ${p.topic} at ${brokers.join(",")}`;
    },
    render: renderKafka,
  },
} as const satisfies Record<AlertType, ChannelDescriptor>;

/** The descriptor of an action's type, or undefined for a type no channel knows (a stored rule from a newer version, a bad record). */
export function channelOf(action: { type?: unknown } | undefined): ChannelDescriptor | undefined {
  const type = action?.type;
  return typeof type === "string" && Object.hasOwn(CHANNELS, type) ? CHANNELS[type as AlertType] : undefined;
}

/** The parameters of an action as a plain record (absent: empty). */
export function parametersOf(action: { parameters?: unknown } | undefined): Record<string, unknown> {
  const p = action?.parameters;
  return typeof p === "object" && p !== null ? (p as Record<string, unknown>) : {};
}

/**
 * The destination an action delivers to, for health and concurrency: its channel's
 * `destinationKey` (lib/alerting/channels.ts) — the origin (`scheme://host:port`, lower-case host,
 * default port omitted as WHATWG URL does) of a webhook or chat URL, `smtp` for e-mail (the
 * operator's one SMTP server), `telegram` for Telegram (the operator's one bot) —, and `invalid`
 * when the URL does not parse (such an action fails for good on its first attempt).
 */
export function destinationKey(action: AlertDefinition | undefined): string {
  return (channelOf(action)?.destinationKey ?? urlOrigin)(parametersOf(action));
}

/**
 * The redacted destination of an action for the log, as its channel describes it
 * (`describeDestination` of lib/alerting/channels.ts): webhooks → the URL, rendered from `entity`
 * when given (the template when it cannot be rendered), per {@link redactUrl}; Slack and Discord →
 * scheme, host and `/…` (the path of a chat webhook URL is its secret); Telegram →
 * `telegram chat <chatId>` (the bot token is the operator's and never shown); Email →
 * `n recipient(s)`; an unknown type → `(unknown action type)`.
 * @param entity the matched entity whose values fill a webhook URL's `{field}` tokens.
 */
export function describeDestination(action: AlertDefinition, entity?: Record<string, unknown>): string {
  const channel = channelOf(action);
  if (!channel) return "(unknown action type)";
  const p = parametersOf(action);
  let url: string | undefined;
  if (entity && typeof p.url === "string") {
    try {
      url = renderUrl(p.url, entity);
    } catch {
      // keep the template
    }
  }
  return channel.describeDestination(p, url);
}
