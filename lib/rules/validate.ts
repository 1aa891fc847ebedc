/**
 * Validation of alerting rules sent to the API (POST and PUT bodies).
 *
 * Two layers that say the same thing:
 * - the TypeBox schemas ({@link RuleCreateSchema}, {@link RuleUpdateSchema} and their parts), plain
 *   JSON Schema the API can publish in its OpenAPI document. Conditional rules are written as unions
 *   of mutually exclusive variants (`anyOf`), so the document needs no `if`/`then`;
 * - {@link validateRuleInput}, a hand-written walker that gives every refusal a stable code and the
 *   JSON path of the deepest offending value (`config.targetMap[0].operatorParameters[1].value`).
 *   After the walker, the compiled schema runs as a backstop: a body the walker accepts but the schema
 *   refuses is still refused (`CS_RULE_INVALID`). The unit tests check that both agree.
 *
 * The chains a deployment serves are checked by the walker; {@link ruleSchemasFor} builds the
 * schemas of one deployment (chain fields as enumerations) for its OpenAPI document, which then
 * describe exactly what the walker accepts, except the count and size of the additional top-level
 * properties and the body size (annotations `x-chainsift-*`: JSON Schema cannot express them).
 * See `docs/rules.md` for the rules in prose and every error code.
 * @module
 */
import { type Static, type TSchema, Type } from "typebox";
import { Compile } from "typebox/compile";
import type { ChainId } from "../config.js";
import { EMAIL_PATTERN, isEmailAddress } from "../email.js";
import { jsonPath, pointerToPath } from "../validation/path.js";
import { isJsonObject, ProblemCollector, type ValidationResult } from "../validation/problems.js";
import {
  ALERT_TYPES,
  type AlertType,
  ARRAY_OPERATORS,
  EQUALITY_OPERATORS,
  OPERATORS,
  type Operator,
  RULE_STATES,
  type RuleInput,
  TARGET_TYPES,
} from "./model.js";

// ---------------------------------------------------------------------------------------------
// Limits and patterns
// ---------------------------------------------------------------------------------------------

/** Size limits of a rule (contract "Limits", plus the bounds chainsift adds for nested arrays). */
export const RULE_LIMITS = {
  /** targetMap items: 1 to 10 (contract). */
  targetMapMin: 1,
  targetMapMax: 10,
  /** alerts: 1 to 10 (contract). */
  alertsMin: 1,
  alertsMax: 10,
  /** payload items per alert: at most 10 (contract). */
  payloadMax: 10,
  /** Items of an Inspect's operatorParameters: 1 to 10 (chainsift; the contract gives no bound). */
  operatorParametersMin: 1,
  operatorParametersMax: 10,
  /** Items of a Sub Field's subPayloads: 1 to 10 (chainsift; the contract gives no bound). */
  subPayloadsMin: 1,
  subPayloadsMax: 10,
  /** Longest e-mail address (RFC 5321 path limit), in characters. */
  emailMaxLength: 254,
  /** Recipients of one Email alert: 1 to 50 (chainsift: one alert never mails a crowd). */
  recipientsMax: 50,
  /** Longest rule `name`, in characters (Unicode code points, like JSON Schema `maxLength`). */
  nameMaxLength: 256,
  /** Longest rule `description`, in characters. */
  descriptionMaxLength: 4096,
  /** Longest target-definition `name` (an attribute path), at every level, in characters; it must not be empty either. */
  definitionNameMaxLength: 256,
  /** Longest `value` string, and longest element of an Equals any `value`, in characters. */
  valueMaxLength: 1024,
  /** Longest webhook or Slack `url`, in characters (what common HTTP stacks accept in a request line). */
  urlMaxLength: 2048,
  /** Longest Slack `text`, in characters (Slack truncates longer messages). */
  slackTextMaxLength: 4000,
  /** Longest Slack `channel` and `username`, in characters. */
  slackNameMaxLength: 256,
  /** Longest payload `fieldName`, at every level, in characters. */
  fieldNameMaxLength: 256,
  /** Additional top-level properties of a rule (besides the fields of {@link RULE_FIELDS}): at most 20. */
  extraPropertiesMax: 20,
  /** Size of the additional top-level properties together, as the UTF-8 bytes of the JSON object holding only them: at most 16 KiB. */
  extraPropertiesMaxBytes: 16 * 1024,
  /** Largest POST or PUT body of a rule, in bytes (the routes' `bodyLimit`; larger: 413 `CS_RULE_TOO_LARGE`). */
  bodyMaxBytes: 64 * 1024,
} as const;

/**
 * Top-level fields a rule has besides its additional properties: the contract's fields and the
 * service-managed ones. Everything else at the top level is an additional property (limited by
 * {@link RULE_LIMITS}`.extraPropertiesMax` and `.extraPropertiesMaxBytes`).
 */
export const RULE_FIELDS: readonly string[] = [
  "name",
  "maxConfirmationCount",
  "technology",
  "blockchain",
  "network",
  "config",
  "description",
  "version",
  "state",
  "sendPendingAlerts",
  "id",
  "accountId",
  "createdAt",
  "updatedAt",
];

/** E-mail addresses accepted as Email recipients: the one syntax of `lib/email.ts`. */
export { EMAIL_PATTERN };

// The URL grammar, built from parts so it can be read. Every string it matches parses with the
// WHATWG URL parser (`new URL`), which is what delivery uses: a test fuzzes this with strings
// generated from the pattern. No look-arounds, so schema-driven generators can use it.
/** A character of a host label (WHATWG hosts allow `_`; hyphens anywhere: CheckHyphens is off). */
const LABEL_CHAR = "[A-Za-z0-9_-]";
/**
 * A host label that does not start with the IDNA prefix `xn--` (any case): the URL parser decodes
 * such labels as Punycode and refuses most of them. `first` is the class of the first character
 * when it is not an `x`.
 */
