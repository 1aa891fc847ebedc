/**
 * A storm-control digest that exhausts its retries loses nothing (real notify stage: Kafka alerts
 * and dead-letter topics, Redis queue and storm state, a local HTTP receiver on 127.0.0.1): every
 * alert the digest held is dead-lettered with its original bytes and `CS_DELIVERY_EXHAUSTED`, the
 * metrics count them, and once the receiver recovers `alerts replay` brings each of them to it
 * (through storm control again: in the digest of the replay's window).
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { type Bus, createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { laneOf } from "../../../pipeline/notify/queue.js";
import { replayAlertDeadLetters } from "../../../pipeline/notify/replay.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";

const up = await probeStack();
const N = 3;

interface Letter {
  stage: string;
  sourceTopic: string;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  errorCode: string;
  errorMessage: string;
}

describe.skipIf(!up.ok)("storm control: a digest given up is dead-lettered and replayable (real stack)", () => {
  let h: Harness;
  let bus: Bus;
  let stage: NotifyStage;
  let server: Server;
  let base: string;
  const registry = new Registry();
  /** Paths the receiver answers 503 on. */
  const failing = new Set(["/digests"]);
  let refused = 0;
  const bodies: Array<{ path: string; type?: string; id?: string; alerts?: Array<{ id: string }> }> = [];

  beforeAll(async () => {
    h = createHarness();
    h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"], maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 };
    // The receiver: 503 on the `failing` paths, else 204 keeping each JSON body.
    server = createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += String(chunk);
      const down = failing.has(req.url ?? "");
      if (down) refused++;
      else bodies.push({ path: req.url ?? "", ...JSON.parse(text || "{}") });
      res.writeHead(down ? 503 : 204).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    bus = await createBus({ config: h.config, logger: h.logger });
    stage = await startNotifyStage({ bus, config: h.config, logger: h.logger, registry });
  });

  afterAll(async () => {
    await stage?.stop();
    await new Promise((r) => server?.close(r));
    await h?.cleanup();
  });

  async function readLetters(count: number): Promise<Letter[]> {
    const consumer = bus.kafka.consumer({ groupId: `${h.config.kafka.groupPrefix}.dlq-reader-${Date.now()}` });
    await consumer.connect();
    const letters: Letter[] = [];
    try {
      await consumer.subscribe({ topic: bus.topic("dead-letter"), fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void letters.push((await bus.decode(message.value)) as Letter) });
      await waitFor(async () => letters.length >= count, 15_000).catch(() => undefined);
    } finally {
      await consumer.disconnect();
    }
    return letters;
  }

  const counter = async (name: string, labels: Record<string, string>) =>
    (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ??
    0;

  it(`a digest of ${N} alerts given up after its retries: ${N} dead letters, then replayed to the recovered receiver`, async () => {
    const ruleId = "3c9a1d2e-5b6f-4a7c-8d9e-0f1a2b3c4d5e";
    const actions = [{ type: "Webhook (POST)", parameters: { url: `${base}/digests` }, digest: { windowSec: 3 } }] as AlertDefinition[];
    const alerts: Alert[] = Array.from({ length: N }, (_, i) => ({
      ...sampleAlert({ ruleId, sequence: i + 1, blockNumber: 500 + i }),
      entityId: `held-${i}`,
      id: createHash("sha256").update(`digest-dlq|${i}`).digest("hex"),
      actions,
    }));
    const p = await createRecordProducer(bus);
    await p.send(alerts.map((a) => ({ kind: "alerts" as const, key: a.ruleId, record: alertToAvro(a) })));
    await p.disconnect();

    // The digest fails (503) maxAttempts times and is given up: logged as such.
    const given = await waitFor(async () => {
      const es = (await stage.deliveryLog.list(ruleId, { limit: 100 })).entries;
      return es.find((e) => e.state === "digest" && e.code === "CS_DELIVERY_EXHAUSTED");
    }, 30_000);
    expect(given.digestCount).toBe(N);
    expect(refused).toBeGreaterThanOrEqual(2);
    expect(bodies).toHaveLength(0);

    // One dead letter per held alert, with the alert's original bytes and the digest named.
    const letters = await readLetters(N);
    expect(letters).toHaveLength(N);
    const ids = await Promise.all(letters.map(async (l) => ((await bus.decode(l.value)) as { id: string }).id));
    expect(new Set(ids)).toEqual(new Set(alerts.map((a) => a.id)));
    for (const l of letters) {
      expect(l).toMatchObject({ stage: "notify", sourceTopic: bus.topic("alerts"), errorCode: "CS_DELIVERY_EXHAUSTED" });
      expect(l.key?.toString()).toBe(ruleId);
      expect(l.errorMessage).toContain(`digest ${given.alertId}`);
      expect(l.errorMessage).toContain(`rule ${ruleId}`);
      expect(l.errorMessage).toContain("action 0");
      expect(l.errorMessage).toContain("CS_DELIVERY_HTTP_STATUS");
    }
    expect(await counter("chainsift_notify_dead_letters_total", { code: "CS_DELIVERY_EXHAUSTED" })).toBe(N);
    expect(await counter("chainsift_notify_deliveries_total", { channel: "Webhook (POST)", outcome: "dead_lettered" })).toBe(N);
    expect(stage.deadLettered()).toBe(N);

    // The receiver recovers; the replay puts the alerts back and each reaches it once, in a digest.
    failing.delete("/digests");
    const result = await replayAlertDeadLetters({ bus, idleMs: 1500 });
    expect(result.replayed).toBe(N);
    const delivered = () => bodies.flatMap((b) => (b.type === "digest" ? (b.alerts ?? []).map((a) => a.id) : []));
    await waitFor(async () => delivered().length >= N, 30_000);
    expect(delivered().sort()).toEqual(alerts.map((a) => a.id).sort());
    expect(bodies.every((b) => b.type === "digest" && b.id !== given.alertId)).toBe(true);
  }, 90_000);

  it("an alert delivered in a digest is not sent again when a replay puts its alert back for another action", async () => {
    const ruleId = "4d0b2e3f-6c7a-4b8d-9e0f-1a2b3c4d5e6f";
    failing.add("/down");
    const alert: Alert = {
      ...sampleAlert({ ruleId, sequence: 1 }),
      id: createHash("sha256").update("digest-dlq|two-actions").digest("hex"),
      actions: [
        { type: "Webhook (POST)", parameters: { url: `${base}/down` } },
        { type: "Webhook (POST)", parameters: { url: `${base}/digests` }, digest: { windowSec: 3 } },
      ] as AlertDefinition[],
    };
    const p = await createRecordProducer(bus);
    await p.send([{ kind: "alerts", key: ruleId, record: alertToAvro(alert) }]);
    await p.disconnect();
    const log = async () => (await stage.deliveryLog.list(ruleId, { limit: 100 })).entries;
    // Action 0 is dead-lettered; action 1 is held and delivered in its window's digest.
    await waitFor(async () => {
      const es = await log();
      return es.some((e) => e.actionIndex === 0 && e.code === "CS_DELIVERY_EXHAUSTED") && es.some((e) => e.actionIndex === 1 && e.ok);
    }, 30_000);
    const inDigests = () => bodies.filter((b) => b.type === "digest" && b.alerts?.some((a) => a.id === alert.id)).length;
    expect(inDigests()).toBe(1);

    // The replay puts the alert back: action 0 reaches the recovered receiver ...
    failing.delete("/down");
    expect((await replayAlertDeadLetters({ bus, idleMs: 1500 })).replayed).toBe(1);
    await waitFor(async () => bodies.some((b) => b.path === "/down" && b.id === alert.id), 30_000);
    // ... and action 1 (queued in the same enqueue, before action 0 was sent) was skipped as
    // delivered, not held for another digest: its lane is empty and it was held only once.
    await waitFor(async () => (await stage.queue.laneLength(laneOf(ruleId, 1))) === 0, 30_000);
    const held = (await log()).filter((e) => e.alertId === alert.id && e.actionIndex === 1 && e.state === "throttled");
    expect(held).toHaveLength(1);
    expect(inDigests()).toBe(1);
  }, 90_000);
});
