/**
 * Unit tests of a digest's fate (pipeline/notify/digests.ts) with in-memory stand-ins for its
 * deliverer, delivery log and storm store: which held alerts are dead-lettered when the digest is
 * given up, how older held entries without a source record are handled, and what a sent digest
 * marks delivered. The Redis/Kafka path is test/integration/notify/storm-dead-letter.test.ts.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { type AlertSource, digestWebhookJson, type HeldAlert, heldOf, makeDigest } from "../../../../lib/alerting/storm.js";
import { createLogger } from "../../../../lib/logger.js";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import type { AttemptResult, Deliverer } from "../../../../pipeline/notify/deliver.js";
import { digestDeadLetters, sendDigest } from "../../../../pipeline/notify/digests.js";
import type { DeliveryLog, DeliveryLogEntry } from "../../../../pipeline/notify/log.js";
import type { DeadLetterItem } from "../../../../pipeline/notify/queue.js";
import { metricsIn } from "../../../../pipeline/notify/scheduler-metrics.js";
import type { ClaimedDigest, StormStore } from "../../../../pipeline/notify/storm.js";
import { sampleAlert } from "./fixtures.js";

const action = { type: "Webhook (POST)", parameters: { url: "https://example.com/d" }, digest: { windowSec: 60 } } as AlertDefinition;
const src = (i: number): AlertSource => ({
  topic: "p.alerts",
  partition: 1,
  offset: String(100 + i),
  keyB64: Buffer.from("rule").toString("base64"),
  valueB64: Buffer.from(`avro-${i}`).toString("base64"),
});

/** A digest of three held alerts; the second one held before sources were kept (no `source`). */
function digest() {
  const base = sampleAlert();
  const held: HeldAlert[] = [1, 2, 3].map((i) =>
    heldOf({ ...sampleAlert({ sequence: i }), id: `alert-${i}` }, i === 2 ? undefined : src(i)),
  );
  return makeDigest(
    {
      ruleId: base.ruleId,
      accountId: base.accountId,
      chain: base.chain,
      targetType: "Event",
      actionIndex: 2,
      action,
      policy: { max: 0, windowMs: 60_000, maxEntities: 10, source: "digest" },
      windowStartMs: 120_000,
      windowEndMs: 180_000,
      entity: base.entity,
    },
    held,
  );
}

describe("digestDeadLetters", () => {
  it("one letter per held alert with a source record, naming the digest, rule and window; the others apart", () => {
    const d = digest();
    const { items, sourceless } = digestDeadLetters(d, "CS_DELIVERY_EXHAUSTED", "gave up after 8 attempts; last: X");
    expect(items.map((i) => i.job)).toEqual([
      { id: "alert-1:2", alertId: "alert-1", ruleId: d.ruleId, actionIndex: 2, source: src(1) },
      { id: "alert-3:2", alertId: "alert-3", ruleId: d.ruleId, actionIndex: 2, source: src(3) },
    ]);
    expect(sourceless.map((a) => a.alertId)).toEqual(["alert-2"]);
    for (const i of items) {
      expect(i.code).toBe("CS_DELIVERY_EXHAUSTED");
      expect(i.message).toBe(
        `in digest ${d.id} of rule ${d.ruleId} (window 1970-01-01T00:02:00.000Z, 3 alerts), given up: gave up after 8 attempts; last: X`,
      );
    }
  });

  it("the source record stays inside chainsift: a digest's webhook body does not carry it", () => {
    const body = digestWebhookJson(digest());
    expect(body).not.toContain(src(1).valueB64!);
    for (const a of JSON.parse(body).alerts) expect(Object.keys(a)).toEqual(["id", "sequence", "status", "entityId", "blockNumber"]);
  });
});

