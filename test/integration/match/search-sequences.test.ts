/**
 * Integration tests of saved searches with `sequence` in the match stage's sequence evaluator
 * (pipeline/match/sequences/searches.ts) against the real Redis, under a unique key prefix deleted
 * afterwards (never FLUSH), with the real confirmation tracker behind it. The searches are checked
 * by the API's validation (api/routes/searches/validate.ts, which compiles both queries) and held
 * by the stage's search index wrapped as the stage wraps it: a record of the first query followed
 * by a record of the second query with the same correlate value fires once; a search without
 * `sequence` passes through; disabling the search drops its second query.
 */
import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import type { Alert } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import { createSearchIndex, type SearchTopic } from "../../../pipeline/match/search-index.js";
import { createSequenceEvaluator } from "../../../pipeline/match/sequences/evaluator.js";
import { withFollowedBySearches } from "../../../pipeline/match/sequences/searches.js";
import { redisForFile, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-sseq-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));
const redis = redisForFile(REDIS_URL, PREFIX, up);

const hashOf = (label: string) => `0x${createHash("sha256").update(label).digest("hex")}`;
const eventIs = (event: string) => ({ term: { event } });

/** A saved search as the store holds it, built by the API's validation. */
function savedSearch(id: string, extension: Record<string, unknown>): Rule {
  const body = {
    name: id,
    ...CHAIN,
    maxConfirmationCount: 5,
    sendPendingAlerts: true,
    kind: "event",
    query: eventIs("ProposalCreated"),
    alerts: [{ type: "Webhook (POST)", parameters: { url: "http://hook/x" } }],
    ...extension,
  };
  const checked = validateSearchInput(body, "create", [CHAIN]);
  if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
  return { ...checked.value, id, accountId: "acct-1", version: 1, state: "enabled", createdAt: "", updatedAt: "" } as unknown as Rule;
}

/** An event record of block `n` (log index `i`) with a proposal id argument, as the events topic carries it. */
function proposal(event: string, n: number, i: number, id: number): InputRecord<SearchTopic> {
  const record = {
    transactionHash: hashOf(`tx-${n}-${i}`),
    blockHash: hashOf(`a-${n}`),
    blockNumber: { num: n, raw: `0x${n.toString(16)}` },
    transactionIndex: { num: 0, raw: "0x0" },
    logIndex: { num: i, raw: `0x${i.toString(16)}` },
    address: "0x0000000000000000000000000000000000000001",
    event,
    args: [{ name: "proposalId", value: { hex: `0x${id.toString(16)}`, num: id, scaled: null, type: "uint256" } }],
  };
  return { topicKind: "events", record } as unknown as InputRecord<SearchTopic>;
}

describe.skipIf(!up)("saved searches with a sequence (real Redis)", () => {
  it("a record of the query followed by one of the second query, same correlate value, fires once; others pass or pair with nothing", async () => {
    const keyPrefix = `${PREFIX}pair:`;
    const tracker = createConfirmationTracker({ redis: redis(), keyPrefix, chain: CHAIN });
    const alerts: Alert[] = [];
    let head = 0;
    const sequences = createSequenceEvaluator({
      redis: redis(),
      keyPrefix,
      chain: CHAIN,
      logger: createLogger("silent", "test-search-sequences"),
      fire: async (m) => void alerts.push(...(await tracker.onMatches(m, head))),
      retract: async (m) => void alerts.push(...(await tracker.retract(m))),
      decode: { chainId: 1 },
    });
    const index = withFollowedBySearches(sequences.watch(createSearchIndex(CHAIN, { chainId: 1 })), sequences);
    const search = savedSearch("s-pair", {
      sequence: {
        followedBy: { kind: "event", query: eventIs("ProposalExecuted") },
        within: { blocks: 5 },
        correlate: { first: "args.proposalId", followedBy: "args.proposalId" },
      },
    });
    index.upsert(search);
    index.upsert(savedSearch("s-plain", { query: eventIs("ProposalExecuted") }));
    const observe = (...inputs: InputRecord<SearchTopic>[]) => sequences.addMatches(inputs.flatMap((i) => index.matchRecords(i)));
    const at = async (n: number) => {
      head = n;
      const hash = hashOf(`a-${n}`);
      const canonical = (k: number) => hashOf(`a-${k}`);
      await sequences.onHead({ head: { number: n, hash }, block: { number: n, hash, timestamp: 1_700_000_000 + 12 * n }, canonical });
      alerts.push(...(await tracker.onHead({ number: n, hash }, canonical)));
    };

    await at(10);
    expect(await observe(proposal("ProposalCreated", 11, 0, 7), proposal("ProposalCreated", 11, 1, 8))).toEqual([]);
    await at(11);
    await at(12);
    const rest = await observe(proposal("ProposalExecuted", 13, 0, 7), proposal("ProposalExecuted", 13, 1, 9));
    // The plain search's matches are per-record alerts (passed on); the sequence search's are sequence records.
    expect(rest.map((m) => [m.rule.id, m.entity.entityId])).toEqual([
      ["s-plain", `${hashOf("tx-13-0")}_e_0`],
      ["s-plain", `${hashOf("tx-13-1")}_e_1`],
    ]);
    await at(13);
    expect(alerts.map((a) => [a.status, a.ruleId, a.entityId, a.targetType])).toEqual([
      ["pending", "s-pair", `sequence:${hashOf("tx-11-0")}_e_0:${hashOf("tx-13-0")}_e_0`, "Event"],
    ]);
    expect(alerts[0]?.entity.sequenceMatch).toMatchObject({ key: "0x7", first: { blockNumber: 11 }, followedBy: { blockNumber: 13 } });

    // Disabled: the search and its second query are no longer held; its records pass through as nothing.
    index.upsert({ ...search, version: 2, state: "disabled" } as Rule);
    expect(index.matchRecords(proposal("ProposalExecuted", 14, 0, 8))).toEqual([
      expect.objectContaining({ rule: expect.objectContaining({ id: "s-plain" }) }),
    ]);
    await at(14);
    expect(alerts).toHaveLength(1);
  });
});
