/**
 * Unit tests of sequence-rule backtests, the pure part (lib/match/sequence-backtest.ts): a Transfer
 * to an address followed by an Approval by that address, replayed over blocks of hand-written event
 * records — firings as matches (entity `sequence:<first>:<followedBy>` with `sequenceMatch`), the
 * span, the most recent first record, a gap restarting the steps, confirmations from the followedBy
 * block — and a property test (fast-check, seed printed on failure): on random blocks the backtest
 * gives exactly the firings of the live stage's pure path on the same records (its rule index
 * selections, `sequenceRecordOf`, `applySequenceBlock` at the stage's reorg depth, half of each
 * block's records added late with `addSequenceRecords`, net of retractions). The agreement with the
 * live evaluator on Redis over indexed records is tested in test/integration/rules-api/sequence-backtest.test.ts.
 * `In watchlist` in the followedBy conditions (`blockWithLists`, an in-memory list store): only the
 * listed followedBy records are paired.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBacktestRequest } from "../../../../api/backtest/request.js";
import { backtestRule, type IndexedRecord, ruleSelector } from "../../../../lib/match/backtest.js";
import {
  backtestKinds,
  createSequenceBacktester,
  followedByTargetUnsupported,
  isSequenceRule,
  type SequenceBacktester,
} from "../../../../lib/match/sequence-backtest.js";
import { followedByRule, type SequenceMatch, sequenceEntity, sequenceRecordOf } from "../../../../lib/match/sequence-records.js";
import {
  addSequenceRecords,
  applySequenceBlock,
  createSequenceState,
  type SequenceEvent,
  type SequenceFiring,
  type SequenceRecord,
  sequenceFiringKey,
} from "../../../../lib/match/sequences.js";
import { createWatchlistMembership } from "../../../../lib/match/watchlist-membership.js";
import type { RuleInput } from "../../../../lib/rules/model.js";
import { ruleSequence, sequenceConfigOf } from "../../../../lib/rules/schema-sequence.js";
import { argIs, transferThenApprovalRule } from "../../../support/rules.js";
import { memoryListStore } from "../../../support/watchlists.js";

const MAINNET = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const hashOf = (label: string) => `0x${Buffer.from(label).toString("hex").padEnd(64, "0").slice(0, 64)}`;
const blockHash = (n: number) => hashOf(`block-${n}`);
const addr = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;
const timestampOf = (n: number) => 1_700_000_000 + 12 * n;

const sequenceRule = (within: { blocks: number } | { seconds: number }, extra: Partial<RuleInput> = {}) =>
  transferThenApprovalRule(MAINNET, within, extra);

/** An event of block `n` at log (and transaction) index `i`: a Transfer to `who`, an Approval by `who`, or another event naming `who`. */
function event(kind: "Transfer" | "Approval" | "Sync", n: number, i: number, who: string): IndexedRecord {
  const arg = (name: string, pos: number, hex: string) => ({ name, pos, value: { hex, num: null, scaled: null, type: "address" } });
  const args =
    kind === "Transfer"
      ? [arg("from", 0, addr(999)), arg("to", 1, who)]
      : kind === "Approval"
        ? [arg("owner", 0, who), arg("spender", 1, addr(998))]
        : [arg("to", 0, who)];
  return {
    kind: "event",
    record: {
      event: kind,
      signature: `${kind}(address,address)`,
      standard: "erc20",
      source: "standard",
      args,
      logIndex: { num: i, raw: `0x${i.toString(16)}` },
      transactionIndex: { num: i, raw: `0x${i.toString(16)}` },
      transactionHash: hashOf(`tx-${n}-${i}`),
      address: addr(1),
      blockHash: blockHash(n),
      blockNumber: { num: n, raw: `0x${n.toString(16)}` },
      error: null,
      str: kind,
      timestamp: new Date(timestampOf(n) * 1000).toISOString().slice(0, 19),
    },
  };
}
const id = (n: number, i: number) => `${hashOf(`tx-${n}-${i}`)}_e_${i}`;

const options = { accountId: "acct", chain: MAINNET, head: 1_000, decode: { chainId: 1 }, now: () => new Date(0) };

/** Feeds blocks (number → records) in the given order; returns every match with its `sequenceMatch`. */
function replay(tester: SequenceBacktester, blocks: Array<[number, IndexedRecord[]]>) {
  return blocks.flatMap(([n, records]) =>
    tester.block({ number: n, hash: blockHash(n), timestamp: timestampOf(n) }, records).matches.map((m) => ({
      ...m,
      sequenceMatch: (m.entity as { sequenceMatch: SequenceMatch }).sequenceMatch,
    })),
  );
}

const A = addr(10);
const B = addr(11);

