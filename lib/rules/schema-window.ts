/**
 * The `window` extension of a rule (issue 33; docs/alerting.md, "Alerts over time"; design in
 * docs/design/windows.md): a top-level member beside `config`, as `confirmOn` is, that turns a
 * per-record rule into a windowed one — `config.targetMap` still selects the records, the window
 * decides when an alert fires (count, sum or distinct over a window of blocks or seconds, compared
 * with a threshold, optionally per group).
 *
 * This module holds its TypeBox schema ({@link WindowSchema}), its validation with stable codes
 * ({@link windowErrors}), and the mapping to the pure arithmetic's {@link WindowConfig}
 * ({@link windowConfigOf}); the same for `absence` (silence: no selected record for a number of
 * blocks or seconds, {@link AbsenceSchema}, {@link absenceConfigOf}). Rules and saved searches
 * (api/routes/searches/validate.ts) both carry them.
 * @module
 */
import { type Static, Type } from "typebox";
import { absenceWindow, checkWindowConfig, type WindowConfig } from "../match/windows.js";
import { component } from "../validation/component.js";
import { checkAgainstSchema } from "../validation/schema-check.js";
import type { RuleValidationError } from "./validate.js";

/**
 * The caps of a window (constants of the deployment). A larger window is refused with
 * `CS_RULE_WINDOW_TOO_LARGE`, whose message names the cap: the state the match stage keeps per
 * window grows with its span (docs/design/windows.md, memory per open window).
 */
export const WINDOW_CAPS = {
  /** Most blocks a window may span: 10,000 (≈ 33 hours of mainnet blocks). */
  blocks: 10_000,
  /** Most seconds a window may span: 86,400 (one day). */
  seconds: 86_400,
  /** Most groups (`maxGroups`) a grouped window may evaluate at one end: 1,000 (default 100). */
  maxGroups: 1_000,
} as const;

/** The ordering operators a window compares its aggregate with (the rule model's). */
export const WINDOW_OPERATORS = ["Greater", "Greater or Equal", "Less", "Less or Equal"] as const;

/** A decimal string, as a target definition's `value`: `"20"`, `"-1.5"`, `"1000000.25"`. */
const DECIMAL = "^-?[0-9]{1,78}(\\.[0-9]{1,78})?$";
/** An attribute path of the matched entity: `from`, `args.value` (an event argument by name). */
const FIELD_PATH = "^[A-Za-z_$][A-Za-z0-9_$]{0,99}(\\.[A-Za-z0-9_$]{1,100}){0,3}$";

const FieldPath = Type.String({
  pattern: FIELD_PATH,
  maxLength: 200,
  description: "Attribute path of the matched entity, e.g. `args.value`.",
});
const Decimal = Type.String({ pattern: DECIMAL, maxLength: 160 });

/** The `window.aggregate` member: `{"fn": "count"}`, `{"fn": "sum", "field", "useScaledValue"?}`, `{"fn": "distinct", "field"}`. */
export const WindowAggregateSchema = Type.Union([
  Type.Object({ fn: Type.Literal("count") }, { additionalProperties: false }),
  Type.Object(
    {
      fn: Type.Literal("sum"),
      field: FieldPath,
      useScaledValue: Type.Optional(Type.Boolean({ description: "Sum in token units (value / 10^decimals) instead of raw units." })),
    },
    { additionalProperties: false },
  ),
  Type.Object({ fn: Type.Literal("distinct"), field: FieldPath }, { additionalProperties: false }),
]);

/** The `window` member of a rule (docs/alerting.md, "Alerts over time"). Exactly one of `blocks`, `seconds`. */
export const WindowSchema = Type.Object(
  {
    blocks: Type.Optional(Type.Integer({ minimum: 1, description: `Window length in blocks (at most ${WINDOW_CAPS.blocks}).` })),
    seconds: Type.Optional(
      Type.Integer({ minimum: 1, description: `Window length in seconds of block time (at most ${WINDOW_CAPS.seconds}).` }),
    ),
    aggregate: WindowAggregateSchema,
    operator: Type.Enum(WINDOW_OPERATORS),
    threshold: Decimal,
    reset: Type.Optional(Decimal),
    groupBy: Type.Optional(Type.Union([FieldPath, Type.Null()])),
    maxGroups: Type.Optional(
      Type.Integer({ minimum: 1, description: `Groups evaluated per window end (default 100, at most ${WINDOW_CAPS.maxGroups}).` }),
    ),
  },
  { ...component("RuleWindow"), additionalProperties: false },
);

