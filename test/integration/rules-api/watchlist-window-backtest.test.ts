/**
 * `In watchlist` in window and sequence rule backtests (issue 34): hand-written USDT Transfer events
 * are indexed in the real Elasticsearch under a unique prefix, and address lists of the caller's
 * account are written in the real Redis through the watchlist store the API reads. A count window rule on
 * Transfers whose sender is `In watchlist`, and a "USDT received by an address, then sent on by it" sequence
 * rule whose followedBy conditions require a listed sender, are replayed by
 * `POST /alerting/rules/test/` and evaluated live by the match stage's evaluators (pipeline/match/windows/,
 * pipeline/match/sequences/) fed the entities the stage's index selects under the same membership
 * prefetch (lib/match/watchlist-membership.ts `matchEntities`). The backtest must give the live firings,
 * count the listed senders only (each window's record count is the listed Transfers of its blocks), give
 * what the inline condition on the members gives, and change when a member is removed (today's
 * membership, over the same past blocks). Skips when Elasticsearch or Redis is down.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { STATIC_ACCOUNT_ID } from "../../../api/plugins/auth.js";
import { DEFAULT_WATCHLISTS_CONFIG } from "../../../lib/config/watchlists.js";
import { backtestRule, sourcesOfBlock } from "../../../lib/match/backtest.js";
import { entitiesOf } from "../../../lib/match/entities.js";
import type { RuleIndex } from "../../../lib/match/rule-index.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { SequenceMatch } from "../../../lib/match/sequence-records.js";
import { createWatchlistMembership, matchEntities, type WatchlistMembership } from "../../../lib/match/watchlist-membership.js";
import type { WindowFiring } from "../../../lib/match/windows.js";
import type { EventRecord } from "../../../lib/records.js";
import type { RuleInput, TargetDefinition } from "../../../lib/rules/model.js";
import { createWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import type { MatchedEntity, MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createSequenceEvaluator, withFollowedBy } from "../../../pipeline/match/sequences/evaluator.js";
import { createWindowEvaluator } from "../../../pipeline/match/windows/evaluator.js";
import { argIs, isTransfer, tokenTransferRule } from "../../support/rules.js";
import { BINANCE, events as fixtureEvents, MAINNET, RECORDS, ROUTER, USDT, VITALIK, WETH } from "../api/fixtures.js";
import {
  backtestFirings,
  backtestLive,
  type Firing,
  feedLive,
  type LiveEvaluator,
  placedIn,
  rangeBlocks,
  trackedLive,
} from "./backtest-live.js";

const stack = await backtestLive("wlw");
const up = stack.up;

const V = VITALIK.toLowerCase();
const B = BINANCE.toLowerCase();
const W = WETH.toLowerCase();
const R = ROUTER.toLowerCase();
const template = fixtureEvents.find((e) => e.event === "Transfer" && e.address === USDT) as EventRecord;
const address = (name: string, pos: number, who: string) => ({ name, pos, value: { hex: who, num: null, scaled: null, type: "address" } });
const amount = { name: "value", pos: 2, value: { hex: "0x3b9aca00", num: 1e9, scaled: 1000, type: "uint256" } };

/** Blocks `from, from + 1, …` (hashes from `label`) with, per block, USDT Transfers `[sender, recipient]` in log order. */
function transferRange(label: string, from: number, perBlock: Array<Array<[string, string]>>, startMs: number) {
  const blocks = rangeBlocks(
    label,
    from,
    perBlock.map((t) => t.length),
    startMs,
  );
  const events: EventRecord[] = blocks.flatMap((b, i) =>
    (perBlock[i] ?? []).map(([sender, to], j) => ({
      ...template,
      args: [address("from", 0, sender), address("to", 1, to), amount],
      ...placedIn(label, b, j),
    })),
  );
  return { blocks, events, from, to: from + perBlock.length - 1 };
}

/** Window range: Transfers to the router, by sender. */
const WIN = transferRange(
  "wlw",
  18_200_000,
  [[V, B, W], [B, V], [], [W], [V, B], [B, B, W], [], [V], [V, V, W], []].map((senders) => senders.map((x): [string, string] => [x, R])),
  Date.UTC(2023, 8, 3),
);
/** Sequence range: the router pays V and B (block 0), B and V send on (block 2); it pays W (3), W sends on (4). */
const SEQ = transferRange(
  "wls",
  18_300_000,
  [
    [
      [R, V],
      [R, B],
    ],
    [],
    [
      [B, R],
      [V, R],
    ],
    [[R, W]],
    [[W, R]],
  ],
  Date.UTC(2023, 8, 4),
);

