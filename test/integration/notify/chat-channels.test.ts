/**
 * Discord and Telegram through the real notify stage (Kafka alerts topic, Redis queue, scheduler,
 * delivery log) to local receivers on 127.0.0.1 that check each request the way the services'
 * API references describe it:
 *
 * - Discord "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook):
 *   `POST /api/webhooks/<webhook id>/<webhook token>`, `Content-Type: application/json`, a JSON
 *   body with `content` (at most 2000 characters) and optional `username`, `allowed_mentions`;
 *   answered `204 No Content`. Rate limits (https://discord.com/developers/docs/topics/rate-limits):
 *   `429` with a JSON body `{"message", "retry_after": <seconds, float>, "global"}`.
 * - Telegram Bot API `sendMessage` (https://core.telegram.org/bots/api#sendmessage, requests per
 *   https://core.telegram.org/bots/api#making-requests): `POST /bot<token>/sendMessage`, JSON with
 *   `chat_id` (integer or string) and `text` (1–4096 characters), optional `link_preview_options`,
 *   `message_thread_id`; answered `{"ok": true, "result": <Message>}`. Flood control: `429` with
 *   `{"ok": false, "error_code": 429, "description", "parameters": {"retry_after": <seconds>}}`
 *   (https://core.telegram.org/bots/api#responseparameters).
 *
 * Each receiver answers the first request of each alert with its service's 429 (the wait only in
 * the body, no `Retry-After` header), then accepts. The test checks the exact bodies, that the
 * retry came no earlier than the body's `retry_after`, a retraction, the delivery log (bot token
 * and webhook token never shown) and that no log line carries either token.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import { createLogger } from "../../../lib/logger.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { type Bus, createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { CS_TELEGRAM_UNCONFIGURED, createDeliverer } from "../../../pipeline/notify/deliver.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { FROM, sampleAlert, TX_HASH } from "../../unit/pipeline/notify/fixtures.js";

const up = await probeStack();

const BOT_TOKEN = "123456789:AAH-test-Secret_token";
const DISCORD_ID = "112233445566778899";
const DISCORD_TOKEN = "dIsCoRd-WeBhOoK-tOkEn_0123";
/** `retry_after` of the receivers' 429 answers, in seconds (Discord: a float, Telegram: an integer). */
const DISCORD_RETRY_AFTER_S = 0.3;
const TELEGRAM_RETRY_AFTER_S = 1;

interface Received {
  service: "discord" | "telegram";
  at: number;
  status: number;
  body: Record<string, unknown>;
  alertId: string;
}

/** Why a request is not one the service's API accepts, or null. */
function violation(req: IncomingMessage, raw: string, service: "discord" | "telegram"): string | null {
  if (req.method !== "POST") return `method ${req.method}`;
  if (!String(req.headers["content-type"]).startsWith("application/json")) return `content-type ${req.headers["content-type"]}`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return "body is not JSON";
  }
  if (service === "discord") {
    const known = ["content", "username", "avatar_url", "tts", "embeds", "allowed_mentions", "components", "flags", "thread_name"];
    const unknown = Object.keys(body).filter((k) => !known.includes(k));
    if (unknown.length > 0) return `unknown fields ${unknown}`;
    if (typeof body.content !== "string" || body.content.length === 0 || body.content.length > 2000) return "content";
    return null;
  }
  if (typeof body.chat_id !== "string" && typeof body.chat_id !== "number") return "chat_id";
  if (typeof body.text !== "string" || body.text.length === 0 || body.text.length > 4096) return "text";
  return null;
}