describe("sendDigest", () => {
  function run(result: AttemptResult, options: { tries?: number; deadLetterFails?: boolean } = {}) {
    const d = digest();
    const registry = new Registry();
    const calls = {
      finish: 0,
      retry: [] as number[],
      letters: [] as DeadLetterItem[],
      log: [] as DeliveryLogEntry[],
      marked: [] as string[],
    };
    const storm = {
      finish: async () => void calls.finish++,
      retry: async (_c: ClaimedDigest, dueMs: number) => calls.retry.push(dueMs),
    } as unknown as StormStore;
    const deliveryLog = {
      record: async (_rule: string, e: DeliveryLogEntry) => void calls.log.push(e),
      markDelivered: async (alertId: string, actionIndex: number) => Boolean(calls.marked.push(`${alertId}:${actionIndex}`)),
    } as unknown as DeliveryLog;
    const stats = { digests: 0, deadLettered: 0 };
    const done = sendDigest(
      {
        storm,
        deliverer: { attemptDigest: async () => result } as unknown as Deliverer,
        deliveryLog,
        deadLetter: async (items) => {
          if (options.deadLetterFails) throw new Error("kafka down");
          calls.letters.push(...items);
        },
        retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1000 },
        nowMs: () => 1_000_000,
        random: () => 0.5,
        logger: createLogger("silent"),
        metrics: metricsIn(registry),
        stats,
      },
      { member: "r:2|2", token: "t", tries: options.tries ?? 2, digest: d },
    );
    const count = async (name: string, labels: Record<string, string>) =>
      (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
        ?.value ?? 0;
    return { done, calls, stats, count };
  }
  const failed503: AttemptResult = {
    ok: false,
    attempts: 1,
    final: false,
    retryable: true,
    code: "CS_DELIVERY_HTTP_STATUS",
    error: "HTTP 503",
    status: 503,
  };

  it("given up after its last attempt: the held alerts with a source are dead-lettered, the older one counted as given_up", async () => {
    const { done, calls, stats, count } = run(failed503);
    await done;
    expect(calls.letters.map((l) => [l.job.alertId, l.code])).toEqual([
      ["alert-1", "CS_DELIVERY_EXHAUSTED"],
      ["alert-3", "CS_DELIVERY_EXHAUSTED"],
    ]);
    expect(calls.letters[0]!.message).toContain("gave up after 3 attempts; last: CS_DELIVERY_HTTP_STATUS HTTP 503");
    expect(calls.finish).toBe(1);
    expect(calls.log).toHaveLength(1);
    expect(calls.log[0]).toMatchObject({ state: "digest", digestCount: 3, ok: false, final: false, code: "CS_DELIVERY_EXHAUSTED" });
    expect(calls.log[0]!.error).toMatch(/2 held alert\(s\) dead-lettered; 1 without a source record not/);
    expect(stats.deadLettered).toBe(2);
    expect(await count("chainsift_notify_dead_letters_total", { code: "CS_DELIVERY_EXHAUSTED" })).toBe(2);
    expect(await count("chainsift_notify_deliveries_total", { outcome: "dead_lettered" })).toBe(2);
    expect(await count("chainsift_notify_deliveries_total", { outcome: "given_up" })).toBe(1);
    expect(calls.marked).toEqual([]);
  });

  it("retried while attempts remain: nothing dead-lettered or logged", async () => {
    const { done, calls } = run(failed503, { tries: 1 });
    await done;
    expect(calls.retry).toHaveLength(1);
    expect([calls.letters.length, calls.finish, calls.log.length]).toEqual([0, 0, 0]);
  });

  it("when Kafka refuses the dead letters, the digest is kept and rescheduled (not finished, not logged)", async () => {
    const { done, calls, stats } = run(failed503, { deadLetterFails: true });
    await done;
    expect(calls.retry).toHaveLength(1);
    expect(calls.retry[0]!).toBeGreaterThan(1_000_000);
    expect([calls.finish, calls.log.length, stats.deadLettered]).toEqual([0, 0, 0]);
  });

  it("a failure neither retryable nor final (no mailer) is given up at once with its own code", async () => {
    const { done, calls } = run(
      { ok: false, attempts: 0, final: false, retryable: false, code: "CS_MAILER_UNCONFIGURED", error: "no SMTP server" },
      { tries: 0 },
    );
    await done;
    expect(calls.letters.map((l) => l.code)).toEqual(["CS_MAILER_UNCONFIGURED", "CS_MAILER_UNCONFIGURED"]);
    expect(calls.log[0]).toMatchObject({ code: "CS_MAILER_UNCONFIGURED", final: false });
    expect(calls.finish).toBe(1);
  });

  it("sent: every held alert's action is marked delivered; a final refusal marks nothing and dead-letters nothing", async () => {
    const sent = run({ ok: true, attempts: 1, final: true, retryable: false, status: 204 });
    await sent.done;
    expect(sent.calls.marked).toEqual(["alert-1:2", "alert-2:2", "alert-3:2"]);
    expect(sent.stats.digests).toBe(1);
    const refused = run({ ok: false, attempts: 1, final: true, retryable: false, code: "CS_DELIVERY_HTTP_STATUS", error: "HTTP 410" });
    await refused.done;
    expect([refused.calls.marked.length, refused.calls.letters.length, refused.calls.finish]).toEqual([0, 0, 1]);
    expect(refused.calls.log[0]).toMatchObject({ ok: false, final: true, state: "digest" });
  });
});