/** USDT Transfers (tokenTransferRule) with one more condition, as {@link countRule} and {@link sequenceRule} extend them. */
function usdtTransfers(name: string, extra: TargetDefinition[]): RuleInput {
  const base = tokenTransferRule({
    chain: MAINNET,
    name,
    token: USDT,
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    url: "https://hooks.example.com/w",
  });
  return { ...base, config: { ...base.config, targetMap: [...base.config.targetMap, ...extra] } };
}

/** At least 3 USDT Transfers whose sender satisfies `sender` within 2 blocks. */
const countRule = (sender: TargetDefinition): RuleInput =>
  ({
    ...usdtTransfers("listed senders", [sender]),
    window: { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" },
  }) as RuleInput;

/** USDT received by an address, then sent on by it (the sender satisfying `sender`) within 3 blocks. */
const sequenceRule = (sender: TargetDefinition): RuleInput =>
  ({
    ...usdtTransfers("received then sent on", []),
    sequence: {
      followedBy: { targetType: "Event", targetMap: [isTransfer(), sender] },
      within: { blocks: 3 },
      correlate: { first: "args.to", followedBy: "args.from" },
    },
  }) as RuleInput;

stack.hooks({ ...RECORDS, block: [...WIN.blocks, ...SEQ.blocks], tx: [], log: [], event: [...WIN.events, ...SEQ.events], call: [] });

const endOf = (f: Firing) => (f.entity.window as WindowFiring).end.number;
const orderWindows = (x: Firing, y: Firing) => endOf(x) - endOf(y) || x.entityId.localeCompare(y.entityId);
const followedByBlock = (f: Firing) => (f.entity.sequenceMatch as SequenceMatch).followedBy.blockNumber;
const orderSequences = (x: Firing, y: Firing) => followedByBlock(x) - followedByBlock(y) || x.entityId.localeCompare(y.entityId);

/**
 * What the match stage would select in each block of `blocks`: the entities of the records, matched by
 * `index` (compiled with `membership.lookup`) under the membership prefetch (the stage's `matchEntities`), as matches per block.
 */
async function stageMatches(
  index: Pick<RuleIndex, "match" | "watchlistRules">,
  membership: WatchlistMembership,
  records: readonly EventRecord[],
  blocks: ReadonlyArray<{ number: { num: number } }>,
): Promise<Map<number, MatchInput[]>> {
  const out = new Map<number, MatchInput[]>();
  for (const b of blocks) {
    const indexed = records
      .filter((e) => e.blockNumber.num === b.number.num)
      .map((record) => ({ kind: "event" as const, record: record as never }));
    const entities = sourcesOfBlock(indexed).flatMap((s) => entitiesOf(s, { chainId: 1 }));
    const rules = await matchEntities(index, membership, entities);
    out.set(
      b.number.num,
      entities.flatMap(({ entity }, i) => (rules[i] ?? []).map((rule) => ({ rule, entity: entity as unknown as MatchedEntity }))),
    );
  }
  return out;
}

describe.skipIf(!up)("In watchlist in window and sequence rule backtests (real Elasticsearch and Redis)", () => {
  let store: WatchlistStore;
  let senders: string;
  let forwarders: string;

  beforeAll(async () => {
    if (!up) return;
    // The API's own store (its Redis prefix), in the account of its static token.
    store = createWatchlistStore({ redis: stack.redis, keyPrefix: stack.redisPrefix, limits: DEFAULT_WATCHLISTS_CONFIG });
    senders = (await store.create(STATIC_ACCOUNT_ID, { name: "senders", kind: "address" })).id;
    await store.add(STATIC_ACCOUNT_ID, senders, [V, B]); // the store takes normalised members
    forwarders = (await store.create(STATIC_ACCOUNT_ID, { name: "forwarders", kind: "address" })).id;
    await store.add(STATIC_ACCOUNT_ID, forwarders, [B, W]);
  });

  /** The live window evaluator's net firings over the window range, its entities selected as the stage does. */
  async function liveWindow(input: RuleInput, space: string): Promise<Firing[]> {
    const rule = backtestRule({ rule: input, accountId: STATIC_ACCOUNT_ID }, () => new Date());
    const tracked = trackedLive(stack, space);
    const windows = createWindowEvaluator(tracked.deps);
    const membership = createWatchlistMembership(store);
    const index = windows.watch(createRuleIndex({ chain: MAINNET, watchlists: membership.lookup }));
    return feedStage({ evaluator: windows, index, membership, tracked }, rule, WIN.events, WIN.blocks, orderWindows);
  }

  /** A live evaluator with the stage's index (compiled with `membership.lookup`) and what it matches with (default the index). */
  interface Stage {
    evaluator: LiveEvaluator;
    index: Pick<RuleIndex, "match" | "watchlistRules" | "upsert">;
    membership: WatchlistMembership;
    tracked: ReturnType<typeof trackedLive>;
    matcher?: Pick<RuleIndex, "match" | "watchlistRules">;
  }

  /** Upserts `rule`, selects each block's matches as the stage does, feeds them; returns the net firings. */
  async function feedStage(
    stage: Stage,
    rule: Parameters<RuleIndex["upsert"]>[0],
    records: readonly EventRecord[],
    blocks: typeof WIN.blocks,
    order: (x: Firing, y: Firing) => number,
  ): Promise<Firing[]> {
    const { evaluator, index, membership, tracked } = stage;
    index.upsert(rule);
    const byBlock = await stageMatches(stage.matcher ?? index, membership, records, blocks);
    await feedLive(evaluator, blocks, (n) => byBlock.get(n) ?? [], tracked.setHead);
    return tracked.firings().sort(order);
  }

  it("a count window counts the listed senders only, as the live evaluator and the inline condition do", async () => {
    const rule = countRule(argIs("from", "In watchlist", senders));
    const replayed = backtestFirings(await stack.backtestLines(rule, WIN.from, WIN.to));
    // Listed (V, B) Transfers per block 2, 2, 0, 0, 2, 2, 0, 1, 2, 0: two-block windows hold 4 (fires), 2, 0, 2, 4 (fires), 2, 1, 3 (fires), 2.
    expect(replayed.map((f) => endOf(f) - WIN.from)).toEqual([1, 5, 8]);
    for (const f of replayed) {
      const { window, recordCount } = f.entity.window as WindowFiring;
      const inWindow = WIN.events.filter((e) => e.blockNumber.num >= window.fromBlock && e.blockNumber.num <= window.toBlock);
      expect(recordCount).toBe(inWindow.filter((e) => [V, B].includes(e.args[0]?.value.hex as string)).length);
    }
    const inline = backtestFirings(
      await stack.backtestLines(countRule(argIs("from", "Equals any (ignore case)", [VITALIK, BINANCE])), WIN.from, WIN.to),
    );
    expect(inline).toEqual(replayed);
    expect(await liveWindow(rule, "window-both")).toEqual([...replayed].sort(orderWindows));
  });

  it("removing a member changes the window backtest's answer over the same past blocks", async () => {
    const rule = countRule(argIs("from", "In watchlist", senders));
    const before = backtestFirings(await stack.backtestLines(rule, WIN.from, WIN.to));
    expect((await store.remove(STATIC_ACCOUNT_ID, senders, [B])).removed).toBe(1);
    const after = backtestFirings(await stack.backtestLines(rule, WIN.from, WIN.to));
    // V alone: 1, 1, 0, 0, 1, 0, 0, 1, 2, 0 per block; only the window ending at 8 holds 3.
    expect(after.map((f) => endOf(f) - WIN.from)).toEqual([8]);
    expect(after).not.toEqual(before);
    expect(backtestFirings(await stack.backtestLines(countRule(argIs("from", "Equals (ignore case)", VITALIK)), WIN.from, WIN.to))).toEqual(
      after,
    );
    expect(await liveWindow(rule, "window-one")).toEqual([...after].sort(orderWindows));
  });

  it("a sequence whose followedBy requires a listed sender pairs only the listed senders' Transfers, as live", async () => {
    const rule = sequenceRule(argIs("from", "In watchlist", forwarders));
    const replayed = backtestFirings(await stack.backtestLines(rule, SEQ.from, SEQ.to));
    // V and B are paid at block 0 and send on at block 2, W is paid at 3 and sends on at 4: V is not listed.
    expect(replayed.map((f) => (f.entity.sequenceMatch as SequenceMatch).key)).toEqual([B, W]);
    const inline = backtestFirings(
      await stack.backtestLines(sequenceRule(argIs("from", "Equals any (ignore case)", [BINANCE, WETH])), SEQ.from, SEQ.to),
    );
    expect(inline).toEqual(replayed);

    const stored = backtestRule({ rule, accountId: STATIC_ACCOUNT_ID }, () => new Date());
    const tracked = trackedLive(stack, "sequence");
    const membership = createWatchlistMembership(store);
    const sequences = createSequenceEvaluator({ ...tracked.deps, watchlists: membership.lookup });
    const index = sequences.watch(createRuleIndex({ chain: MAINNET, watchlists: membership.lookup }));
    const stage = { evaluator: sequences, index, membership, tracked, matcher: withFollowedBy(index, sequences) };
    const live = await feedStage(stage, stored, SEQ.events, SEQ.blocks, orderSequences);
    expect(live).toEqual([...replayed].sort(orderSequences));
  });
});
