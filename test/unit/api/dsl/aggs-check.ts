/** Helpers of the aggregation unit tests: the sanitized value of accepted aggregations, the first problem of refused ones. */
import { validateAggs } from "../../../../api/dsl/aggs.js";
import type { RecordKind } from "../../../../lib/records.js";

/** The sanitized aggregations; throws (failing the test) with the problems when refused. */
export function ok(aggs: unknown, kinds: RecordKind[] = ["tx"]) {
  const r = validateAggs(aggs, kinds);
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

/** The code and path of the first problem; throws (failing the test) when accepted. */
export function first(aggs: unknown, kinds: RecordKind[] = ["tx"]) {
  const r = validateAggs(aggs, kinds);
  if (r.ok) throw new Error(`expected errors for ${JSON.stringify(aggs)}`);
  const e = r.errors[0];
  return { code: e?.code, path: e?.path };
}
