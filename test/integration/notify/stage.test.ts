/**
 * The notify stage through real Kafka and Redis: an alert produced to the alerts topic reaches a
 * local webhook receiver; an alert whose receiver is down is dead-lettered after its retry budget
 * and `alerts replay` re-sends it once the receiver is back, without re-sending delivered actions.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import { type Bus, createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { replayAlertDeadLetters } from "../../../pipeline/notify/replay.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";

const up = await probeStack();

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

describe.skipIf(!up.ok)("notify stage (real Kafka + Redis, local receivers)", () => {
  let h: Harness;
  let bus: Bus;
  let stage: NotifyStage;
  let server: Server;
  let base: string;
  const received: Received[] = [];
  let failing = false;

  beforeAll(async () => {
    h = createHarness();
    h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"], maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 };
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        if (failing) {
          res.writeHead(503).end();
          return;
        }
        received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    bus = await createBus({ config: h.config, logger: h.logger });
    stage = await startNotifyStage({ bus, config: h.config, logger: h.logger });
  });

  afterAll(async () => {
    await stage?.stop();
    await new Promise((r) => server?.close(r));
    await h?.cleanup();
  });

  const produce = async (alert: ReturnType<typeof sampleAlert>) => {
    const p = await createRecordProducer(bus);
    await p.send([{ kind: "alerts", key: alert.ruleId, record: alertToAvro(alert) }]);
    await p.disconnect();
  };

  it("delivers a POST webhook with the alert body, id and signature headers", async () => {
    const alert = sampleAlert({
      id: "a".repeat(64),
      actions: [
        { type: "Webhook (POST)", parameters: { url: `${base}/hook` } },
        { type: "Webhook (GET)", parameters: { url: `${base}/get?tx={transactionHash}` } },
      ],
    });
    await produce(alert);
    await waitFor(async () => received.length >= 2, 30_000);
    const post = received.find((r) => r.method === "POST")!;
    const get = received.find((r) => r.method === "GET")!;
    expect(JSON.parse(post.body)).toMatchObject({ id: alert.id, ruleId: alert.ruleId, status: alert.status, sequence: alert.sequence });
    expect(post.headers["idempotency-key"]).toBe(alert.id);
    expect(String(post.headers["x-chainsift-signature"])).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(get.url).toBe(`/get?tx=${encodeURIComponent(String(alert.entity.transactionHash))}`);
    const log = await stage.deliveryLog.list(alert.ruleId, { limit: 10, offset: 0 });
    expect(log.entries.filter((e) => e.alertId === alert.id && e.ok)).toHaveLength(2);
  });

  it("dead-letters an alert after its retry budget and replays only the undelivered action", async () => {
    received.length = 0;
    failing = true;
    const alert = sampleAlert({
      id: "b".repeat(64),
      ruleId: "7f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
      actions: [{ type: "Webhook (POST)", parameters: { url: `${base}/later` } }],
    });
    await produce(alert);
    await waitFor(async () => (await stage.deliveryLog.list(alert.ruleId, { limit: 10, offset: 0 })).entries.length >= 1, 30_000);
    expect(stage.deadLettered()).toBe(1);
    expect(received).toHaveLength(0);

    failing = false;
    const result = await replayAlertDeadLetters({ bus, idleMs: 1500 });
    expect(result.replayed).toBe(1);
    await waitFor(async () => received.length >= 1, 30_000);
    expect(JSON.parse(received[0]!.body).id).toBe(alert.id);
    // A second replay (same consumer group) re-sends nothing.
    expect((await replayAlertDeadLetters({ bus, idleMs: 1500 })).replayed).toBe(0);
  });
});
