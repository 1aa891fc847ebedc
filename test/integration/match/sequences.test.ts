/**
 * Integration tests of the match stage's sequence evaluator (pipeline/match/sequences/) against the
 * real Redis, under a unique key prefix deleted afterwards (never FLUSH), with the real
 * confirmation tracker behind it: first and followedBy records correlated by an argument, records
 * written before and after their block, a replayed head and a second evaluator on the same keys
 * (a restarted process), a reorg of the followedBy block (the tracker's `removed`), a late record
 * that re-pairs (a retraction whose block is still canonical), and expiry.
 */
import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import type { TypedEntity } from "../../../lib/match/entities.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import { createWatchlistMembership, matchEntities } from "../../../lib/match/watchlist-membership.js";
import type { Rule } from "../../../lib/rules/model.js";
import { createWatchlistStore } from "../../../lib/watchlists/store.js";
import type { MatchedEntity, MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import { createSequenceEvaluator, withFollowedBy } from "../../../pipeline/match/sequences/evaluator.js";
import { waitFor } from "../../support/harness.js";
import { storedRule } from "../../support/rules.js";
import { keysOf, redisForFile, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-seq-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));
const redis = redisForFile(REDIS_URL, PREFIX, up);

const hashOf = (label: string) => `0x${createHash("sha256").update(label).digest("hex")}`;

function sequenceRule(id: string, within: Record<string, number>): Rule {
  return storedRule({
    id,
    config: { targetMap: [{ name: "event", operator: "Equals", value: "ProposalCreated" }] },
    sequence: {
      followedBy: { targetType: "Event", targetMap: [{ name: "event", operator: "Equals", value: "ProposalExecuted" }] },
      within,
      correlate: { first: "args.proposalId", followedBy: "args.proposalId" },
    },
  });
}

/** An event of block `n` on fork `fork` (log index `i`) with a proposal id argument. */
function proposal(event: string, n: number, i: number, id: number, fork = "a"): MatchedEntity {
  return {
    entityId: `${hashOf(`tx-${fork}-${n}-${i}`)}_e_${i}`,
    blockHash: hashOf(`${fork}-${n}`),
    blockNumber: { num: n, raw: `0x${n.toString(16)}` },
    transactionIndex: { num: 0, raw: "0x0" },
    logIndex: { num: i, raw: `0x${i.toString(16)}` },
    event,
    args: [{ name: "proposalId", value: { hex: `0x${id.toString(16)}`, num: id, scaled: null, type: "uint256" } }],
  };
}

/** An evaluator and tracker on one key space over a chain whose blocks above `forkAt` are fork `fork`. */
function stage(space: string) {
  const keyPrefix = `${PREFIX}${space}:`;
  const tracker = createConfirmationTracker({ redis: redis(), keyPrefix, chain: CHAIN });
  const alerts: Alert[] = [];
  let head = 0;
  const chain = { fork: "a", forkAt: Number.POSITIVE_INFINITY };
  const canonical = (n: number) => hashOf(`${n >= chain.forkAt ? chain.fork : "a"}-${n}`);
  const watchlists = createWatchlistStore({ redis: redis(), keyPrefix, limits: { maxPerAccount: 10, maxMembers: 100 } });
  const membership = createWatchlistMembership(watchlists);
  const sequences = createSequenceEvaluator({
    redis: redis(),
    keyPrefix,
    chain: CHAIN,
    logger: createLogger("silent", "test-sequences"),
    fire: async (m) => void alerts.push(...(await tracker.onMatches(m, head))),
    retract: async (m) => void alerts.push(...(await tracker.retract(m))),
    watchlists: membership.lookup,
  });
  const index = sequences.watch(createRuleIndex({ chain: CHAIN, watchlists: membership.lookup }));
  /** What the stage does with a batch of entities: the rule index's matches and the followedBy ones under one watchlist prefetch, then the split. */
  const observe = async (...entities: MatchedEntity[]) => {
    const matched = await matchEntities(
      withFollowedBy(index, sequences),
      membership,
      entities.map((e) => ({ type: "Event", entity: e }) as unknown as TypedEntity),
    );
    const matches: MatchInput[] = entities.flatMap((e, i) => (matched[i] ?? []).map((rule) => ({ rule, entity: e })));
    return sequences.addMatches(matches);
  };
  return {
    alerts,
    watchlists,
    index,
    chain,
    observe,
    async at(n: number) {
      head = n;
      const hash = canonical(n);
      await sequences.onHead({ head: { number: n, hash }, block: { number: n, hash, timestamp: 1_700_000_000 + 12 * n }, canonical });
      alerts.push(...(await tracker.onHead({ number: n, hash }, canonical)));
    },
  };
}

const seen = (alerts: Alert[]) => alerts.map((a) => [a.status, a.entityId]);

