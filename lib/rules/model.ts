/**
 * Alerting rules as the service contract defines them (`../shared/contract/`, "Alerting rule"
 * and "Rule config"), plus the fields the service adds when it stores one.
 * Validation lives in `lib/rules/validate.ts`; this module holds shapes and enumerations only.
 * @module
 */

/** Entity kinds a rule can target. */
export const TARGET_TYPES = ["Event", "Log", "Transaction", "Call", "Contract", "Token", "Trace", "Method"] as const;
/** One of {@link TARGET_TYPES}. */
export type TargetType = (typeof TARGET_TYPES)[number];

/**
 * Comparison operators (contract "Operators"), plus `In watchlist` (a chainsift extension: `value`
 * is the id of one of the account's watchlists; docs/rules.md "In watchlist").
 */
export const OPERATORS = [
  "Greater",
  "Greater or Equal",
  "Less",
  "Less or Equal",
  "Equals",
  "Equals (ignore case)",
  "Equals any",
  "Equals any (ignore case)",
  "Inspect",
  "In watchlist",
] as const;
/** One of {@link OPERATORS}. */
export type Operator = (typeof OPERATORS)[number];
/** Operators whose value is an array of strings; every other operator takes a string. */
export const ARRAY_OPERATORS: readonly Operator[] = ["Equals any", "Equals any (ignore case)"];
/**
 * Equality operators. At the first and second level they may come without `value` (absent or
 * null): the definition then holds when the attribute has no value (it is missing or null, or an
 * array with no non-null element). See docs/rules.md, "A comparison without value".
 */
export const EQUALITY_OPERATORS: readonly Operator[] = ["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"];
/** Ordering operators: numeric comparisons, which always need a `value`. */
export const ORDERING_OPERATORS: readonly Operator[] = ["Greater", "Greater or Equal", "Less", "Less or Equal"];

/** Third-level definition: no Inspect, all fields required. */
export interface ThirdLevelDefinition {
  name: string;
  operator: Exclude<Operator, "Inspect">;
  value: string | string[];
}

/** Second-level definition (item of a top-level Inspect's operatorParameters). */
export interface SecondLevelDefinition {
  name: string;
  operator: Operator;
  /** Absent or null: allowed for Inspect and, without `useScaledValue`, for the {@link EQUALITY_OPERATORS} (compare with "no value"). */
  value?: string | string[] | null;
  /** Compare `value.scaled` (token units) instead of the raw amount; never matches when decimals are unknown. */
  useScaledValue?: boolean;
  /** Required when operator is Inspect; null otherwise. */
  operatorParameters?: ThirdLevelDefinition[] | null;
}

/** Top-level target definition (targetMap item). */
export interface TargetDefinition {
  /** Attribute of the entity to inspect (see docs/alerting.md for each target type's attributes). */
  name: string;
  operator: Operator;
  /** Absent or null: allowed for Inspect and the {@link EQUALITY_OPERATORS} (compare with "no value"). */
  value?: string | string[] | null;
  /** Required when operator is Inspect; null otherwise. */
  operatorParameters?: SecondLevelDefinition[] | null;
}

/** The contract's alert action kinds. */
export const CONTRACT_ALERT_TYPES = ["Webhook (GET)", "Webhook (POST)", "Email", "Slack"] as const;
/**
 * Alert action kinds: the contract's four, then chainsift's own (`Discord`: a Discord webhook;
 * `Telegram`: a message from the operator's Telegram bot; `PagerDuty` and `Opsgenie`: an incident
 * tool's alert, resolved or closed when a reorg retracts the match; `Teams`: an Adaptive Card in a
 * Microsoft Teams channel; `Kafka`: a record produced to a topic on the user's Kafka cluster). Rules
 * with only the contract's kinds validate and behave exactly as before.
 */
export const ALERT_TYPES = [...CONTRACT_ALERT_TYPES, "Discord", "Telegram", "PagerDuty", "Opsgenie", "Teams", "Kafka"] as const;
/** One of {@link ALERT_TYPES}. */
export type AlertType = (typeof ALERT_TYPES)[number];

