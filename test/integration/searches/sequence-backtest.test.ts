/**
 * Backtest = live for saved searches with `sequence` (issue 33): hand-written ERC-20 Transfer and
 * Approval events and plain transactions over 14 blocks (some without any record) are indexed in the
 * real Elasticsearch under a unique prefix. The saved search "a Transfer, then an Approval by the
 * recipient within N blocks" (span by blocks, and by seconds), and "a Transfer, then a transaction
 * from the recipient" (a second query over another kind), are replayed by `POST
 * /alerting/searches/test/` over the range and evaluated live by the match stage's sequence evaluator
 * (pipeline/match/sequences/: the stage's search index wrapped with the second queries, as the stage
 * wraps it) on the real Redis with the real confirmation tracker, fed the same records block by
 * block (half of the blocks' matches written after their block, as late partitions deliver them).
 * Both give the same firings — both records, the correlate value, the blocks — and the same alert
 * ids; the records that pair with nothing (an Approval without a Transfer before it, one too late)
 * fire in neither; and the firings are those of the rule with the same conditions. Skips when
 * Elasticsearch or Redis is down.
 */
import { describe, expect, it } from "vitest";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import { backtestStoredFields } from "../../../lib/match/backtest.js";
import type { SequenceMatch } from "../../../lib/match/sequence-records.js";
import type { EventRecord, TransactionRecord } from "../../../lib/records.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { createSearchIndex, type SearchTopic } from "../../../pipeline/match/search-index.js";
import { createSequenceEvaluator } from "../../../pipeline/match/sequences/evaluator.js";
import { withFollowedBySearches } from "../../../pipeline/match/sequences/searches.js";
import { transferThenApprovalRule } from "../../support/rules.js";
import { BINANCE, events as fixtureEvents, txs as fixtureTxs, MAINNET, RECORDS, ROUTER, USDT, VITALIK, WETH } from "../api/fixtures.js";
import { backtestFirings, backtestLive, type Firing, feedLive, placedIn, rangeBlocks, trackedLive } from "../rules-api/backtest-live.js";

const stack = await backtestLive("ssb");

/**
 * Per block, its records in position order: `T<who>` a USDT Transfer to, `A<who>` an Approval by,
 * `X<who>` a transaction from `a` (Vitalik), `b` (Binance) or `c` (WETH).
 */
const PLAN = ["Ta Tb", "", "Aa Ac", "Tc", "Xb", "Ta", "Ab Xa", "Aa Ac", "", "Tb Ab", "", "Ta", "", "Aa"];
const WHO: Record<string, string> = { a: VITALIK, b: BINANCE, c: WETH };
const FROM = 18_200_000;
const TO = FROM + PLAN.length - 1;
const plan = PLAN.map((s) => (s === "" ? [] : s.split(" ").map((code) => [code[0], WHO[code[1] as string] as string] as const)));
const blocks = rangeBlocks(
  "ssb",
  FROM,
  plan.map((records) => records.length),
  Date.UTC(2023, 8, 3),
);
const transfer = fixtureEvents.find((e) => e.event === "Transfer" && e.address === USDT) as EventRecord;
const address = (name: string, pos: number, who: string) => ({
  name,
  pos,
  value: { hex: who.toLowerCase(), num: null, scaled: null, type: "address" },
});
const amount = { name: "value", pos: 2, value: { hex: "0x3b9aca00", num: 1e9, scaled: 1000, type: "uint256" } };
const events: EventRecord[] = [];
const txs: TransactionRecord[] = [];
for (const [i, b] of blocks.entries())
  for (const [j, [code, who]] of (plan[i] ?? []).entries()) {
    const at = placedIn("ssb", b, j);
    if (code === "X") {
      const { transactionHash, logIndex: _, ...place } = at;
      txs.push({
        ...(fixtureTxs[0] as TransactionRecord),
        ...place,
        hash: transactionHash,
        from: who,
        to: ROUTER,
        input: "0x",
        methodId: null,
        logCount: 0,
      });
    } else
      events.push({
        ...transfer,
        ...(code === "T"
          ? { args: [address("from", 0, ROUTER), address("to", 1, who), amount] }
          : {
              event: "Approval",
              signature: "Approval(address,address,uint256)",
              args: [address("owner", 0, who), address("spender", 1, ROUTER), amount],
              str: `Approval(owner=${who}, spender=${ROUTER}, value=1000 USDT)`,
            }),
        ...at,
      });
  }

/** The saved search: USDT Transfers, then the second query's records with the recipient as `correlateWith`. */
const searchBody = (within: { blocks: number } | { seconds: number }, followedBy: "Approval" | "tx") => ({
  name: "transfer then approval",
  ...MAINNET,
  maxConfirmationCount: 0,
  sendPendingAlerts: false,
  kind: "event",
  query: { bool: { filter: [{ term: { event: "Transfer" } }, { term: { address: USDT } }] } },
  sequence: {
    followedBy: followedBy === "tx" ? { kind: "tx", query: { match_all: {} } } : { kind: "event", query: { term: { event: "Approval" } } },
    within,
    correlate: { first: "args.to", followedBy: followedBy === "tx" ? "from" : "args.owner" },
  },
  alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/s" } }],
});

