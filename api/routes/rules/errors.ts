/**
 * Error codes of the alerting-rules routes (`/alerting/rules/…`), their HTTP status and meaning,
 * and how rule-specific failures become API error details.
 *
 * {@link RULES_ERROR_CODES} is merged into `ERROR_CODES` of api/errors.ts (and the error table of
 * docs/api.md), so the routes throw the ordinary `ApiError` and the app's one error handler
 * (api/plugins/errors.ts) renders them, `RuleStoreError`s included (via {@link ruleStoreErrorDetail}).
 * This module imports api/errors.ts for types only: api/errors.ts imports the table from here.
 * @module
 */

import { RULE_STORE_ERROR_CODES, type RuleStoreError, type RuleStoreErrorCode } from "../../../lib/rules/store.js";
import type { RuleValidationCode, RuleValidationError } from "../../../lib/rules/validate.js";
import type { ApiErrorDetail, ErrorCodeInfo } from "../../errors.js";

/**
 * Every error code the rules routes answer with (besides the app-wide `CS_AUTH_REQUIRED`,
 * `CS_RATE_LIMITED`, `CS_BODY_INVALID`, `CS_BODY_TOO_LARGE`, `CS_UNSUPPORTED_MEDIA_TYPE`,
 * `CS_BACKEND_UNAVAILABLE`, `CS_INTERNAL`): the validation codes of lib/rules/validate.ts, the
 * store codes of lib/rules/store.ts, `CS_RULE_ID_INVALID` and `CS_RULE_TOO_LARGE` (a rule body over
 * the routes' body limit). Stable: never renamed.
 */
export const RULES_ERROR_CODES = {
  CS_RULE_ID_INVALID: { status: 400, description: "Alerting rules: the <rule_id> path segment is not a UUID (path params.rule_id)." },
  CS_RULE_NOT_FOUND: {
    status: 404,
    description: "Alerting rules: no rule with that id for the caller's account (another account's rule answers the same, never 403).",
  },
  CS_RULE_VERSION_CONFLICT: {
    status: 409,
    description:
      "Alerting rules: the PUT carried a version that is not the stored one (the message names the current version), or the rule kept changing concurrently; fetch it again and retry.",
  },
  CS_RULE_IMMUTABLE_FIELD: {
    status: 400,
    description: "Alerting rules: a PUT tried to change technology, blockchain or network (a rule belongs to one chain for life).",
  },
  CS_RULE_INVALID_PAGE: {
    status: 400,
    description:
      "Alerting rules: limit is not an integer in range (rules 1–500, deliveries 1–1000), offset is not an integer >= 0, or cursor is not one a previous page returned.",
  },
  CS_RULE_INVALID: {
    status: 400,
    description:
      "Alerting rules: the rule body has a wrong type, a missing required field, an unknown property where none is allowed, or a value outside an enumeration.",
  },
  CS_RULE_UNKNOWN_CHAIN: {
    status: 400,
    description: "Alerting rules: technology/blockchain/network do not name a chain this deployment serves.",
  },
  CS_RULE_ITEM_COUNT: {
    status: 400,
    description:
      "Alerting rules: too few or too many items (targetMap and alerts 1–10, payload ≤ 10, operatorParameters and subPayloads 1–10).",
  },
  CS_RULE_DUPLICATE_ITEM: { status: 400, description: "Alerting rules: an array item deep-equals an earlier item of the same array." },
  CS_RULE_VALUE_TYPE: {
    status: 400,
    description:
      "Alerting rules: a value is missing or of the wrong type for its operator (an array of strings for Equals any, a string otherwise).",
  },
  CS_RULE_OPERATOR_PARAMETERS: {
    status: 400,
    description: "Alerting rules: operatorParameters missing for Inspect, not null for another operator, or not an array.",
  },
  CS_RULE_TOO_DEEP: {
    status: 400,
    description: "Alerting rules: nesting beyond the limits (Inspect at most two levels deep; sub-payloads at most two levels deep).",
  },
  CS_RULE_PAYLOAD: {
    status: 400,
    description:
      "Alerting rules: a payload item breaks the payload rules (fieldType, fieldName, subPayloads by fieldType, unknown property).",
  },
  CS_RULE_ALERT_PARAMETERS: {
    status: 400,
    description:
      "Alerting rules: an alert's parameters do not fit its type (missing field, bad e-mail address, URL not absolute http(s), a {field} template in a URL's scheme, user info, host or port).",
  },
  CS_RULE_PAGERDUTY_PARAMETERS: {
    status: 400,
    description:
      "Alerting rules: a PagerDuty action's routingKey is missing or not the 32-character integration key of an Events API v2 integration, or its severity is not critical, error, warning or info.",
  },
  CS_RULE_OPSGENIE_PARAMETERS: {
    status: 400,
    description:
      "Alerting rules: an Opsgenie action's apiKey is missing or not an API integration key (20–64 letters, digits and dashes), or its priority is not P1–P5.",
  },
  CS_RULE_TOO_LONG: {
    status: 400,
    description:
      "Alerting rules: a string is longer than its cap (name 256, description 4096, definition names 256, values 1024, URLs 2048, Slack text 4000, channel and username 256, payload field names 256 characters).",
  },
  CS_RULE_EXTRA_PROPERTIES: {
    status: 400,
    description:
      "Alerting rules: more than 20 additional top-level properties, or more than 16 KiB of them (JSON), in the body or in the rule a PUT would produce (path: the property that crosses the limit).",
  },
  CS_RULE_NOT_SUPPORTED: {
    status: 400,
    description:
      "Alerting rules: an extension where it is not evaluated: `stateCondition` on a saved search (state conditions, docs/rules.md); `In watchlist` in a rule, or a watchlist terms lookup in a saved search, tested from the CLI (`rules test`, `searches test`: no account owns lists there; use `POST /alerting/rules/test/` or `POST /alerting/searches/test/`).",
  },
  CS_RULE_KAFKA_PARAMETERS: {
    status: 400,
    description:
      "Alerting rules: a Kafka action's parameters are wrong (brokers not host:port, 1–10; a topic name Kafka refuses; key not ruleId or entityId; avro without an http(s) schemaRegistryUrl; SASL mechanism not plain, scram-sha-256 or scram-sha-512, or no username or password).",
  },
  CS_RULE_WINDOW_TOO_LARGE: {
    status: 400,
    description:
      "Alerting rules: a window, an absence or a sequence spans more than 10,000 blocks or 86,400 seconds (the message names the cap; path window.blocks, window.seconds, absence.…, sequence.within.blocks or sequence.within.seconds).",
  },
  CS_RULE_AGGREGATE_NOT_NUMERIC: {
    status: 400,
    description:
      "Alerting rules: a window's sum names an attribute that is never a number (an address, hash, name; path window.aggregate.field).",
  },
  CS_RULE_GROUPBY_CARDINALITY: {
    status: 400,
    description: "Alerting rules: a grouped window's maxGroups is above the cap of 1,000 groups (path window.maxGroups).",
  },
  CS_RULE_SEQUENCE_PENDING_CAP: {
    status: 400,
    description: "Alerting rules: a sequence's maxPending is above the cap of 10,000 open steps (path sequence.maxPending).",
  },
  CS_RULE_TOO_LARGE: {
    status: 413,
    description: "Alerting rules: the POST or PUT body of a rule exceeds 64 KiB.",
  },
  CS_RULE_LIMIT_REACHED: {
    status: 409,
    description:
      "Alerting rules: the account already has the most rules it may have (CHAINSIFT_MAX_RULES_PER_ACCOUNT, default 1000); delete one first.",
  },
  CS_SEARCH_KIND: {
    status: 400,
    description: "Saved searches: kind is missing or not one of event, tx, log, block, call (path kind).",
  },
  CS_SEARCH_INEXACT: {
    status: 400,
    description:
      "Saved searches: the match stage's evaluator cannot answer this clause exactly as Elasticsearch would (e.g. date math, a partial date, a non-decimal number, a match text with non-ASCII characters); the path names the clause.",
  },
} as const satisfies Record<
  RuleValidationCode | RuleStoreErrorCode | "CS_RULE_ID_INVALID" | "CS_RULE_TOO_LARGE" | "CS_SEARCH_KIND" | "CS_SEARCH_INEXACT",
  ErrorCodeInfo
