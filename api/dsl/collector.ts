/**
 * Helpers shared by the search-body validators (./validate.ts, ./query.ts): the problem collector
 * of one body and small checks.
 * @module
 */
import { ProblemCollector } from "../../lib/validation/problems.js";
import type { ErrorCode } from "../errors.js";
import type { FieldCatalog } from "./fields.js";
import { LIMITS } from "./plan.js";

/** Whether a value is a JSON scalar (string, finite number, boolean). */
export function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean";
}

/** The kinds of a catalog for messages, e.g. `block,tx`. */
export function kindsLabel(catalog: FieldCatalog): string {
  return catalog.kinds.join(",");
}

/** The problems of one search body (at most {@link LIMITS.maxErrors}). */
export class Collector extends ProblemCollector<ErrorCode, string | null> {
  constructor() {
    super(LIMITS.maxErrors);
  }
}
