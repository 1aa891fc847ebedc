/**
 * TypeBox schemas of the alerting-rules routes: they document the routes in the OpenAPI document
 * and validate the path and query parameters (api/routes/rules/index.ts `rulesValidatorCompiler`).
 * Bodies are checked by `validateRuleInput` (lib/rules/validate.ts) only, and responses are
 * serialized with `JSON.stringify`, so these schemas never strip, coerce or reshape a rule.
 * @module
 */
import { Type } from "typebox";
import { ALERT_TYPES } from "../../../lib/rules/model.js";
import { MAX_LIST_LIMIT } from "../../../lib/rules/store.js";
import { RuleCreateSchema, ruleSchemasFor } from "../../../lib/rules/validate.js";
import { component } from "../../../lib/validation/component.js";
import { ErrorBodySchema } from "../search/schema.js";

/** Largest `limit` of the deliveries endpoint (the delivery log's own bound). */
export const MAX_DELIVERIES_LIMIT = 1000;
/** Default `limit` of the deliveries endpoint. */
export const DEFAULT_DELIVERIES_LIMIT = 50;

const Time = (description: string) => Type.String({ description: `${description}, ISO 8601 UTC`, examples: ["2026-01-02T03:04:05.000Z"] });

/** `:rule_id` of the single-rule routes. */
export const RuleParams = Type.Object({
  rule_id: Type.String({ format: "uuid", description: "Rule id (UUID); a malformed id answers 400 CS_RULE_ID_INVALID" }),
});

/** Query string of `GET /alerting/rules/`: both optional; without either, every rule is listed. */
export const RuleListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIST_LIMIT,
      description: `Page size: answer one page instead of every rule (50 when only cursor is given)`,
    }),
  ),
  cursor: Type.Optional(Type.String({ description: "nextCursor of the previous page: answer the page after it" })),
});

/** Query string of `GET /alerting/rules/<rule_id>/deliveries/`. */
export const DeliveryListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_DELIVERIES_LIMIT, default: DEFAULT_DELIVERIES_LIMIT, description: "Entries to return" }),
  ),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: "Entries to skip, from the newest" })),
});

/**
 * Bodies of `POST /alerting/rules/` (`create`) and `PUT /alerting/rules/<rule_id>/` (`update`) for a
 * deployment serving `chains`: lib/rules/validate.ts `ruleSchemasFor`, i.e. `RuleCreateSchema` and
 * `RuleUpdateSchema` with technology/blockchain/network limited to the served chains. They describe
 * exactly what `validateRuleInput` accepts (enumerations, patterns, lengths, counts, required
 * fields), except what JSON Schema cannot say, carried as `x-chainsift-*` annotations: the count
 * and size of the additional top-level properties and the body size (docs/rules.md, "The JSON Schema").
 */
export const ruleBodySchemas = ruleSchemasFor;

/** A stored rule, as every rules route returns it: the rule fields (extra properties included) plus the service's own. */
export const RuleSchema = Type.Intersect(
  [
    RuleCreateSchema,
    Type.Object({
      id: Type.String({ format: "uuid", description: "Rule id (UUID v4), the <rule_id> of the URLs" }),
      accountId: Type.String({ description: "Owning account (the caller)" }),
      version: Type.Integer({ minimum: 1, description: "1 on creation, incremented by every change" }),
      state: Type.Enum(["enabled", "disabled"] as const),
      sendPendingAlerts: Type.Boolean(),
      description: Type.Union([Type.String(), Type.Null()]),
      createdAt: Time("Creation time"),
      updatedAt: Time("Time of the last change"),
    }),
  ],
  { description: "An alerting rule as stored (additional top-level properties are returned verbatim)", ...component("Rule") },
);

/** A warning about an accepted rule (answer of POST and PUT only, never stored). */
export const RuleWarningSchema = Type.Object(
  { code: Type.String({ description: "Stable code, e.g. CS_RULE_TRACES_UNAVAILABLE" }), message: Type.String() },
  component("RuleWarning"),
);

/** Answer of POST and PUT: the stored rule, plus `warnings` when the rule is accepted but cannot work as is. */
export const RuleWriteAnswerSchema = Type.Intersect(
  [
    RuleSchema,
    Type.Object({
      warnings: Type.Optional(
        Type.Array(RuleWarningSchema, {
          description:
            "Present when the rule was stored but will not fire as is: CS_RULE_TRACES_UNAVAILABLE (a Trace or Call rule on a chain whose node gives no call traces, or with traces switched off)",
        }),
      ),
    }),
  ],
  component("RuleWriteAnswer"),
);