>;

/** One of the codes of {@link RULES_ERROR_CODES}. */
export type RulesErrorCode = keyof typeof RULES_ERROR_CODES;

/** The HTTP status the API answers for each `RuleStoreErrorCode` of lib/rules/store.ts (from {@link RULES_ERROR_CODES}). */
export const RULE_STORE_ERROR_HTTP_STATUS: Readonly<Record<RuleStoreErrorCode, number>> = Object.fromEntries(
  RULE_STORE_ERROR_CODES.map((code) => [code, RULES_ERROR_CODES[code].status]),
) as Record<RuleStoreErrorCode, number>;

/**
 * The details of a refused rule body: every validation problem, in document order (`path` `""`,
 * the body itself, becomes null); one `CS_RULE_INVALID` when the list is empty.
 * @param errors - `validateRuleInput(…).errors` (lib/rules/validate.ts).
 * @returns at least one detail, for `new ApiError(…)`.
 */
export function ruleValidationDetails(errors: readonly RuleValidationError[]): ApiErrorDetail[] {
  const details = errors.map((e) => ({ code: e.code, message: e.message, path: e.path === "" ? null : e.path }));
  return details.length > 0 ? details : [{ code: "CS_RULE_INVALID", message: "the rule is invalid", path: null }];
}

/**
 * The API error detail of a refused store operation (its status is the code's in
 * {@link RULES_ERROR_CODES}): the path it concerns (`params.rule_id`, `version`, the field,
 * `querystring.cursor`) and a message for the client; `details.id` (the rule id) names the rule.
 * @param err - a `RuleStoreError` of lib/rules/store.ts.
 * @returns the detail the error handler answers.
 */
export function ruleStoreErrorDetail(err: RuleStoreError): ApiErrorDetail {
  const { id, currentVersion, field } = err.details;
  switch (err.code) {
    case "CS_RULE_NOT_FOUND":
      return { code: err.code, message: id ? `no rule with id ${id}` : err.message, path: "params.rule_id" };
    case "CS_RULE_VERSION_CONFLICT": {
      const message =
        currentVersion === undefined
          ? `${err.message} (the rule kept changing concurrently)`
          : `version conflict: rule ${id ?? ""} is at version ${currentVersion}; fetch it again and retry with "version": ${currentVersion}`;
      return { code: err.code, message, path: "version" };
    }
    case "CS_RULE_INVALID_PAGE":
      return { code: err.code, message: err.message, path: "querystring.cursor" };
    case "CS_RULE_LIMIT_REACHED":
      return { code: err.code, message: err.message, path: null };
    case "CS_RULE_IMMUTABLE_FIELD":
    case "CS_RULE_EXTRA_PROPERTIES":
      return { code: err.code, message: err.message, path: field ?? null };
    default:
      return { code: "CS_RULE_INVALID", message: err.message, path: null };
  }
}