/** Payload item one level below a sub-payload: only Field. */
export interface LeafPayloadItem {
  fieldType: "Field";
  fieldName: string;
}
/** Payload item of a sub-payload. */
export interface SubPayloadItem {
  fieldType: "Field" | "Sub Field";
  fieldName: string;
  subPayloads?: LeafPayloadItem[] | null;
}
/** Payload item: names a property of the matched entity sent with the alert. */
export interface PayloadItem {
  fieldType: "Field" | "Sub Field";
  fieldName: string;
  subPayloads?: SubPayloadItem[] | null;
}

/** Parameters by alert type. */
export interface EmailParameters {
  recipients: string[];
  /** Subject template (`{field}` tokens, see docs/alerting-delivery.md "Message templates"); default the standard subject. */
  subject?: string;
  /** Plain-text body template; default the standard layout. */
  template?: string;
}
export interface SlackParameters {
  url: string;
  text: string;
  channel: string;
  username: string;
  /** Message template, after `text`; default the standard message. */
  template?: string;
}
/** Parameters of a `Discord` action (Discord "Execute Webhook"). */
export interface DiscordParameters {
  /** The webhook URL, `https://discord.com/api/webhooks/<id>/<token>` (its path is a secret). */
  url: string;
  /** Overrides the webhook's default name. */
  username?: string;
  /** Message template (Discord markdown); default the standard message. */
  template?: string;
}
/** Parameters of a `Telegram` action (Bot API `sendMessage` from the operator's bot). */
export interface TelegramParameters {
  /** Target chat: a numeric chat id (`-1001234567890`) or a public channel's `@username`. */
  chatId: string;
  /** Topic of a forum supergroup (`message_thread_id`). */
  messageThreadId?: number;
  /** Message template (plain text); default the standard message. */
  template?: string;
}
/** PagerDuty Events API v2 severity of a triggered alert (https://developer.pagerduty.com/docs/send-alert-event). */
export type PagerDutySeverity = "critical" | "error" | "warning" | "info";
/** Parameters of a `PagerDuty` action (Events API v2 `trigger`, then `resolve` on retraction). */
export interface PagerDutyParameters {
  /** The integration (routing) key of a PagerDuty service's Events API v2 integration: 32 letters and digits. A secret. */
  routingKey: string;
  /** `payload.severity` of the triggered alert; default `error`. */
  severity?: PagerDutySeverity;
  /** `payload.summary` template (plain text, at most 1024 characters once filled); default the standard one-line summary. */
  template?: string;
}
/** Opsgenie alert priority (https://docs.opsgenie.com/docs/alert-api#create-alert). */
export type OpsgeniePriority = "P1" | "P2" | "P3" | "P4" | "P5";
/** Parameters of an `Opsgenie` action (Alert API create with `alias`, then close on retraction). */
export interface OpsgenieParameters {
  /** The API key of an Opsgenie API integration (a team's), sent as `Authorization: GenieKey <apiKey>`. A secret. */
  apiKey: string;
  /** The alert's `priority`; default `P3` (Opsgenie's own default). */
  priority?: OpsgeniePriority;
  /** The alert's `message` template (plain text, at most 130 characters once filled); default the standard one-line summary. */
  template?: string;
}
/** Parameters of a `Teams` action (an Adaptive Card posted to a Teams Workflows or incoming webhook). */
export interface TeamsParameters {
  /** The webhook URL (its path and query are a secret). */
  url: string;
  /** Message template (plain text in the card); default the standard message. */
  template?: string;
}
/** The SASL mechanisms of a `Kafka` action (kafkajs: https://kafka.js.org/docs/configuration#sasl). */
export const KAFKA_SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;
/** What a `Kafka` record's key is: the alert's rule id (default) or its matched entity's id. */
export const KAFKA_KEYS = ["ruleId", "entityId"] as const;

/**
 * Parameters of a `Kafka` action: a record per alert produced to `topic` on the user's cluster
 * (docs/alerting.md "Kafka"). The SASL password is a secret: never logged, never in the delivery
 * log, never in a produced record.
 */
