/**
 * Problems and results of the validators (search DSL, aggregations, rules): every validator reports
 * each problem as `{code, message, path}` (a stable code, a human-readable message, the JSON path of
 * the offending part, see ./path.ts) and answers a {@link ValidationResult}: the sanitized value,
 * or every problem found.
 * @module
 */

/** One problem found in a value: stable `code`, human-readable `message` (not stable), JSON `path`. */
export interface Problem<C extends string = string, P extends string | null = string | null> {
  /** Stable machine-readable code (the validator's own set, e.g. `CS_QUERY_INVALID`, `CS_RULE_TOO_LONG`). */
  code: C;
  /** Human-readable explanation; may change. */
  message: string;
  /** JSON path of the offending part (`""` the value itself), or null when it is tied to no part. */
  path: P;
}

/** Either the validated value or every problem found (at least one). */
export type ValidationResult<T, E = Problem> = { ok: true; value: T } | { ok: false; errors: E[] };

/** Whether `v` is a JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Collects the problems of one validation, in the order found, up to a cap (problems past it are
 * dropped: an answer need not list thousands).
 */
export class ProblemCollector<C extends string = string, P extends string | null = string | null> {
  /** The problems collected so far. */
  readonly problems: Problem<C, P>[] = [];

  /** @param max - most problems kept (default: all). */
  constructor(readonly max = Number.POSITIVE_INFINITY) {}

  /**
   * Records a problem (unless {@link ProblemCollector.max} are already kept).
   * @param code - stable code.
   * @param message - human-readable explanation.
   * @param path - JSON path of the offending part.
   */
  add(code: C, message: string, path: P): void {
    if (this.problems.length < this.max) this.problems.push({ code, message, path });
  }

  /**
   * Records a problem and returns `undefined`, for `return out.fail(…)` in checks that answer the
   * sanitized value or undefined.
   * @returns undefined.
   */
  fail(code: C, message: string, path: P): undefined {
    this.add(code, message, path);
    return undefined;
  }

  /** Records the problems of another result (a nested validation). */
  addAll(problems: readonly Problem<C, P>[]): void {
    for (const p of problems) this.add(p.code, p.message, p.path);
  }

  /** Whether no problem was recorded. */
  get ok(): boolean {
    return this.problems.length === 0;
  }

  /**
   * The result of the validation: `value` when no problem was recorded, else the problems.
   * @param value - the sanitized value.
   */
  result<T>(value: T): ValidationResult<T, Problem<C, P>> {
    return this.problems.length > 0 ? { ok: false, errors: this.problems } : { ok: true, value };
  }
}