describe("sequence rule backtests", () => {
  it("a Transfer to an address followed by its Approval within the span fires once, with both records", () => {
    const rule = sequenceRule({ blocks: 3 });
    expect(isSequenceRule(rule)).toBe(true);
    const tester = createSequenceBacktester({ ...options, rule });
    const matches = replay(tester, [
      [10, [event("Transfer", 10, 0, A), event("Transfer", 10, 1, B), event("Sync", 10, 2, A)]],
      [11, []],
      [12, [event("Approval", 12, 0, A), event("Approval", 12, 1, addr(12))]],
      [13, [event("Approval", 13, 0, A)]], // A's step is closed: nothing
      [14, [event("Approval", 14, 0, B)]], // B's step (block 10) is beyond 3 blocks
    ]);
    expect(matches.map((m) => [m.entityId, m.blockNumber])).toEqual([[`sequence:${id(10, 0)}:${id(12, 0)}`, 12]]);
    const m = matches[0];
    expect(m?.sequenceMatch).toEqual({
      key: A,
      first: { id: id(10, 0), blockNumber: 10, blockHash: blockHash(10), timestamp: timestampOf(10) },
      followedBy: { id: id(12, 0), blockNumber: 12, blockHash: blockHash(12), timestamp: timestampOf(12) },
      search: { query: { ids: { values: [id(10, 0), id(12, 0)] } } },
    });
    expect(m?.entity).toEqual(sequenceEntity(m?.sequenceMatch as SequenceFiring));
    expect(m?.alerts.map((a) => [a.alert.status, a.alert.blockNumber, a.alert.entityId])).toEqual([["confirmed", 12, m?.entityId]]);
  });

  it("pairs the most recent Transfer, counts selections, and restarts after a gap in the blocks", () => {
    const tester = createSequenceBacktester({ ...options, rule: sequenceRule({ seconds: 60 }) });
    const r = tester.block({ number: 20, hash: blockHash(20), timestamp: timestampOf(20) }, [
      event("Transfer", 20, 0, A),
      event("Approval", 20, 1, B),
      event("Sync", 20, 2, A),
    ]);
    expect([r.records, r.entities, r.selected, r.matches.length]).toEqual([3, 3, 2, 0]);
    const matches = replay(tester, [
      [21, [event("Transfer", 21, 0, A)]],
      [22, [event("Approval", 22, 0, A)]],
      [23, [event("Transfer", 23, 0, B)]],
      // 24 is missing (a gap in the index): B's step is gone.
      [25, [event("Approval", 25, 0, B)]],
    ]);
    expect(matches.map((m) => [m.sequenceMatch.first.id, m.sequenceMatch.followedBy.id])).toEqual([[id(21, 0), id(22, 0)]]);
  });

  it("counts confirmations from the followedBy block, as the live tracker does", () => {
    const rule = sequenceRule({ blocks: 5 }, { maxConfirmationCount: 3, sendPendingAlerts: true });
    const tester = createSequenceBacktester({ ...options, head: 33, rule });
    const matches = replay(tester, [
      [30, [event("Transfer", 30, 0, A), event("Transfer", 30, 1, B)]],
      [31, [event("Approval", 31, 0, B)]],
      [32, [event("Approval", 32, 0, A)]],
    ]);
    // Block 31 has 3 confirmations at the head 33: confirmed; block 32 has 2: only pending.
    expect(matches.map((m) => [m.blockNumber, m.alerts.map((a) => a.alert.status)])).toEqual([
      [31, ["pending", "confirmed"]],
      [32, ["pending"]],
    ]);
  });

  it("reads the kinds of both condition sets; a Token followedBy is refused, the rest is accepted", () => {
    const rule = sequenceRule({ blocks: 5 });
    const tx = { ...rule, sequence: { ...ruleSequence(rule), followedBy: { targetType: "Transaction", targetMap: [] } } } as RuleInput;
    expect(backtestKinds(rule)).toEqual(["event"]);
    expect(backtestKinds(tx)).toEqual(["event", "tx"]);
    expect(followedByTargetUnsupported(rule)).toBeNull();
    const accepted = parseBacktestRequest({ rule, last: 10 }, [MAINNET], 1000);
    expect(accepted.ok).toBe(true);
    const token = { ...rule, sequence: { ...ruleSequence(rule), followedBy: { targetType: "Token", targetMap: rule.config.targetMap } } };
    const refused = parseBacktestRequest({ rule: token, last: 10 }, [MAINNET], 1000);
    expect(refused.ok ? [] : refused.errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_BACKTEST_TARGET_UNSUPPORTED", "rule.sequence.followedBy.targetType"],
    ]);
  });
});

