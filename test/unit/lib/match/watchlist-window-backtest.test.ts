/**
 * Unit tests of `In watchlist` conditions in window backtests (lib/match/window-backtest.ts
 * `blockWithLists`), over an in-memory list store: a count window counts the records of listed contracts
 * only, and fires or not with the list's members; an absence rule is silent where no listed contract
 * logs; `block` (no lists read) selects nothing with the operator. Sequences:
 * test/unit/lib/match/sequence-backtest.test.ts. The real store is used in
 * test/integration/rules-api/watchlist-window-backtest.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { IndexedRecord } from "../../../../lib/match/backtest.js";
import { createWatchlistMembership } from "../../../../lib/match/watchlist-membership.js";
import { createWindowBacktester, type WindowBacktester } from "../../../../lib/match/window-backtest.js";
import type { RuleInput } from "../../../../lib/rules/model.js";
import { usdtLog } from "../../../support/sample-records.js";
import { memoryListStore } from "../../../support/watchlists.js";

const MAINNET = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const LIST = "list-1";
const OTHER_CONTRACT = "0x0000000000000000000000000000000000000001";
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "b")}`;
const header = (n: number) => ({ number: n, hash: hashOf(n), timestamp: 1_700_000_000 + 12 * n });
const options = { accountId: "acct", chain: MAINNET, head: 1_000, decode: { chainId: 1 }, now: () => new Date(0) };

const listStore = (members: string[]) => memoryListStore("acct", LIST, members);

/** One log of `address` per index in block `n`. */
function logs(n: number, addresses: string[]): IndexedRecord[] {
  return addresses.map((address, i) => ({
    kind: "log" as const,
    record: {
      ...usdtLog,
      address,
      blockNumber: { num: n, raw: `0x${n.toString(16)}` },
      blockHash: hashOf(n),
      transactionHash: `0x${`${n}${i}`.padStart(64, "0")}`,
      logIndex: { num: i, raw: `0x${i.toString(16)}` },
    },
  }));
}

const countRule = {
  name: "listed contracts",
  maxConfirmationCount: 0,
  state: "enabled",
  ...MAINNET,
  config: {
    targetType: "Log",
    targetMap: [{ name: "address", operator: "In watchlist", value: LIST }],
    alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/w" } }],
  },
  window: { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" },
} as RuleInput;

/** Blocks 10–14: USDT logs (`U`) and logs of another contract (`O`). */
const U = usdtLog.address;
const BLOCKS: Array<[number, string[]]> = [
  [10, [U, OTHER_CONTRACT, U]],
  [11, [U, OTHER_CONTRACT]],
  [12, [OTHER_CONTRACT, OTHER_CONTRACT]],
  [13, [U, OTHER_CONTRACT, U]],
  [14, [U]],
];

async function windowRun(tester: WindowBacktester) {
  const out: Array<{ end: number; selected: number; firings: string[] }> = [];
  for (const [n, addresses] of BLOCKS) {
    const r = await (tester.blockWithLists as NonNullable<WindowBacktester["blockWithLists"]>)(header(n), logs(n, addresses));
    out.push({ end: n, selected: r.selected, firings: r.matches.map((m) => m.entityId) });
  }
  return out;
}

describe("In watchlist in window backtests", () => {
  it("counts the records of listed contracts only, with the list's members", async () => {
    const store = listStore([U.toUpperCase().replace("0X", "0x")]);
    const tester = createWindowBacktester({ ...options, rule: countRule, watchlists: createWatchlistMembership(store) });
    // Listed per block 2, 1, 0, 2, 1: windows 10–11 hold 3 (fires), 11–12 hold 1 (re-armed), 13–14 hold 3 (fires again).
    expect(await windowRun(tester)).toEqual([
      { end: 10, selected: 2, firings: [] },
      { end: 11, selected: 1, firings: ["window:11"] },
      { end: 12, selected: 0, firings: [] },
      { end: 13, selected: 2, firings: [] },
      { end: 14, selected: 1, firings: ["window:14"] },
    ]);
    expect(store.reads).toBeGreaterThan(0);
  });

  it("listing the other contract too changes the firings; an empty list selects nothing", async () => {
    const both = listStore([U, OTHER_CONTRACT]);
    const withBoth = await windowRun(createWindowBacktester({ ...options, rule: countRule, watchlists: createWatchlistMembership(both) }));
    // 3, 2, 2, 3, 1: every window from 10–11 on holds 3 or more, so it fires once and is never re-armed.
    expect(withBoth.map((b) => b.selected)).toEqual([3, 2, 2, 3, 1]);
    expect(withBoth.flatMap((b) => b.firings)).toEqual(["window:11"]);
    const none = await windowRun(
      createWindowBacktester({ ...options, rule: countRule, watchlists: createWatchlistMembership(listStore([])) }),
    );
    expect(none.flatMap((b) => [b.selected, b.firings.length])).toEqual(Array(10).fill(0));
  });

  it("an absence rule is silent exactly where no listed contract logs", async () => {
    const absence = { ...countRule, window: undefined, absence: { blocks: 1 } } as RuleInput;
    const run = async (members: string[]) =>
      (
        await windowRun(createWindowBacktester({ ...options, rule: absence, watchlists: createWatchlistMembership(listStore(members)) }))
      ).flatMap((b) => b.firings);
    // Block 12 has only the other contract's logs; every block has a log of one of the two.
    expect(await run([U])).toEqual(["absence:12"]);
    expect(await run([U, OTHER_CONTRACT])).toEqual([]);
  });

  it("block (without lists) never holds the operator; without watchlists there is no blockWithLists", () => {
    const tester = createWindowBacktester({
      ...options,
      rule: countRule,
      watchlists: createWatchlistMembership(listStore([usdtLog.address])),
    });
    expect(tester.block(header(10), logs(10, [usdtLog.address])).selected).toBe(0);
    expect(createWindowBacktester({ ...options, rule: countRule }).blockWithLists).toBeUndefined();
  });
});