const notPunycodeLabel = (first: string) =>
  `(?:${first}${LABEL_CHAR}*|[Xx](?:[A-MO-Za-mo-z0-9_-]${LABEL_CHAR}*)?|[Xx][Nn](?:[A-Za-z0-9_]${LABEL_CHAR}*)?|[Xx][Nn]-(?:[A-Za-z0-9_]${LABEL_CHAR}*)?)`;
/** A registered name: dot-separated labels, the last one starting with a letter (else the parser reads an IPv4 number). */
const REG_NAME = `(?:${notPunycodeLabel("[A-WYZa-wyz0-9_-]")}\\.)*${notPunycodeLabel("[A-WYZa-wyz]")}`;
const DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const IPV4 = `(?:${DEC_OCTET}\\.){3}${DEC_OCTET}`;
const H16 = "[0-9A-Fa-f]{1,4}";
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** RFC 3986 `IPv6address` (no zone id). */
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].join("|");
const PORT = "(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
/** RFC 3986 user info characters (no `{}`: no templates). */
const USERINFO = "[A-Za-z0-9._~!$&'()*+,;=:%-]*@";

/**
 * URLs accepted for webhooks and Slack: `http://` or `https://` (scheme in any case), optional user
 * info, a host (a registered name, an IPv4 address or a bracketed IPv6 address), an optional port
 * (0–65535), then optionally a path, query or fragment without whitespace. `{field}` tokens (replaced
 * by the matched entity's values at delivery) are allowed only after the host and port, in the
 * path, query and fragment: a `{` or `}` in the scheme, user info, host or port is refused, so a
 * token can never choose the server a webhook calls. Whether the host may be called (SSRF: private
 * addresses, metadata endpoints) is decided at delivery time.
 */
export const HTTP_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://(?:${USERINFO})?(?:${REG_NAME}|${IPV4}|\\[(?:${IPV6})\\])(?::${PORT})?(?:[/?#]\\S*)?$`;

const HTTP_URL_RE = new RegExp(HTTP_URL_PATTERN, "u");

/** Operators whose value is a string (every operator but Inspect and the two Equals any). */
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
  return Type.Union(variants, { description });
}

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

/** Payload item one level below a sub-payload: only `{fieldType: "Field", fieldName}`. */
export const LeafPayloadItemSchema = Type.Object({ fieldType: Type.Literal("Field"), fieldName: FieldName }, closed);

/** Payload item of a sub-payload (same rules as the top level, children are leaves). */
export const SubPayloadItemSchema = Type.Union([
  Type.Object(
    { fieldType: Type.Literal("Field"), fieldName: FieldName, subPayloads: Type.Optional(Type.Null()) },
    { ...closed, description: "Field: subPayloads null or absent" },
  ),
  Type.Object(
    {
      fieldType: Type.Literal("Sub Field"),
      fieldName: FieldName,
      subPayloads: Type.Array(LeafPayloadItemSchema, {
        minItems: RULE_LIMITS.subPayloadsMin,
        maxItems: RULE_LIMITS.subPayloadsMax,
        uniqueItems: true,
      }),
    },
    { ...closed, description: "Sub Field: subPayloads required" },
  ),
]);

/** Payload item: names a property of the matched entity sent with the alert; Sub Field steps into a nested property. */
export const PayloadItemSchema = Type.Union([
  Type.Object(
    { fieldType: Type.Literal("Field"), fieldName: FieldName, subPayloads: Type.Optional(Type.Null()) },
    { ...closed, description: "Field: subPayloads null or absent" },
  ),
  Type.Object(
    {
      fieldType: Type.Literal("Sub Field"),
      fieldName: FieldName,
      subPayloads: Type.Array(SubPayloadItemSchema, {
        minItems: RULE_LIMITS.subPayloadsMin,
        maxItems: RULE_LIMITS.subPayloadsMax,
        uniqueItems: true,
      }),
    },
    { ...closed, description: "Sub Field: subPayloads required" },
  ),
]);

const PayloadSchema = Type.Optional(
  Type.Union([Type.Array(PayloadItemSchema, { maxItems: RULE_LIMITS.payloadMax, uniqueItems: true }), Type.Null()]),
);
const HttpUrlSchema = Type.String({
  pattern: HTTP_URL_PATTERN,
  maxLength: RULE_LIMITS.urlMaxLength,
  description: "absolute http(s) URL; {field} tokens only in the path, query and fragment",
  examples: ["https://hooks.example.com/chainsift/{transactionHash}?block={blockNumber}"],
});

/** Parameters of an Email alert. Additional properties are allowed (and ignored). */
export const EmailParametersSchema = Type.Object({
  recipients: Type.Array(Type.String({ pattern: EMAIL_PATTERN, maxLength: RULE_LIMITS.emailMaxLength, examples: ["ops@example.com"] }), {
    minItems: 1,
    maxItems: RULE_LIMITS.recipientsMax,
  }),
});
/** Parameters of a Slack alert. Additional properties are allowed (and ignored). */
export const SlackParametersSchema = Type.Object({
  url: HttpUrlSchema,
  text: Type.String({ maxLength: RULE_LIMITS.slackTextMaxLength }),
  channel: Type.String({ maxLength: RULE_LIMITS.slackNameMaxLength }),
  username: Type.String({ maxLength: RULE_LIMITS.slackNameMaxLength }),
});
/** Parameters of a webhook alert (GET or POST). `{field}` tokens in the URL are replaced at delivery. */
export const WebhookParametersSchema = Type.Object({ url: HttpUrlSchema });

