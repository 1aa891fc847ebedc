import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../../api/backtest/request.js";
import { validateSearchInput } from "../../../../api/routes/searches/validate.js";
import { ruleSequence, SEQUENCE_CAPS, sequenceConfigOf } from "../../../../lib/rules/schema-sequence.js";
import { validateRuleInput } from "../../../../lib/rules/validate.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const chains = [chain];
const alerts = [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
const sequence = {
  followedBy: { targetType: "Event", targetMap: [{ name: "event", operator: "Equals", value: "ProposalExecuted" }] },
  within: { blocks: 100 },
  correlate: { first: "args.proposalId", followedBy: "args.proposalId" },
};
const rule = (extra: Record<string, unknown>) => ({
  name: "r",
  maxConfirmationCount: 0,
  ...chain,
  config: { targetType: "Event", targetMap: [{ name: "event", operator: "Equals", value: "ProposalCreated" }], alerts },
  ...extra,
});
const codes = (body: unknown, mode: "create" | "update" = "create") => {
  const r = validateRuleInput(body, mode, chains);
  return r.ok ? [] : r.errors.map((e) => [e.code, e.path]);
};

describe("sequence validation", () => {
  it("accepts a sequence by blocks or seconds, with maxPending; null is none", () => {
    expect(codes(rule({ sequence }))).toEqual([]);
    expect(codes(rule({ sequence: { ...sequence, within: { seconds: 3600 }, maxPending: SEQUENCE_CAPS.maxPending } }))).toEqual([]);
    expect(codes(rule({ sequence: null }))).toEqual([]);
    expect(codes({ sequence }, "update")).toEqual([]);
    const stored = validateRuleInput(rule({ sequence }), "create", chains);
    expect(stored.ok && ruleSequence(stored.value)).toEqual(sequence);
  });
  it("checks followedBy conditions with the rule's own codes, at sequence.followedBy paths", () => {
    const followedBy = { targetType: "Event", targetMap: [{ name: "event", operator: "Equals any", value: "x" }] };
    expect(codes(rule({ sequence: { ...sequence, followedBy } }))).toEqual([
      ["CS_RULE_VALUE_TYPE", "sequence.followedBy.targetMap[0].value"],
    ]);
    expect(codes(rule({ sequence: { ...sequence, followedBy: { targetType: "Event", targetMap: [] } } }))).toEqual([
      ["CS_RULE_ITEM_COUNT", "sequence.followedBy.targetMap"],
    ]);
    expect(codes(rule({ sequence: { ...sequence, followedBy: { targetType: "Nope", targetMap: followedBy.targetMap } } }))[0]).toEqual([
      "CS_RULE_INVALID",
      "sequence.followedBy.targetType",
    ]);
  });
  it("refuses a malformed shape, neither or both spans, and a rule that also has window or absence", () => {
    expect(codes(rule({ sequence: { ...sequence, correlate: { first: "args.id" } } }))).toEqual([
      ["CS_RULE_INVALID", "sequence.correlate.followedBy"],
    ]);
    expect(codes(rule({ sequence: { ...sequence, within: {} } }))).toEqual([["CS_RULE_INVALID", "sequence.within"]]);
    expect(codes(rule({ sequence: { ...sequence, within: { blocks: 1, seconds: 1 } } }))).toEqual([["CS_RULE_INVALID", "sequence.within"]]);
    expect(codes(rule({ sequence, absence: { blocks: 5 } }))).toEqual([["CS_RULE_INVALID", "sequence"]]);
  });
  it("refuses a span above the cap with CS_RULE_WINDOW_TOO_LARGE and too many open steps with CS_RULE_SEQUENCE_PENDING_CAP", () => {
    expect(codes(rule({ sequence: { ...sequence, within: { blocks: SEQUENCE_CAPS.blocks + 1 } } }))).toEqual([
      ["CS_RULE_WINDOW_TOO_LARGE", "sequence.within.blocks"],
    ]);
    expect(codes(rule({ sequence: { ...sequence, within: { seconds: SEQUENCE_CAPS.seconds + 1 } } }))).toEqual([
      ["CS_RULE_WINDOW_TOO_LARGE", "sequence.within.seconds"],
    ]);
    expect(codes(rule({ sequence: { ...sequence, maxPending: SEQUENCE_CAPS.maxPending + 1 } }))).toEqual([
      ["CS_RULE_SEQUENCE_PENDING_CAP", "sequence.maxPending"],
    ]);
  });
  it("maps to the arithmetic's configuration", () => {
    expect(sequenceConfigOf({ ...sequence, maxPending: 5 } as never, 64)).toEqual({ span: { blocks: 100 }, maxPending: 5, reorgDepth: 64 });
    expect(sequenceConfigOf({ ...sequence, within: { seconds: 60 } } as never)).toEqual({ span: { seconds: 60 } });
  });
  it("saved searches refuse a rule's followedBy (theirs is a query: test/unit/api/search-sequence.test.ts); rule backtests replay it (test/unit/lib/match/sequence-backtest.test.ts)", () => {
    const search = { name: "s", maxConfirmationCount: 0, ...chain, kind: "event", query: { match_all: {} }, alerts };
    const refused = validateSearchInput({ ...search, sequence }, "create", chains);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toContainEqual([
      "CS_RULE_INVALID",
      "sequence.followedBy.targetType",
    ]);
    expect(parseBacktestRequest({ rule: rule({ sequence }), last: 10 }, chains, 1000).ok).toBe(true);
  });
});
