/**
 * Backtest = live for sequence rules (issue 33): hand-written ERC-20 Transfer and Approval events
 * over 14 blocks (some without any record) are indexed in the real Elasticsearch under a unique
 * prefix; a "Transfer to an address followed by an Approval by that address" rule (span by blocks,
 * and by seconds) is replayed by `POST /alerting/rules/test/` over the range and evaluated live by
 * the match stage's sequence evaluator (pipeline/match/sequences/) on the real Redis with the real
 * confirmation tracker, fed the same entities block by block as the stage matches them (its rule
 * index and the followedBy matches; half of the blocks' records written after their block, as late
 * partitions deliver them). Both must give the same firings — both records, the correlate value,
 * the blocks — and the same alert ids. Skips when Elasticsearch or Redis is down.
 */
import { describe, expect, it } from "vitest";
import { backtestRule, sourcesOfBlock } from "../../../lib/match/backtest.js";
import { entitiesOf } from "../../../lib/match/entities.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { SequenceMatch } from "../../../lib/match/sequence-records.js";
import type { EventRecord } from "../../../lib/records.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import type { MatchedEntity, MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createSequenceEvaluator } from "../../../pipeline/match/sequences/evaluator.js";
import { transferThenApprovalRule } from "../../support/rules.js";
import { BINANCE, events as fixtureEvents, MAINNET, RECORDS, ROUTER, USDT, VITALIK, WETH } from "../api/fixtures.js";
import { backtestFirings, backtestLive, type Firing, feedLive, placedIn, rangeBlocks, trackedLive } from "./backtest-live.js";

const stack = await backtestLive("sb");
const up = stack.up;

/** Per block, its events in log order: a Transfer to an address (`T`) or an Approval by one (`A`). */
const A = VITALIK;
const B = BINANCE;
const C = WETH;
const PER_BLOCK: Array<Array<["T" | "A", string]>> = [
  [
    ["T", A],
    ["T", B],
  ],
  [],
  [
    ["A", A],
    ["A", C],
  ],
  [["T", C]],
  [],
  [["T", A]],
  [["A", B]],
  [
    ["A", A],
    ["A", C],
  ],
  [],
  [
    ["T", B],
    ["A", B],
  ],
  [],
  [["T", A]],
  [],
  [["A", A]],
];
const FROM = 18_100_000;
const TO = FROM + PER_BLOCK.length - 1;
const transfer = fixtureEvents.find((e) => e.event === "Transfer" && e.address === USDT) as EventRecord;
const blocks = rangeBlocks(
  "sb",
  FROM,
  PER_BLOCK.map((evs) => evs.length),
  Date.UTC(2023, 8, 2),
);
const address = (name: string, pos: number, who: string) => ({
  name,
  pos,
  value: { hex: who.toLowerCase(), num: null, scaled: null, type: "address" },
});
const amount = { name: "value", pos: 2, value: { hex: "0x3b9aca00", num: 1e9, scaled: 1000, type: "uint256" } };
const events: EventRecord[] = blocks.flatMap((b, i) =>
  (PER_BLOCK[i] ?? []).map(([kind, who], j) => ({
    ...transfer,
    ...(kind === "T"
      ? { args: [address("from", 0, ROUTER), address("to", 1, who), amount] }
      : {
          event: "Approval",
          signature: "Approval(address,address,uint256)",
          args: [address("owner", 0, who), address("spender", 1, ROUTER), amount],
          str: `Approval(owner=${who}, spender=${ROUTER}, value=1000 USDT)`,
        }),
    ...placedIn("sb", b, j),
  })),
);

const RULES: Array<[string, RuleInput]> = [
  ["within 5 blocks", transferThenApprovalRule(MAINNET, { blocks: 5 })],
  ["within 40 seconds", transferThenApprovalRule(MAINNET, { seconds: 40 })],
];

/** The order of firings: by the followedBy record's block, then entity id. */
const order = (x: Firing, y: Firing) => followedByBlock(x) - followedByBlock(y) || x.entityId.localeCompare(y.entityId);
const followedByBlock = (f: Firing) => (f.entity.sequenceMatch as SequenceMatch).followedBy.blockNumber;

stack.hooks({ ...RECORDS, block: blocks, tx: [], log: [], event: events, call: [] });

/** The live evaluator's net firings (fired and not retracted), fed the same entities block by block. */
async function live(input: RuleInput, space: string): Promise<Firing[]> {
  const rule = backtestRule({ rule: input, accountId: "acct" }, () => new Date());
  const tracked = trackedLive(stack, space);
  const sequences = createSequenceEvaluator(tracked.deps);
  const index = sequences.watch(createRuleIndex({ chain: MAINNET }));
  index.upsert(rule);
  // What the stage does with each entity of a block: its rule index's matches and the followedBy ones.
  const matchesOf = (n: number) => {
    const matches: MatchInput[] = [];
    const records = events.filter((e) => e.blockNumber.num === n).map((record) => ({ kind: "event" as const, record: record as never }));
    for (const source of sourcesOfBlock(records))
      for (const { type, entity } of entitiesOf(source, { chainId: 1 })) {
        for (const r of index.match(type, entity)) matches.push({ rule: r, entity: entity as unknown as MatchedEntity });
        matches.push(...sequences.followedByMatches(type, entity));
      }
    return matches;
  };
  await feedLive(sequences, blocks, matchesOf, tracked.setHead);
  return tracked.firings().sort(order);
}

describe.skipIf(!up)("sequence rule backtests = the live evaluator on the same blocks", () => {
  it.each(RULES)("%s", async (name, rule) => {
    const replayed = backtestFirings(await stack.backtestLines(rule, FROM, TO));
    expect(replayed.length, `${name}: the fixture is built so that the sequence fires`).toBeGreaterThan(1);
    expect(await live(rule, name.replace(/\W+/g, "-"))).toEqual([...replayed].sort(order));
  });

  it("reports each firing in its followedBy block with both records, and counts both selections per block", async () => {
    const lines = await stack.backtestLines(RULES[0]?.[1] as RuleInput, FROM, TO);
    const firings = lines.filter((l) => l.type === "match") as Array<{ blockNumber: number; entity: { sequenceMatch: SequenceMatch } }>;
    // Within 5 blocks: A (0 → 2), A (5 → 7), C (3 → 7), B (9 → 9), A (11 → 13); B's Approval at 6 is 6 blocks after its Transfer.
    expect(firings.map((f) => [f.entity.sequenceMatch.key, f.entity.sequenceMatch.first.blockNumber - FROM, f.blockNumber - FROM])).toEqual(
      [
        [A.toLowerCase(), 0, 2],
        [A.toLowerCase(), 5, 7],
        [C.toLowerCase(), 3, 7],
        [B.toLowerCase(), 9, 9],
        [A.toLowerCase(), 11, 13],
      ],
    );
    for (const f of firings) expect(f.entity.sequenceMatch.followedBy.blockNumber).toBe(f.blockNumber);
    const blockLines = lines.filter((l) => l.type === "block");
    expect(blockLines.reduce((s, l) => s + (l.selected as number), 0)).toBe(events.length);
  });
});