/** Alert definition (alerts item): the action and what it sends. Additional properties are allowed. */
export const AlertDefinitionSchema = Type.Union([
  Type.Object({ type: Type.Literal("Email"), parameters: EmailParametersSchema, payload: PayloadSchema }),
  Type.Object({ type: Type.Literal("Slack"), parameters: SlackParametersSchema, payload: PayloadSchema }),
  Type.Object({
    type: Type.Enum(["Webhook (GET)", "Webhook (POST)"] as const),
    parameters: WebhookParametersSchema,
    payload: PayloadSchema,
  }),
]);

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
  closed,
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
export const RuleCreateSchema = Type.Object(ruleProperties, { description: createDescription, ...extraPropertyLimits });

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
  const create = Type.Object(properties, { description: createDescription, ...extraPropertyLimits, ...combinations });
  return { create, update: Type.Partial(create, { description: updateDescription, ...extraPropertyLimits, ...combinations }) };
}

/** Static type of a body valid against {@link RuleCreateSchema}. */
export type RuleCreateBody = Static<typeof RuleCreateSchema>;
/** Static type of a body valid against {@link RuleUpdateSchema}. */
export type RuleUpdateBody = Static<typeof RuleUpdateSchema>;

const createValidator = Compile(RuleCreateSchema);
const updateValidator = Compile(RuleUpdateSchema);

// ---------------------------------------------------------------------------------------------
// Errors and results
// ---------------------------------------------------------------------------------------------

/**
 * Stable codes of {@link RuleValidationError} (the API answers each with 400, api/routes/rules/errors.ts):
 * - `CS_RULE_INVALID`: generic — wrong type, missing required field, unknown property where none are allowed, value not in an enumeration;
 * - `CS_RULE_UNKNOWN_CHAIN`: technology/blockchain/network do not name a chain this deployment serves;
 * - `CS_RULE_ITEM_COUNT`: an array has too few or too many items (targetMap, alerts, payload, operatorParameters, subPayloads);
 * - `CS_RULE_DUPLICATE_ITEM`: an item deep-equals an earlier item of the same array (targetMap, alerts, payload, subPayloads);
 * - `CS_RULE_VALUE_TYPE`: `value` missing or of the wrong type for the operator (array of strings for the Equals any operators, string otherwise);
 * - `CS_RULE_OPERATOR_PARAMETERS`: operatorParameters missing for Inspect, not null for another operator, or not an array;
 * - `CS_RULE_TOO_DEEP`: nesting beyond what the schema allows (Inspect or operatorParameters at the third level; Sub Field or subPayloads one level below a sub-payload);
 * - `CS_RULE_PAYLOAD`: a payload item breaks the payload rules (fieldType, fieldName, subPayloads by fieldType, unknown property);
 * - `CS_RULE_ALERT_PARAMETERS`: an alert's parameters do not fit its type (missing field, bad e-mail address, URL not absolute http(s), a `{field}` template in a URL's host);
 * - `CS_RULE_TOO_LONG`: a string is longer than its cap in {@link RULE_LIMITS} (name, description, definition names, values, URLs, Slack fields, payload field names; an over-long e-mail address is `CS_RULE_ALERT_PARAMETERS`, like any address that is not one);
 * - `CS_RULE_EXTRA_PROPERTIES`: more than {@link RULE_LIMITS}`.extraPropertiesMax` additional top-level properties, or more than `.extraPropertiesMaxBytes` of them (path: the property that crosses the limit).
 */
export type RuleValidationCode =
  | "CS_RULE_INVALID"
  | "CS_RULE_UNKNOWN_CHAIN"
  | "CS_RULE_ITEM_COUNT"
  | "CS_RULE_DUPLICATE_ITEM"
  | "CS_RULE_VALUE_TYPE"
  | "CS_RULE_OPERATOR_PARAMETERS"
  | "CS_RULE_TOO_DEEP"
  | "CS_RULE_PAYLOAD"
  | "CS_RULE_ALERT_PARAMETERS"
  | "CS_RULE_TOO_LONG"
  | "CS_RULE_EXTRA_PROPERTIES";

/** Every {@link RuleValidationCode}, for documentation and exhaustive tests. */
export const RULE_VALIDATION_CODES: readonly RuleValidationCode[] = [
  "CS_RULE_INVALID",
  "CS_RULE_UNKNOWN_CHAIN",
  "CS_RULE_ITEM_COUNT",
  "CS_RULE_DUPLICATE_ITEM",
  "CS_RULE_VALUE_TYPE",
  "CS_RULE_OPERATOR_PARAMETERS",
  "CS_RULE_TOO_DEEP",
  "CS_RULE_PAYLOAD",
  "CS_RULE_ALERT_PARAMETERS",
  "CS_RULE_TOO_LONG",
  "CS_RULE_EXTRA_PROPERTIES",
];

/** One reason a rule body was refused. */
export interface RuleValidationError {
  /** Stable machine-readable code, see {@link RuleValidationCode}. */
  code: RuleValidationCode;
  /** Human-readable explanation, starting with the path (wording may change; match on `code`). */
  message: string;
  /**
   * JSON path of the deepest offending value, relative to the body: dot-separated property names
   * and `[n]` indices, e.g. `config.targetMap[0].operatorParameters[1].value`. A missing property's
   * path is the path it should have. `""` is the body itself. Property names that are not
   * identifiers are written `["some name"]`.
   */
  path: string;
}

/** Fields of a rule PUT: any subset of a {@link RuleInput} (additional top-level properties included). */
export type RulePatch = Partial<RuleInput>;

/** Result of {@link validateRuleInput}: the normalised body, or every reason it was refused (in document order). */
export type RuleValidationResult<T> = ValidationResult<T, RuleValidationError>;

