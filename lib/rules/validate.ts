/**
 * Validation of alerting rules sent to the API (POST and PUT bodies), against the rule schema of
 * lib/rules/schema.ts.
 *
 * {@link validateRuleInput} checks a body with {@link checkAgainstSchema} (lib/validation/): every
 * problem TypeBox finds, at the JSON path of the deepest offending value
 * (`config.targetMap[0].operatorParameters[1].value`), gets its stable code from one table,
 * {@link RULE_CODE_TABLE} (by keyword and path shape). By hand, only what a schema cannot say:
 * - the chain fields must name a chain this deployment serves (`CS_RULE_UNKNOWN_CHAIN`);
 * - the count and size of the additional top-level properties ({@link extraPropertyErrors});
 * - a webhook or Slack URL that matches the URL grammar must also parse with the WHATWG URL parser
 *   once its `{field}` tokens are filled in (what delivery does);
 * - the `{field}` tokens of message templates must be field paths (`templateProblems`).
 * Then the compiled schema runs as a backstop: a body accepted above but refused by the schema is
 * still refused (`CS_RULE_INVALID`). See `docs/rules.md` for the rules in prose and every code.
 * @module
 */
import { Compile } from "typebox/compile";
import { templateProblems } from "../alerting/template.js";
import type { ChainId } from "../config/index.js";
import { jsonPath, pointerToPath } from "../validation/path.js";
import { isJsonObject, type ValidationResult } from "../validation/problems.js";
import { checkAgainstSchema, type SchemaIssue } from "../validation/schema-check.js";
import type { RuleInput } from "./model.js";
import { HTTP_URL_PATTERN, RULE_FIELDS, RULE_LIMITS, RuleCreateSchema, RuleUpdateSchema } from "./schema.js";
import { sequenceErrors } from "./schema-sequence.js";
import { stateErrors } from "./schema-state.js";
import { windowErrors } from "./schema-window.js";

export * from "./schema.js";

const createValidator = Compile(RuleCreateSchema);
const updateValidator = Compile(RuleUpdateSchema);

// ---------------------------------------------------------------------------------------------
// Errors and results
// ---------------------------------------------------------------------------------------------

