/**
 * Rule backtests take `In watchlist` conditions in every rule they replay: per-record, window, absence and
 * sequence rules (a sequence's `followedBy` conditions too); the lists a rule names are collected from both
 * condition sets, and without a watchlist store (the CLI) a rule naming any is refused.
 */
import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../api/backtest/request.js";
import { backtestWatchlists, ruleWatchlistIds } from "../../../api/backtest/watchlists.js";
import { ApiError } from "../../../api/errors.js";
import type { RuleInput } from "../../../lib/rules/model.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const alerts = [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
const ruleWith = (targetMap: unknown[], extension: Record<string, unknown> = {}) => ({
  name: "r",
  maxConfirmationCount: 0,
  ...chain,
  config: { targetType: "Transaction", targetMap, alerts },
  ...extension,
});
const LIST = "5b0c7a52-4a8f-4d7e-9a36-1f3f0e2a9c11";
const OTHER = "9d6a1c3e-2b7f-4e0a-8c55-0a1b2c3d4e5f";
const listed = { name: "from", operator: "In watchlist", value: LIST };
const plain = { name: "from", operator: "Equals", value: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" };
const sequenceWith = (followedByMap: unknown[]) => ({
  sequence: {
    followedBy: { targetType: "Transaction", targetMap: followedByMap },
    within: { blocks: 5 },
    correlate: { first: "to", followedBy: "from" },
  },
});
const EXTENSIONS: Array<[string, Record<string, unknown>]> = [
  ["a window rule", { window: { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "2" } }],
  ["an absence rule", { absence: { blocks: 3 } }],
  ["a sequence rule", sequenceWith([plain])],
];

describe("In watchlist in backtests", () => {
  it("is accepted in a per-record rule", () => {
    const parsed = parseBacktestRequest({ rule: ruleWith([listed]), last: 10 }, [chain], 1000);
    expect(parsed.ok ? parsed.value.rule.config.targetMap : parsed.errors).toEqual([listed]);
  });

  it.each(EXTENSIONS)("is accepted in %s", (_, extension) => {
    const parsed = parseBacktestRequest({ rule: ruleWith([listed], extension), last: 10 }, [chain], 1000);
    expect(parsed.ok ? parsed.value.rule.config.targetMap : parsed.errors).toEqual([listed]);
  });

  it("is accepted in a sequence's followedBy conditions", () => {
    const parsed = parseBacktestRequest({ rule: ruleWith([plain], sequenceWith([listed])), last: 10 }, [chain], 1000);
    expect(parsed.ok ? [] : parsed.errors).toEqual([]);
  });

  it("collects the lists of the rule's conditions and of its followedBy conditions", () => {
    const both = ruleWith([listed], sequenceWith([{ ...listed, value: OTHER }])) as unknown as RuleInput;
    expect([...ruleWatchlistIds(both)].sort()).toEqual([LIST, OTHER].sort());
    expect([...ruleWatchlistIds(ruleWith([plain], sequenceWith([listed])) as unknown as RuleInput)]).toEqual([LIST]);
    expect(ruleWatchlistIds(ruleWith([plain], sequenceWith([plain])) as unknown as RuleInput).size).toBe(0);
  });

  it("without a store (the CLI), a rule naming a list only in followedBy is refused; one naming none runs", () => {
    const followedByOnly = ruleWith([plain], sequenceWith([listed])) as unknown as RuleInput;
    let thrown: unknown;
    try {
      backtestWatchlists(undefined, followedByOnly);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).details.map((d) => [d.code, d.path])).toEqual([
      ["CS_RULE_NOT_SUPPORTED", "rule.sequence.followedBy.targetMap"],
    ]);
    expect(backtestWatchlists(undefined, ruleWith([plain], sequenceWith([plain])) as unknown as RuleInput)).toEqual({});
  });
});
