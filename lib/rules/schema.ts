/**
 * The alerting-rule schema: size limits, the URL grammar and the TypeBox schemas of a rule body
 * (POST and PUT), plain JSON Schema that the API publishes in its OpenAPI document and that
 * lib/rules/validate.ts checks bodies against. Conditional rules are written as unions of mutually
 * exclusive variants (`anyOf`), so the document needs no `if`/`then`; the definition schemas of the
 * three nesting levels come from one function ({@link definitionSchema}), and so do the payload
 * item schemas of the three levels ({@link payloadItemSchema}).
 *
 * {@link ruleSchemasFor} builds the schemas of one deployment (chain fields as enumerations). What
 * JSON Schema cannot express travels as annotations (`x-chainsift-*`): the count and size of the
 * additional top-level properties and the body size. See `docs/rules.md` for the rules in prose.
 * @module
 */
import { type Static, type TObject, type TSchema, Type } from "typebox";
import type { ChainId } from "../config/index.js";
import { EMAIL_PATTERN } from "../email.js";
import { component } from "../validation/component.js";
import { HTTP_URL_PATTERN, IPV4, IPV6, REG_NAME, RULE_FIELDS, RULE_LIMITS } from "./limits.js";
import {
  type AlertType,
  ARRAY_OPERATORS,
  EQUALITY_OPERATORS,
  KAFKA_KEYS,
  KAFKA_SASL_MECHANISMS,
  OPERATORS,
  type Operator,
  RULE_STATES,
  TARGET_TYPES,
} from "./model.js";

/** E-mail addresses accepted as Email recipients: the one syntax of `lib/email.ts`. */
export { EMAIL_PATTERN, HTTP_URL_PATTERN, RULE_FIELDS, RULE_LIMITS };

const SCALAR_OPERATORS = OPERATORS.filter((o) => o !== "Inspect" && !ARRAY_OPERATORS.includes(o)) as Exclude<
  Operator,
  "Inspect" | "Equals any" | "Equals any (ignore case)"
>[];
const ARRAY_OPERATOR_LIST = ["Equals any", "Equals any (ignore case)"] as const;
const EQUALITY_OPERATOR_LIST = EQUALITY_OPERATORS as Exclude<
  Operator,
  "Inspect" | "Greater" | "Greater or Equal" | "Less" | "Less or Equal"
>[];
const NO_VALUE =
  "equality operator without value (absent or null): holds when the attribute has no value (missing, null, or an array without a non-null element)";

// ---------------------------------------------------------------------------------------------
// TypeBox schemas
// ---------------------------------------------------------------------------------------------

const closed = { additionalProperties: false } as const;

const DefinitionName = Type.String({
  minLength: 1,
  maxLength: RULE_LIMITS.definitionNameMaxLength,
  description: "attribute of the entity (dotted path), 1 to 256 characters",
});
const ValueString = Type.String({ maxLength: RULE_LIMITS.valueMaxLength });
const ValueList = Type.Array(ValueString);
const FieldName = Type.String({ maxLength: RULE_LIMITS.fieldNameMaxLength });

/** What differs between the nesting levels of a target definition: the label of its variants and its description. */
const DEFINITION_LEVELS = {
  1: {
    label: "target definition",
    description: "Target definition: an attribute of the entity, an operator and a value (or nested conditions for Inspect).",
  },
  2: { label: "second-level definition", description: "Second-level definition: same as the top level plus useScaledValue." },
  3: { label: "third-level definition", description: "Third-level definition: no Inspect, value required." },
} as const;

/**
 * The schema of a target definition at nesting `level`, the one description of all three levels.
 * Every level has the string-valued and the Equals any operators (`value` required); levels 1 and 2
 * also an equality operator without value and Inspect (its `operatorParameters` are `inner`
 * definitions), and take `operatorParameters: null` otherwise; level 2 alone has `useScaledValue`
 * (not `true` without a value); level 3 has no `operatorParameters` at all.
 * @param level - 1 (targetMap item), 2 (item of a top-level Inspect), 3 (item of a second-level Inspect).
 * @param inner - the schema of the next level's definitions (levels 1 and 2).
 * @returns a union of closed objects, one per operator family.
 */