/**
 * Stable codes of {@link RuleValidationError} (the API answers each with 400, api/routes/rules/errors.ts; codes given by {@link RULE_CODE_TABLE}):
 * - `CS_RULE_INVALID`: generic — wrong type, missing required field, unknown property where none are allowed, value not in an enumeration;
 * - `CS_RULE_UNKNOWN_CHAIN`: technology/blockchain/network do not name a chain this deployment serves;
 * - `CS_RULE_ITEM_COUNT`: an array has too few or too many items (targetMap, alerts, payload, operatorParameters, subPayloads);
 * - `CS_RULE_DUPLICATE_ITEM`: an item deep-equals an earlier item of the same array (targetMap, alerts, payload, subPayloads);
 * - `CS_RULE_VALUE_TYPE`: `value` missing or of the wrong type for the operator (array of strings for the Equals any operators, string otherwise);
 * - `CS_RULE_OPERATOR_PARAMETERS`: operatorParameters missing for Inspect, not null for another operator, or not an array;
 * - `CS_RULE_TOO_DEEP`: nesting beyond what the schema allows (Inspect or operatorParameters at the third level; Sub Field or subPayloads one level below a sub-payload);
 * - `CS_RULE_PAYLOAD`: a payload item breaks the payload rules (fieldType, fieldName, subPayloads by fieldType, unknown property);
 * - `CS_RULE_ALERT_PARAMETERS`: an alert's parameters do not fit its type (missing field, bad e-mail address, URL not absolute http(s), a `{field}` template in a URL's host, a Telegram chat that is not an id or `@username`, a message-template token that is not a field path);
 * - `CS_RULE_PAGERDUTY_PARAMETERS`: a `PagerDuty` action's `routingKey` is missing or not 32 letters and digits, or its `severity` is not `critical`, `error`, `warning` or `info`;
 * - `CS_RULE_OPSGENIE_PARAMETERS`: an `Opsgenie` action's `apiKey` is missing or not 20–64 letters, digits and dashes, or its `priority` is not `P1`–`P5`;
 * - `CS_RULE_TOO_LONG`: a string is longer than its cap in {@link RULE_LIMITS} (name, description, definition names, values, URLs, Slack fields, payload field names; an over-long e-mail address is `CS_RULE_ALERT_PARAMETERS`, like any address that is not one);
 * - `CS_RULE_KAFKA_PARAMETERS`: a `Kafka` action's parameters are wrong (brokers not `host:port`, a topic name Kafka refuses, an unknown key or SASL mechanism, `avro` without its `schemaRegistryUrl`, a value over its cap in `KAFKA_LIMITS`);
 * - `CS_RULE_EXTRA_PROPERTIES`: more than {@link RULE_LIMITS}`.extraPropertiesMax` additional top-level properties, or more than `.extraPropertiesMaxBytes` of them (path: the property that crosses the limit);
 * - `CS_RULE_NOT_SUPPORTED`: a top-level property reserved for a planned extension ({@link RESERVED_EXTENSIONS}, or the parts of `stateCondition` not evaluated yet: lib/rules/schema-state.ts);
 * - `CS_RULE_WINDOW_TOO_LARGE`, `CS_RULE_AGGREGATE_NOT_NUMERIC`, `CS_RULE_GROUPBY_CARDINALITY`: the `window` extension (lib/rules/schema-window.ts);
 * - `CS_RULE_SEQUENCE_PENDING_CAP`: the `sequence` extension's `maxPending` above its cap (lib/rules/schema-sequence.ts).
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
  | "CS_RULE_PAGERDUTY_PARAMETERS"
  | "CS_RULE_OPSGENIE_PARAMETERS"
  | "CS_RULE_KAFKA_PARAMETERS"
  | "CS_RULE_TOO_LONG"
  | "CS_RULE_EXTRA_PROPERTIES"
  | "CS_RULE_NOT_SUPPORTED"
  | "CS_RULE_WINDOW_TOO_LARGE"
  | "CS_RULE_AGGREGATE_NOT_NUMERIC"
  | "CS_RULE_GROUPBY_CARDINALITY"
  | "CS_RULE_SEQUENCE_PENDING_CAP";

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
  "CS_RULE_PAGERDUTY_PARAMETERS",
  "CS_RULE_OPSGENIE_PARAMETERS",
  "CS_RULE_KAFKA_PARAMETERS",
  "CS_RULE_TOO_LONG",
  "CS_RULE_EXTRA_PROPERTIES",
  "CS_RULE_NOT_SUPPORTED",
  "CS_RULE_WINDOW_TOO_LARGE",
  "CS_RULE_AGGREGATE_NOT_NUMERIC",
  "CS_RULE_GROUPBY_CARDINALITY",
  "CS_RULE_SEQUENCE_PENDING_CAP",
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
// From schema problems to codes
// ---------------------------------------------------------------------------------------------

/** One row of {@link RULE_CODE_TABLE}. */
export interface RuleCodeRow {
  /** The code given to a matching problem. */
  code: RuleValidationCode;
  /** Matches problems with one of these keywords ({@link SchemaIssue.keyword}); any when absent. */
  keyword?: readonly string[];
  /** Matches problems whose path shape (indices as `[]`, {@link SchemaIssue.shape}) matches; any when absent. */
  shape?: RegExp;
  /** Matches only problems whose offending value is this one. */
  value?: unknown;
  /** Replaces the schema's explanation. */
  message?: (issue: SchemaIssue) => string;
}

/** The paths of a `Kafka` action's own parameters (lib/rules/schema.ts `KafkaParametersSchema`). */
const KAFKA_PARAMETER_SHAPE = /^config\.alerts\[\]\.parameters\.(brokers|topic|key|avro|ssl|sslCa|sasl)(\[\]|\.|$)/;
const THIRD_LEVEL = /operatorParameters\[\]\.operatorParameters\[\]\./;
const BELOW_SUB_PAYLOAD = /subPayloads\[\]\.subPayloads\[\]\./;
const TOO_DEEP_DEFINITION = "Inspect goes at most two levels deep";
const TOO_DEEP_PAYLOAD = "sub-payloads nest at most two levels deep";

/**
 * The code of each schema problem: the first row that matches (keyword, path shape, value) gives it.
 * The last row matches everything (`CS_RULE_INVALID`). The rows follow {@link RuleValidationCode}.
 */
