/**
 * Retractions people can see, through the real notify stage (Kafka alerts topic, Redis queue,
 * scheduler, posted-message store) to local receivers of the Discord, Telegram and Slack API calls
 * (test/support/chat-receivers.ts) and the local SMTP server: a `pending` alert is posted to each,
 * then the match's `removed` alert **edits** the Discord, Telegram and Slack (bot token) messages,
 * posts a follow-up naming the first message through a Slack incoming webhook, and answers the
 * first e-mail in its thread (`In-Reply-To`, `References`); every retraction names the replacing
 * block the alert carries (`replacedBy`, through the alerts topic's Avro). A retraction whose first
 * message is unknown is posted as a new message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { type Bus, createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { type ChatReceivers, startChatReceivers } from "../../support/chat-receivers.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { type SmtpReceiver, startSmtpReceiver } from "../../support/smtp.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";

const up = await probeStack();
const TOKENS = { telegram: "123456789:AAH-retract-token", slack: "xoxb-retract-token" };

describe.skipIf(!up.ok)("retractions edit or thread the first message (real notify stage, local receivers)", () => {
  let h: Harness;
  let chat: ChatReceivers;
  let smtp: SmtpReceiver;
  let bus: Bus;
  let stage: NotifyStage;

  beforeAll(async () => {
    h = createHarness();
    chat = await startChatReceivers(TOKENS);
    smtp = await startSmtpReceiver();
    h.config.notify = {
      ...h.config.notify,
      allowlist: ["127.0.0.1"],
      baseDelayMs: 10,
      timeoutMs: 3000,
      telegramBotToken: TOKENS.telegram,
      telegramApiUrl: chat.telegramApiUrl,
      slackBotToken: TOKENS.slack,
      slackApiUrl: chat.slackApiUrl,
      smtpUrl: smtp.url,
      mailFrom: "chainsift <alerts@chainsift.test>",
    };
    bus = await createBus({ config: h.config, logger: h.logger });
    stage = await startNotifyStage({ bus, config: h.config, logger: h.logger });
  });

  afterAll(async () => {
    await stage?.stop();
    await chat?.close();
    await smtp?.close();
    await h?.cleanup();
  });

  const actions = (): AlertDefinition[] => [
    {
      type: "Discord",
      parameters: {
        url: chat.discordUrl,
        template: "{alert.status}: block {alert.blockNumber} (now {alert.replacedByNumber} {alert.replacedByHash})",
      },
    },
    { type: "Telegram", parameters: { chatId: "-1001234567890", template: "{alert.status}: block {alert.blockNumber}" } },
    { type: "Slack", parameters: { url: `${chat.slackApiUrl}/chat.postMessage`, channel: "#alerts", text: "", username: "" } },
    { type: "Slack", parameters: { url: chat.slackHookUrl, channel: "", text: "", username: "" } },
    { type: "Email", parameters: { recipients: ["ops@example.com"] } },
  ];
  const produce = async (alert: Alert) => {
    const p = await createRecordProducer(bus);
    await p.send([{ kind: "alerts", key: alert.ruleId, record: alertToAvro(alert) }]);
    await p.disconnect();
  };
  const delivered = async (alertId: string, n: number) =>
    waitFor(
      async () =>
        (await stage.deliveryLog.list(sampleAlert().ruleId, { limit: 100 })).entries.filter((e) => e.alertId === alertId && e.ok).length >=
        n,
      30_000,
    );

  it("edits Discord, Telegram and Slack (bot) messages, follows up a Slack webhook, threads the e-mail", async () => {
    const pending = { ...sampleAlert({ status: "pending", confirmations: 1, sequence: 1 }), actions: actions() };
    await produce(pending);
    await delivered(pending.id, 5);
    expect(chat.messages.map((m) => m.service).sort()).toEqual(["discord", "slack-api", "slack-webhook", "telegram"]);
    expect(smtp.mails).toHaveLength(1);
    const firstMail = smtp.mails[0]!;
    // the Discord message was asked for with ?wait=true (to learn its id)
    expect(chat.requests.find((r) => r.method === "POST" && r.path.startsWith("/api/webhooks/"))?.path).toMatch(/\?wait=true$/);

    // The match stage names the block that replaced the orphaned one (pipeline/match/confirmations/decide.ts).
    const replacedBy = { number: 123, hash: "0x5b1c7d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80910209fa" };
    const named = "replaced by block 123 (0x5b1c…09fa)";
    const removed = { ...sampleAlert({ status: "removed", confirmations: 0, sequence: 2 }), actions: actions(), replacedBy };
    await produce(removed);
    await delivered(removed.id, 5);

    const by = (s: string) => chat.messages.filter((m) => m.service === s);
    for (const s of ["discord", "telegram", "slack-api"]) {
      expect(by(s), s).toHaveLength(1); // edited in place, nothing new posted
      const m = by(s)[0]!;
      expect(m.history, s).toHaveLength(1);
      expect(m.history[0], s).not.toMatch(/RETRACTED/);
      expect(m.text, s).toMatch(/RETRACTED: block 123 \(0x88e9…6cb6\) was reorganised away/);
      expect(m.text, s).toContain(named);
    }
    // The template tokens of the replacing block: empty for the pending alert, the block for its retraction.
    expect(by("discord")[0]!.history[0]).toContain("pending: block 123 (now  )");
    expect(by("discord")[0]!.text).toContain(`removed: block 123 (now 123 ${replacedBy.hash})`);
    expect(chat.requests.filter((r) => r.method === "PATCH")).toHaveLength(1);
    expect(chat.requests.filter((r) => r.path.endsWith("/editMessageText"))).toHaveLength(1);
    expect(chat.requests.filter((r) => r.path === "/api/chat.update")).toHaveLength(1);

    const hook = by("slack-webhook");
    expect(hook).toHaveLength(2); // an incoming webhook cannot edit: a follow-up naming the first
    expect(hook[1]!.text).toContain(`Retracts the message posted at `);
    expect(hook[1]!.text).toContain(`(pending alert ${pending.id.slice(0, 12)})`);
    expect(hook[1]!.text).toMatch(/RETRACTED: block 123/);
    expect(hook[1]!.text).toContain(named);

    expect(smtp.mails).toHaveLength(2);
    const retraction = smtp.mails[1]!;
    expect(firstMail.messageId).toBe(`<${pending.id}.4@chainsift.test>`);
    expect(retraction.headers.get("in-reply-to")).toBe(firstMail.messageId);
    expect(String(retraction.headers.get("references"))).toContain(firstMail.messageId!);
    expect(retraction.subject).toBe(`Re: ${firstMail.subject}`);
    expect(retraction.text).toMatch(/RETRACTED: block 123/);
    expect(retraction.text).toContain(named);
  });

  it("a retraction whose first message is unknown is posted as a new message", async () => {
    const before = chat.messages.length;
    const other = sampleAlert({ status: "removed", confirmations: 0, sequence: 3 });
    const removed = { ...other, entityId: `${other.entityId}x`, id: `${other.id.slice(0, 60)}beef`, actions: actions().slice(0, 3) };
    await produce(removed);
    await delivered(removed.id, 3);
    const fresh = chat.messages.slice(before);
    expect(fresh.map((m) => m.service).sort()).toEqual(["discord", "slack-api", "telegram"]);
    for (const m of fresh) expect(m.text).toMatch(/RETRACTED: block 123/);
  });
});