function definitionSchema(level: 1 | 2 | 3, inner?: TSchema): TSchema {
  const { label, description } = DEFINITION_LEVELS[level];
  const scaled = (schema: TSchema): Record<string, TSchema> => (level === 2 ? { useScaledValue: Type.Optional(schema) } : {});
  const noParameters: Record<string, TSchema> = level < 3 ? { operatorParameters: Type.Optional(Type.Null()) } : {};
  const variant = (properties: Record<string, TSchema>, what: string) =>
    Type.Object({ name: DefinitionName, ...properties }, { ...closed, description: `${label}, ${what}` });
  const variants = [
    variant(
      { operator: Type.Enum(SCALAR_OPERATORS), value: ValueString, ...scaled(Type.Boolean()), ...noParameters },
      "string-valued operator",
    ),
    variant(
      { operator: Type.Enum(ARRAY_OPERATOR_LIST), value: ValueList, ...scaled(Type.Boolean()), ...noParameters },
      "Equals any operator",
    ),
  ];
  if (inner) {
    variants.push(
      variant(
        { operator: Type.Enum(EQUALITY_OPERATOR_LIST), value: Type.Optional(Type.Null()), ...scaled(Type.Literal(false)), ...noParameters },
        level === 2 ? `${NO_VALUE}; not with useScaledValue true` : NO_VALUE,
      ),
      variant(
        {
          operator: Type.Literal("Inspect"),
          value: Type.Optional(Type.Union([ValueString, Type.Null()])),
          ...scaled(Type.Boolean()),
          operatorParameters: Type.Array(inner, {
            minItems: RULE_LIMITS.operatorParametersMin,
            maxItems: RULE_LIMITS.operatorParametersMax,
          }),
        },
        "Inspect",
      ),
    );
  }
  return Type.Union(variants, { description, ...component(DEFINITION_COMPONENTS[level]) });
}

/** The OpenAPI component name of each definition level. */
const DEFINITION_COMPONENTS = { 1: "TargetDefinition", 2: "SecondLevelDefinition", 3: "ThirdLevelDefinition" } as const;

/** Third-level definition (item of a second-level Inspect's operatorParameters): name, operator (no Inspect), value, all required; nothing deeper. */
export const ThirdLevelDefinitionSchema = definitionSchema(3);

/**
 * Second-level definition (item of a top-level Inspect's operatorParameters); the only level with
 * `useScaledValue`. Like the top level, an equality operator may come without `value`, but not
 * together with `useScaledValue: true` (the scaled amount of an argument without value is meaningless).
 */
export const SecondLevelDefinitionSchema = definitionSchema(2, ThirdLevelDefinitionSchema);

/**
 * Top-level target definition (targetMap item). `value` is a string (ordering and Equals operators),
 * an array of strings (Equals any), absent or null for an equality operator (holds when the
 * attribute has no value), and absent, null or an unused string for Inspect.
 */
export const TargetDefinitionSchema = definitionSchema(1, SecondLevelDefinitionSchema);

/**
 * The schema of a payload item at one level, the one description of all three levels: with `inner`
 * (the next level's item schema), a union of `Field` (`subPayloads` null or absent) and `Sub Field`
 * (`subPayloads`: 1 to 10 unique `inner` items); without, the leaf `{fieldType: "Field", fieldName}`.
 * @param inner - the schema of the items of a `Sub Field`'s `subPayloads`; absent at the last level.
 * @returns a closed object (leaf) or a union of two closed objects.
 */
function payloadItemSchema(name: string, inner?: TSchema): TSchema {
  if (!inner) return Type.Object({ fieldType: Type.Literal("Field"), fieldName: FieldName }, { ...closed, ...component(name) });
  return Type.Union(
    [
      Type.Object(
        { fieldType: Type.Literal("Field"), fieldName: FieldName, subPayloads: Type.Optional(Type.Null()) },
        { ...closed, description: "Field: subPayloads null or absent" },
      ),
      Type.Object(
        {
          fieldType: Type.Literal("Sub Field"),
          fieldName: FieldName,
          subPayloads: Type.Array(inner, { minItems: RULE_LIMITS.subPayloadsMin, maxItems: RULE_LIMITS.subPayloadsMax, uniqueItems: true }),
        },
        { ...closed, description: "Sub Field: subPayloads required" },
      ),
    ],
    component(name),
  );
}

/** Payload item one level below a sub-payload: only `{fieldType: "Field", fieldName}`. */
export const LeafPayloadItemSchema = payloadItemSchema("LeafPayloadItem");

