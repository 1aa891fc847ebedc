/**
 * Backtest = live for windowed rules (issue 33): hand-written Transfer events over 14 blocks (some
 * without any record) are indexed in the real Elasticsearch under a unique prefix; each windowed
 * rule (count by blocks, grouped sum by seconds, distinct, absence) is replayed by
 * `POST /alerting/rules/test/` over the range and evaluated live by the match stage's window
 * evaluator (pipeline/match/windows/) on the real Redis with the real confirmation tracker, fed
 * the same records block by block (half of the blocks' records written after their block, as late
 * partitions deliver them). Both must give the same firings — window bounds, aggregate, group,
 * first record ids — and the same alert ids. Skips when Elasticsearch or Redis is down.
 */
import { describe, expect, it } from "vitest";
import { startBacktest } from "../../../api/backtest/run.js";
import { backtestRule, ruleSelector } from "../../../lib/match/backtest.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { WindowFiring } from "../../../lib/match/windows.js";
import type { EventRecord } from "../../../lib/records.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import { createWindowEvaluator } from "../../../pipeline/match/windows/evaluator.js";
import { isTransfer } from "../../support/rules.js";
import { BINANCE, events as fixtureEvents, MAINNET, RECORDS, USDT, VITALIK, WETH } from "../api/fixtures.js";
import { backtestFirings, backtestLive, type Firing, feedLive, placedIn, rangeBlocks, trackedLive } from "./backtest-live.js";

const stack = await backtestLive("wb");
const up = stack.up;

/** Transfers per block; zeros are blocks without any record. */
const PER_BLOCK = [2, 0, 3, 1, 0, 0, 4, 2, 0, 0, 0, 3, 1, 0];
const FROM = 18_000_000;
const TO = FROM + PER_BLOCK.length - 1;
const SENDERS = [VITALIK, BINANCE, WETH];
const template = fixtureEvents.find((e) => e.event === "Transfer" && e.address === USDT) as EventRecord;
const blocks = rangeBlocks("wb", FROM, PER_BLOCK, Date.UTC(2023, 8, 1));
const events: EventRecord[] = blocks.flatMap((b, i) =>
  Array.from({ length: PER_BLOCK[i] as number }, (_, j) => {
    const from = SENDERS[(i + j) % SENDERS.length] as string;
    const amount = (j + 1) * 1_000_000_000; // (j+1) × 1000 USDT
    return {
      ...template,
      ...placedIn("wb", b, j),
      args: [
        { name: "from", pos: 0, value: { hex: from.toLowerCase(), num: null, scaled: null, type: "address" } },
        { name: "to", pos: 1, value: { hex: BINANCE.toLowerCase(), num: null, scaled: null, type: "address" } },
        { name: "value", pos: 2, value: { hex: `0x${amount.toString(16)}`, num: amount, scaled: amount / 1e6, type: "uint256" } },
      ],
    };
  }),
);

function windowedRule(name: string, extension: Record<string, unknown>): RuleInput {
  return {
    name,
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    state: "enabled",
    ...MAINNET,
    config: {
      targetType: "Event",
      targetMap: [isTransfer()],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/w" } }],
    },
    ...extension,
  } as RuleInput;
}

const RULES: Array<[string, RuleInput]> = [
  [
    "count by blocks",
    windowedRule("count", { window: { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "4" } }),
  ],
  [
    "grouped sum of scaled values by seconds",
    windowedRule("sum", {
      window: {
        seconds: 36,
        aggregate: { fn: "sum", field: "args.value", useScaledValue: true },
        operator: "Greater",
        threshold: "2500",
        groupBy: "args.from",
      },
    }),
  ],
  [
    "distinct senders",
    windowedRule("distinct", {
      window: { blocks: 2, aggregate: { fn: "distinct", field: "args.from" }, operator: "Greater or Equal", threshold: "3" },
    }),
  ],
  ["absence by blocks", windowedRule("absence", { absence: { blocks: 3 } })],
];

