import { describe, expect, it } from "vitest";
import { dueBlocks } from "../../../../api/backtest/state-scan.js";
import { createStateBacktester } from "../../../../lib/match/state-backtest.js";
import type { RuleInput } from "../../../../lib/rules/model.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const rule = (stateCondition: Record<string, unknown>): RuleInput =>
  ({
    name: "r",
    maxConfirmationCount: 0,
    ...chain,
    config: {
      targetType: "Event",
      targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }],
    },
    stateCondition,
  }) as RuleInput;
const subject = { type: "balance", address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" };
const at = (n: number) => ({ number: n, hash: `0x${n.toString(16).padStart(64, "0")}` });

describe("state backtests (pure part)", () => {
  it("due blocks of a range: the multiples of every within it", () => {
    expect(dueBlocks(10, 20, 1)).toEqual({ first: 10, count: 11 });
    expect(dueBlocks(10, 20, 4)).toEqual({ first: 12, count: 3 });
    expect(dueBlocks(13, 15, 4)).toEqual({ first: 16, count: 0 });
    expect(dueBlocks(0, 0, 7)).toEqual({ first: 0, count: 1 });
  });

  it("fires on crossing with the previous reading; an unread block keeps the memory", () => {
    const t = createStateBacktester({
      rule: rule({ subject, comparison: { operator: "Less", threshold: "5", reset: "8" } }),
      accountId: "a",
      chain,
      head: 100,
    });
    const steps = [
      t.block(at(1), { ok: true, value: 10n }),
      t.block(at(2), { ok: false, kind: "error", message: "reverted" }),
      t.block(at(3), { ok: true, value: 4n }),
      t.block(at(4), { ok: true, value: 3n }),
      t.block(at(5), { ok: true, value: 9n }),
      t.block(at(6), { ok: true, value: 1n }),
    ];
    expect(steps.map((s) => (s.match ? [s.match.blockNumber, s.match.previous] : null))).toEqual([
      null,
      null,
      [3, "10"],
      null,
      null,
      [6, "9"],
    ]);
    expect(steps[2]?.match).toMatchObject({ entityId: "state:3", entity: { state: { reading: "4" } } });
    expect(steps[2]?.alerts).toBe(1);
  });

  it("reads the blocks the live evaluator reads", () => {
    const t = createStateBacktester({
      rule: rule({ subject, every: { blocks: 3 }, comparison: { percent: "10" } }),
      accountId: "a",
      chain,
      head: 9,
    });
    expect([1, 2, 3, 4, 5, 6].filter((n) => t.due({ number: n }))).toEqual([3, 6]);
  });
});