/** Payload item of a sub-payload (same rules as the top level, children are leaves). */
export const SubPayloadItemSchema = payloadItemSchema("SubPayloadItem", LeafPayloadItemSchema);

/** Payload item: names a property of the matched entity sent with the alert; Sub Field steps into a nested property. */
export const PayloadItemSchema = payloadItemSchema("PayloadItem", SubPayloadItemSchema);

const PayloadSchema = Type.Optional(
  Type.Union([Type.Array(PayloadItemSchema, { maxItems: RULE_LIMITS.payloadMax, uniqueItems: true }), Type.Null()]),
);
const HttpUrlSchema = Type.String({
  pattern: HTTP_URL_PATTERN,
  maxLength: RULE_LIMITS.urlMaxLength,
  description: "absolute http(s) URL; {field} tokens only in the path, query and fragment",
  examples: ["https://hooks.example.com/chainsift/{transactionHash}?block={blockNumber}"],
});

/** A token's field path: identifier segments separated by dots (lib/alerting/template.ts `TOKEN_PATH`), spaces around it allowed. */
const TEMPLATE_TOKEN = "\\{\\s*[A-Za-z_$][\\w$]*(?:\\.[\\w$]+)*\\s*\\}";
/**
 * Message templates (`parameters.template`, Email `parameters.subject`): any text in which every
 * `{…}` holding no other brace is a field path token; a `{` that no `}` closes before the next
 * `{` (or the end) is literal text, as is a lone `}` (the token scan of lib/alerting/template.ts).
 */
export const TEMPLATE_PATTERN = `^(?:[^{]|${TEMPLATE_TOKEN}|(?:\\{[^{}]*)+(?:${TEMPLATE_TOKEN}|$))*$`;

/**
 * A message template (optional `parameters.template`): text with `{field}` tokens, each a field
 * path ({@link TEMPLATE_PATTERN}; `{alert.…}` and `{explorer.…}` must name known fields, checked by
 * hand on save, `CS_RULE_ALERT_PARAMETERS`); see docs/alerting-delivery.md "Message templates".
 */
const TemplateSchema = Type.Optional(
  Type.String({
    pattern: TEMPLATE_PATTERN,
    maxLength: RULE_LIMITS.templateMaxLength,
    description:
      "message template: {field} tokens name fields of the matched entity, {alert.status}, {explorer.tx}, {amount.value}, … (docs/alerting-delivery.md, Message templates); absent: the standard message",
    examples: ["{alert.status}: {amount.value} from {args.0.value.hex} {explorer.tx}"],
  }),
);

/** Parameters of an Email alert. Additional properties are allowed (and ignored). */
export const EmailParametersSchema = Type.Object(
  {
    recipients: Type.Array(Type.String({ pattern: EMAIL_PATTERN, maxLength: RULE_LIMITS.emailMaxLength, examples: ["ops@example.com"] }), {
      minItems: 1,
      maxItems: RULE_LIMITS.recipientsMax,
    }),
    subject: Type.Optional(
      Type.String({
        pattern: TEMPLATE_PATTERN,
        maxLength: RULE_LIMITS.subjectMaxLength,
        description: "subject template ({field} tokens); absent: the standard subject",
      }),
    ),
    template: TemplateSchema,
  },
  component("EmailParameters"),
);
/** Parameters of a Slack alert. Additional properties are allowed (and ignored). */
export const SlackParametersSchema = Type.Object(
  {
    url: HttpUrlSchema,
    text: Type.String({ maxLength: RULE_LIMITS.slackTextMaxLength }),
    channel: Type.String({ maxLength: RULE_LIMITS.slackNameMaxLength }),
    username: Type.String({ maxLength: RULE_LIMITS.slackNameMaxLength }),
    template: TemplateSchema,
  },
  component("SlackParameters"),
);
/**
 * Parameters of a Discord alert (Discord "Execute Webhook",
 * https://discord.com/developers/docs/resources/webhook#execute-webhook). Additional properties are
 * allowed (and ignored).
 */