describe.skipIf(!up.ok)("Discord and Telegram through the notify stage (real Kafka + Redis, local receivers)", () => {
  const received: Received[] = [];
  const refused: string[] = [];
  let h: Harness;
  let server: Server;
  let base = "";
  let bus: Bus;
  let stage: NotifyStage;
  const logLines: string[] = [];
  const seen = new Set<string>();

  beforeAll(async () => {
    h = createHarness();
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const path = req.url ?? "";
        const service =
          path === `/api/webhooks/${DISCORD_ID}/${DISCORD_TOKEN}` ? "discord" : path === `/bot${BOT_TOKEN}/sendMessage` ? "telegram" : null;
        const bad = service ? violation(req, raw, service) : `unknown path ${path}`;
        if (!service || bad) {
          refused.push(bad ?? "");
          res.writeHead(400, { "content-type": "application/json" }).end('{"message": "Bad Request"}');
          return;
        }
        const alertId = String(req.headers["idempotency-key"]);
        const first = !seen.has(`${service}:${alertId}`);
        seen.add(`${service}:${alertId}`);
        const status = first ? 429 : service === "discord" ? 204 : 200;
        received.push({ service, at: Date.now(), status, body: JSON.parse(raw), alertId });
        if (service === "discord") {
          if (first)
            res
              .writeHead(429, { "content-type": "application/json" })
              .end(JSON.stringify({ message: "You are being rate limited.", retry_after: DISCORD_RETRY_AFTER_S, global: false }));
          else res.writeHead(204).end();
          return;
        }
        const answer = first
          ? {
              ok: false,
              error_code: 429,
              description: `Too Many Requests: retry after ${TELEGRAM_RETRY_AFTER_S}`,
              parameters: { retry_after: TELEGRAM_RETRY_AFTER_S },
            }
          : { ok: true, result: { message_id: received.length, date: 1767323045, chat: { id: -1001234567890, type: "supergroup" } } };
        res.writeHead(first ? 429 : 200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h.config.notify = {
      ...h.config.notify,
      allowlist: ["127.0.0.1"],
      maxAttempts: 4,
      baseDelayMs: 10,
      maxDelayMs: 5000,
      timeoutMs: 2000,
      telegramBotToken: BOT_TOKEN,
      telegramApiUrl: base,
    };
    const logger = createLogger("debug", `test-${h.id}`, {
      format: "json",
      tty: false,
      output: { write: (l) => void logLines.push(l), redirect() {} },
    });
    bus = await createBus({ config: h.config, logger: h.logger });
    stage = await startNotifyStage({ bus, config: h.config, logger });
  });

  afterAll(async () => {
    await stage?.stop();
    await new Promise((r) => server?.close(r));
    await h?.cleanup();
  });

  const produce = async (alert: Alert) => {
    const p = await createRecordProducer(bus);
    await p.send([{ kind: "alerts", key: alert.ruleId, record: alertToAvro(alert) }]);
    await p.disconnect();
  };

  /** The rule's two actions (the Discord URL points at the local receiver, known once it listens). */
  const actions = (): AlertDefinition[] => [
    {
      type: "Discord",
      parameters: {
        url: `${base}/api/webhooks/${DISCORD_ID}/${DISCORD_TOKEN}`,
        username: "chainsift",
        template: "**{alert.status}**: {amount.value} from {args.0.value.hex} {explorer.tx}",
      },
    },
    { type: "Telegram", parameters: { chatId: "-1001234567890", template: "{alert.status}: {amount.value} {explorer.tx}" } },
  ];
  /** The fixture's USDT transfer (with the decoder's scaled amount in `str`) for both actions. */
  const withActions = (over: Partial<Alert>): Alert => {
    const a = sampleAlert(over);
    return { ...a, entity: { ...a.entity, str: `Transfer(from=${FROM}, to=0x…, value=250000000000 [250000 USDT])` }, actions: actions() };
  };

  it("delivers the exact requests each API expects, honouring the 429 retry_after of the body", async () => {
    const alert = withActions({});
    await produce(alert);
    await waitFor(async () => received.filter((r) => r.alertId === alert.id && r.status !== 429).length >= 2, 30_000);
    expect(refused).toEqual([]);

    const discord = received.filter((r) => r.service === "discord" && r.alertId === alert.id);
    const telegram = received.filter((r) => r.service === "telegram" && r.alertId === alert.id);
    expect(discord.map((r) => r.status)).toEqual([429, 204]);
    expect(telegram.map((r) => r.status)).toEqual([429, 200]);
    expect(discord[1]!.body).toEqual({
      content: `**confirmed**: 250000 USDT from ${FROM} https://etherscan.io/tx/${TX_HASH}`,
      allowed_mentions: { parse: [] },
      username: "chainsift",
    });
    expect(telegram[1]!.body).toEqual({
      chat_id: "-1001234567890",
      text: `confirmed: 250000 USDT https://etherscan.io/tx/${TX_HASH}`,
      link_preview_options: { is_disabled: true },
    });
    // The retry waited at least what the body asked for (a lower bound: the scheduler adds jitter and polling).
    expect(discord[1]!.at - discord[0]!.at).toBeGreaterThanOrEqual(DISCORD_RETRY_AFTER_S * 1000);
    expect(telegram[1]!.at - telegram[0]!.at).toBeGreaterThanOrEqual(TELEGRAM_RETRY_AFTER_S * 1000);

    await waitFor(async () => (await stage.deliveryLog.list(alert.ruleId, { limit: 10 })).entries.length >= 2, 10_000);
    const log = (await stage.deliveryLog.list(alert.ruleId, { limit: 10 })).entries.filter((e) => e.alertId === alert.id);
    expect(log.map((e) => [e.type, e.ok, e.attempts, e.destination]).sort()).toEqual([
      ["Discord", true, 2, `${base}/…`],
      ["Telegram", true, 2, "telegram chat -1001234567890"],
    ]);
  });

  it("a retraction reads as one in both channels", async () => {
    const alert = withActions({ status: "removed", confirmations: 0, sequence: 43 });
    await produce(alert);
    await waitFor(async () => received.filter((r) => r.alertId === alert.id && r.status !== 429).length >= 2, 30_000);
    const ok = received.filter((r) => r.alertId === alert.id && r.status !== 429);
    const first = (r: Received) => String(r.service === "discord" ? r.body.content : r.body.text).split("\n");
    for (const r of ok) {
      expect(first(r)[0]).toMatch(/RETRACTED: block 123 \(0x88e9…6cb6\) was reorganised away/);
      expect(first(r)[1]).toMatch(/^(\*\*)?removed/);
    }
  });

  it("never writes the bot token or the webhook token to a log line or the delivery log", async () => {
    expect(logLines.length).toBeGreaterThan(0); // the retries were logged
    for (const line of logLines) {
      expect(line).not.toContain(BOT_TOKEN);
      expect(line).not.toContain(DISCORD_TOKEN);
    }
    const all = JSON.stringify(await stage.deliveryLog.list(sampleAlert().ruleId, { limit: 100 }));
    expect(all).not.toContain(BOT_TOKEN);
    expect(all).not.toContain(DISCORD_TOKEN);
  });

  it("without a bot token, a Telegram action is not attempted and is kept for a replay", async () => {
    const deliverer = createDeliverer({ secrets: { getOrCreate: async () => "whsec_test" } });
    const result = await deliverer.attempt(withActions({}), actions()[1]!, 1);
    await deliverer.close();
    expect(result).toMatchObject({ ok: false, attempts: 0, final: false, code: CS_TELEGRAM_UNCONFIGURED });
  });
});
