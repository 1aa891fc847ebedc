/**
 * The `sequence` extension of a rule (issue 33; docs/alerting.md, "Sequences"; docs/rules.md): a
 * top-level member beside `config`, as `window` and `absence` are (the contract's `config` takes
 * no additional properties). The rule's own conditions (`config.targetType`, `config.targetMap`)
 * select the *first* records; `sequence.followedBy` selects the *followedBy* records with the same shape; an
 * alert fires when a followedBy record follows a first record of the same correlate value within the
 * span (lib/match/sequences.ts).
 *
 * This module holds its TypeBox schema ({@link SequenceSchema}), its validation with stable codes
 * ({@link sequenceErrors}), the mapping to the arithmetic's {@link SequenceConfig}
 * ({@link sequenceConfigOf}) and the refusal where it is not evaluated ({@link sequenceNotSupported}).
 * @module
 */
import { type Static, Type } from "typebox";
import { checkSequenceConfig, DEFAULT_MAX_PENDING, type SequenceConfig } from "../match/sequences.js";
import { component } from "../validation/component.js";
import { checkAgainstSchema } from "../validation/schema-check.js";
import { RULE_LIMITS } from "./limits.js";
import { TARGET_TYPES } from "./model.js";
import { TargetDefinitionSchema } from "./schema.js";
import { spanErrors, WINDOW_CAPS } from "./schema-window.js";
import type { RuleValidationError } from "./validate.js";

/** The caps of a sequence: its span (the window caps: 10,000 blocks, 86,400 seconds) and its open steps. */
export const SEQUENCE_CAPS = {
  blocks: WINDOW_CAPS.blocks,
  seconds: WINDOW_CAPS.seconds,
  /** Most open steps (`maxPending`) a rule may keep: 10,000 (default {@link DEFAULT_MAX_PENDING}). */
  maxPending: 10_000,
} as const;

const FieldPath = Type.String({
  pattern: "^[A-Za-z_$][A-Za-z0-9_$]{0,99}(\\.[A-Za-z0-9_$]{1,100}){0,3}$",
  maxLength: 200,
  description: "Attribute path of the matched entity, e.g. `args.proposalId`.",
});

/** `sequence.followedBy`: the second set of per-record conditions, the shape of `config`'s `targetType` and `targetMap`. */
export const SequenceThenSchema = Type.Object(
  {
    targetType: Type.Enum(TARGET_TYPES),
    targetMap: Type.Array(TargetDefinitionSchema, { minItems: RULE_LIMITS.targetMapMin, maxItems: RULE_LIMITS.targetMapMax }),
  },
  { additionalProperties: false },
);

/** The `sequence` member of a rule (docs/rules.md, "Sequences"). */
export const SequenceSchema = Type.Object(
  {
    followedBy: SequenceThenSchema,
    within: Type.Object(
      {
        blocks: Type.Optional(Type.Integer({ minimum: 1, description: `Span in blocks (at most ${SEQUENCE_CAPS.blocks}).` })),
        seconds: Type.Optional(
          Type.Integer({ minimum: 1, description: `Span in seconds of block time (at most ${SEQUENCE_CAPS.seconds}).` }),
        ),
      },
      { additionalProperties: false },
    ),
    correlate: Type.Object({ first: FieldPath, followedBy: FieldPath }, { additionalProperties: false }),
    maxPending: Type.Optional(
      Type.Integer({ minimum: 1, description: `Open steps kept (default ${DEFAULT_MAX_PENDING}, at most ${SEQUENCE_CAPS.maxPending}).` }),
    ),
  },
  { ...component("RuleSequence"), additionalProperties: false },
);

/** A rule's `sequence` member, as validated. */
export type RuleSequence = Static<typeof SequenceSchema>;

