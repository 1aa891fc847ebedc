/**
 * Integration test of the notify stage's delivery against real local receivers on 127.0.0.1
 * (allowlisted): an HTTP webhook receiver and a Slack-shaped one (node:http), an SMTP server
 * (smtp-server, messages parsed with mailparser), and the real Redis for signing secrets and the
 * delivery log (unique key prefix, removed afterwards). Skips when Redis is down.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "redis";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { createDeliverer, type Deliverer, type DelivererDeps } from "../../../pipeline/notify/deliver.js";
import { createDeliveryLog, type DeliveryLog } from "../../../pipeline/notify/log.js";
import { createSecretStore, type SecretStore, verifyWebhookSignature } from "../../../pipeline/notify/sign.js";
import { type SmtpReceiver, startSmtpReceiver } from "../../support/smtp.js";
import { ACCOUNT_ID, FROM, sampleAlert, TX_HASH } from "../../unit/pipeline/notify/fixtures.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "../accounts/redis.js";

const url = loadConfig().redisUrl;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP receiver that records requests; `plan` maps a path to the statuses to answer in turn (then 200). */
async function startReceiver() {
  const received: Received[] = [];
  const plan = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const path = (req.url ?? "").split("?")[0]!;
      const status = plan.get(path)?.shift() ?? 200;
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(status === 200 ? "ok" : "unavailable");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, received, plan, base: `http://127.0.0.1:${port}`, port };
}

