/**
 * Validation of a saved search's `sequence` member (lib/searches/sequence.ts; docs/rules.md,
 * "Saved searches"), for ./validate.ts. The codes are those of a rule's sequence
 * (lib/rules/schema-sequence.ts `sequenceErrors`) with the second step checked as a saved search's
 * query is:
 * - `CS_RULE_INVALID` at `sequence` beside `window` or `absence`, and at `sequence.…` for a shape
 *   other than {@link SearchSequenceSchema} or neither or both of `within.blocks`, `within.seconds`;
 * - `CS_SEARCH_KIND` at `sequence.followedBy.kind`;
 * - `CS_QUERY_*` and `CS_SEARCH_INEXACT` at `sequence.followedBy.query…` (`compileSearchQuery`);
 * - `CS_RULE_WINDOW_TOO_LARGE` at `sequence.within.…`, `CS_RULE_SEQUENCE_PENDING_CAP` at `sequence.maxPending`.
 * @module
 */
import { Type } from "typebox";
import { pendingCapErrors } from "../../../lib/rules/schema-sequence.js";
import { spanErrors } from "../../../lib/rules/schema-window.js";
import { SEARCH_KINDS, type SearchConfig } from "../../../lib/searches/model.js";
import { type SearchSequence, SearchSequenceSchema } from "../../../lib/searches/sequence.js";
import { checkAgainstSchema } from "../../../lib/validation/schema-check.js";
import { compileSearchQuery } from "../../dsl/saved-search.js";
import type { ApiErrorDetail, ErrorCode } from "../../errors.js";

/** {@link SearchSequenceSchema} with `followedBy`'s content left to the search checks (their codes). */
const OuterSchema = Type.Object(
  {
    ...SearchSequenceSchema.properties,
    followedBy: Type.Object(
      { kind: Type.Unknown(), query: Type.Unknown(), esQuery: Type.Optional(Type.Unknown()) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** Result of {@link checkSearchSequence}: the member to store (null or undefined as given) or its problems. */
export type CheckedSearchSequence = { ok: true; value: SearchSequence | null | undefined } | { ok: false; errors: ApiErrorDetail[] };

/**
 * Checks a saved-search body's `sequence` (see the module doc).
 * @param sequence - the body's `sequence` (undefined: not given; null: none, or removed on update).
 * @param others - the search's effective `window` and `absence` (the body's, else the stored search's).
 * @returns the member to store, `followedBy.esQuery` set by the evaluator (an `esQuery` sent is ignored), or every problem.
 */
export function checkSearchSequence(sequence: unknown, others: { window?: unknown; absence?: unknown }): CheckedSearchSequence {
  if (sequence === undefined || sequence === null) return { ok: true, value: sequence };
  const err = (code: ErrorCode, path: string, message: string): ApiErrorDetail => ({ code, path, message: `${path}: ${message}` });
  const other = (["window", "absence"] as const).find((name) => others[name] !== undefined && others[name] !== null);
  if (other !== undefined)
    return {
      ok: false,
      errors: [err("CS_RULE_INVALID", "sequence", `a saved search has at most one of window, absence and sequence (it has ${other})`)],
    };
  const issues = checkAgainstSchema(sequence, OuterSchema, "sequence");
  if (issues.length > 0) return { ok: false, errors: issues.map((i) => err("CS_RULE_INVALID", i.path, i.message)) };
  const seq = sequence as SearchSequence;
  const errors: ApiErrorDetail[] = [];
  const { kind, query } = seq.followedBy;
  let esQuery: Record<string, unknown> | null = null;
  if (!(SEARCH_KINDS as readonly unknown[]).includes(kind))
    errors.push(err("CS_SEARCH_KIND", "sequence.followedBy.kind", `must be one of ${SEARCH_KINDS.join(", ")}`));
  else if (typeof query !== "object" || query === null || Array.isArray(query))
    errors.push(
      err("CS_QUERY_INVALID", "sequence.followedBy.query", 'must be a search DSL query object ({"match_all": {}} for every record)'),
    );
  else {
    const compiled = compileSearchQuery(query, kind as SearchConfig["kind"], "sequence.followedBy.query");
    if (!compiled.ok) for (const e of compiled.errors) errors.push({ code: e.code as ErrorCode, message: e.message, path: e.path });
    else esQuery = (compiled.value.query as Record<string, unknown> | undefined) ?? null;
  }
  for (const e of [...spanErrors(seq.within, "sequence.within"), ...pendingCapErrors(seq.maxPending)])
    errors.push({ code: e.code, message: e.message, path: e.path });
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { ...seq, followedBy: { kind: seq.followedBy.kind, query: seq.followedBy.query, esQuery } } };
}