/** {@link SequenceSchema} with `followedBy`'s content left to the rule's own checks (their codes, {@link sequenceErrors}). */
const OuterSchema = Type.Object(
  {
    ...SequenceSchema.properties,
    followedBy: Type.Object({ targetType: Type.Unknown(), targetMap: Type.Unknown() }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

function err(code: RuleValidationError["code"], path: string, message: string): RuleValidationError {
  return { code, path, message: `${path}: ${message}` };
}

/**
 * Problems of a rule's `sequence` member (absent or null: none), in document order:
 * - `CS_RULE_INVALID` at `sequence` when the rule also has `window` or `absence`, and at the
 *   offending `sequence.…` path when it is not the {@link SequenceSchema} shape or has neither or
 *   both of `within.blocks`, `within.seconds`;
 * - the rule's own codes (`CS_RULE_VALUE_TYPE`, `CS_RULE_ITEM_COUNT`, …) at `sequence.followedBy.…`:
 *   `followedBy` is checked as `config.targetType` and `config.targetMap` are, by `checkConditions`;
 * - `CS_RULE_WINDOW_TOO_LARGE` at `sequence.within.blocks` / `.seconds` above {@link SEQUENCE_CAPS};
 * - `CS_RULE_SEQUENCE_PENDING_CAP` at `sequence.maxPending` above {@link SEQUENCE_CAPS}`.maxPending`.
 * @param checkConditions - the rule validation of a body (lib/rules/validate.ts `findRuleErrors` in create mode).
 */
export function sequenceErrors(
  body: Record<string, unknown>,
  checkConditions: (body: Record<string, unknown>) => RuleValidationError[],
): RuleValidationError[] {
  const s = body.sequence;
  if (s === undefined || s === null) return [];
  const other = (["window", "absence"] as const).find((name) => body[name] !== undefined && body[name] !== null);
  if (other !== undefined)
    return [err("CS_RULE_INVALID", "sequence", `a rule has at most one of window, absence and sequence (it has ${other})`)];
  const issues = checkAgainstSchema(s, OuterSchema, "sequence");
  if (issues.length > 0) return issues.map((i) => err("CS_RULE_INVALID", i.path, i.message));
  const seq = s as RuleSequence;
  const config = typeof body.config === "object" && body.config !== null ? body.config : {};
  const out = checkConditions({
    ...body,
    sequence: null,
    config: { ...config, targetType: seq.followedBy.targetType, targetMap: seq.followedBy.targetMap },
  })
    .filter((e) => /^config\.target(Type|Map)\b/.test(e.path))
    .map((e) => ({
      ...e,
      path: `sequence.followedBy${e.path.slice("config".length)}`,
      message: `sequence.followedBy${e.message.slice("config".length)}`,
    }));
  out.push(...spanErrors(seq.within, "sequence.within"), ...pendingCapErrors(seq.maxPending));
  return out;
}

/** `CS_RULE_SEQUENCE_PENDING_CAP` at `sequence.maxPending` above {@link SEQUENCE_CAPS}`.maxPending` (rules and saved searches). */
export function pendingCapErrors(maxPending: number | undefined): RuleValidationError[] {
  if (maxPending === undefined || maxPending <= SEQUENCE_CAPS.maxPending) return [];
  const message = `a sequence keeps at most ${SEQUENCE_CAPS.maxPending} open steps, got ${maxPending}`;
  return [err("CS_RULE_SEQUENCE_PENDING_CAP", "sequence.maxPending", message)];
}

/**
 * The arithmetic's configuration of a validated `sequence` member.
 * @param reorgDepth - blocks a reorg can still change (the stage's; default the arithmetic's 128).
 * @throws RangeError on a member that did not pass validation ({@link checkSequenceConfig}).
 */
export function sequenceConfigOf(seq: Pick<RuleSequence, "within" | "maxPending">, reorgDepth?: number): SequenceConfig {
  const config: SequenceConfig = {
    span: seq.within.blocks !== undefined ? { blocks: seq.within.blocks } : { seconds: seq.within.seconds ?? 1 },
    ...(seq.maxPending !== undefined ? { maxPending: seq.maxPending } : {}),
    ...(reorgDepth !== undefined ? { reorgDepth } : {}),
  };
  checkSequenceConfig(config);
  return config;
}

/** The rule's `sequence` member when it is an object (a stored rule passed validation), else null. */
export function ruleSequence(rule: object): RuleSequence | null {
  const s = (rule as { sequence?: unknown }).sequence;
  return typeof s === "object" && s !== null && !Array.isArray(s) ? (s as RuleSequence) : null;
}

/**
 * `CS_RULE_NOT_SUPPORTED` at `sequence` when a body that does not evaluate sequences carries one
 * (saved searches and backtests); none when absent or null.
 * @param where - what refuses it, for the message (`saved searches`, `backtests`).
 */
export function sequenceNotSupported(body: Record<string, unknown>, where: string): RuleValidationError[] {
  if (body.sequence === undefined || body.sequence === null) return [];
  return [
    { code: "CS_RULE_NOT_SUPPORTED", path: "sequence", message: `sequence: ${where} do not evaluate sequence yet (rules do); remove it` },
  ];
}