/** The order of firings: by the followedBy record's block, then entity id. */
const followedByBlock = (f: Firing) => (f.entity.sequenceMatch as SequenceMatch).followedBy.blockNumber;
const order = (x: Firing, y: Firing) => followedByBlock(x) - followedByBlock(y) || x.entityId.localeCompare(y.entityId);
/** Each firing as [correlate value, first block, followedBy block], relative to FROM. */
const pairs = (firings: readonly Firing[]) =>
  firings.map((f) => {
    const m = f.entity.sequenceMatch as SequenceMatch;
    return [m.key, m.first.blockNumber - FROM, m.followedBy.blockNumber - FROM];
  });

stack.hooks({ ...RECORDS, block: blocks, tx: txs, log: [], event: events, call: [] });

/** The live evaluator's net firings (fired and not retracted) of the search, fed each block's records as the stage consumes them. */
async function live(body: Record<string, unknown>, space: string): Promise<Firing[]> {
  const checked = validateSearchInput(body, "create", [MAINNET]);
  if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
  const stored = { ...checked.value, ...backtestStoredFields(checked.value, "acct", () => new Date()) };
  const tracked = trackedLive(stack, space);
  const sequences = createSequenceEvaluator({ ...tracked.deps, decode: { chainId: 1 } });
  const index = withFollowedBySearches(sequences.watch(createSearchIndex(MAINNET, { chainId: 1 })), sequences);
  index.upsert(stored as unknown as Rule);
  const inputs = (n: number): InputRecord<SearchTopic>[] =>
    [
      ...events.filter((e) => e.blockNumber.num === n).map((record) => ({ topicKind: "events", record })),
      ...txs.filter((t) => t.blockNumber.num === n).map((record) => ({ topicKind: "transactions", record })),
    ] as unknown as InputRecord<SearchTopic>[];
  await feedLive(sequences, blocks, (n) => inputs(n).flatMap((input) => index.matchRecords(input)), tracked.setHead);
  return tracked.firings().sort(order);
}

const A = VITALIK.toLowerCase();
const B = BINANCE.toLowerCase();
const C = WETH.toLowerCase();

describe.skipIf(!stack.up)("saved-search sequence backtests = the live evaluator on the same blocks", () => {
  it.each([
    ["Approval within 5 blocks", searchBody({ blocks: 5 }, "Approval")],
    ["Approval within 40 seconds", searchBody({ seconds: 40 }, "Approval")],
    ["a transaction within 5 blocks (a second kind)", searchBody({ blocks: 5 }, "tx")],
  ])("%s", async (name, body) => {
    const lines = await stack.backtestLines(body, FROM, TO, "searches");
    const replayed = backtestFirings(lines);
    expect(replayed.length, `${name}: the fixture is built so that the sequence fires`).toBeGreaterThan(1);
    expect(await live(body, name.replace(/\W+/g, "-"))).toEqual([...replayed].sort(order));
    expect(lines[0]).toMatchObject({ type: "start", kinds: body.sequence.followedBy.kind === "tx" ? ["event", "tx"] : ["event"] });
  });

  it("fires for the pairs only: a Transfer, then the recipient's Approval or transaction in the span", async () => {
    const approvals = backtestFirings(await stack.backtestLines(searchBody({ blocks: 5 }, "Approval"), FROM, TO, "searches"));
    // C's Approval at 2 has no Transfer before it, B's at 6 is 6 blocks after its Transfer: neither fires.
    expect(pairs(approvals)).toEqual([
      [A, 0, 2],
      [A, 5, 7],
      [C, 3, 7],
      [B, 9, 9],
      [A, 11, 13],
    ]);
    // The same firings, alert ids included, as the rule with the same conditions (both use the backtest's rule id).
    const rule = backtestFirings(await stack.backtestLines(transferThenApprovalRule(MAINNET, { blocks: 5 }), FROM, TO));
    expect(approvals).toEqual(rule);
    const txLines = await stack.backtestLines(searchBody({ blocks: 5 }, "tx"), FROM, TO, "searches");
    expect(pairs(backtestFirings(txLines))).toEqual([
      [B, 0, 4],
      [A, 5, 6],
    ]);
    for (const m of txLines.filter((l) => l.type === "match")) expect(m).toMatchObject({ targetType: "Event" });
    const blockLines = txLines.filter((l) => l.type === "block");
    expect(blockLines.reduce((s, l) => s + (l.records as number), 0)).toBe(events.length + txs.length);
  });

  it("a watchlist lookup in the second query pairs only the listed senders' transactions", async () => {
    const headers = { authorization: `Bearer ${stack.token}` };
    const created = await stack.app.inject({
      method: "POST",
      url: "/alerting/watchlists/",
      headers,
      payload: { name: "a", kind: "address" },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json<{ id: string }>().id;
    const added = await stack.app.inject({ method: "POST", url: `/alerting/watchlists/${id}/members/`, headers, payload: [VITALIK] });
    expect(added.statusCode, added.body).toBe(200);
    const all = searchBody({ blocks: 5 }, "tx");
    const listed = { ...all, sequence: { ...all.sequence, followedBy: { kind: "tx", query: { terms: { from: { watchlist: id } } } } } };
    // Without the list: B's pair (0 → 4) and A's (5 → 6); with a list of A alone, A's only.
    expect(pairs(backtestFirings(await stack.backtestLines(listed, FROM, TO, "searches")))).toEqual([[A, 5, 6]]);
  });
});