export const DiscordParametersSchema = Type.Object(
  {
    url: HttpUrlSchema,
    username: Type.Optional(
      Type.String({ maxLength: RULE_LIMITS.slackNameMaxLength, description: "overrides the webhook's default name" }),
    ),
    template: TemplateSchema,
  },
  component("DiscordParameters"),
);
/** A Telegram chat: a numeric chat id (groups and channels are negative) or a public channel's `@username` (Bot API sendMessage `chat_id`). */
export const TELEGRAM_CHAT_PATTERN = "^(-?[1-9][0-9]{0,15}|@[A-Za-z][A-Za-z0-9_]{3,31})$";
/**
 * Parameters of a Telegram alert: a message from the operator's bot (`CHAINSIFT_TELEGRAM_BOT_TOKEN`)
 * through Bot API `sendMessage` (https://core.telegram.org/bots/api#sendmessage). The rule never
 * holds the bot token. Additional properties are allowed (and ignored).
 */
export const TelegramParametersSchema = Type.Object(
  {
    chatId: Type.String({
      pattern: TELEGRAM_CHAT_PATTERN,
      description: "target chat id (e.g. -1001234567890) or public channel @username; the operator's bot must be a member",
      examples: ["-1001234567890", "@my_alerts"],
    }),
    messageThreadId: Type.Optional(Type.Integer({ minimum: 1, description: "topic of a forum supergroup (message_thread_id)" })),
    template: TemplateSchema,
  },
  component("TelegramParameters"),
);
/** A PagerDuty Events API v2 integration (routing) key: 32 letters and digits. */
export const PAGERDUTY_ROUTING_KEY_PATTERN = "^[A-Za-z0-9]{32}$";
/** The Events API v2 severities (`payload.severity`, https://developer.pagerduty.com/docs/send-alert-event). */
export const PAGERDUTY_SEVERITIES = ["critical", "error", "warning", "info"] as const;
/** Parameters of a PagerDuty alert (Events API v2 trigger, resolve on retraction). Additional properties are allowed (and ignored). */
export const PagerDutyParametersSchema = Type.Object(
  {
    routingKey: Type.String({ pattern: PAGERDUTY_ROUTING_KEY_PATTERN, description: "Events API v2 integration key; a secret" }),
    severity: Type.Optional(Type.Enum(PAGERDUTY_SEVERITIES, { description: "payload.severity of the triggered alert (default error)" })),
    template: TemplateSchema,
  },
  component("PagerDutyParameters"),
);
/** An Opsgenie API integration key: 20 to 64 letters, digits and dashes (Opsgenie issues UUIDs). */
export const OPSGENIE_API_KEY_PATTERN = "^[A-Za-z0-9-]{20,64}$";
/** Opsgenie alert priorities (https://docs.opsgenie.com/docs/alert-api#create-alert). */
export const OPSGENIE_PRIORITIES = ["P1", "P2", "P3", "P4", "P5"] as const;
/** Parameters of an Opsgenie alert (Alert API create with an alias, close on retraction). Additional properties are allowed (and ignored). */
export const OpsgenieParametersSchema = Type.Object(
  {
    apiKey: Type.String({ pattern: OPSGENIE_API_KEY_PATTERN, description: "API integration key (GenieKey); a secret" }),
    priority: Type.Optional(Type.Enum(OPSGENIE_PRIORITIES, { description: "the alert's priority (default P3)" })),
    template: TemplateSchema,
  },
  component("OpsgenieParameters"),
);
/** Parameters of a Microsoft Teams alert: an Adaptive Card to a Workflows (or incoming) webhook URL. Additional properties are allowed (and ignored). */
export const TeamsParametersSchema = Type.Object({ url: HttpUrlSchema, template: TemplateSchema }, component("TeamsParameters"));
/** A Kafka bootstrap server: `host:port`, the host a registered name, an IPv4 address or a bracketed IPv6 address; port 1–65535. */
export const KAFKA_BROKER_PATTERN = `^(?:${REG_NAME}|${IPV4}|\\[(?:${IPV6})\\]):(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`;
/** A Kafka topic name: 1 to 249 of ASCII letters, digits, `.`, `_`, `-` (Kafka's rule), not starting with a dot (so never `.` or `..`). */
export const KAFKA_TOPIC_PATTERN = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,248}$";
/** Limits of a `Kafka` action's parameters. */
export const KAFKA_LIMITS = {
  /** Bootstrap servers: 1 to 10. */
  brokersMax: 10,
  /** Longest `host:port`, in characters (a 253-character DNS name, `:`, 5 digits). */
  brokerMaxLength: 259,
  /** Longest SASL username and password, in characters. */
  saslMaxLength: 1024,
  /** Longest `sslCa` PEM text, in characters. */
  sslCaMaxLength: 65_536,
} as const;
/**
 * Parameters of a Kafka alert: one record per alert produced to `topic` on the user's cluster
 * (kafkajs, idempotent producer; docs/alerting.md "Kafka"). Additional properties are allowed
 * (and ignored), except inside `sasl`.
 */
