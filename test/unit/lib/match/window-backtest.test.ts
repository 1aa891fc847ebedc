/**
 * Unit tests of windowed-rule backtests, the pure part (lib/match/window-backtest.ts): firings as
 * matches (entity `window:<end>` / `absence:<end>` with the firing), crossing and re-arming over
 * blocks with and without records, a gap in the blocks restarting the window, and the counts of a
 * block. The agreement with the live evaluator is tested in
 * test/integration/rules-api/window-backtest.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { IndexedRecord } from "../../../../lib/match/backtest.js";
import { createWindowBacktester, isWindowedRule, type WindowBacktester } from "../../../../lib/match/window-backtest.js";
import type { WindowFiring } from "../../../../lib/match/windows.js";
import type { RuleInput } from "../../../../lib/rules/model.js";
import { usdtLog } from "../../../support/sample-records.js";

const MAINNET = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "a")}`;

function rule(extension: Record<string, unknown>): RuleInput {
  return {
    name: "usdt logs",
    maxConfirmationCount: 0,
    state: "enabled",
    ...MAINNET,
    config: {
      targetType: "Log",
      targetMap: [{ name: "address", operator: "Equals (ignore case)", value: usdtLog.address }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/w" } }],
    },
    ...extension,
  } as RuleInput;
}

/** `count` USDT logs in block `n` (and one log of another contract, which the rule does not select). */
function logs(n: number, count: number): IndexedRecord[] {
  const at = { blockNumber: { num: n, raw: `0x${n.toString(16)}` }, blockHash: hashOf(n) };
  const out: IndexedRecord[] = Array.from({ length: count }, (_, i) => ({
    kind: "log" as const,
    record: { ...usdtLog, ...at, transactionHash: `0x${`${n}${i}`.padStart(64, "0")}`, logIndex: { num: i, raw: `0x${i.toString(16)}` } },
  }));
  out.push({
    kind: "log",
    record: { ...usdtLog, ...at, address: "0x0000000000000000000000000000000000000001", logIndex: { num: 99, raw: "0x63" } },
  });
  return out;
}

/** Feeds blocks (number → selected logs) in order; returns the firings by end block. */
function run(tester: WindowBacktester, blocks: Array<[number, number]>) {
  return blocks.flatMap(([n, count]) => {
    const r = tester.block({ number: n, hash: hashOf(n), timestamp: 1_700_000_000 + 12 * n }, count < 0 ? [] : logs(n, count));
    expect(r.selected).toBe(Math.max(count, 0));
    expect(r.alerts).toBe(r.matches.length); // maxConfirmationCount 0: one confirmed alert per firing
    return r.matches.map((m) => ({
      entityId: m.entityId,
      entity: m.entity as { window: WindowFiring; absence?: boolean },
      alerts: m.alerts,
    }));
  });
}

const options = { accountId: "acct", chain: MAINNET, head: 100, decode: { chainId: 1 } };

describe("windowed rule backtests", () => {
  it("a count window fires once per crossing, re-arms past the reset band, and names its records", () => {
    const r = rule({ window: { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "2" } });
    expect(isWindowedRule(r)).toBe(true);
    const tester = createWindowBacktester({ ...options, rule: r });
    // 10: 1; 11: 1 (fires: 2); 12: 1 (still 2, no second alert); 13, 14: none (re-armed at ≤ 1); 15: 2 (fires).
    const fired = run(tester, [
      [10, 1],
      [11, 1],
      [12, 1],
      [13, 0],
      [14, -1],
      [15, 2],
    ]);
    expect(fired.map((f) => [f.entityId, f.entity.window.aggregate, f.entity.window.window.fromBlock])).toEqual([
      ["window:11", "2", 10],
      ["window:15", "2", 14],
    ]);
    expect(fired[1]?.entity.window.recordIds).toHaveLength(2);
    expect(fired[0]?.alerts.map((a) => [a.alert.status, a.alert.entityId, a.alert.blockNumber])).toEqual([["confirmed", "window:11", 11]]);
  });

  it("a block missing from the range restarts the window (no firing on a window it did not see whole)", () => {
    const tester = createWindowBacktester({
      ...options,
      rule: rule({ window: { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "2" } }),
    });
    // Block 12 is missing: the window restarts at 13, whose 2 records alone do not make a complete window.
    const fired = run(tester, [
      [10, 0],
      [11, 1],
      [13, 2],
      [14, 0],
    ]);
    expect(fired.map((f) => [f.entityId, f.entity.window.window.fromBlock, f.entity.window.recordCount])).toEqual([["window:14", 13, 2]]);
  });

  it("an absence rule fires at the first block ending a silent window, once per silence", () => {
    const tester = createWindowBacktester({ ...options, rule: rule({ absence: { blocks: 2 } }) });
    const fired = run(tester, [
      [10, 1],
      [11, 0],
      [12, -1],
      [13, 0],
      [14, 1],
      [15, 0],
      [16, 0],
    ]);
    expect(fired.map((f) => [f.entityId, f.entity.absence, f.entity.window.aggregate])).toEqual([
      ["absence:12", true, "0"],
      ["absence:16", true, "0"],
    ]);
  });

  it("a rule without window or absence is not windowed", () => {
    expect(isWindowedRule(rule({}))).toBe(false);
    expect(() => createWindowBacktester({ ...options, rule: rule({}) })).toThrow(TypeError);
  });
});