/**
 * Top-level fields the service manages. Sent values are ignored (dropped from the validated value),
 * so a client may PUT back a rule it fetched.
 */
export const RESERVED_RULE_FIELDS: readonly string[] = ["id", "accountId", "createdAt", "updatedAt"];

// ---------------------------------------------------------------------------------------------
// The walker
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

function has(o: Json, key: string): boolean {
  return Object.hasOwn(o, key);
}

function kind(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** Canonical JSON (object keys sorted) so deep-equal values, whatever their key order, compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isJsonObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function list(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(", ");
}

/** What is wrong with the authority (user info, host, port) of a URL, or null. */
function urlProblem(url: string): string | null {
  const authority = /^[A-Za-z]+:\/\/([^/?#]*)/.exec(url)?.[1];
  if (authority !== undefined && /[{}]/.test(authority)) {
    return "templates ({field}) are not allowed in the scheme, user info, host or port, only in the path, query and fragment";
  }
  return null;
}

/** Whether `url` matches {@link HTTP_URL_PATTERN} and parses once `{field}` tokens are filled in. */
function isHttpUrl(url: string): boolean {
  if (!HTTP_URL_RE.test(url)) return false;
  try {
    const parsed = new URL(url.replace(/\{[^{}]*\}/g, "x"));
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.hostname !== "";
  } catch {
    return false;
  }
}

/** Length of a string in Unicode code points (what JSON Schema `maxLength` counts), at most `max + 1` counted. */
function codePoints(s: string, max: number): number {
  if (s.length <= max) return s.length;
  let n = 0;
  for (const _ of s) if (++n > max) break;
  return n;
}

const RULE_FIELD_SET = new Set(RULE_FIELDS);

/**
 * The additional top-level properties of a rule (or a PUT body, or a merged rule) that break the
 * limits: more than {@link RULE_LIMITS}`.extraPropertiesMax` of them, or more than
 * `.extraPropertiesMaxBytes` bytes of JSON together (the UTF-8 size of the object holding only
 * them). At most one error per limit, at the path of the property that crosses it. The store runs
 * this on the rule a PUT produces, which may carry the extra properties of several PUTs.
 * @param rule a JSON object (other values have no additional properties).
 * @returns `CS_RULE_EXTRA_PROPERTIES` errors, in document order; empty when within the limits.
 */
export function extraPropertyErrors(rule: unknown): RuleValidationError[] {
  if (!isJsonObject(rule)) return [];
  const errors: RuleValidationError[] = [];
  const add = (path: string, message: string) => errors.push({ code: "CS_RULE_EXTRA_PROPERTIES", path, message: `${path}: ${message}` });
  let count = 0;
  let bytes = 2; // "{}"
  let countReported = false;
  let sizeReported = false;
  for (const [key, v] of Object.entries(rule)) {
    if (RULE_FIELD_SET.has(key) || v === undefined) continue;
    count++;
    bytes +=
      (count > 1 ? 1 : 0) + Buffer.byteLength(JSON.stringify(key), "utf8") + 1 + Buffer.byteLength(JSON.stringify(v) ?? "null", "utf8");
    if (count > RULE_LIMITS.extraPropertiesMax && !countReported) {
      countReported = true;
      add(
        jsonPath("", key),
        `a rule has at most ${RULE_LIMITS.extraPropertiesMax} additional top-level properties; this is number ${count}`,
      );
    }
    if (bytes > RULE_LIMITS.extraPropertiesMaxBytes && !sizeReported) {
      sizeReported = true;
      add(
        jsonPath("", key),
        `the additional top-level properties of a rule take at most ${RULE_LIMITS.extraPropertiesMaxBytes} bytes of JSON together; with this one they take at least ${bytes}`,
      );
    }
  }
  return errors;
}

const DEFINITION_KEYS: Record<1 | 2 | 3, ReadonlySet<string>> = {
  1: new Set(["name", "operator", "value", "operatorParameters"]),
  2: new Set(["name", "operator", "value", "useScaledValue", "operatorParameters"]),
  3: new Set(["name", "operator", "value"]),
};
const PAYLOAD_KEYS = new Set(["fieldType", "fieldName", "subPayloads"]);
const LEAF_PAYLOAD_KEYS = new Set(["fieldType", "fieldName"]);
const CONFIG_KEYS = new Set(["targetType", "targetMap", "alerts"]);

class Walker {
  /** The problems found, in document order. */
  readonly out = new ProblemCollector<RuleValidationCode, string>();

  /** Records a problem at `path`; its message starts with the path. */
  add(code: RuleValidationCode, path: string, message: string): void {
    this.out.add(code, path === "" ? message : `${path}: ${message}`, path);
  }

  /**
   * A required (or optional) string property; reports and returns false when absent, not a string,
   * longer than `max` characters (`CS_RULE_TOO_LONG`) or empty while `nonEmpty`.
   */
  string(
    o: Json,
    key: string,
    path: string,
    required: boolean,
    code: RuleValidationCode = "CS_RULE_INVALID",
    max = Number.POSITIVE_INFINITY,
    nonEmpty = false,
  ): boolean {
    const p = jsonPath(path, key);
    if (!has(o, key)) {
      if (required) this.add(code, p, "is required (a string)");
      return false;
    }
    const v = o[key];
    if (typeof v !== "string") {
      this.add(code, p, `must be a string, got ${kind(v)}`);
      return false;
    }
    if (nonEmpty && v === "") {
      this.add(code, p, "must not be empty");
      return false;
    }
    return this.length(v, p, max);
  }

  /** Reports `CS_RULE_TOO_LONG` and returns false when `s` has more than `max` characters (code points). */
  length(s: string, path: string, max: number): boolean {
    if (s.length <= max || codePoints(s, max) <= max) return true;
    this.add("CS_RULE_TOO_LONG", path, `must have at most ${max} characters, got ${[...s].length}`);
    return false;
  }

  /** Checks that `v` is an array with a length in [min, max]; returns whether it is an array. */
  array(v: unknown, path: string, min: number, max: number, typeCode: RuleValidationCode, countCode: RuleValidationCode): v is unknown[] {
    if (!Array.isArray(v)) {
      this.add(typeCode, path, `must be an array, got ${kind(v)}`);
      return false;
    }
    if (v.length < min || v.length > max) {
      const range = min === 0 ? `at most ${max}` : `${min} to ${max}`;
      this.add(countCode, path, `must have ${range} items, got ${v.length}`);
    }
    return true;
  }

  /** Reports every item that deep-equals an earlier one (at the later item's path). */
  unique(items: unknown[], path: string): void {
    const seen = new Map<string, number>();
    items.forEach((item, i) => {
      const key = canonical(item);
      const first = seen.get(key);
      if (first === undefined) seen.set(key, i);
      else this.add("CS_RULE_DUPLICATE_ITEM", jsonPath(path, i), `duplicates ${jsonPath(path, first)} (items must be unique)`);
    });
  }

  rule(body: unknown, mode: "create" | "update", chains: readonly ChainId[]): void {
    if (!isJsonObject(body)) {
      this.add("CS_RULE_INVALID", "", `the rule must be a JSON object, got ${kind(body)}`);
      return;
    }
    const required = mode === "create";
    this.string(body, "name", "", required, "CS_RULE_INVALID", RULE_LIMITS.nameMaxLength);
    if (has(body, "maxConfirmationCount") || required) {
      const v = body.maxConfirmationCount;
      if (!has(body, "maxConfirmationCount")) this.add("CS_RULE_INVALID", "maxConfirmationCount", "is required (an integer >= 0)");
      else if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
        this.add("CS_RULE_INVALID", "maxConfirmationCount", `must be an integer >= 0, got ${JSON.stringify(v)}`);
      }
    }
    const chainOk = ["technology", "blockchain", "network"].map((k) => this.string(body, k, "", required));
    if (chainOk.every(Boolean) || (!required && chainOk.some(Boolean))) this.chain(body, chains);
    if (has(body, "config")) this.config(body.config, "config");
    else if (required) this.add("CS_RULE_INVALID", "config", "is required (an object with targetType, targetMap and alerts)");
    if (has(body, "description") && body.description !== null) {
      if (typeof body.description !== "string") {
        this.add("CS_RULE_INVALID", "description", `must be a string or null, got ${kind(body.description)}`);
      } else this.length(body.description, "description", RULE_LIMITS.descriptionMaxLength);
    }
    if (has(body, "version") && !(typeof body.version === "number" && Number.isInteger(body.version))) {
      this.add("CS_RULE_INVALID", "version", `must be an integer, got ${JSON.stringify(body.version)}`);
    }
    if (has(body, "state") && !(RULE_STATES as readonly unknown[]).includes(body.state)) {
      this.add("CS_RULE_INVALID", "state", `must be one of ${list(RULE_STATES)}, got ${JSON.stringify(body.state)}`);
    }
    if (has(body, "sendPendingAlerts") && typeof body.sendPendingAlerts !== "boolean") {
      this.add("CS_RULE_INVALID", "sendPendingAlerts", `must be a boolean, got ${kind(body.sendPendingAlerts)}`);
    }
    this.out.addAll(extraPropertyErrors(body));
  }

  /** The chain fields present (all three on create) must match one served chain; reports the first field that cannot. */
  chain(body: Json, chains: readonly ChainId[]): void {
    const fields = (["technology", "blockchain", "network"] as const).filter((k) => typeof body[k] === "string");
    let candidates = chains;
    for (const f of fields) {
      candidates = candidates.filter((c) => c[f] === body[f]);
      if (candidates.length === 0) {
        const served = chains.map((c) => `${c.technology}/${c.blockchain}/${c.network}`).join(", ") || "none";
        this.add(
          "CS_RULE_UNKNOWN_CHAIN",
          f,
          `${JSON.stringify(body[f])} does not name a chain this deployment serves (technology/blockchain/network served: ${served})`,
        );
        return;
      }
    }
  }

  config(cfg: unknown, path: string): void {
    if (!isJsonObject(cfg)) {
      this.add("CS_RULE_INVALID", path, `must be an object, got ${kind(cfg)}`);
      return;
    }
    for (const key of Object.keys(cfg)) {
      if (!CONFIG_KEYS.has(key))
        this.add("CS_RULE_INVALID", jsonPath(path, key), "unknown property (config allows only targetType, targetMap, alerts)");
    }
    const tt = jsonPath(path, "targetType");
    if (!has(cfg, "targetType")) this.add("CS_RULE_INVALID", tt, `is required (one of ${list(TARGET_TYPES)})`);
    else if (!(TARGET_TYPES as readonly unknown[]).includes(cfg.targetType)) {
      this.add("CS_RULE_INVALID", tt, `must be one of ${list(TARGET_TYPES)}, got ${JSON.stringify(cfg.targetType)}`);
    }
    const tm = jsonPath(path, "targetMap");
    if (!has(cfg, "targetMap")) this.add("CS_RULE_INVALID", tm, "is required (an array of 1 to 10 target definitions)");
    else if (this.array(cfg.targetMap, tm, RULE_LIMITS.targetMapMin, RULE_LIMITS.targetMapMax, "CS_RULE_INVALID", "CS_RULE_ITEM_COUNT")) {
      this.unique(cfg.targetMap, tm);
      cfg.targetMap.forEach((d, i) => {
        this.definition(d, jsonPath(tm, i), 1);
      });
    }
    const al = jsonPath(path, "alerts");
    if (!has(cfg, "alerts")) this.add("CS_RULE_INVALID", al, "is required (an array of 1 to 10 alert definitions)");
    else if (this.array(cfg.alerts, al, RULE_LIMITS.alertsMin, RULE_LIMITS.alertsMax, "CS_RULE_INVALID", "CS_RULE_ITEM_COUNT")) {
      this.unique(cfg.alerts, al);
      cfg.alerts.forEach((a, i) => {
        this.alert(a, jsonPath(al, i));
      });
    }
  }

  definition(def: unknown, path: string, level: 1 | 2 | 3): void {
    if (!isJsonObject(def)) {
      this.add("CS_RULE_INVALID", path, `must be an object, got ${kind(def)}`);
      return;
    }
    for (const key of Object.keys(def)) {
      if (DEFINITION_KEYS[level].has(key)) continue;
      if (key === "useScaledValue") {
        this.add(
          "CS_RULE_INVALID",
          jsonPath(path, key),
          "useScaledValue is allowed only in second-level definitions (items of a top-level Inspect)",
        );
      } else if (level === 3 && key === "operatorParameters") {
        this.add(
          "CS_RULE_TOO_DEEP",
          jsonPath(path, key),
          "third-level definitions have no operatorParameters: Inspect goes at most two levels deep",
        );
      } else {
        this.add("CS_RULE_INVALID", jsonPath(path, key), `unknown property (allowed: ${list([...DEFINITION_KEYS[level]])})`);
      }
    }
    this.string(def, "name", path, true, "CS_RULE_INVALID", RULE_LIMITS.definitionNameMaxLength, true);

    const opPath = jsonPath(path, "operator");
    let op: Operator | undefined;
    if (!has(def, "operator")) this.add("CS_RULE_INVALID", opPath, `is required (one of ${list(OPERATORS)})`);
    else if (!(OPERATORS as readonly unknown[]).includes(def.operator)) {
      this.add("CS_RULE_INVALID", opPath, `must be one of ${list(OPERATORS)}, got ${JSON.stringify(def.operator)}`);
    } else if (level === 3 && def.operator === "Inspect") {
      this.add("CS_RULE_TOO_DEEP", opPath, "Inspect is not allowed in third-level definitions: Inspect goes at most two levels deep");
    } else op = def.operator as Operator;

    this.value(def, path, op, level);

    if (level === 2 && has(def, "useScaledValue") && typeof def.useScaledValue !== "boolean") {
      this.add("CS_RULE_INVALID", jsonPath(path, "useScaledValue"), `must be a boolean, got ${kind(def.useScaledValue)}`);
    }
    if (level === 3) return;

    const ppPath = jsonPath(path, "operatorParameters");
    const pp = def.operatorParameters;
    const present = has(def, "operatorParameters") && pp !== null;
    const next = (level + 1) as 2 | 3;
    if (op === "Inspect") {
      if (!present) {
        this.add("CS_RULE_OPERATOR_PARAMETERS", ppPath, "is required when operator is Inspect (an array of 1 to 10 definitions)");
      } else if (
        this.array(
          pp,
          ppPath,
          RULE_LIMITS.operatorParametersMin,
          RULE_LIMITS.operatorParametersMax,
          "CS_RULE_OPERATOR_PARAMETERS",
          "CS_RULE_ITEM_COUNT",
        )
      ) {
        pp.forEach((d, i) => {
          this.definition(d, jsonPath(ppPath, i), next);
        });
      }
    } else if (op !== undefined) {
      if (present)
        this.add("CS_RULE_OPERATOR_PARAMETERS", ppPath, `must be null or absent unless operator is Inspect (operator is "${op}")`);
    } else if (present) {
      // Unknown operator: still report what is wrong below, without guessing which rule applies.
      if (Array.isArray(pp)) {
        pp.forEach((d, i) => {
          this.definition(d, jsonPath(ppPath, i), next);
        });
      } else this.add("CS_RULE_OPERATOR_PARAMETERS", ppPath, `must be an array or null, got ${kind(pp)}`);
    }
  }

  /**
   * Value rule at every level: an array of strings for the Equals any operators, a string otherwise;
   * absent, null or a string for Inspect (not used). At levels 1 and 2 an equality operator may come
   * without value (absent or null: "the attribute has no value"), except with `useScaledValue: true`;
   * ordering operators always need one, and so does every operator at level 3 (the contract).
   */
  value(def: Json, path: string, op: Operator | undefined, level: 1 | 2 | 3): void {
    const p = jsonPath(path, "value");
    const present = has(def, "value");
    const v = def.value;
    if (op === undefined) {
      if (present && v !== null && typeof v !== "string" && !Array.isArray(v)) {
        this.add("CS_RULE_VALUE_TYPE", p, `must be a string or an array of strings, got ${kind(v)}`);
      }
      return;
    }
    if (op === "Inspect") {
      if (typeof v === "string") this.length(v, p, RULE_LIMITS.valueMaxLength);
      else if (present && v !== null) {
        this.add("CS_RULE_VALUE_TYPE", p, `must be a string, null or absent for operator "Inspect" (it is not used), got ${kind(v)}`);
      }
      return;
    }
    const array = ARRAY_OPERATORS.includes(op);
    const expected = array ? "an array of strings" : "a string";
    if (!present || v === null) {
      if (level === 3) {
        if (!present) this.add("CS_RULE_VALUE_TYPE", p, `is required at the third level (${expected} for operator "${op}")`);
        else this.add("CS_RULE_VALUE_TYPE", p, `must be ${expected} for operator "${op}" at the third level, got null`);
      } else if (!EQUALITY_OPERATORS.includes(op)) {
        const what = present ? "must not be null" : "is required";
        this.add("CS_RULE_VALUE_TYPE", p, `${what} for operator "${op}" (${expected}; only equality operators may omit it)`);
      } else if (def.useScaledValue === true) {
        this.add("CS_RULE_VALUE_TYPE", p, `is required when useScaledValue is true (${expected} for operator "${op}")`);
      }
      return;
    }
    if (array) {
      if (!Array.isArray(v)) this.add("CS_RULE_VALUE_TYPE", p, `must be an array of strings for operator "${op}", got ${kind(v)}`);
      else {
        v.forEach((item, i) => {
          if (typeof item !== "string") this.add("CS_RULE_VALUE_TYPE", jsonPath(p, i), `must be a string, got ${kind(item)}`);
          else this.length(item, jsonPath(p, i), RULE_LIMITS.valueMaxLength);
        });
      }
    } else if (typeof v !== "string") {
      const hint = Array.isArray(v) ? ` (only ${list(ARRAY_OPERATORS)} take an array)` : "";
      this.add("CS_RULE_VALUE_TYPE", p, `must be a string for operator "${op}", got ${kind(v)}${hint}`);
    } else this.length(v, p, RULE_LIMITS.valueMaxLength);
  }

  alert(a: unknown, path: string): void {
    if (!isJsonObject(a)) {
      this.add("CS_RULE_INVALID", path, `must be an object, got ${kind(a)}`);
      return;
    }
    const tp = jsonPath(path, "type");
    let type: AlertType | undefined;
    if (!has(a, "type")) this.add("CS_RULE_INVALID", tp, `is required (one of ${list(ALERT_TYPES)})`);
    else if (!(ALERT_TYPES as readonly unknown[]).includes(a.type)) {
      this.add("CS_RULE_INVALID", tp, `must be one of ${list(ALERT_TYPES)}, got ${JSON.stringify(a.type)}`);
    } else type = a.type as AlertType;

    const pp = jsonPath(path, "parameters");
    if (!has(a, "parameters")) this.add("CS_RULE_ALERT_PARAMETERS", pp, "is required (an object; its content depends on type)");
    else if (!isJsonObject(a.parameters)) this.add("CS_RULE_ALERT_PARAMETERS", pp, `must be an object, got ${kind(a.parameters)}`);
    else if (type !== undefined) this.parameters(type, a.parameters, pp);

    if (has(a, "payload") && a.payload !== null) {
      const p = jsonPath(path, "payload");
      if (this.array(a.payload, p, 0, RULE_LIMITS.payloadMax, "CS_RULE_PAYLOAD", "CS_RULE_ITEM_COUNT")) {
        this.unique(a.payload, p);
        a.payload.forEach((item, i) => {
          this.payloadItem(item, jsonPath(p, i), 1);
        });
      }
    }
  }

  parameters(type: AlertType, params: Json, path: string): void {
    const code = "CS_RULE_ALERT_PARAMETERS";
    const url = () => {
      if (this.string(params, "url", path, true, code, RULE_LIMITS.urlMaxLength) && !isHttpUrl(params.url as string)) {
        const problem = urlProblem(params.url as string);
        const message = problem ?? "must be an absolute http:// or https:// URL with a valid host (name, IPv4 or [IPv6]) and port";
        this.add(code, jsonPath(path, "url"), `${message}, got ${JSON.stringify(params.url)}`);
      }
    };
    switch (type) {
      case "Email": {
        const rp = jsonPath(path, "recipients");
        if (!has(params, "recipients")) this.add(code, rp, "is required (an array of e-mail addresses)");
        else if (Array.isArray(params.recipients) && params.recipients.length > RULE_LIMITS.recipientsMax) {
          this.add(
            "CS_RULE_ITEM_COUNT",
            rp,
            `must have 1 to ${RULE_LIMITS.recipientsMax} items, got ${params.recipients.length} (use a mailing list for more)`,
          );
        } else if (this.array(params.recipients, rp, 1, RULE_LIMITS.recipientsMax, code, code)) {
          params.recipients.forEach((r, i) => {
            if (typeof r !== "string") this.add(code, jsonPath(rp, i), `must be an e-mail address (a string), got ${kind(r)}`);
            else if (codePoints(r, RULE_LIMITS.emailMaxLength) > RULE_LIMITS.emailMaxLength || !isEmailAddress(r)) {
              this.add(code, jsonPath(rp, i), `must be an e-mail address like local@example.com, got ${JSON.stringify(r)}`);
            }
          });
        }
        return;
      }
      case "Slack":
        url();
        this.string(params, "text", path, true, code, RULE_LIMITS.slackTextMaxLength);
        for (const k of ["channel", "username"]) this.string(params, k, path, true, code, RULE_LIMITS.slackNameMaxLength);
        return;
      default:
        url();
    }
  }

  payloadItem(item: unknown, path: string, level: 1 | 2 | 3): void {
    const code = "CS_RULE_PAYLOAD";
    if (!isJsonObject(item)) {
      this.add(code, path, `must be an object, got ${kind(item)}`);
      return;
    }
    const allowed = level === 3 ? LEAF_PAYLOAD_KEYS : PAYLOAD_KEYS;
    for (const key of Object.keys(item)) {
      if (allowed.has(key)) continue;
      if (level === 3 && key === "subPayloads") {
        this.add("CS_RULE_TOO_DEEP", jsonPath(path, key), "payload items below a sub-payload have only fieldType (Field) and fieldName");
      } else this.add(code, jsonPath(path, key), `unknown property (allowed: ${list([...allowed])})`);
    }
    const ftPath = jsonPath(path, "fieldType");
    let fieldType: "Field" | "Sub Field" | undefined;
    if (!has(item, "fieldType")) this.add(code, ftPath, 'is required ("Field" or "Sub Field")');
    else if (item.fieldType !== "Field" && item.fieldType !== "Sub Field") {
      this.add(code, ftPath, `must be "Field" or "Sub Field", got ${JSON.stringify(item.fieldType)}`);
    } else if (level === 3 && item.fieldType === "Sub Field") {
      this.add("CS_RULE_TOO_DEEP", ftPath, 'payload items below a sub-payload must be "Field": sub-payloads nest at most two levels deep');
    } else fieldType = item.fieldType;
    this.string(item, "fieldName", path, true, code, RULE_LIMITS.fieldNameMaxLength);
    if (level === 3) return;

    const sp = jsonPath(path, "subPayloads");
    const present = has(item, "subPayloads") && item.subPayloads !== null;
    const next = (level + 1) as 2 | 3;
    const descend = (items: unknown[]) => {
      this.unique(items, sp);
      items.forEach((child, i) => {
        this.payloadItem(child, jsonPath(sp, i), next);
      });
    };
    if (fieldType === "Sub Field") {
      if (!present) this.add(code, sp, "is required when fieldType is Sub Field (an array of 1 to 10 payload items)");
      else if (this.array(item.subPayloads, sp, RULE_LIMITS.subPayloadsMin, RULE_LIMITS.subPayloadsMax, code, "CS_RULE_ITEM_COUNT")) {
        descend(item.subPayloads);
      }
    } else if (fieldType === "Field") {
      if (present) this.add(code, sp, "must be null or absent when fieldType is Field");
    } else if (present) {
      if (Array.isArray(item.subPayloads)) descend(item.subPayloads);
      else this.add(code, sp, `must be an array or null, got ${kind(item.subPayloads)}`);
    }
  }
}

/**
 * The hand-written checks of {@link validateRuleInput} alone, without the schema backstop (exported
 * so tests can prove the checks and the published schema agree). Same parameters as
 * {@link validateRuleInput}.
 * @returns every problem found, in document order; empty when the checks pass.
 */
export function findRuleErrors(body: unknown, mode: "create" | "update", chains: readonly ChainId[]): RuleValidationError[] {
  const walker = new Walker();
  walker.rule(body, mode, chains);
  return walker.out.problems;
}

/**
 * Validates a rule body (POST in `create` mode, PUT in `update` mode) against the rule schema and the
 * chains this deployment serves.
 *
 * - create: name, maxConfirmationCount, technology, blockchain, network and config are required;
 *   the returned value has the defaults applied: `state` `"enabled"`, `sendPendingAlerts` `false`,
 *   `description` `null`.
 * - update: every field is optional and no default is applied (absent = unchanged). `version`,
 *   when present, is the version the client expects to replace.
 * - both: technology/blockchain/network, when present, must match a chain in `chains`
 *   (`CS_RULE_UNKNOWN_CHAIN`); additional top-level properties are kept; the reserved
 *   `id`, `accountId`, `createdAt`, `updatedAt` are dropped.
 *
 * Never throws: every problem found is returned, each with a stable code and the JSON path of the
 * deepest offending value (see {@link RuleValidationError}).
 *
 * ```ts
 * const checked = validateRuleInput(request.body, "create", [config.chain]);
 * if (!checked.ok) throw new ApiError(ruleValidationDetails(checked.errors)); // api/routes/rules
 * ```
 * @param body the parsed JSON body (anything).
 * @param mode `"create"` (POST) or `"update"` (PUT).
 * @param chains the chains this deployment serves (usually `[config.chain]`).
 * @returns `{ok: true, value}`: the {@link RuleInput} (create, defaults applied) or {@link RulePatch}
 *   (update), reserved fields dropped; or `{ok: false, errors}`: every {@link RuleValidationError}
 *   (`{code, message, path}`, codes {@link RuleValidationCode}) in document order.
 * @throws never: every problem is returned.
 */
export function validateRuleInput(body: unknown, mode: "create", chains: readonly ChainId[]): RuleValidationResult<RuleInput>;
export function validateRuleInput(body: unknown, mode: "update", chains: readonly ChainId[]): RuleValidationResult<RulePatch>;
export function validateRuleInput(
  body: unknown,
  mode: "create" | "update",
  chains: readonly ChainId[],
): RuleValidationResult<RuleInput> | RuleValidationResult<RulePatch>;
export function validateRuleInput(
  body: unknown,
  mode: "create" | "update",
  chains: readonly ChainId[],
): RuleValidationResult<RuleInput | RulePatch> {
  const found = findRuleErrors(body, mode, chains);
  if (found.length > 0) return { ok: false, errors: found };

  // Backstop: the published schema must accept what we accept.
  const validator = mode === "create" ? createValidator : updateValidator;
  if (!validator.Check(body)) {
    const errors = validator.Errors(body);
    const deepest = errors.reduce((a, b) => (b.instancePath.length > a.instancePath.length ? b : a), errors[0]!);
    const path = pointerToPath(deepest?.instancePath ?? "");
    const message = deepest?.message ?? "does not match the rule schema";
    return { ok: false, errors: [{ code: "CS_RULE_INVALID", path, message: path === "" ? message : `${path}: ${message}` }] };
  }

  const value: Json = { ...(body as Json) };
  for (const key of RESERVED_RULE_FIELDS) delete value[key];
  if (mode === "create") {
    value.state ??= "enabled";
    value.sendPendingAlerts ??= false;
    value.description ??= null;
  }
  return { ok: true, value: value as RuleInput | RulePatch };
}