export const KafkaParametersSchema = Type.Object(
  {
    brokers: Type.Array(
      Type.String({ pattern: KAFKA_BROKER_PATTERN, maxLength: KAFKA_LIMITS.brokerMaxLength, examples: ["kafka-1.example.com:9093"] }),
      { minItems: 1, maxItems: KAFKA_LIMITS.brokersMax, uniqueItems: true, description: "bootstrap servers, host:port" },
    ),
    topic: Type.String({
      pattern: KAFKA_TOPIC_PATTERN,
      description: "the topic records are produced to; it must exist",
      examples: ["chainsift-alerts"],
    }),
    key: Type.Optional(Type.Enum(KAFKA_KEYS, { description: "record key: the rule id (default) or the matched entity's id" })),
    avro: Type.Optional(
      Type.Object(
        {
          schemaRegistryUrl: Type.String({
            pattern: HTTP_URL_PATTERN,
            maxLength: RULE_LIMITS.urlMaxLength,
            description: "the cluster's Confluent-compatible schema registry; the schema is registered under <topic>-value",
            examples: ["https://schema-registry.example.com"],
          }),
          auth: Type.Optional(
            Type.Object(
              {
                username: Type.String({ minLength: 1, maxLength: KAFKA_LIMITS.saslMaxLength }),
                password: Type.String({ minLength: 1, maxLength: KAFKA_LIMITS.saslMaxLength, description: "a secret: never logged" }),
              },
              { ...closed, description: "HTTP basic authentication of the schema registry" },
            ),
          ),
        },
        {
          ...closed,
          description: "write the value in Avro (the alerts topic's schema, Confluent wire format) instead of the Webhook (POST) JSON",
        },
      ),
    ),
    ssl: Type.Optional(Type.Boolean({ description: "connect with TLS (default false)" })),
    sslCa: Type.Optional(
      Type.String({ maxLength: KAFKA_LIMITS.sslCaMaxLength, description: "PEM CA certificate(s) to verify the brokers with (with ssl)" }),
    ),
    sasl: Type.Optional(
      Type.Object(
        {
          mechanism: Type.Enum(KAFKA_SASL_MECHANISMS),
          username: Type.String({ minLength: 1, maxLength: KAFKA_LIMITS.saslMaxLength }),
          password: Type.String({ minLength: 1, maxLength: KAFKA_LIMITS.saslMaxLength, description: "a secret: never logged" }),
        },
        { ...closed, description: "SASL PLAIN or SCRAM authentication (use with ssl)" },
      ),
    ),
  },
  component("KafkaParameters"),
);

/** Parameters of a webhook alert (GET or POST). `{field}` tokens in the URL are replaced at delivery. */
export const WebhookParametersSchema = Type.Object({ url: HttpUrlSchema }, component("WebhookParameters"));

// --- h-storm (issue 24 §2): storm control fields of an alert action (lib/alerting/storm.ts) ---
/** `throttle`: at most `max` messages per `windowSec` window, the rest in the window's digest; `false`: no throttle. */
export const ThrottleSchema = Type.Union(
  [
    Type.Object(
      {
        max: Type.Integer({ minimum: 1, maximum: 10_000, description: "messages sent one by one per window" }),
        windowSec: Type.Integer({ minimum: 1, maximum: 86_400, description: "window length in seconds (windows aligned to the epoch)" }),
      },
      { additionalProperties: false },
    ),
    Type.Literal(false, { description: "no throttle (turns the chat and e-mail default of 10 per 60 s off)" }),
  ],
  component("Throttle"),
);
/** `digest`: every alert of a `windowSec` window in one message naming the first `maxEntities`. */
export const DigestSchema = Type.Object(
  {
    windowSec: Type.Integer({ minimum: 1, maximum: 86_400, description: "window length in seconds (windows aligned to the epoch)" }),
    maxEntities: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: "entities named in the digest (default 10)" })),
  },
  { additionalProperties: false, ...component("Digest") },
);
/** The storm-control fields every action type may carry (docs/rules.md "Storm control"). */
const StormFields = { throttle: Type.Optional(ThrottleSchema), digest: Type.Optional(DigestSchema) };
// --- end h-storm ---