export const RULE_CODE_TABLE: readonly RuleCodeRow[] = [
  {
    code: "CS_RULE_ITEM_COUNT",
    keyword: ["maxItems"],
    shape: /\.recipients$/,
    message: (i) => `must have 1 to ${RULE_LIMITS.recipientsMax} items, got ${(i.value as unknown[]).length} (use a mailing list for more)`,
  },
  { code: "CS_RULE_ALERT_PARAMETERS", shape: /\.recipients(\[\])?$/ },
  { code: "CS_RULE_KAFKA_PARAMETERS", shape: KAFKA_PARAMETER_SHAPE },
  { code: "CS_RULE_TOO_LONG", keyword: ["maxLength"] },
  { code: "CS_RULE_ITEM_COUNT", keyword: ["minItems", "maxItems"] },
  { code: "CS_RULE_DUPLICATE_ITEM", keyword: ["uniqueItems"] },
  {
    code: "CS_RULE_TOO_DEEP",
    shape: new RegExp(`${THIRD_LEVEL.source}operatorParameters$`),
    message: () => `third-level definitions have no operatorParameters: ${TOO_DEEP_DEFINITION}`,
  },
  {
    code: "CS_RULE_TOO_DEEP",
    shape: new RegExp(`${THIRD_LEVEL.source}operator$`),
    value: "Inspect",
    message: () => `Inspect is not allowed in third-level definitions: ${TOO_DEEP_DEFINITION}`,
  },
  {
    code: "CS_RULE_TOO_DEEP",
    shape: new RegExp(`${BELOW_SUB_PAYLOAD.source}subPayloads$`),
    message: () => `payload items below a sub-payload have only fieldType (Field) and fieldName: ${TOO_DEEP_PAYLOAD}`,
  },
  {
    code: "CS_RULE_TOO_DEEP",
    shape: new RegExp(`${BELOW_SUB_PAYLOAD.source}fieldType$`),
    value: "Sub Field",
    message: () => `payload items below a sub-payload must be "Field": ${TOO_DEEP_PAYLOAD}`,
  },
  {
    code: "CS_RULE_INVALID",
    keyword: ["additionalProperties"],
    shape: /\.useScaledValue$/,
    message: () => "useScaledValue is allowed only in second-level definitions (items of a top-level Inspect)",
  },
  { code: "CS_RULE_VALUE_TYPE", shape: /\.value(\[\])?$/ },
  { code: "CS_RULE_OPERATOR_PARAMETERS", shape: /\.operatorParameters$/ },
  { code: "CS_RULE_PAYLOAD", shape: /\.(payload|subPayloads)(\[\]|$)/ },
  {
    code: "CS_RULE_ALERT_PARAMETERS",
    keyword: ["pattern"],
    shape: /\.parameters\.url$/,
    message: (i) => `${urlProblem(String(i.value)) ?? URL_EXPECTED}, got ${JSON.stringify(i.value)}`,
  },
  {
    code: "CS_RULE_ALERT_PARAMETERS",
    keyword: ["pattern"],
    shape: /\.parameters\.(template|subject)$/,
    message: (i) => templateProblems(String(i.value)).join("; ") || "is not a message template",
  },
  {
    code: "CS_RULE_PAGERDUTY_PARAMETERS",
    keyword: ["pattern"],
    shape: /^config\.alerts\[\]\.parameters\.routingKey$/,
    message: () => "must be the 32-character integration key (letters and digits) of a PagerDuty Events API v2 integration",
  },
  { code: "CS_RULE_PAGERDUTY_PARAMETERS", shape: /^config\.alerts\[\]\.parameters\.(routingKey|severity)$/ },
  {
    code: "CS_RULE_OPSGENIE_PARAMETERS",
    keyword: ["pattern"],
    shape: /^config\.alerts\[\]\.parameters\.apiKey$/,
    message: () => "must be the API key (20 to 64 letters, digits and dashes) of an Opsgenie API integration",
  },
  { code: "CS_RULE_OPSGENIE_PARAMETERS", shape: /^config\.alerts\[\]\.parameters\.(apiKey|priority)$/ },
  { code: "CS_RULE_ALERT_PARAMETERS", shape: /^config\.alerts\[\]\.parameters(\.|$)/ },
  { code: "CS_RULE_INVALID" },
];