/** The `absence` member of a rule: silence for `blocks` or `seconds` (exactly one; the window caps apply). */
export const AbsenceSchema = Type.Object(
  {
    blocks: Type.Optional(Type.Integer({ minimum: 1, description: `Silence in blocks (at most ${WINDOW_CAPS.blocks}).` })),
    seconds: Type.Optional(Type.Integer({ minimum: 1, description: `Silence in seconds of block time (at most ${WINDOW_CAPS.seconds}).` })),
  },
  { ...component("RuleAbsence"), additionalProperties: false },
);

/** A rule's `absence` member, as validated. */
export type RuleAbsence = Static<typeof AbsenceSchema>;

/** A rule's `window` member, as validated. */
export type RuleWindow = Static<typeof WindowSchema>;

/**
 * Top-level attributes that are never numbers (addresses, hashes, names, byte strings): `sum`
 * over one of them is refused with `CS_RULE_AGGREGATE_NOT_NUMERIC`. Decoded arguments (`args.x`,
 * `parameters.x`) are checked when they arrive: a non-integer argument adds nothing.
 */
export const NON_NUMERIC_FIELDS: ReadonlySet<string> = new Set([
  "address",
  "event",
  "signature",
  "transactionHash",
  "blockHash",
  "hash",
  "from",
  "to",
  "input",
  "data",
  "topics",
  "contractAddress",
  "name",
  "symbol",
  "type",
  "source",
  "entityId",
  "method",
  "timestamp",
]);

function err(code: RuleValidationError["code"], path: string, message: string): RuleValidationError {
  return { code, path, message: `${path}: ${message}` };
}

/**
 * Problems of a rule's `window` member (absent or null: none), in document order:
 * - `CS_RULE_INVALID` at the offending `window.…` path: not the {@link WindowSchema} shape, neither
 *   or both of `blocks` and `seconds`, a `reset` on the firing side of the threshold;
 * - `CS_RULE_WINDOW_TOO_LARGE` at `window.blocks` / `window.seconds`: above {@link WINDOW_CAPS} (the message names the cap);
 * - `CS_RULE_AGGREGATE_NOT_NUMERIC` at `window.aggregate.field`: `sum` over a {@link NON_NUMERIC_FIELDS} attribute;
 * - `CS_RULE_GROUPBY_CARDINALITY` at `window.maxGroups`: above {@link WINDOW_CAPS}`.maxGroups`.
 */
export function windowErrors(body: Record<string, unknown>): RuleValidationError[] {
  const w = body.window;
  if (w === undefined || w === null) return absenceErrors(body);
  if (body.absence !== undefined && body.absence !== null)
    return [err("CS_RULE_INVALID", "absence", "a rule has at most one of window and absence")];
  const issues = checkAgainstSchema(w, WindowSchema, "window");
  if (issues.length > 0) return issues.map((i) => err("CS_RULE_INVALID", i.path, i.message));
  const win = w as RuleWindow;
  const out = spanErrors(win, "window");
  const agg = win.aggregate;
  if (agg.fn === "sum" && NON_NUMERIC_FIELDS.has(agg.field.split(".")[0] ?? ""))
    out.push(
      err(
        "CS_RULE_AGGREGATE_NOT_NUMERIC",
        "window.aggregate.field",
        `${agg.field} is not a number; sum needs a numeric attribute (e.g. value, args.value)`,
      ),
    );
  if (win.maxGroups !== undefined && win.maxGroups > WINDOW_CAPS.maxGroups)
    out.push(
      err(
        "CS_RULE_GROUPBY_CARDINALITY",
        "window.maxGroups",
        `a window evaluates at most ${WINDOW_CAPS.maxGroups} groups, got ${win.maxGroups}`,
      ),
    );
  if (out.length > 0) return out;
  try {
    checkWindowConfig(windowConfigOf(win));
  } catch (e) {
    const path = /^reset/.test((e as Error).message) ? "window.reset" : "window";
    out.push(err("CS_RULE_INVALID", path, (e as Error).message));
  }
  return out;
}