/**
 * The schema of each action type's `parameters`, by type: the compiler asks for the entry of a new
 * type in `ALERT_TYPES` (lib/rules/model.ts). The alert channels' descriptors
 * (lib/alerting/channels.ts) point at these entries.
 */
export const ACTION_PARAMETERS_SCHEMAS = {
  Email: EmailParametersSchema,
  Slack: SlackParametersSchema,
  Discord: DiscordParametersSchema,
  Telegram: TelegramParametersSchema,
  PagerDuty: PagerDutyParametersSchema,
  Opsgenie: OpsgenieParametersSchema,
  Teams: TeamsParametersSchema,
  Kafka: KafkaParametersSchema,
  "Webhook (GET)": WebhookParametersSchema,
  "Webhook (POST)": WebhookParametersSchema,
} as const satisfies Record<AlertType, TObject>;

/**
 * The branches of {@link AlertDefinitionSchema}: one per parameters schema, naming the types that
 * share it (the webhooks), in the order of {@link ACTION_PARAMETERS_SCHEMAS}.
 */
function alertDefinitionBranches() {
  const groups = new Map<TObject, AlertType[]>();
  for (const type of Object.keys(ACTION_PARAMETERS_SCHEMAS) as AlertType[]) {
    const schema = ACTION_PARAMETERS_SCHEMAS[type];
    groups.set(schema, [...(groups.get(schema) ?? []), type]);
  }
  return [...groups].map(([parameters, types]) =>
    Type.Object({
      type: types.length === 1 ? Type.Literal(types[0]!) : Type.Enum(types),
      parameters,
      payload: PayloadSchema,
      ...StormFields,
    }),
  );
}

/**
 * Alert definition (alerts item): the action and what it sends. Additional properties are allowed.
 * The contract's four types come first, unchanged; `Discord`, `Telegram`, `PagerDuty`, `Opsgenie` and `Teams` are chainsift's.
 */
export const AlertDefinitionSchema = Type.Union(alertDefinitionBranches(), component("AlertDefinition"));

/** Rule config: no additional properties; targetType, targetMap and alerts all required. */
export const RuleConfigSchema = Type.Object(
  {
    targetType: Type.Enum(TARGET_TYPES),
    targetMap: Type.Array(TargetDefinitionSchema, {
      minItems: RULE_LIMITS.targetMapMin,
      maxItems: RULE_LIMITS.targetMapMax,
      uniqueItems: true,
    }),
    alerts: Type.Array(AlertDefinitionSchema, { minItems: RULE_LIMITS.alertsMin, maxItems: RULE_LIMITS.alertsMax, uniqueItems: true }),
  },
  { ...closed, ...component("RuleConfig") },
);

/**
 * Limits of the additional top-level properties, in the rule schemas. JSON Schema cannot count or
 * measure only the properties that `properties` does not name, so `maxProperties` is the bound for
 * a body carrying every field of {@link RULE_FIELDS} (a fetched rule PUT back) and the exact limits
 * travel as annotations (`x-chainsift-…`, ignored by validators) and in the description.
 */
const extraPropertyLimits = {
  maxProperties: RULE_FIELDS.length + RULE_LIMITS.extraPropertiesMax,
  "x-chainsift-maxAdditionalProperties": RULE_LIMITS.extraPropertiesMax,
  "x-chainsift-maxAdditionalPropertiesBytes": RULE_LIMITS.extraPropertiesMaxBytes,
  "x-chainsift-maxBodyBytes": RULE_LIMITS.bodyMaxBytes,
} as const;

const ruleProperties = {
  name: Type.String({ maxLength: RULE_LIMITS.nameMaxLength }),
  maxConfirmationCount: Type.Integer({ minimum: 0 }),
  technology: Type.String({ description: "must name a chain this deployment serves" }),
  blockchain: Type.String({ description: "must name a chain this deployment serves" }),
  network: Type.String({ description: "must name a chain this deployment serves" }),
  config: RuleConfigSchema,
  description: Type.Optional(Type.Union([Type.String({ maxLength: RULE_LIMITS.descriptionMaxLength }), Type.Null()])),
  version: Type.Optional(Type.Integer({ description: "ignored on create; on update, the version the client last saw (stale: 409)" })),
  state: Type.Optional(Type.Enum(RULE_STATES, { description: "`enabled` (evaluated, the default) or `disabled` (kept, never matches)" })),
  sendPendingAlerts: Type.Optional(Type.Boolean()),
};

