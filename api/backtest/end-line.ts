/**
 * The `end` line of a backtest's NDJSON answer (api/backtest/run.ts lists the lines), shared by the record
 * scan (run.ts) and the state-rule reads (state-scan.ts).
 * @module
 */
import type { BacktestEndLine } from "./run.js";

/** The `end` line of a backtest with these running `totals` (`elapsedMs`: time since the start), for a `reason` (null: complete). */
export function endLineOf(
  totals: Omit<BacktestEndLine, "type" | "complete" | "reason" | "nextFrom" | "tookMs">,
  elapsedMs: () => number,
): (reason: string | null, nextFrom: number | null) => BacktestEndLine {
  return (reason, nextFrom) => ({ type: "end", complete: reason === null, reason, nextFrom, ...totals, tookMs: Math.round(elapsedMs()) });
}