describe.skipIf(!up)("notify delivery (local receivers, real Redis)", () => {
  const prefix = `tn${randomBytes(4).toString("hex")}:`;
  const redis = createClient({ url });
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: SmtpReceiver;
  let secrets: SecretStore;
  let _log: DeliveryLog;
  let deliverer: Deliverer;
  const closers: (() => Promise<void>)[] = [];

  const make = (over: Partial<DelivererDeps> = {}): Deliverer => {
    const d = createDeliverer({
      allowlist: ["127.0.0.1"],
      secrets,
      mailer: { from: "chainsift <alerts@chainsift.test>", smtpUrl: smtp.url },
      retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100 },
      fetchTimeoutMs: 3000,
      ...over,
    });
    closers.push(() => d.close());
    return d;
  };

  beforeAll(async () => {
    redis.on("error", () => {});
    await redis.connect();
    receiver = await startReceiver();
    smtp = await startSmtpReceiver();
    secrets = createSecretStore({ redis, keyPrefix: prefix });
    _log = createDeliveryLog({ redis, keyPrefix: prefix });
    deliverer = make();
  });

  afterAll(async () => {
    for (const c of closers) await c();
    await new Promise<void>((resolve) => receiver?.server.close(() => resolve()));
    await smtp?.close();
    if (redis.isOpen) await redis.close();
    await deletePrefix(url, prefix);
    expect(await keysOf(url, prefix)).toEqual([]);
  });

  beforeEach(() => {
    receiver.received.length = 0;
    receiver.plan.clear();
    smtp.mails.length = 0;
    smtp.rcptReplies.length = 0;
  });

  const alert = sampleAlert();

  it("Webhook (GET): calls the templated, URL-encoded URL with signed headers", async () => {
    const action: AlertDefinition = {
      type: "Webhook (GET)",
      parameters: { url: `${receiver.base}/get/{transactionHash}?from={args.0.value.hex}&memo={memo}` },
    };
    const r = await deliverer.deliver(alert, action, 0);
    expect(r).toMatchObject({ ok: true, attempts: 1, status: 200, final: true, destination: `${receiver.base}/get/${TX_HASH}?…` });
    expect(receiver.received).toHaveLength(1);
    const req = receiver.received[0]!;
    expect(req.method).toBe("GET");
    expect(req.url).toBe(`/get/${TX_HASH}?from=${FROM}&memo=a%20b%26c%2Fd%3Fe%23f`);
    expect(req.headers["idempotency-key"]).toBe(alert.id);
    const secret = await secrets.getOrCreate(ACCOUNT_ID);
    expect(verifyWebhookSignature(secret, req.headers, req.url).ok).toBe(true);
    // Standard Webhooks: the official library verifies the request target (GET has no body)
    expect(req.headers["webhook-id"]).toBe(alert.id);
    expect(req.headers["webhook-timestamp"]).toBe(req.headers["x-chainsift-timestamp"]);
    const std = req.headers as Record<string, string>;
    expect(new Webhook(secret).verify(req.url, std, { jsonParse: false })).toBeUndefined();
    expect(() => new Webhook(secret).verify(`${req.url}x`, std, { jsonParse: false })).toThrow(/signature/i);
  });

  it("Webhook (POST): the official standardwebhooks package verifies the delivered request", async () => {
    const action: AlertDefinition = { type: "Webhook (POST)", parameters: { url: `${receiver.base}/std` } };
    expect(await deliverer.deliver(alert, action, 1)).toMatchObject({ ok: true, attempts: 1 });
    const req = receiver.received[0]!;
    const secret = await secrets.getOrCreate(ACCOUNT_ID);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const std = req.headers as Record<string, string>;
    expect(std["webhook-id"]).toBe(alert.id);
    expect(std["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(req.body, std)).toEqual(JSON.parse(req.body));
    expect(() => new Webhook(secret).verify(req.body.replace('"sequence":42', '"sequence":43'), std)).toThrow(/signature/i);
    expect(() => new Webhook(secret).verify(req.body, { ...std, "webhook-id": "other" })).toThrow(/signature/i);
  });

  it("Webhook (POST): JSON body with a valid signature and the idempotency header", async () => {
    const action: AlertDefinition = { type: "Webhook (POST)", parameters: { url: `${receiver.base}/post` } };
    expect(await deliverer.deliver(alert, action, 1)).toMatchObject({ ok: true, attempts: 1 });
    const req = receiver.received[0]!;
    expect(req.method).toBe("POST");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["idempotency-key"]).toBe(alert.id);
    expect(req.headers["x-chainsift-alert-id"]).toBe(alert.id);
    expect(req.headers["user-agent"]).toMatch(/^chainsift-notify\/\d+\.\d+\.\d+/);
    const secret = await secrets.getOrCreate(ACCOUNT_ID);
    expect(secret).toMatch(/^whsec_/);
    expect(verifyWebhookSignature(secret, req.headers, req.body)).toEqual({
      ok: true,
      timestampSec: Number(req.headers["x-chainsift-timestamp"]),
    });
    expect(verifyWebhookSignature(secret, req.headers, req.body.replace('"sequence":42', '"sequence":43')).ok).toBe(false);
    expect(JSON.parse(req.body)).toEqual({
      id: alert.id,
      ruleId: alert.ruleId,
      ruleVersion: 2,
      sequence: 42,
      status: "confirmed",
      confirmations: 12,
      maxConfirmationCount: 12,
      chain: { technology: "ethereum", blockchain: "ethereum", network: "mainnet" },
      targetType: "Event",
      entityId: alert.entityId,
      blockHash: alert.blockHash,
      blockNumber: 123,
      payload: alert.payload,
      emittedAt: alert.emittedAt,
    });
  });

  it("Slack: posts {text, channel, username}", async () => {
    const action: AlertDefinition = {
      type: "Slack",
      parameters: {
        url: `${receiver.base}/services/T000/B000/XXXX`,
        text: ":rotating_light: USDT moved",
        channel: "#alerts",
        username: "chainsift-bot",
      },
    };
    expect(await deliverer.deliver({ ...alert, ruleName: "Big USDT" }, action, 2)).toMatchObject({
      ok: true,
      destination: `${receiver.base}/…`,
    });
    const body = JSON.parse(receiver.received[0]!.body);
    expect(body).toMatchObject({ channel: "#alerts", username: "chainsift-bot" });
    expect(body.text).toContain(":rotating_light: USDT moved");
    expect(body.text).toContain("confirmed: Transfer in block 123");
    expect(body.text).toContain("Big USDT");
    expect(body.text).toContain(FROM);
  });

  it("Email: the SMTP server receives a readable subject and a body with the payload fields", async () => {
    const action: AlertDefinition = { type: "Email", parameters: { recipients: ["ops@example.test", "dev@example.test"] } };
    expect(await deliverer.deliver({ ...alert, ruleName: "Big USDT" }, action, 3)).toMatchObject({
      ok: true,
      attempts: 1,
      destination: "2 recipients",
    });
    expect(smtp.mails).toHaveLength(1);
    const m = smtp.mails[0]!;
    expect(m.envelopeTo).toEqual(["ops@example.test", "dev@example.test"]);
    expect(m.subject).toBe("[chainsift] confirmed: Big USDT — Transfer in block 123");
    for (const body of [m.text, m.html]) {
      expect(body).toContain(FROM);
      expect(body).toContain("args.value");
      expect(body).toContain("250000000000");
      expect(body).toContain(alert.id);
    }
    expect(m.headers.get("x-chainsift-alert-id")).toBe(alert.id);
    expect(m.messageId).toBe(`<${alert.id}.3@chainsift.test>`);
  });

  it("Email: SMTP 451 is retried, 550 is final", async () => {
    const action: AlertDefinition = { type: "Email", parameters: { recipients: ["ops@example.test"] } };
    smtp.rcptReplies.push(451);
    expect(await deliverer.deliver(alert, action, 3)).toMatchObject({ ok: true, attempts: 2 });
    smtp.rcptReplies.push(550);
    expect(await deliverer.deliver(alert, action, 3)).toMatchObject({
      ok: false,
      final: true,
      attempts: 1,
      status: 550,
      code: "CS_SMTP_REJECTED",
    });
    expect(smtp.mails).toHaveLength(1);
  });

  it("a receiver answering 503 twice then 200 gets the alert on the 3rd attempt, same id every time", async () => {
    receiver.plan.set("/flaky", [503, 503]);
    const action: AlertDefinition = { type: "Webhook (POST)", parameters: { url: `${receiver.base}/flaky` } };
    expect(await deliverer.deliver(alert, action, 0)).toMatchObject({ ok: true, attempts: 3, status: 200 });
    expect(receiver.received).toHaveLength(3);
    expect(new Set(receiver.received.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([alert.id]));
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
  });

  it("a receiver that is down exhausts the budget (final: false, to be dead-lettered)", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const action: AlertDefinition = { type: "Webhook (POST)", parameters: { url: `http://127.0.0.1:${port}/down` } };
    const r = await deliverer.deliver(alert, action, 0);
    expect(r).toMatchObject({ ok: false, final: false, attempts: 3, code: "CS_DELIVERY_EXHAUSTED" });
    expect(r.error).toMatch(/ECONNREFUSED/);
  });

  it("without the allowlist, loopback and private URLs are refused and no request is made", async () => {
    const strict = make({ allowlist: [] });
    for (const u of [
      `${receiver.base}/post`,
      `http://localhost:${receiver.port}/post`,
      "http://10.0.0.1/hook",
      "http://[::ffff:127.0.0.1]:1/",
    ]) {
      const r = await strict.deliver(alert, { type: "Webhook (POST)", parameters: { url: u } }, 0);
      expect(r, u).toMatchObject({ ok: false, final: true, code: "CS_DESTINATION_FORBIDDEN" });
    }
    const slack = await strict.deliver(
      alert,
      { type: "Slack", parameters: { url: `${receiver.base}/services/x`, text: "", channel: "#c", username: "u" } },
      0,
    );
    expect(slack.code).toBe("CS_DESTINATION_FORBIDDEN");
    expect(receiver.received).toEqual([]);
  });

  it("a name that passes the check but resolves to loopback at connect time (DNS rebinding) is refused", async () => {
    let calls = 0;
    const rebinding = make({
      allowlist: [],
      resolve: async () => (calls++ === 0 ? [{ address: "93.184.215.14", family: 4 }] : [{ address: "127.0.0.1", family: 4 }]),
    });
    const r = await rebinding.deliver(
      alert,
      { type: "Webhook (POST)", parameters: { url: `http://rebind.test:${receiver.port}/post` } },
      0,
    );
    expect(r).toMatchObject({ ok: false, final: true, attempts: 1, code: "CS_DESTINATION_FORBIDDEN" });
    expect(calls).toBe(2);
    expect(receiver.received).toEqual([]);
  });
});