/**
 * Body of `POST /alerting/rules/`. Additional top-level properties are allowed and stored verbatim
 * (except the service-managed `id`, `accountId`, `createdAt`, `updatedAt`, which are ignored).
 * Defaults applied by {@link validateRuleInput}: `state` `enabled`, `sendPendingAlerts` false, `description` null.
 */
const createDescription = `An alerting rule. Additional top-level properties are allowed and stored verbatim: at most ${RULE_LIMITS.extraPropertiesMax}, together at most ${RULE_LIMITS.extraPropertiesMaxBytes} bytes of JSON; the whole body at most ${RULE_LIMITS.bodyMaxBytes} bytes.`;
export const RuleCreateSchema = Type.Object(ruleProperties, {
  description: createDescription,
  ...extraPropertyLimits,
  ...component("RuleFields"),
});

/**
 * Body of `PUT /alerting/rules/<rule_id>/`: any subset of the rule's fields, merged into the stored
 * rule at the top level (`config` is replaced as a whole). `version`, when sent, must equal the
 * stored version (else 409). `technology`, `blockchain`, `network` may be sent but must equal the
 * stored values (the store refuses a change with `CS_RULE_IMMUTABLE_FIELD`).
 */
const updateDescription = `Fields of an alerting rule to change. Additional top-level properties: at most ${RULE_LIMITS.extraPropertiesMax} in the body and in the rule they are merged into, together at most ${RULE_LIMITS.extraPropertiesMaxBytes} bytes of JSON; the whole body at most ${RULE_LIMITS.bodyMaxBytes} bytes.`;
export const RuleUpdateSchema = Type.Partial(RuleCreateSchema, { description: updateDescription, ...extraPropertyLimits });

/** The rule body schemas of one deployment, see {@link ruleSchemasFor}. */
export interface RuleSchemas {
  /** Body of `POST /alerting/rules/`: {@link RuleCreateSchema} with the served chains. */
  create: TSchema;
  /** Body of `PUT /alerting/rules/<rule_id>/`: {@link RuleUpdateSchema} with the served chains. */
  update: TSchema;
}

/**
 * {@link RuleCreateSchema} and {@link RuleUpdateSchema} for a deployment that serves `chains`, for
 * its OpenAPI document: `technology`, `blockchain` and `network` are enumerations of the served
 * values, and when the served chains are not every combination of those values (e.g. two networks
 * of different blockchains) an `anyOf` of the served combinations is added, so the schema accepts
 * exactly the chain fields {@link validateRuleInput} accepts (`CS_RULE_UNKNOWN_CHAIN` otherwise).
 * With no chain served, nothing is accepted (like the validator). Pure; build once per app.
 * @param chains the chains this deployment serves (as passed to {@link validateRuleInput}).
 */
export function ruleSchemasFor(chains: readonly ChainId[]): RuleSchemas {
  const fields = ["technology", "blockchain", "network"] as const;
  const combos = [...new Map(chains.map((c) => [JSON.stringify([c.technology, c.blockchain, c.network]), c])).values()];
  const values = (f: (typeof fields)[number]) => [...new Set(combos.map((c) => c[f]))];
  const enumOf = (f: (typeof fields)[number]) =>
    Type.Enum(values(f), { description: `a ${f} this deployment serves (with the other two, one of the served chains)` });
  const product = fields.reduce((n, f) => n * values(f).length, 1);
  const combinations =
    combos.length === product
      ? {}
      : {
          anyOf: combos.map((c) => ({
            properties: { technology: { const: c.technology }, blockchain: { const: c.blockchain }, network: { const: c.network } },
          })),
        };
  const properties = { ...ruleProperties, technology: enumOf("technology"), blockchain: enumOf("blockchain"), network: enumOf("network") };
  const create = Type.Object(properties, {
    description: createDescription,
    ...extraPropertyLimits,
    ...combinations,
    ...component("RuleCreate"),
  });
  const update = Type.Partial(create, {
    description: updateDescription,
    ...extraPropertyLimits,
    ...combinations,
    ...component("RuleUpdate"),
  });
  return { create, update };
}

/** Static type of a body valid against {@link RuleCreateSchema}. */
export type RuleCreateBody = Static<typeof RuleCreateSchema>;
/** Static type of a body valid against {@link RuleUpdateSchema}. */
export type RuleUpdateBody = Static<typeof RuleUpdateSchema>;
