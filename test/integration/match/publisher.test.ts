/**
 * The match stage's alert publisher (pipeline/match/publisher.ts) with the real confirmation
 * tracker and outbox in Redis (issue 19 §3 e): after a failed or slow publish, a rule's alerts
 * still reach the alerts topic in `sequence` order — a match's `pending` before its `confirmed` or
 * `removed` — whatever publishes next (the next batch, another instance, an outbox sweep). The
 * producer is the seam: it records what would go to the alerts topic, in order, and fails when told
 * (the Kafka side of the producer is covered by the match e2e tests). Skips when Redis is down.
 */
import { createHash, randomUUID } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertAvro } from "../../../lib/alerting/avro.js";
import type { ChainId } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { OutgoingRecord } from "../../../pipeline/kafka/bus.js";
import type { ChainHead, MatchedEntity } from "../../../pipeline/match/confirmations/decide.js";
import { type ConfirmationTracker, createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import { type AlertPublisher, createAlertPublisher } from "../../../pipeline/match/publisher.js";
import { storedRule } from "../../support/rules.js";
import { deletePrefix, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-publisher-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));

const hashOf = (s: string) => `0x${createHash("sha256").update(s).digest("hex")}`;
const canonical = (h: number) => hashOf(`a-${h}`);
const head = (number: number): ChainHead => ({ number, hash: canonical(number) });

function entity(block: number, idx = 0): MatchedEntity {
  return {
    entityId: `${hashOf(`tx-${block}-${idx}`)}_e_${idx}`,
    blockHash: canonical(block),
    blockNumber: { num: block, raw: `0x${block.toString(16)}` },
    event: "Transfer",
    transactionHash: hashOf(`tx-${block}-${idx}`),
  };
}

function rule(id: string): Rule {
  return storedRule({ id, maxConfirmationCount: 2 });
}

/** A producer that records what it would send, and fails the sends it is told to fail. */
function recordingProducer() {
  const sent: AlertAvro[] = [];
  const p = {
    sent,
    failNext: 0,
    async send(records: OutgoingRecord[]) {
      if (p.failNext > 0) {
        p.failNext--;
        throw new Error("broker not available (test)");
      }
      for (const r of records) {
        expect(r.key).toBe((r.record as AlertAvro).ruleId); // keyed by rule: one partition per rule
        sent.push(r.record as AlertAvro);
      }
    },
  };
  return p;
}

/** `<status>#<sequence>` of the sent alerts of one entity, in sending order. */
const seen = (sent: AlertAvro[], entityId: string) => sent.filter((a) => a.entityId === entityId).map((a) => `${a.status}#${a.sequence}`);

describe.skipIf(!up)("alert publisher: per-match order after a failed or slow publish (real Redis outbox)", () => {
  let client: RedisClientType;
  const logger = createLogger("silent");

  beforeAll(async () => {
    client = createClient({ url: REDIS_URL }) as RedisClientType;
    await client.connect();
  });
  afterAll(async () => {
    if (client?.isOpen) await client.quit();
    await deletePrefix(REDIS_URL, PREFIX);
  });

  function setup(
    space: string,
    graceMs = 60_000,
  ): { tracker: ConfirmationTracker; publisher: AlertPublisher; producer: ReturnType<typeof recordingProducer> } {
    const tracker = createConfirmationTracker({
      redis: client,
      keyPrefix: `${PREFIX}${space}:`,
      chain: CHAIN,
      outboxVisibilityMs: graceMs,
    });
    const producer = recordingProducer();
    const publisher = createAlertPublisher({ tracker, producer, ruleName: () => null, logger });
    return { tracker, publisher, producer };
  }

  it("a pending alert whose publish failed goes out before the confirmed alert published next, and only once", async () => {
    const { tracker, publisher, producer } = setup("failed");
    const r = rule(`rule-${randomUUID()}`);
    const e = entity(100);
    const pending = await tracker.onMatches([{ rule: r, entity: e }], 100);
    expect(pending.map((a) => a.status)).toEqual(["pending"]);
    producer.failNext = 1;
    await expect(publisher.publish(pending)).rejects.toThrow(/broker/);
    // The next head confirms the match; its alert is published first by whatever batch comes next.
    const confirmed = await tracker.onHead(head(102), canonical);
    expect(confirmed.map((a) => a.status)).toEqual(["confirmed"]);
    await publisher.publish(confirmed);
    expect(seen(producer.sent, e.entityId)).toEqual(["pending#1", "confirmed#2"]);
    // Nothing is left for a sweep to send again (late) after the confirmed alert.
    expect(await tracker.unacked()).toEqual([]);
  });

  it("another instance publishing a later alert of the rule sends the earlier one still in flight first", async () => {
    const a = setup("slow");
    const b = setup("slow");
    const r = rule(`rule-${randomUUID()}`);
    const e = entity(200);
    const pending = await a.tracker.onMatches([{ rule: r, entity: e }], 200);
    // Instance A is slow to publish `pending` (still in flight); instance B confirms the match and publishes.
    const confirmed = await b.tracker.onHead(head(202), canonical);
    await b.publisher.publish(confirmed);
    expect(seen(b.producer.sent, e.entityId)).toEqual(["pending#1", "confirmed#2"]);
    await a.publisher.publish(pending); // a late duplicate (lower sequence: stale for the receiver)
    expect(await a.tracker.unacked()).toEqual([]);
  });

  it("a sweep sends an orphan only after the earlier alerts of its rule, and never after a later one", async () => {
    const { tracker, publisher, producer } = setup("sweep", 0);
    const r = rule(`rule-${randomUUID()}`);
    const e1 = entity(300, 1);
    const e2 = entity(300, 2);
    // Two pending alerts of one rule whose emitter died; the first one is claimed (hidden) by another
    // instance's sweep that has not published it yet.
    const [p1] = await tracker.onMatches([{ rule: r, entity: e1 }], 300);
    const other = await tracker.claimUnacked({ leaseMs: 60_000 });
    expect(other.map((x) => x.id)).toEqual([p1!.id]);
    const [p2] = await tracker.onMatches([{ rule: r, entity: e2 }], 300);
    expect(await publisher.sweep()).toBeGreaterThan(0);
    expect(producer.sent.map((x) => `${x.entityId === e1.entityId ? "e1" : "e2"}:${x.status}#${x.sequence}`)).toEqual([
      "e1:pending#1",
      "e2:pending#2",
    ]);
    expect(await tracker.unacked()).toEqual([]);
    expect(p2?.sequence).toBe(2);
  });
});