/** Answer of `GET /alerting/rules/`: every rule (nextCursor null) or, with limit/cursor, one page. */
export const RulePageSchema = Type.Object(
  {
    rules: Type.Array(RuleSchema, { description: "The caller's rules, oldest first (createdAt, then id): all of them, or one page" }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: "Cursor of the next page; null on the last page and always null when every rule is listed",
    }),
  },
  component("RulePage"),
);

/** One entry of the delivery log (pipeline/notify/log.ts `DeliveryLogEntry`). */
export const DeliveryLogEntrySchema = Type.Object(
  {
    alertId: Type.String({ description: "The alert id (idempotency key)" }),
    sequence: Type.Integer({ description: "The alert's per-rule sequence number" }),
    status: Type.Enum(["pending", "confirmed", "removed"] as const),
    actionIndex: Type.Integer({ description: "Index of the action in config.alerts" }),
    type: Type.String({ description: `Alert type of the action (${ALERT_TYPES.join(", ")})` }),
    destination: Type.String({ description: "Redacted destination (URL without credentials and query, or `n recipients`)" }),
    ok: Type.Boolean(),
    attempts: Type.Integer({ description: "Attempts made (0 when the action could not be rendered)" }),
    final: Type.Optional(Type.Boolean({ description: "false when the failure is retryable later (the alert was dead-lettered)" })),
    httpStatus: Type.Optional(Type.Integer({ description: "HTTP status or SMTP reply code of the last answered attempt" })),
    error: Type.Optional(Type.String()),
    code: Type.Optional(Type.String({ description: "Delivery error code, e.g. CS_DELIVERY_REJECTED" })),
    at: Time("When the delivery finished"),
    state: Type.Optional(
      Type.Enum(["throttled", "digest"] as const, {
        description:
          "Storm control: throttled = held back, in the window's digest (code CS_THROTTLED); digest = the digest message (alertId = digest id)",
      }),
    ),
    digestCount: Type.Optional(Type.Integer({ minimum: 0, description: "With state digest: the alerts the digest accounts for" })),
  },
  { description: "One delivery of one action of one alert", ...component("DeliveryLogEntry") },
);

const IsoOrNull = (description: string) => Type.Union([Type.String({ format: "date-time" }), Type.Null()], { description });

/** Live delivery status of one action of a rule (pipeline/notify/queue.ts `ActionDeliveryStatus`). */
export const ActionDeliveryStatusSchema = Type.Object(
  {
    actionIndex: Type.Integer({ minimum: 0, description: "Index of the action in config.alerts" }),
    destination: Type.String({ description: "URL origin (scheme://host:port, no path, query or credentials), `smtp`, or `invalid`" }),
    unhealthy: Type.Boolean({ description: "true while the destination is marked unhealthy: deliveries wait for one probe at a time" }),
    consecutiveFailures: Type.Integer({ minimum: 0, description: "Retryable failures in a row at this destination (any rule)" }),
    unhealthySince: IsoOrNull("When it became unhealthy"),
    nextProbeAt: IsoOrNull("Earliest next probe while unhealthy"),
    lastCode: Type.Union([Type.String(), Type.Null()], { description: "Code of the destination's last failure" }),
    lastError: Type.Union([Type.String(), Type.Null()], { description: "Message of the destination's last failure (≤ 200 characters)" }),
    lastFailureAt: IsoOrNull("Time of the destination's last failure"),
    lastSuccessAt: IsoOrNull("Time of the destination's last success"),
    pending: Type.Integer({ minimum: 0, description: "Deliveries of this action waiting in its queue" }),
  },
  { description: "Health of an action's destination and its queue (docs/alerting-delivery.md)", ...component("ActionDeliveryStatus") },
);

/** Answer of `GET /alerting/rules/<rule_id>/deliveries/`. */
export const DeliveryPageSchema = Type.Object(
  {
    total: Type.Integer({ description: "Entries currently kept for the rule (the newest 1000)" }),
    entries: Type.Array(DeliveryLogEntrySchema, { description: "Newest first" }),
    destinations: Type.Array(ActionDeliveryStatusSchema, { description: "One per action of the rule, read live" }),
  },
  component("DeliveryPage"),
);

/** Error body of the rules routes: the API's usual `{error, errors}` (the one `ErrorBody` of the OpenAPI document). */
export const RulesErrorBodySchema = ErrorBodySchema;

/** Error answers every rules route documents. */
export const RULES_ERROR_RESPONSES = {
  400: RulesErrorBodySchema,
  401: RulesErrorBodySchema,
  404: RulesErrorBodySchema,
  429: RulesErrorBodySchema,
  503: RulesErrorBodySchema,
} as const;