/** Exactly one of `blocks`, `seconds`, within {@link WINDOW_CAPS}: errors at `<path>…`. */
export function spanErrors(span: { blocks?: number; seconds?: number }, path: string): RuleValidationError[] {
  const out: RuleValidationError[] = [];
  if ((span.blocks === undefined) === (span.seconds === undefined))
    out.push(err("CS_RULE_INVALID", path, "give exactly one of blocks or seconds"));
  if (span.blocks !== undefined && span.blocks > WINDOW_CAPS.blocks)
    out.push(err("CS_RULE_WINDOW_TOO_LARGE", `${path}.blocks`, `a window spans at most ${WINDOW_CAPS.blocks} blocks, got ${span.blocks}`));
  if (span.seconds !== undefined && span.seconds > WINDOW_CAPS.seconds)
    out.push(
      err("CS_RULE_WINDOW_TOO_LARGE", `${path}.seconds`, `a window spans at most ${WINDOW_CAPS.seconds} seconds, got ${span.seconds}`),
    );
  return out;
}

/**
 * Problems of a rule's `absence` member (absent or null: none): `CS_RULE_INVALID` at the offending
 * `absence.…` path (not the {@link AbsenceSchema} shape, neither or both of `blocks`, `seconds`),
 * `CS_RULE_WINDOW_TOO_LARGE` above {@link WINDOW_CAPS}.
 */
export function absenceErrors(body: Record<string, unknown>): RuleValidationError[] {
  const a = body.absence;
  if (a === undefined || a === null) return [];
  const issues = checkAgainstSchema(a, AbsenceSchema, "absence");
  if (issues.length > 0) return issues.map((i) => err("CS_RULE_INVALID", i.path, i.message));
  return spanErrors(a as RuleAbsence, "absence");
}

/**
 * The arithmetic's configuration of a validated `absence` member: `count < 1` over the span, re-armed by one record ({@link absenceWindow}).
 * @param reorgDepth - as {@link windowConfigOf}.
 */
export function absenceConfigOf(absence: RuleAbsence, reorgDepth?: number): WindowConfig {
  const span = absence.blocks !== undefined ? { blocks: absence.blocks } : { seconds: absence.seconds ?? 1 };
  return absenceWindow(span, reorgDepth !== undefined ? { reorgDepth } : {});
}

/** The rule's `absence` member when it is an object (a stored rule passed validation), else null. */
export function ruleAbsence(rule: object): RuleAbsence | null {
  const a = (rule as { absence?: unknown }).absence;
  return typeof a === "object" && a !== null && !Array.isArray(a) ? (a as RuleAbsence) : null;
}

/**
 * The arithmetic's configuration of a validated `window` member.
 * @param reorgDepth - blocks a reorg can still change (the stage's; default the arithmetic's 128).
 */
export function windowConfigOf(win: RuleWindow, reorgDepth?: number): WindowConfig {
  const grouped = typeof win.groupBy === "string";
  return {
    span: win.blocks !== undefined ? { blocks: win.blocks } : { seconds: win.seconds ?? 1 },
    aggregate: win.aggregate.fn,
    operator: win.operator,
    threshold: win.threshold,
    ...(win.reset !== undefined ? { reset: win.reset } : {}),
    grouped,
    ...(grouped && win.maxGroups !== undefined ? { maxGroups: win.maxGroups } : {}),
    ...(reorgDepth !== undefined ? { reorgDepth } : {}),
  };
}

/** The rule's `window` member when it is an object (a stored rule passed validation), else null. */
export function ruleWindow(rule: object): RuleWindow | null {
  const w = (rule as { window?: unknown }).window;
  return typeof w === "object" && w !== null && !Array.isArray(w) ? (w as RuleWindow) : null;
}