describe.skipIf(!up)("sequence evaluator (real Redis)", () => {
  it("a created proposal followed by its execution fires once with both records; other proposals and other rules do not", async () => {
    const s = stage("pair");
    const rule = sequenceRule("r-pair", { blocks: 5 });
    s.index.upsert(rule);
    const plain = { ...sequenceRule("r-plain", { blocks: 1 }), sequence: undefined } as Rule;
    s.index.upsert(plain);
    await s.at(10);
    const created = proposal("ProposalCreated", 11, 0, 7);
    const rest = await s.observe(created, proposal("ProposalCreated", 11, 1, 8));
    expect(rest.map((m) => m.rule.id)).toEqual(["r-plain", "r-plain"]);
    await s.at(11);
    await s.at(12);
    await s.at(13);
    // The execution of proposal 7 is consumed after its block record (a late record), that of 9 has no creation.
    await s.at(14);
    const executed = proposal("ProposalExecuted", 14, 0, 7);
    await s.observe(executed, proposal("ProposalExecuted", 14, 1, 9));
    await s.at(15);
    const id = `sequence:${created.entityId}:${executed.entityId}`;
    expect(seen(s.alerts)).toEqual([["pending", id]]);
    const m = s.alerts[0]?.entity.sequenceMatch as Record<string, unknown>;
    expect(m).toMatchObject({
      key: "0x7",
      first: { id: created.entityId, blockNumber: 11, blockHash: created.blockHash },
      followedBy: { id: executed.entityId, blockNumber: 14, blockHash: executed.blockHash },
      search: { query: { ids: { values: [created.entityId, executed.entityId] } } },
    });
    expect(s.alerts[0]?.blockNumber).toBe(14);

    // A replayed head, a replayed record and a second evaluator on the same keys (a restart) emit nothing new.
    await s.observe(executed);
    await s.at(15);
    const again = stage("pair");
    again.index.upsert(rule);
    await again.at(15);
    await again.at(16);
    expect(s.alerts).toHaveLength(1);
    expect(again.alerts).toEqual([]);
    // Confirmed at 5 confirmations of block 14.
    await s.at(17);
    await s.at(18);
    expect(seen(s.alerts)).toEqual([
      ["pending", id],
      ["confirmed", id],
    ]);
  });

  it("followedBy conditions see watchlists: an execution fires while its event name is listed, not once removed", async () => {
    const s = stage("listed");
    const list = await s.watchlists.create("acct-1", { name: "closing events", kind: "string" });
    await s.watchlists.add("acct-1", list.id, ["ProposalExecuted"]);
    const rule = sequenceRule("r-listed", { blocks: 5 });
    rule.sequence = {
      ...(rule.sequence as object),
      followedBy: { targetType: "Event", targetMap: [{ name: "event", operator: "In watchlist", value: list.id }] },
    };
    s.index.upsert(rule);
    await s.at(20);
    await s.observe(proposal("ProposalCreated", 21, 0, 1), proposal("ProposalCreated", 21, 1, 2));
    await s.at(21);
    const executed = proposal("ProposalExecuted", 22, 0, 1);
    await s.observe(executed);
    await s.at(22);
    expect(seen(s.alerts)).toEqual([["pending", `sequence:${proposal("ProposalCreated", 21, 0, 1).entityId}:${executed.entityId}`]]);
    await s.watchlists.remove("acct-1", list.id, ["ProposalExecuted"]);
    await s.observe(proposal("ProposalExecuted", 23, 0, 2));
    await s.at(23);
    await s.at(24);
    expect(s.alerts).toHaveLength(1);
  });

  it("a reorg that removes the followedBy record's block retracts the alert with removed", async () => {
    const s = stage("reorg");
    s.index.upsert(sequenceRule("r-reorg", { blocks: 5 }));
    await s.at(20);
    await s.observe(proposal("ProposalCreated", 21, 0, 1));
    await s.at(21);
    await s.observe(proposal("ProposalExecuted", 22, 0, 1));
    await s.at(22);
    expect(s.alerts.map((a) => a.status)).toEqual(["pending"]);
    // Block 22 is replaced by an empty block of fork b.
    s.chain.fork = "b";
    s.chain.forkAt = 22;
    await s.at(22);
    await s.at(23);
    expect(s.alerts.map((a) => a.status)).toEqual(["pending", "removed"]);
    expect(s.alerts[1]?.entityId).toBe(s.alerts[0]?.entityId);
  });

  it("a late creation closer to the execution re-pairs: the old firing is removed, the new one fires", async () => {
    const s = stage("late");
    s.index.upsert(sequenceRule("r-late", { blocks: 5 }));
    await s.at(30);
    const early = proposal("ProposalCreated", 31, 0, 4);
    await s.observe(early);
    await s.at(31);
    await s.at(32);
    const executed = proposal("ProposalExecuted", 33, 3, 4);
    await s.observe(executed);
    await s.at(33);
    const late = proposal("ProposalCreated", 32, 0, 4);
    await s.observe(late);
    await s.at(34);
    expect(seen(s.alerts)).toEqual([
      ["pending", `sequence:${early.entityId}:${executed.entityId}`],
      ["removed", `sequence:${early.entityId}:${executed.entityId}`],
      ["pending", `sequence:${late.entityId}:${executed.entityId}`],
    ]);
  });

  it("an execution beyond the span fires nothing; removing the rule drops its followedBy conditions and its state", async () => {
    const s = stage("expire");
    const rule = sequenceRule("r-exp", { blocks: 2 });
    s.index.upsert(rule);
    await s.at(40);
    await s.observe(proposal("ProposalCreated", 41, 0, 5));
    for (const n of [41, 42, 43]) await s.at(n);
    await s.observe(proposal("ProposalExecuted", 44, 0, 5));
    await s.at(44);
    expect(s.alerts).toEqual([]);
    expect((await keysOf(REDIS_URL, `${PREFIX}expire:`)).some((k) => k.includes("seq:r-exp:1"))).toBe(true);
    const stateKeys = async () => (await keysOf(REDIS_URL, `${PREFIX}expire:`)).filter((k) => k.endsWith("seq:r-exp:1"));
    expect(await stateKeys()).toHaveLength(1);
    // A periodic reload of the same version keeps the state; removing the rule deletes it.
    s.index.upsert(rule);
    s.index.remove(rule.id);
    const passed = await s.observe(proposal("ProposalExecuted", 45, 0, 5));
    expect(passed).toEqual([]);
    await waitFor(async () => (await stateKeys()).length === 0, 5_000, 20);
  });
});
