/**
 * Validation of the `stateCondition` extension of a rule (issue 34 part 1; docs/rules.md, "State
 * conditions"): a top-level block beside `config`, as `confirmOn` is. The match stage reads and evaluates
 * it at each block (pipeline/match/state/evaluator.ts). A `call` subject without `abi` takes the
 * function from the ABI registered for its `to`, resolved by the rules routes at save time
 * (api/routes/rules/state-abi.ts).
 */
import type { StateSubject } from "../chain/state-reads.js";
import { type StateComparison, toRaw } from "../match/state.js";
import type { RuleValidationError } from "./validate.js";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SLOT = /^0x[0-9a-fA-F]{1,64}$/;
const OPERATORS = ["Greater", "Greater or Equal", "Less", "Less or Equal"];
const SUBJECTS = ["balance", "erc20Balance", "call", "storage"];

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function bad(path: string, message: string): RuleValidationError {
  return { code: "CS_RULE_INVALID", path, message: `${path}: ${message}` };
}

function decimalOk(v: unknown, decimals: number): boolean {
  if (typeof v !== "string") return false;
  try {
    toRaw(v, decimals);
    return true;
  } catch {
    return false;
  }
}

function subjectErrors(s: unknown): RuleValidationError[] {
  if (!isObj(s) || typeof s.type !== "string" || !SUBJECTS.includes(s.type))
    return [bad("stateCondition.subject.type", `must be one of ${SUBJECTS.join(", ")}`)];
  const out: RuleValidationError[] = [];
  const addr = s.type === "storage" ? "address" : s.type === "call" ? "to" : "address";
  if (typeof s[addr] !== "string" || !ADDRESS.test(s[addr] as string))
    out.push(bad(`stateCondition.subject.${addr}`, "must be a 0x address of 20 bytes"));
  if (s.type === "erc20Balance" && (typeof s.token !== "string" || !ADDRESS.test(s.token)))
    out.push(bad("stateCondition.subject.token", "must be a 0x address of 20 bytes"));
  if (s.type === "storage" && (typeof s.slot !== "string" || !SLOT.test(s.slot)))
    out.push(bad("stateCondition.subject.slot", "must be 0x and 1-64 hex digits"));
  if (s.type === "call") {
    if (typeof s.function !== "string" || s.function === "")
      out.push(bad("stateCondition.subject.function", "must name the view function"));
    if (s.args !== undefined && !Array.isArray(s.args)) out.push(bad("stateCondition.subject.args", "must be an array"));
    if (s.abi !== undefined && !Array.isArray(s.abi))
      out.push(bad("stateCondition.subject.abi", "must be an array of ABI fragments (omit it to use the ABI registered for to)"));
    if (s.abiId !== undefined)
      out.push(bad("stateCondition.subject.abiId", "is not a field: omit abi to use the ABI registered for to (PUT /abis/<to>)"));
  }
  return out;
}

/**
 * Problems of a rule's `stateCondition` block (absent or null: none). Codes: `CS_RULE_INVALID` at the
 * offending `stateCondition.…` path for a malformed block (and `every: "log"` on a native balance).
 */
export function stateErrors(body: Record<string, unknown>): RuleValidationError[] {
  const st = body.stateCondition;
  if (st === undefined || st === null) return [];
  if (!isObj(st)) return [bad("stateCondition", "must be an object")];
  const out = subjectErrors(st.subject);
  const decimals = st.decimals ?? 0;
  if (typeof decimals !== "number" || !Number.isInteger(decimals) || decimals < 0 || decimals > 77)
    out.push(bad("stateCondition.decimals", "must be an integer 0-77"));
  const every = st.every ?? { blocks: 1 };
  if (every !== "log" && !(isObj(every) && Number.isInteger(every.blocks) && (every.blocks as number) >= 1))
    out.push(bad("stateCondition.every", 'must be {"blocks": N>=1} or "log"'));
  const c = st.comparison;
  const d = typeof decimals === "number" ? decimals : 0;
  if (!isObj(c)) out.push(bad("stateCondition.comparison", "must be an object"));
  else if (c.changed !== undefined) {
    if (c.changed !== true || Object.keys(c).length !== 1)
      out.push(bad("stateCondition.comparison.changed", 'must be true, alone: {"changed": true}'));
  } else if (c.percent !== undefined) {
    if (!decimalOk(c.percent, 6) || (c.percent as string).startsWith("-"))
      out.push(bad("stateCondition.comparison.percent", "must be a positive decimal string"));
    if (c.direction !== undefined && !["up", "down", "any"].includes(c.direction as string))
      out.push(bad("stateCondition.comparison.direction", "must be up, down or any"));
  } else {
    if (typeof c.operator !== "string" || !OPERATORS.includes(c.operator))
      out.push(bad("stateCondition.comparison.operator", `must be one of ${OPERATORS.join(", ")}`));
    if (!decimalOk(c.threshold, d))
      out.push(bad("stateCondition.comparison.threshold", `must be a decimal string with at most ${d} decimals`));
    if (c.reset !== undefined && !decimalOk(c.reset, d))
      out.push(bad("stateCondition.comparison.reset", `must be a decimal string with at most ${d} decimals`));
  }
  if (out.length > 0) return out;
  if (every === "log" && isObj(st.subject) && st.subject.type === "balance")
    out.push(
      bad("stateCondition.every", '"log" cannot watch a native balance: it changes without a log (plain transfers); use {"blocks": N}'),
    );
  return out;
}

/** A stored rule's state condition (validated by {@link stateErrors}). */
export interface StateCondition {
  subject: StateSubject;
  /** Scale of threshold and reset, default 0. */
  decimals?: number;
  /** Read every N blocks (default 1), or `"log"`: on blocks whose `logsBloom` may hold a log of the subject's contract. */
  every?: { blocks: number } | "log";
  comparison: StateComparison;
}

/** The rule's `stateCondition` when it is an object (a stored rule passed validation), else null. */
export function ruleStateCondition(rule: object): StateCondition | null {
  const st = (rule as { stateCondition?: unknown }).stateCondition;
  return isObj(st) ? (st as unknown as StateCondition) : null;
}

/**
 * `CS_RULE_NOT_SUPPORTED` at `stateCondition` when a body that cannot evaluate one carries it: saved searches
 * (they match records, not readings). Rule backtests evaluate it (api/backtest/state-scan.ts). None when absent or null.
 * @param where - what refuses it, for the message (`saved searches`).
 */
export function stateNotSupported(body: Record<string, unknown>, where: string): RuleValidationError[] {
  if (body.stateCondition === undefined || body.stateCondition === null) return [];
  return [
    {
      code: "CS_RULE_NOT_SUPPORTED",
      path: "stateCondition",
      message: `stateCondition: ${where} do not evaluate state conditions: they match records, not state readings; remove it`,
    },
  ];
}