/** The live stage's pure path: selections, sequence records, the arithmetic at the stage's reorg depth, late records; the net firings' entity ids. */
function livePure(input: RuleInput, blocks: Array<[number, IndexedRecord[]]>): string[] {
  const rule = backtestRule({ rule: input, accountId: "acct" }, () => new Date(0));
  const seq = ruleSequence(rule);
  if (seq === null) throw new Error("no sequence");
  const config = sequenceConfigOf(seq, 128);
  const selectFirst = ruleSelector(rule, MAINNET, { chainId: 1 });
  const selectThen = ruleSelector(followedByRule(rule, seq), MAINNET, { chainId: 1 });
  let state = createSequenceState(blocks[0]?.[0] ?? 0);
  const net = new Map<string, SequenceFiring>();
  const take = (events: SequenceEvent[]) => {
    for (const e of events) {
      if (e.type === "fired") net.set(sequenceFiringKey(e.firing), e.firing);
      else net.delete(sequenceFiringKey(e.firing));
    }
  };
  const recordsOf = (recs: IndexedRecord[]) =>
    [
      ...selectFirst(recs).selected.map((s) => sequenceRecordOf(seq, "first", s.entity)),
      ...selectThen(recs).selected.map((s) => sequenceRecordOf(seq, "followedBy", s.entity)),
    ].filter((r): r is SequenceRecord => r !== undefined);
  for (const [n, records] of blocks) {
    // The odd records come from a late partition: added after their block.
    const early = recordsOf(records.filter((_, i) => i % 2 === 0));
    const late = recordsOf(records.filter((_, i) => i % 2 === 1));
    const step = applySequenceBlock(config, state, { number: n, hash: blockHash(n), timestamp: timestampOf(n), records: early });
    take(step.events);
    const added = addSequenceRecords(config, step.state, blockHash(n), late);
    take(added.events);
    state = added.state;
  }
  return [...net.values()].map((f) => sequenceEntity(f).entityId).sort();
}

describe("sequence backtest = the live stage's pure path (property)", () => {
  it("gives the same firings on random blocks of Transfers and Approvals", () => {
    const kind = fc.constantFrom("Transfer" as const, "Approval" as const, "Sync" as const);
    const blockArb = fc.array(fc.tuple(kind, fc.integer({ min: 0, max: 3 })), { maxLength: 5 });
    const within = fc.oneof(
      fc.integer({ min: 1, max: 6 }).map((blocks) => ({ blocks })),
      fc.integer({ min: 1, max: 80 }).map((seconds) => ({ seconds })),
    );
    let fired = 0;
    fc.assert(
      fc.property(fc.array(blockArb, { minLength: 1, maxLength: 25 }), within, fc.integer({ min: 1, max: 3 }), (spec, w, maxPending) => {
        const base = sequenceRule(w);
        const rule = { ...base, sequence: { ...ruleSequence(base), maxPending } } as RuleInput;
        const blocks = spec.map((evs, b): [number, IndexedRecord[]] => [
          100 + b,
          evs.map(([k, who], i) => event(k, 100 + b, i, addr(who))),
        ]);
        const replayed = replay(createSequenceBacktester({ ...options, rule }), blocks).map((m) => m.entityId);
        expect([...replayed].sort()).toEqual(livePure(rule, blocks));
        expect(new Set(replayed).size).toBe(replayed.length);
        fired += replayed.length;
      }),
      { numRuns: 300 },
    );
    // The generator does produce firings (the comparison is not between empty lists only).
    expect(fired).toBeGreaterThan(0);
  });
});

describe("In watchlist in a sequence's followedBy conditions", () => {
  const base = sequenceRule({ blocks: 5 });
  const seq = ruleSequence(base) as NonNullable<ReturnType<typeof ruleSequence>>;
  // The Approval must come from an owner of list `l`.
  const rule = {
    ...base,
    sequence: { ...seq, followedBy: { ...seq.followedBy, targetMap: [...seq.followedBy.targetMap, argIs("owner", "In watchlist", "l")] } },
  } as RuleInput;
  const blocks: Array<[number, IndexedRecord[]]> = [
    [20, [event("Transfer", 20, 0, A), event("Transfer", 20, 1, B)]],
    [21, [event("Approval", 21, 0, A), event("Approval", 21, 1, B)]],
  ];
  /** The correlate values of the firings with the list holding `members`. */
  const keys = async (members: string[]) => {
    const watchlists = createWatchlistMembership(memoryListStore("acct", "l", members));
    const tester = createSequenceBacktester({ ...options, rule, watchlists });
    const out: string[] = [];
    for (const [n, records] of blocks) {
      const r = await (tester.blockWithLists as NonNullable<SequenceBacktester["blockWithLists"]>)(
        { number: n, hash: blockHash(n), timestamp: timestampOf(n) },
        records,
      );
      for (const m of r.matches) out.push((m.entity as { sequenceMatch: SequenceMatch }).sequenceMatch.key);
    }
    return out;
  };

  it("pairs only the followedBy records of listed owners", async () => {
    expect(await keys([B])).toEqual([B]);
    expect((await keys([A, B])).sort()).toEqual([A, B]);
    expect(await keys([])).toEqual([]);
    // Without reading the lists (`block`), the condition holds for nothing.
    const tester = createSequenceBacktester({
      ...options,
      rule,
      watchlists: createWatchlistMembership(memoryListStore("acct", "l", [A, B])),
    });
    expect(replay(tester, blocks)).toEqual([]);
  });
});
