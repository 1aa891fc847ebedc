/**
 * Error codes of the alerting-rules routes (`/alerting/rules/…`), their HTTP status and meaning,
 * and the error the routes throw for them.
 *
 * {@link RULES_ERROR_CODES} is meant to be merged into `ERROR_CODES` of api/errors.ts (and the
 * error table of docs/api.md). Until then `ApiError` cannot carry these codes (its constructor
 * looks the status up in `ERROR_CODES`), so the routes throw {@link RulesApiError} and the rules
 * plugin renders it itself, in the same body shape as every other error:
 * `{error: {code, message, path}, errors: [{code, message, path}, …]}`.
 * @module
 */

import type { RuleStoreErrorCode } from "../../../lib/rules/store.js";
import type { RuleValidationCode, RuleValidationError } from "../../../lib/rules/validate.js";

/** One documented error code: HTTP status and a one-line description (same shape as api/errors.ts `ErrorCodeInfo`). */
export interface RulesErrorCodeInfo {
  /** HTTP status answered with this code. */
  status: number;
  /** Human-readable meaning. */
  description: string;
}

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
  CS_RULE_TOO_LARGE: {
    status: 413,
    description: "Alerting rules: the POST or PUT body of a rule exceeds 64 KiB.",
  },
  CS_RULE_LIMIT_REACHED: {
    status: 409,
    description:
      "Alerting rules: the account already has the most rules it may have (CHAINSIFT_MAX_RULES_PER_ACCOUNT, default 1000); delete one first.",
  },
} as const satisfies Record<RuleValidationCode | RuleStoreErrorCode | "CS_RULE_ID_INVALID" | "CS_RULE_TOO_LARGE", RulesErrorCodeInfo>;

/** One of the codes of {@link RULES_ERROR_CODES}. */
export type RulesErrorCode = keyof typeof RULES_ERROR_CODES;

/** One problem found in a rules request (same shape as api/errors.ts `ApiErrorDetail`). */
export interface RulesErrorDetail {
  /** Stable code, see {@link RULES_ERROR_CODES}. */
  code: RulesErrorCode;
  /** Human-readable explanation; not stable. */
  message: string;
  /** JSON path of the offending part of the request (`config.targetMap[0].value`, `params.rule_id`, `querystring.limit`), or null. */
  path: string | null;
}

/**
 * An error of the rules routes with a code of {@link RULES_ERROR_CODES}; the rules plugin renders it
 * as `{error, errors}` with the code's status.
 */
export class RulesApiError extends Error {
  /** HTTP status answered (the status of the first detail's code). */
  readonly statusCode: number;
  /** Code of the first problem. */
  readonly code: RulesErrorCode;
  /** JSON path of the first problem, or null. */
  readonly path: string | null;
  /** All problems (at least one). */
  readonly details: RulesErrorDetail[];

  /**
   * @param details - one or more problems; the first one gives `code`, `path` and the status.
   * @param status - the HTTP status, when it must not be the first code's status of {@link RULES_ERROR_CODES}
   *   (e.g. taken from lib/rules/store.ts `RULE_STORE_ERROR_HTTP_STATUS`; they agree).
   * @throws {RangeError} when `details` is empty.
   */
  constructor(details: RulesErrorDetail | RulesErrorDetail[], status?: number) {
    const list = Array.isArray(details) ? details : [details];
    const first = list[0];
    if (!first) throw new RangeError("RulesApiError needs at least one detail");
    super(first.message);
    this.name = "RulesApiError";
    this.code = first.code;
    this.path = first.path;
    this.details = list;
    this.statusCode = status ?? RULES_ERROR_CODES[first.code].status;
  }

  /** The JSON error body: `{error: <first detail>, errors: <all details>}`. */
  body(): { error: RulesErrorDetail; errors: RulesErrorDetail[] } {
    return { error: this.details[0] as RulesErrorDetail, errors: this.details };
  }
}

/** Shorthand for `new RulesApiError({code, message, path})`. */
export function rulesError(code: RulesErrorCode, message: string, path: string | null = null): RulesApiError {
  return new RulesApiError({ code, message, path });
}

/** The error of a refused rule body: every validation problem, in document order (`path` `""`, the body itself, becomes null). */
export function validationError(errors: readonly RuleValidationError[]): RulesApiError {
  const details = errors.map((e) => ({ code: e.code, message: e.message, path: e.path === "" ? null : e.path }));
  return new RulesApiError(details.length > 0 ? details : [{ code: "CS_RULE_INVALID", message: "the rule is invalid", path: null }]);
}