const URL_EXPECTED = "must be an absolute http:// or https:// URL with a valid host (name, IPv4 or [IPv6]) and port";

/** The {@link RuleValidationError} of a schema problem, coded by {@link RULE_CODE_TABLE}. */
function coded(issue: SchemaIssue): RuleValidationError {
  const row = RULE_CODE_TABLE.find(
    (r) =>
      (r.keyword === undefined || r.keyword.includes(issue.keyword)) &&
      (r.shape === undefined || r.shape.test(issue.shape)) &&
      (!("value" in r) || r.value === issue.value),
  );
  const text = row?.message?.(issue) ?? issue.message;
  return { code: row?.code ?? "CS_RULE_INVALID", path: issue.path, message: issue.path === "" ? text : `${issue.path}: ${text}` };
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
  try {
    const parsed = new URL(url.replace(/\{[^{}]*\}/g, "x"));
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.hostname !== "";
  } catch {
    return false;
  }
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

const CHAIN_FIELDS = ["technology", "blockchain", "network"] as const;

/**
 * The chain fields present as strings (all three on create, else none is checked) must match one
 * served chain; reports the first field that cannot (`CS_RULE_UNKNOWN_CHAIN`).
 */
function chainErrors(body: Record<string, unknown>, mode: "create" | "update", chains: readonly ChainId[]): RuleValidationError[] {
  const fields = CHAIN_FIELDS.filter((k) => typeof body[k] === "string");
  if (fields.length === 0 || (mode === "create" && fields.length < CHAIN_FIELDS.length)) return [];
  let candidates = chains;
  for (const f of fields) {
    candidates = candidates.filter((c) => c[f] === body[f]);
    if (candidates.length === 0) {
      const served = chains.map((c) => `${c.technology}/${c.blockchain}/${c.network}`).join(", ") || "none";
      const message = `${f}: ${JSON.stringify(body[f])} does not name a chain this deployment serves (technology/blockchain/network served: ${served})`;
      return [{ code: "CS_RULE_UNKNOWN_CHAIN", path: f, message }];
    }
  }
  return [];
}

/** Webhook and Slack URLs that match {@link HTTP_URL_PATTERN} (no schema problem at their path) but do not parse. */
function urlErrors(body: Record<string, unknown>, flagged: ReadonlySet<string>): RuleValidationError[] {
  const config = body.config;
  if (!isJsonObject(config) || !Array.isArray(config.alerts)) return [];
  return config.alerts.flatMap((alert, i) => {
    if (!isJsonObject(alert) || alert.type === "Email" || !isJsonObject(alert.parameters)) return [];
    const url = alert.parameters.url;
    const path = jsonPath(jsonPath(jsonPath("config.alerts", i), "parameters"), "url");
    if (typeof url !== "string" || flagged.has(path) || isHttpUrl(url)) return [];
    return [{ code: "CS_RULE_ALERT_PARAMETERS" as const, path, message: `${path}: ${URL_EXPECTED}, got ${JSON.stringify(url)}` }];
  });
}

/** Template fields of alert parameters whose `{field}` tokens are checked on save. */
const TEMPLATE_FIELDS = ["subject", "template"] as const;

/**
 * Message templates (`parameters.template`, Email `parameters.subject`) that are strings within
 * their caps (no schema problem at their path) but hold a token that is not a field path, or an
 * unknown `{alert.…}` / `{explorer.…}` field (`templateProblems`, lib/alerting/template.ts).
 */
function templateErrors(body: Record<string, unknown>, flagged: ReadonlySet<string>): RuleValidationError[] {
  const config = body.config;
  if (!isJsonObject(config) || !Array.isArray(config.alerts)) return [];
  return config.alerts.flatMap((alert, i) => {
    if (!isJsonObject(alert) || !isJsonObject(alert.parameters)) return [];
    const parameters = alert.parameters;
    return TEMPLATE_FIELDS.flatMap((field) => {
      const text = parameters[field];
      const path = jsonPath(jsonPath(jsonPath("config.alerts", i), "parameters"), field);
      if (typeof text !== "string" || flagged.has(path)) return [];
      return templateProblems(text).map((problem) => ({ code: "CS_RULE_ALERT_PARAMETERS" as const, path, message: `${path}: ${problem}` }));
    });
  });
}

/** Rank of a problem in document order: the position of its top-level field in the schema, additional properties last. */
function topLevelRank(path: string): number {
  const key = /^[^.[]+/.exec(path)?.[0] ?? "";
  const at = RULE_FIELDS.indexOf(key);
  return at === -1 ? RULE_FIELDS.length : at;
}

/**
 * Every problem of a rule body: the schema problems coded by {@link RULE_CODE_TABLE}, then the
 * hand checks (chain, URL parsing, additional properties), merged in document order. This is
 * {@link validateRuleInput} without the schema backstop (exported so tests can prove the checks and
 * the published schema agree). Same parameters as {@link validateRuleInput}.
 * @returns every problem found, in document order; empty when the checks pass.
 */
export function findRuleErrors(body: unknown, mode: "create" | "update", chains: readonly ChainId[]): RuleValidationError[] {
  const schema = mode === "create" ? RuleCreateSchema : RuleUpdateSchema;
  // The compiled schema answers a valid body at once; the walk (slower) only explains a refusal.
  const accepted = (mode === "create" ? createValidator : updateValidator).Check(body);
  const issues = accepted ? [] : checkAgainstSchema(body, schema).filter((i) => i.keyword !== "maxProperties");
  const errors = issues.map(coded);
  if (!isJsonObject(body)) return errors;
  const flagged = new Set(issues.map((i) => i.path));
  const extra = [
    ...chainErrors(body, mode, chains),
    ...urlErrors(body, flagged),
    ...templateErrors(body, flagged),
    ...extraPropertyErrors(body),
    ...confirmOnErrors(body),
    ...reservedExtensionErrors(body),
    ...stateErrors(body),
    ...windowErrors(body),
    ...sequenceErrors(body, (b) => findRuleErrors(b, "create", chains)),
  ];
  return [...errors, ...extra]
    .map((e, n) => ({ e, n, r: topLevelRank(e.path) }))
    .sort((a, b) => a.r - b.r || a.n - b.n)
    .map(({ e }) => e);
}

/** The values of the `confirmOn` extension (docs/rules.md, "Confirm on finality"); absent or null means `count`. */
export const CONFIRM_ON_VALUES = ["count", "finalized"] as const;

/** `CS_RULE_INVALID` at `confirmOn` when the extension property holds anything but {@link CONFIRM_ON_VALUES} or null. */
function confirmOnErrors(body: Record<string, unknown>): RuleValidationError[] {
  const v = body.confirmOn;
  if (v === undefined || v === null || (CONFIRM_ON_VALUES as readonly unknown[]).includes(v)) return [];
  return [
    { code: "CS_RULE_INVALID", path: "confirmOn", message: `confirmOn: must be one of ${CONFIRM_ON_VALUES.join(", ")} (or null: count)` },
  ];
}

/**
 * Top-level names reserved for planned extensions that change when a rule fires: a rule carrying
 * one is refused rather than stored as an ordinary additional property and silently alerting per
 * record. None today: `window`, `absence` (lib/rules/schema-window.ts) and `sequence`
 * (lib/rules/schema-sequence.ts) are evaluated.
 */
export const RESERVED_EXTENSIONS: readonly string[] = [];

/** `CS_RULE_NOT_SUPPORTED` at each {@link RESERVED_EXTENSIONS} property present with a non-null value. */
function reservedExtensionErrors(body: Record<string, unknown>): RuleValidationError[] {
  return RESERVED_EXTENSIONS.filter((name) => body[name] !== undefined && body[name] !== null).map((name) => ({
    code: "CS_RULE_NOT_SUPPORTED" as const,
    path: name,
    message: `${name}: this extension is planned and not evaluated yet; remove it to get a per-record rule`,
  }));
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

  const value: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const key of RESERVED_RULE_FIELDS) delete value[key];
  if (mode === "create") {
    value.state ??= "enabled";
    value.sendPendingAlerts ??= false;
    value.description ??= null;
  }
  return { ok: true, value: value as RuleInput | RulePatch };
}
