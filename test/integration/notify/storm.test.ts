/**
 * Storm control through the real notify stage (Kafka alerts topic, Redis queue and storm state,
 * scheduler) to local receivers (test/support/chat-receivers.ts): 200 alerts of one rule in 10
 * blocks, a Slack (incoming webhook) action throttled at 5 messages per 3 s window and a
 * `Webhook (POST)` action with a 3 s digest. Every alert is accounted for exactly once — sent on its
 * own or in a digest — the throttle is never exceeded in a window, and the delivery log shows
 * what was held back (`state: "throttled"`) and each digest (`state: "digest"`, its count).
 */
import { createHash } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { type Bus, createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import type { DeliveryLogEntry } from "../../../pipeline/notify/log.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { createStormStore } from "../../../pipeline/notify/storm.js";
import { type ChatReceivers, startChatReceivers } from "../../support/chat-receivers.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";

const up = await probeStack();
const N = 200;
const MAX = 5;
const WINDOW_SEC = 3;

describe.skipIf(!up.ok)("storm control: throttle and digest (real notify stage, local receivers)", () => {
  let h: Harness;
  let chat: ChatReceivers;
  let bus: Bus;
  let stage: NotifyStage;

  beforeAll(async () => {
    h = createHarness();
    chat = await startChatReceivers({ telegram: "1:x", slack: "xoxb-x" });
    h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"], baseDelayMs: 10, timeoutMs: 3000 };
    bus = await createBus({ config: h.config, logger: h.logger });
    stage = await startNotifyStage({ bus, config: h.config, logger: h.logger });
  });

  afterAll(async () => {
    await stage?.stop();
    await chat?.close();
    await h?.cleanup();
  });

  it(`${N} matches in 10 blocks: at most ${MAX} Slack messages per window, digests account for every match`, async () => {
    const actions = [
      {
        type: "Slack",
        parameters: { url: chat.slackHookUrl, channel: "", text: "", username: "" },
        throttle: { max: MAX, windowSec: WINDOW_SEC },
      },
      { type: "Webhook (POST)", parameters: { url: chat.webhookUrl }, digest: { windowSec: WINDOW_SEC, maxEntities: 3 } },
    ] as AlertDefinition[];
    const alerts: Alert[] = Array.from({ length: N }, (_, i) => {
      const a = sampleAlert({ sequence: i + 1, blockNumber: 1000 + Math.floor(i / (N / 10)) });
      const entityId = `${a.entityId}-${i}`;
      return { ...a, entityId, id: createHash("sha256").update(`storm|${i}`).digest("hex"), actions };
    });
    const p = await createRecordProducer(bus);
    await p.send(alerts.map((a) => ({ kind: "alerts" as const, key: a.ruleId, record: alertToAvro(a) })));
    await p.disconnect();

    const ruleId = alerts[0]!.ruleId;
    const log = async () => (await stage.deliveryLog.list(ruleId, { limit: 1000 })).entries;
    const digestTotal = (es: DeliveryLogEntry[], i: number) =>
      es.filter((e) => e.actionIndex === i && e.state === "digest" && e.ok).reduce((n, e) => n + (e.digestCount ?? 0), 0);
    const settled = async () => {
      const es = await log();
      const sent = es.filter((e) => e.actionIndex === 0 && e.ok && !e.state).length;
      const held = es.filter((e) => e.actionIndex === 0 && e.state === "throttled").length;
      last = { sent, held, d0: digestTotal(es, 0), d1: digestTotal(es, 1), entries: es.length };
      return sent + held === N && digestTotal(es, 0) === held && digestTotal(es, 1) === N;
    };
    let last = {};
    await waitFor(settled, 60_000).catch((err) => {
      throw new Error(`${err}: ${JSON.stringify(last)}`);
    });
    const es = await log();

    // Slack: every alert once, either on its own or held for a digest.
    const sent = es.filter((e) => e.actionIndex === 0 && e.ok && !e.state);
    const held = es.filter((e) => e.actionIndex === 0 && e.state === "throttled");
    const ids = [...sent, ...held].map((e) => e.alertId);
    expect(new Set(ids).size).toBe(N);
    expect(new Set(ids)).toEqual(new Set(alerts.map((a) => a.id)));
    expect(held.every((e) => e.code === "CS_THROTTLED" && e.final === true)).toBe(true);
    // never more than MAX messages of their own in one window: the windows' admission sets
    // (`notify:storm:sent:<lane>:<window>`, the throttle's own count) hold at most MAX each, and
    // together exactly the alerts sent on their own (a message is sent right after its admission)
    const redis = createClient({ url: h.config.redisUrl });
    await redis.connect();
    const keys = await redis.keys(`${h.config.redisKeyPrefix}notify:storm:sent:${ruleId}:0:*`);
    const admitted = await Promise.all(keys.map((k) => redis.sMembers(k)));
    await redis.close();
    expect(keys.length).toBeGreaterThan(0);
    for (const w of admitted) expect(w.length).toBeLessThanOrEqual(MAX);
    expect(new Set(admitted.flat())).toEqual(new Set(sent.map((e) => e.alertId)));
    expect(held.length).toBeGreaterThan(0);

    // What Slack showed: the messages of their own, plus digests whose counts add up to the rest.
    const slackTexts = chat.messages.filter((m) => m.service === "slack-webhook").map((m) => m.text);
    const digests = slackTexts.filter((t) => t.startsWith("*DIGEST: "));
    expect(slackTexts.length - digests.length).toBe(sent.length);
    const counted = digests.map((t) => Number(/^\*DIGEST: (\d+) alerts?/.exec(t)![1]));
    expect(counted.reduce((a, b) => a + b, 0)).toBe(held.length);
    for (const t of digests) expect(t).toMatch(/blocks 10\d\d–10\d\d/);

    // The digest-only webhook: every alert in exactly one digest body, none sent on its own.
    const bodies = chat.requests.filter((r) => r.path === "/webhook").map((r) => r.body as { type?: string; alerts?: { id: string }[] });
    expect(bodies.every((b) => b.type === "digest")).toBe(true);
    const inDigests = bodies.flatMap((b) => b.alerts!.map((a) => a.id));
    expect(inDigests).toHaveLength(N);
    expect(new Set(inDigests).size).toBe(N);
    expect(es.filter((e) => e.actionIndex === 1 && e.ok && !e.state)).toHaveLength(0);
  }, 120_000);

  it("a process killed mid-window or mid-digest neither loses nor doubles an alert of the digest", async () => {
    const redis = createClient({ url: h.config.redisUrl });
    await redis.connect();
    try {
      const store = createStormStore(redis, `${h.config.redisKeyPrefix}crash:`);
      const policy = { max: 1, windowMs: 60_000, maxEntities: 10, source: "throttle" as const };
      const action = {
        type: "Webhook (POST)",
        parameters: { url: chat.webhookUrl },
        throttle: { max: 1, windowSec: 60 },
      } as AlertDefinition;
      const a = (i: number) => ({ ...sampleAlert({ sequence: i }), id: `crash-${i}`, entityId: `e-${i}`, actions: [action] });
      const src = (i: number) => ({ topic: "alerts", partition: 0, offset: String(i), keyB64: null, valueB64: null });
      const t0 = 6_000_000; // a window [6_000_000, 6_060_000)
      expect(await store.admit("r:0", 0, a(1), policy, t0, src(1))).toBe("send");
      // a job re-run after its process died (between the admission and the pop) gets the same answer
      expect(await store.admit("r:0", 0, a(1), policy, t0 + 5, src(1))).toBe("send");
      for (const i of [2, 3, 4]) expect(await store.admit("r:0", 0, a(i), policy, t0 + i, src(i))).toBe("held");
      expect(await store.admit("r:0", 0, a(3), policy, t0 + 10, src(3))).toBe("held"); // re-run: not held twice
      expect(await store.claimDue(t0 + 59_999, 50, "A")).toEqual([]); // not due before the window ends
      // process A claims the digest and dies before sending it (no finish, no retry)
      const [byA] = await store.claimDue(t0 + 60_000, 60_000, "A");
      expect(byA!.digest.alerts.map((x) => x.alertId)).toEqual(["crash-2", "crash-3", "crash-4"]);
      // each held alert keeps its source record (to dead-letter it if the digest is given up)
      expect(byA!.digest.alerts.map((x) => x.source?.offset)).toEqual(["2", "3", "4"]);
      expect(await store.claimDue(t0 + 60_000, 60_000, "B")).toEqual([]); // leased by A
      // A's lease runs out (made to expire now rather than waiting its 60 s)
      const lock = `${h.config.redisKeyPrefix}crash:notify:storm:lock:r:0:${Math.floor(t0 / 60_000)}`;
      expect(await redis.get(lock)).toBe("A");
      await redis.pExpire(lock, 1);
      await new Promise((r) => setTimeout(r, 20));
      const [byB] = await store.claimDue(t0 + 60_100, 60_000, "B");
      expect(byB!.digest.alerts.map((x) => x.alertId)).toEqual(["crash-2", "crash-3", "crash-4"]);
      expect(byB!.digest.id).toBe(byA!.digest.id); // the same digest (same webhook-id for receivers)
      await store.finish(byB!);
      expect(await store.claimDue(t0 + 120_000, 50, "C")).toEqual([]); // sent once, gone
    } finally {
      await redis.close();
    }
  });
});