export interface KafkaParameters {
  /** Bootstrap servers, `host:port` (1 to 10); every broker the cluster advertises must pass the SSRF rules too. */
  brokers: string[];
  /** The topic records are produced to (Kafka topic name: 1 to 249 of `[A-Za-z0-9._-]`). It must exist. */
  topic: string;
  /** The record key: `ruleId` (default) or `entityId`; a retraction has the key of its `pending` record. */
  key?: (typeof KAFKA_KEYS)[number];
  /**
   * Write the value in Avro instead of the `Webhook (POST)` JSON: the alerts topic's schema
   * (`alertSchema` of topics/schemas.ts), registered in `schemaRegistryUrl` (a Confluent-compatible
   * registry, http or https, no credentials in the URL) under `<topic>-value`; Confluent wire format.
   * `auth`: the registry's HTTP basic authentication (e.g. an API key and secret; the password is a
   * secret like the SASL one).
   */
  avro?: { schemaRegistryUrl: string; auth?: { username: string; password: string } };
  /** Connect with TLS (default false). Certificates are verified against the system's CAs, or `sslCa`. */
  ssl?: boolean;
  /** PEM certificate authority (or authorities) to verify the brokers with, instead of the system's; implies nothing without `ssl`. */
  sslCa?: string;
  /** SASL authentication (PLAIN or SCRAM); use it with `ssl` so that credentials do not travel in clear. */
  sasl?: { mechanism: (typeof KAFKA_SASL_MECHANISMS)[number]; username: string; password: string };
}

export interface WebhookParameters {
  /** `{field}` tokens are replaced by the matched entity's values (URL-encoded). */
  url: string;
}

/**
 * Storm control of an action (h-storm, issue 24 §2; lib/alerting/storm.ts, docs/rules.md "Storm
 * control"): `throttle` — at most `max` messages per `windowSec`-second window, the rest in the
 * window's digest (`false`: no throttle, turning the chat/e-mail default off); `digest` — every
 * alert of a window in one message naming the first `maxEntities` (default 10).
 */
export interface StormControl {
  throttle?: { max: number; windowSec: number } | false;
  digest?: { windowSec: number; maxEntities?: number };
}

/**
 * The parameters of each alert type: the compiler asks for the entry of a new type in
 * {@link ALERT_TYPES} ({@link AlertDefinition} is derived from it).
 */
export interface ActionParametersByType {
  "Webhook (GET)": WebhookParameters;
  "Webhook (POST)": WebhookParameters;
  Email: EmailParameters;
  Slack: SlackParameters;
  Discord: DiscordParameters;
  Telegram: TelegramParameters;
  PagerDuty: PagerDutyParameters;
  Opsgenie: OpsgenieParameters;
  Teams: TeamsParameters;
  Kafka: KafkaParameters;
}

/** Alert definition (alerts item): one member per alert type, its `parameters` those of {@link ActionParametersByType}. */
export type AlertDefinition = {
  [K in AlertType]: { type: K; parameters: ActionParametersByType[K]; payload?: PayloadItem[] | null };
}[AlertType] &
  StormControl;

/** Rule config: what to match and what to do. */
export interface RuleConfig {
  targetType: TargetType;
  targetMap: TargetDefinition[];
  alerts: AlertDefinition[];
}

/** Rule states: `enabled` rules are evaluated; `disabled` rules are kept but never match. */
export const RULE_STATES = ["enabled", "disabled"] as const;
/** One of {@link RULE_STATES}. */
export type RuleState = (typeof RULE_STATES)[number];

/** A rule as sent by a client (POST body). Additional top-level properties are allowed and kept. */
export interface RuleInput {
  name: string;
  maxConfirmationCount: number;
  technology: string;
  blockchain: string;
  network: string;
  config: RuleConfig;
  description?: string | null;
  version?: number;
  state?: RuleState;
  sendPendingAlerts?: boolean;
  /**
   * chainsift's extension (an additional top-level property of the contract's rule): `count`
   * (default; absent or null too) sends `confirmed` after maxConfirmationCount confirmations;
   * `finalized` when the block is at or below the node's `finalized` block (chains without one
   * fall back to the count). docs/rules.md, "Confirm on finality".
   */
  confirmOn?: "count" | "finalized" | null;
  [extra: string]: unknown;
}

/** A stored rule: the input plus identity and bookkeeping. */
export interface Rule extends RuleInput {
  /** UUID v4. */
  id: string;
  /** Owning account id. */
  accountId: string;
  /** Starts at 1, incremented on every change. */
  version: number;
  state: RuleState;
  sendPendingAlerts: boolean;
  description: string | null;
  /** ISO 8601 UTC. */
  createdAt: string;
  updatedAt: string;
}