/** The order of firings: by the window's end block, then entity id. */
const order = (x: Firing, y: Firing) => endOf(x) - endOf(y) || x.entityId.localeCompare(y.entityId);
const endOf = (f: Firing) => (f.entity.window as WindowFiring).end.number;

stack.hooks({ ...RECORDS, block: blocks, tx: [], log: [], event: events, call: [] });

/** The live evaluator's net firings (fired and not retracted), fed the same records block by block. */
async function live(input: RuleInput, space: string): Promise<Firing[]> {
  const rule = backtestRule({ rule: input, accountId: "acct" }, () => new Date());
  const tracked = trackedLive(stack, space);
  const windows = createWindowEvaluator(tracked.deps);
  windows.watch(createRuleIndex({ chain: MAINNET })).upsert(rule);
  const select = ruleSelector(rule, MAINNET, { chainId: 1 });
  const matchesOf = (n: number) =>
    select(
      events.filter((e) => e.blockNumber.num === n).map((record) => ({ kind: "event" as const, record: record as never })),
    ).selected.map(({ entity }) => ({ rule, entity }));
  await feedLive(windows, blocks, matchesOf, tracked.setHead);
  return tracked.firings().sort(order);
}

describe.skipIf(!up)("windowed rule backtests = the live evaluator on the same blocks", () => {
  it.each(RULES)("%s", async (name, rule) => {
    const replayed = backtestFirings(await stack.backtestLines(rule, FROM, TO));
    expect(replayed.length, `${name}: the fixture is built so that the window fires`).toBeGreaterThan(0);
    expect(await live(rule, name.replace(/\W+/g, "-"))).toEqual([...replayed].sort(order));
  });

  it("the block lines count the selected entities; the absence's firings come at blocks without records", async () => {
    const lines = await stack.backtestLines(RULES[3]?.[1] as RuleInput, FROM, TO);
    const blockLines = lines.filter((l) => l.type === "block");
    expect(blockLines.reduce((s, l) => s + (l.selected as number), 0)).toBe(events.length);
    const firings = lines.filter((l) => l.type === "match");
    for (const f of firings) expect(PER_BLOCK[(f.blockNumber as number) - FROM]).toBe(0);
    expect(firings.map((f) => f.entityId)).toEqual([`absence:${FROM + 10}`]);
  });

  it("the time cap stops between whole blocks, records or not, and nextFrom is the first block not applied", async () => {
    const stops = new Set<number>();
    for (let timeoutMs = 2_100; timeoutMs < 30_000; timeoutMs += 700) {
      let t = 0;
      const deps = {
        es: stack.es,
        indexPrefix: stack.indexPrefix,
        requestTimeoutMs: 10_000,
        timeoutMs,
        clock: () => (t += 1_000),
        decode: { chainId: 1 },
      };
      const rule = RULES[3]?.[1] as RuleInput;
      const lines: Array<Record<string, unknown>> = [];
      for await (const l of await startBacktest(deps, MAINNET, { rule, accountId: "a", from: FROM, to: TO, head: TO }))
        lines.push(l as unknown as Record<string, unknown>);
      const end = lines.at(-1) as { complete: boolean; reason: string | null; nextFrom: number | null };
      if (end.complete) continue;
      expect(end.reason).toBe("CS_BACKTEST_TIME_CAP");
      const nextFrom = end.nextFrom as number;
      expect(nextFrom).toBeGreaterThanOrEqual(FROM);
      expect(nextFrom).toBeLessThanOrEqual(TO);
      for (const l of lines.filter((x) => x.type === "block" || x.type === "match")) expect(l.blockNumber as number).toBeLessThan(nextFrom);
      stops.add(nextFrom);
    }
    // The cap was hit at several places, some of them between blocks without records.
    expect(stops.size).toBeGreaterThan(1);
    expect([...stops].some((n) => PER_BLOCK[n - FROM] === 0)).toBe(true);
  });
});
