/**
 * The body of a rule backtest (`POST /alerting/rules/test/`; the CLI builds the same object), checked
 * (pure). Shape (docs/alerting.md, "Test a rule on history"):
 *
 * | key | type | meaning |
 * |---|---|---|
 * | `rule` | object | a rule body exactly as `POST /alerting/rules/` takes it (same validation) |
 * | `from`, `to` | integers >= 0, `from <= to` | the block range, both ends included |
 * | `last` | integer >= 1 | instead of `from`/`to`: the newest `last` indexed blocks |
 *
 * Other top-level keys are refused (`CS_BACKTEST_INVALID`), so a typo such as `form` is not ignored.
 * @module
 */
import type { ChainId } from "../../lib/config.js";
import { BACKTEST_SOURCES } from "../../lib/match/backtest.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { validateRuleInput } from "../../lib/rules/validate.js";
import type { ApiErrorDetail } from "../errors.js";
import { ruleValidationDetails } from "../routes/rules/errors.js";

/** The block range of a backtest: explicit, or the newest `last` blocks. */
export type BacktestRange = { from: number; to: number } | { last: number };

/** A checked backtest request. */
export interface BacktestRequest {
  rule: RuleInput;
  range: BacktestRange;
}

/** Result of {@link parseBacktestRequest}. */
export type ParsedBacktestRequest = { ok: true; value: BacktestRequest } | { ok: false; errors: ApiErrorDetail[] };

const KEYS = new Set(["rule", "from", "to", "last"]);

function isBlockNumber(v: unknown, min: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min;
}

/**
 * Checks a backtest body (see the module table).
 * @param body - the parsed JSON body.
 * @param chains - the chains served (the rule must name one, as for `POST /alerting/rules/`).
 * @param maxBlocks - the range cap (config `backtest.maxBlocks`).
 * @returns the request, or every problem: `CS_RULE_*` (paths under `rule.`), `CS_BACKTEST_INVALID`,
 *   `CS_BACKTEST_RANGE_TOO_LARGE`, `CS_BACKTEST_TARGET_UNSUPPORTED`.
 */
export function parseBacktestRequest(body: unknown, chains: readonly ChainId[], maxBlocks: number): ParsedBacktestRequest {
  const bad = (message: string, path: string | null): ApiErrorDetail => ({ code: "CS_BACKTEST_INVALID", message, path });
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { ok: false, errors: [bad("the body must be a JSON object {rule, from, to} or {rule, last}", null)] };
  }
  const b = body as Record<string, unknown>;
  const errors: ApiErrorDetail[] = [];
  for (const key of Object.keys(b))
    if (!KEYS.has(key)) errors.push(bad(`unknown key ${JSON.stringify(key)}: expected rule, from, to or last`, key));

  let rule: RuleInput | undefined;
  if (b.rule === undefined) errors.push(bad("rule is required: a rule body as POST /alerting/rules/ takes it", "rule"));
  else {
    const checked = validateRuleInput(b.rule, "create", chains);
    if (!checked.ok) {
      for (const d of ruleValidationDetails(checked.errors)) errors.push({ ...d, path: d.path === null ? "rule" : `rule.${d.path}` });
    } else if (BACKTEST_SOURCES[checked.value.config.targetType] === null) {
      errors.push({
        code: "CS_BACKTEST_TARGET_UNSUPPORTED",
        message: `${checked.value.config.targetType} rules cannot be tested on history: the first sight of a token needs the whole chain's history`,
        path: "rule.config.targetType",
      });
    } else rule = checked.value;
  }

  let range: BacktestRange | undefined;
  const hasRange = b.from !== undefined || b.to !== undefined;
  if (b.last !== undefined) {
    if (hasRange) errors.push(bad("give either from and to, or last, not both", "last"));
    else if (!isBlockNumber(b.last, 1)) errors.push(bad("last must be an integer >= 1 (a number of blocks)", "last"));
    else if (b.last > maxBlocks) {
      errors.push({
        code: "CS_BACKTEST_RANGE_TOO_LARGE",
        message: `last is ${b.last} blocks; at most ${maxBlocks} per backtest`,
        path: "last",
      });
    } else range = { last: b.last };
  } else {
    if (!isBlockNumber(b.from, 0)) errors.push(bad("from must be an integer >= 0 (a block number), or give last instead", "from"));
    if (!isBlockNumber(b.to, 0)) errors.push(bad("to must be an integer >= 0 (a block number), or give last instead", "to"));
    if (isBlockNumber(b.from, 0) && isBlockNumber(b.to, 0)) {
      const blocks = b.to - b.from + 1;
      if (b.from > b.to) errors.push(bad(`from (${b.from}) is after to (${b.to})`, "to"));
      else if (blocks > maxBlocks) {
        errors.push({
          code: "CS_BACKTEST_RANGE_TOO_LARGE",
          message: `the range covers ${blocks} blocks; at most ${maxBlocks} per backtest (split it)`,
          path: "to",
        });
      } else range = { from: b.from, to: b.to };
    }
  }
  if (errors.length > 0 || !rule || !range) return { ok: false, errors };
  return { ok: true, value: { rule, range } };
}
