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
 * A saved-search backtest (`POST /alerting/searches/test/`, {@link parseSearchBacktestRequest}) takes
 * `search` (a saved-search body exactly as `POST /alerting/searches/` takes it, same validation,
 * paths under `search.`) in place of `rule`, with the same range keys.
 *
 * Other top-level keys are refused (`CS_BACKTEST_INVALID`), so a typo such as `form` is not ignored.
 * @module
 */
import type { ChainId } from "../../lib/config/index.js";
import { BACKTEST_SOURCES } from "../../lib/match/backtest.js";
import { followedByTargetUnsupported } from "../../lib/match/sequence-backtest.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { validateRuleInput } from "../../lib/rules/validate.js";
import type { ApiErrorDetail } from "../errors.js";
import { ruleValidationDetails } from "../routes/rules/errors.js";
import { validateSearchInput } from "../routes/searches/validate.js";
import { searchSequenceUnsupported } from "./search-sequence.js";
import type { SearchBacktestInput } from "./search-tester.js";

/** The block range of a backtest: explicit, or the newest `last` blocks. */
export type BacktestRange = { from: number; to: number } | { last: number };

/** A checked backtest request. */
export interface BacktestRequest {
  rule: RuleInput;
  range: BacktestRange;
}

/** A checked saved-search backtest request. */
export interface SearchBacktestRequest {
  search: SearchBacktestInput;
  range: BacktestRange;
}

/** Result of {@link parseBacktestRequest}. */
export type ParsedBacktestRequest = { ok: true; value: BacktestRequest } | { ok: false; errors: ApiErrorDetail[] };

/** Result of {@link parseSearchBacktestRequest}. */
export type ParsedSearchBacktestRequest = { ok: true; value: SearchBacktestRequest } | { ok: false; errors: ApiErrorDetail[] };

function isBlockNumber(v: unknown, min: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min;
}

const bad = (message: string, path: string | null): ApiErrorDetail => ({ code: "CS_BACKTEST_INVALID", message, path });

/**
 * The shared part of both bodies: the top-level keys and the range; `subject` checks the rule or
 * the search (its problems are pushed, paths already prefixed).
 */
function parseBody<T>(
  body: unknown,
  key: "rule" | "search",
  maxBlocks: number,
  subject: (value: unknown, errors: ApiErrorDetail[]) => T | undefined,
): { ok: true; value: { subject: T; range: BacktestRange } } | { ok: false; errors: ApiErrorDetail[] } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { ok: false, errors: [bad(`the body must be a JSON object {${key}, from, to} or {${key}, last}`, null)] };
  }
  const b = body as Record<string, unknown>;
  const errors: ApiErrorDetail[] = [];
  for (const k of Object.keys(b))
    if (![key, "from", "to", "last"].includes(k))
      errors.push(bad(`unknown key ${JSON.stringify(k)}: expected ${key}, from, to or last`, k));

  let checked: T | undefined;
  if (b[key] === undefined) {
    const what =
      key === "rule" ? "a rule body as POST /alerting/rules/ takes it" : "a saved-search body as POST /alerting/searches/ takes it";
    errors.push(bad(`${key} is required: ${what}`, key));
  } else checked = subject(b[key], errors);

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
  if (errors.length > 0 || checked === undefined || !range) return { ok: false, errors };
  return { ok: true, value: { subject: checked, range } };
}

/**
 * Checks a rule backtest body (see the module table).
 * @param body - the parsed JSON body.
 * @param chains - the chains served (the rule must name one, as for `POST /alerting/rules/`).
 * @param maxBlocks - the range cap (config `backtest.maxBlocks`).
 * @returns the request, or every problem: `CS_RULE_*` (paths under `rule.`), `CS_BACKTEST_INVALID`,
 *   `CS_BACKTEST_RANGE_TOO_LARGE`, `CS_BACKTEST_TARGET_UNSUPPORTED`.
 */
export function parseBacktestRequest(body: unknown, chains: readonly ChainId[], maxBlocks: number): ParsedBacktestRequest {
  const parsed = parseBody(body, "rule", maxBlocks, (value, errors): RuleInput | undefined => {
    const checked = validateRuleInput(value, "create", chains);
    if (!checked.ok) {
      for (const d of ruleValidationDetails(checked.errors)) errors.push({ ...d, path: d.path === null ? "rule" : `rule.${d.path}` });
    } else if (BACKTEST_SOURCES[checked.value.config.targetType] === null) {
      errors.push({
        code: "CS_BACKTEST_TARGET_UNSUPPORTED",
        message: `${checked.value.config.targetType} rules cannot be tested on history: the first sight of a token needs the whole chain's history`,
        path: "rule.config.targetType",
      });
    } else if (followedByTargetUnsupported(checked.value) !== null) {
      const message = followedByTargetUnsupported(checked.value) as string;
      errors.push({ code: "CS_BACKTEST_TARGET_UNSUPPORTED", message, path: "rule.sequence.followedBy.targetType" });
    } else return checked.value;
    return undefined;
  });
  return parsed.ok ? { ok: true, value: { rule: parsed.value.subject, range: parsed.value.range } } : parsed;
}

/**
 * Checks a saved-search backtest body: `{search, from, to}` or `{search, last}` (see the module notes).
 * @param body - the parsed JSON body.
 * @param chains - the chains served (the search must name one, as for `POST /alerting/searches/`).
 * @param maxBlocks - the range cap (config `backtest.maxBlocks`).
 * @returns the request, or every problem: the codes of `POST /alerting/searches/` (`CS_RULE_*`,
 *   `CS_SEARCH_KIND`, `CS_QUERY_*`, `CS_SEARCH_INEXACT`; paths under `search.`), `CS_BACKTEST_INVALID`,
 *   `CS_BACKTEST_RANGE_TOO_LARGE`, `CS_BACKTEST_TARGET_UNSUPPORTED` (api/backtest/search-sequence.ts `searchSequenceUnsupported`).
 */
export function parseSearchBacktestRequest(body: unknown, chains: readonly ChainId[], maxBlocks: number): ParsedSearchBacktestRequest {
  const parsed = parseBody(body, "search", maxBlocks, (value, errors): SearchBacktestInput | undefined => {
    const checked = validateSearchInput(value, "create", chains);
    const unsupported = checked.ok ? searchSequenceUnsupported(checked.value as unknown as SearchBacktestInput) : [];
    errors.push(...unsupported);
    if (checked.ok) return unsupported.length === 0 ? (checked.value as unknown as SearchBacktestInput) : undefined;
    for (const d of checked.errors) errors.push({ ...d, path: d.path === null ? "search" : `search.${d.path}` });
    return undefined;
  });
  return parsed.ok ? { ok: true, value: { search: parsed.value.subject, range: parsed.value.range } } : parsed;
}
