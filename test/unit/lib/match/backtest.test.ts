/**
 * Unit tests of the pure part of rule backtests (lib/match/backtest.ts): trace records rebuilt from
 * the indexed `call` documents give the match stage's entities (real mainnet traces), the order of a
 * block's records, and the alerts a match gets by threshold, sendPendingAlerts and depth.
 */
import { describe, expect, it } from "vitest";
import {
  BACKTEST_RULE_ID,
  createBacktester,
  type IndexedRecord,
  sourcesOfBlock,
  traceRecordOfCalls,
} from "../../../../lib/match/backtest.js";
import { entitiesOf } from "../../../../lib/match/entities.js";
import type { RuleInput } from "../../../../lib/rules/model.js";
import { callRecords } from "../../../../pipeline/index/calls.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { usdtLog } from "../../../support/sample-records.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);
const MAINNET = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };

/** The indexed form of a record: its JSON, as Elasticsearch returns `_source`. */
const asIndexed = <T>(v: T): Record<string, unknown> => JSON.parse(JSON.stringify(v)) as Record<string, unknown>;

describe.skipIf(!fixtures)("trace records rebuilt from call documents", () => {
  it("give the same Trace, Call and Contract entities as the trace record (revertReason aside)", () => {
    let traces = 0;
    let nested = 0;
    for (const fb of loadCompleteBlocks().filter((b) => b.traces)) {
      for (const trace of toBlockBundle(fb.block, fb.receipts, fb.traces).traces) {
        const docs = callRecords(trace, { chainId: 1 }).map(asIndexed).reverse() as never[];
        const rebuilt = traceRecordOfCalls(docs);
        const strip = (list: ReturnType<typeof entitiesOf>) =>
          list.map(({ type, entity }) => ({ type, entity: { ...entity, revertReason: null } }));
        expect(strip(entitiesOf({ topicKind: "traces", record: rebuilt }, { chainId: 1 }))).toEqual(
          strip(entitiesOf({ topicKind: "traces", record: trace }, { chainId: 1 })),
        );
        traces++;
        if (docs.length > 1) nested++;
      }
    }
    expect(traces).toBeGreaterThan(100);
    expect(nested).toBeGreaterThan(10);
  });
});

describe("sourcesOfBlock", () => {
  it("orders by transaction index, then transaction, trace, logs and events by log index", () => {
    const at = (tx: number, log?: number) => ({
      transactionIndex: { num: tx, raw: "0x0" },
      ...(log === undefined ? {} : { logIndex: { num: log, raw: "0x0" } }),
    });
    const records: IndexedRecord[] = [
      { kind: "event", record: { id: "e2", ...at(1, 2) } },
      { kind: "log", record: { id: "l3", ...at(1, 3) } },
      { kind: "tx", record: { id: "t1", ...at(1) } },
      { kind: "event", record: { id: "e0", ...at(0, 0) } },
      { kind: "log", record: { id: "l1", ...at(1, 1) } },
    ];
    expect(sourcesOfBlock(records).map((s) => [s.topicKind, (s.record as { id: string }).id])).toEqual([
      ["events", "e0"],
      ["transactions", "t1"],
      ["logs", "l1"],
      ["logs", "l3"],
      ["events", "e2"],
    ]);
  });

  it("refuses call documents without a top-level frame", () => {
    expect(() => traceRecordOfCalls([{ traceAddress: [0], transactionHash: "0xab" } as never])).toThrow(/no top-level call frame/);
  });
});

describe("createBacktester alerts", () => {
  const logRule = (maxConfirmationCount: number, sendPendingAlerts: boolean): RuleInput => ({
    name: "USDT logs",
    maxConfirmationCount,
    sendPendingAlerts,
    state: "disabled",
    ...MAINNET,
    config: {
      targetType: "Log",
      targetMap: [{ name: "address", operator: "Equals (ignore case)", value: usdtLog.address }],
      alerts: [{ type: "Webhook (GET)", parameters: { url: "https://example.com/{transactionHash}" } }],
    },
  });
  const block = usdtLog.blockNumber.num;
  const run = (rule: RuleInput, head: number) =>
    createBacktester({
      rule,
      accountId: "acc",
      chain: MAINNET,
      head,
      decode: { chainId: 1 },
      now: () => new Date("2026-01-01T00:00:00Z"),
    }).block(block, usdtLog.blockHash, [
      { kind: "log", record: asIndexed(usdtLog) },
      {
        kind: "log",
        record: asIndexed({ ...usdtLog, address: "0x0000000000000000000000000000000000000001", logIndex: { num: 999, raw: "0x3e7" } }),
      },
    ]);
  const statuses = (r: ReturnType<typeof run>) =>
    r.matches.flatMap((m) => m.alerts.map((a) => [a.alert.status, a.alert.confirmations, a.alert.sequence]));

  it("tests a disabled rule, counts records and entities, and renders the actions", () => {
    const r = run(logRule(1, false), block);
    expect(r).toMatchObject({ records: 2, entities: 2, alerts: 1 });
    expect(r.matches).toHaveLength(1);
    expect(r.matches[0]!.alerts[0]!.alert).toMatchObject({
      ruleId: BACKTEST_RULE_ID,
      status: "confirmed",
      emittedAt: "2026-01-01T00:00:00.000Z",
    });
    expect(r.matches[0]!.alerts[0]!.actions).toEqual([
      { index: 0, type: "Webhook (GET)", method: "GET", url: `https://example.com/${usdtLog.transactionHash}` },
    ]);
  });

  it("renders message links with the explorer URLs it is given (the notify stage's setting), else the defaults", () => {
    const rule: RuleInput = {
      ...logRule(1, false),
      config: {
        ...logRule(1, false).config,
        alerts: [
          {
            type: "Slack",
            parameters: {
              url: "https://hooks.slack.com/services/T/B/X",
              text: "",
              channel: "#alerts",
              username: "chainsift",
              template: "tx {explorer.tx}",
            },
          },
        ],
      },
    };
    const textOf = (explorers?: Record<string, string>) => {
      const tester = createBacktester({
        rule,
        accountId: "acc",
        chain: MAINNET,
        head: block,
        decode: { chainId: 1 },
        ...(explorers ? { explorers } : {}),
      });
      const action = tester.block(block, usdtLog.blockHash, [{ kind: "log", record: asIndexed(usdtLog) }]).matches[0]?.alerts[0]
        ?.actions[0];
      return JSON.stringify(action);
    };
    expect(textOf()).toContain(`https://etherscan.io/tx/${usdtLog.transactionHash}`);
    expect(textOf({ "ethereum/ethereum/mainnet": "https://explorer.example" })).toContain(
      `https://explorer.example/tx/${usdtLog.transactionHash}`,
    );
  });

  it.each([
    [0, false, 0, [["confirmed", 1, 1]]],
    [1, true, 0, [["confirmed", 1, 1]]],
    [
      3,
      true,
      2,
      [
        ["pending", 1, 1],
        ["confirmed", 3, 2],
      ],
    ],
    [3, true, 1, [["pending", 1, 1]]],
    [3, false, 2, [["confirmed", 3, 1]]],
    [3, false, 1, []],
  ])("maxConfirmationCount %i, sendPendingAlerts %s, head block + %i → %j", (n, pending, depth, expected) => {
    expect(statuses(run(logRule(n, pending), block + depth))).toEqual(expected);
  });
});
