/** Unit tests of the pure confirmation rules (pipeline/match/confirmations/decide.ts). */
import { describe, expect, it } from "vitest";
import { alertId } from "../../../../lib/alerting/alert.js";
import type { ChainId } from "../../../../lib/config/index.js";
import type { Rule } from "../../../../lib/rules/model.js";
import {
  alertTemplate,
  confirmationsAt,
  decideHead,
  decideMatch,
  type MatchedEntity,
  thresholdOf,
} from "../../../../pipeline/match/confirmations/decide.js";
import { matchMember, parseMember } from "../../../../pipeline/match/keys.js";

const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };

/** A rule with the fields the confirmation rules read. */
const rule = (over: Partial<Rule> = {}): Rule =>
  ({
    id: "rule-1",
    accountId: "acct-1",
    name: "big transfers",
    version: 2,
    sendPendingAlerts: true,
    maxConfirmationCount: 3,
    config: {
      targetType: "Event",
      targetMap: [],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "http://hook/x" }, payload: [{ fieldType: "Field", fieldName: "event" }] }],
    },
    ...over,
  }) as Rule;

const entity = (block: number, hash = `0xA${block}`): MatchedEntity => ({
  entityId: `tx${block}_e_0`,
  blockHash: hash,
  blockNumber: { num: block, raw: `0x${block.toString(16)}` },
  event: "Transfer",
});

describe("confirmation arithmetic", () => {
  it("counts the entity's own block and never goes below 1", () => {
    expect(confirmationsAt(100, 100)).toBe(1);
    expect(confirmationsAt(102, 100)).toBe(3);
    expect(confirmationsAt(90, 100)).toBe(1);
    expect([0, 1, 3, Number.NaN].map((n) => thresholdOf({ maxConfirmationCount: n }))).toEqual([1, 1, 3, 1]);
  });
});

describe("decideMatch", () => {
  it("tracks a match below its threshold, due at block + threshold − 1", () => {
    const d = decideMatch(rule(), entity(100), 100, CHAIN);
    expect(d).toMatchObject({ confirmNow: false, sendPending: true, dueHead: 102, confirmations: 1 });
    expect(d.member).toBe("0xa100|rule-1|tx100_e_0");
    expect(d.pendingId).toBe(alertId("rule-1", "tx100_e_0", "0xa100", "pending"));
    expect(d.confirmedId).toBe(alertId("rule-1", "tx100_e_0", "0xa100", "confirmed"));
    expect(d.template).toMatchObject({ ruleName: "big transfers", blockHash: "0xa100", blockNumber: 100, payload: { event: "Transfer" } });
  });

  it("confirms at first sight when the head is deep enough, or the count is 0 or 1", () => {
    expect(decideMatch(rule(), entity(100), 102, CHAIN).confirmNow).toBe(true);
    expect(decideMatch(rule({ maxConfirmationCount: 0 }), entity(100), 100, CHAIN).confirmNow).toBe(true);
    expect(decideMatch(rule({ sendPendingAlerts: false }), entity(100), 100, CHAIN).sendPending).toBe(false);
  });

  it("refuses entities without id, block hash or block number", () => {
    expect(() => alertTemplate(rule(), { ...entity(1), entityId: "" }, CHAIN)).toThrow(TypeError);
    expect(() => alertTemplate(rule(), { ...entity(1), blockHash: "" }, CHAIN)).toThrow(/no blockHash/);
    expect(() => alertTemplate(rule(), { ...entity(1), blockNumber: -1 }, CHAIN)).toThrow(/not a block number/);
  });
});

describe("decideHead", () => {
  const m = (block: number, hash = `0xa${block}`, ruleId = "rule-1") =>
    matchMember({ blockHash: hash, ruleId, entityId: `tx${block}_e_0` });

  it("removes matches whose block left the chain and confirms due ones by block number", () => {
    const tracked = [
      { member: m(101), score: 101 },
      { member: m(100), score: 100 },
      { member: m(102, "0xorphan"), score: 102 },
    ];
    const due = [
      { member: m(101), score: 103 },
      { member: m(100), score: 102 },
      { member: m(102, "0xorphan"), score: 104 },
    ];
    const canonical = (n: number) => `0xA${n}`; // upper case: compared lower-cased
    const { removed, confirmed } = decideHead({ number: 104, hash: "0xa104" }, canonical, tracked, due);
    expect(removed).toEqual([
      {
        member: m(102, "0xorphan"),
        ruleId: "rule-1",
        status: "removed",
        alertId: alertId("rule-1", "tx102_e_0", "0xorphan", "removed"),
        confirmations: 0,
        replacedBy: { number: 102, hash: "0xa102" },
      },
    ]);
    expect(confirmed.map((c) => [parseMember(c.member).blockHash, c.status, c.confirmations])).toEqual([
      ["0xa100", "confirmed", 5],
      ["0xa101", "confirmed", 4],
    ]);
  });

  it("a removal names the block now canonical at its height, or none (hash null) when a reorg left the height empty", () => {
    const tracked = [
      { member: m(70, "0xold"), score: 70 },
      { member: m(71, "0xold71"), score: 71 },
    ];
    const canonical = (n: number) => (n === 70 ? "0xNew70" : n === 71 ? "" : undefined);
    const { removed } = decideHead({ number: 72, hash: "0xa72" }, canonical, tracked, []);
    expect(removed.map((r) => r.replacedBy)).toEqual([
      { number: 70, hash: "0xnew70" },
      { number: 71, hash: null },
    ]);
  });

  it("keeps matches whose height it does not know, and uses the head's hash at the head", () => {
    const tracked = [
      { member: m(50), score: 50 },
      { member: m(60, "0xold"), score: 60 },
    ];
    const { removed, confirmed } = decideHead({ number: 60, hash: "0xNEW" }, () => undefined, tracked, []);
    expect(removed.map((r) => r.member)).toEqual([m(60, "0xold")]);
    expect(confirmed).toEqual([]);
  });

  it("does not confirm a due member that is not tracked up to the head", () => {
    const { confirmed } = decideHead({ number: 10, hash: "0xa10" }, () => undefined, [], [{ member: m(9), score: 10 }]);
    expect(confirmed).toEqual([]);
  });
});
