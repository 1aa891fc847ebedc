/**
 * Alert channels end to end, rules created through the real API over HTTP, on anvil with the
 * OpenZeppelin ERC-20: Webhook (GET) with a templated URL, Webhook (POST) with payload items and a
 * signature verified with the owning account's secret, Email through a local SMTP server
 * (smtp-server + mailparser), a Slack-shaped receiver, Discord and Telegram actions with message
 * templates (the same receiver standing in for Discord and the Bot API), one rule with all four actions, and account
 * isolation (another account can neither see nor change a rule, and alerts only ever reach the
 * owning rule's receivers, signed with the owner's secret).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertDefinition, PayloadItem, Rule } from "../../../lib/rules/model.js";
import type { DeliveryLogEntry } from "../../../pipeline/notify/log.js";
import { verifyWebhookSignature } from "../../../pipeline/notify/sign.js";
import { DOCUMENTED_WEBHOOK_FIELDS } from "../../support/webhook-fields.js";
import {
  type AlertingEnv,
  alertId,
  probeServices,
  type RuleSpec,
  startAlertingEnv,
  TELEGRAM_BOT_TOKEN,
  transferRule,
  type WebhookAlert,
} from "./support.js";

const services = await probeServices();
if (!services.ok) console.warn(`alerting-api channels: ${services.message}`);

const CST = 1_000_000n;

/** A Field and a Sub Field selection (two levels deep). */
const PAYLOAD: PayloadItem[] = [
  { fieldType: "Field", fieldName: "transactionHash" },
  { fieldType: "Field", fieldName: "event" },
  {
    fieldType: "Sub Field",
    fieldName: "args",
    subPayloads: [
      { fieldType: "Field", fieldName: "name" },
      {
        fieldType: "Sub Field",
        fieldName: "value",
        subPayloads: [
          { fieldType: "Field", fieldName: "hex" },
          { fieldType: "Field", fieldName: "scaled" },
        ],
      },
    ],
  },
];

describe.skipIf(!services.ok)("alerting API end to end: channels and account isolation (anvil)", () => {
  let env: AlertingEnv;
  let secretA: () => Promise<string>;
  let secretB: () => Promise<string>;

  beforeAll(async () => {
    env = await startAlertingEnv();
    // getOrCreate: the same secret the notify stage signs with (created at the account's first delivery).
    secretA = () => env.secrets.getOrCreate(env.accounts.a.id);
    secretB = () => env.secrets.getOrCreate(env.accounts.b.id);
  }, 120_000);

  afterAll(async () => {
    await env?.stop();
  }, 60_000);

  /** Creates, for account A, the Transfer-to-`to` rule `name` with these actions (and `extra` settings). */
  const ruleOfA = (name: string, to: string, alerts: AlertDefinition[], extra: Partial<RuleSpec> = {}) =>
    env.createRule(env.accounts.a.token, { ...transferRule(name, to), ...extra, alerts });

  it("Webhook (GET): the templated URL carries the entity's values, URL-encoded, and is signed as the request target", async () => {
    const to = env.newAddress();
    const rule = await ruleOfA("GET on CST transfer", to, [
      {
        type: "Webhook (GET)",
        parameters: {
          url: `${env.http.base}/get/ch/{event}?tx={transactionHash}&to={args.1.value.hex}&sig={signature}&block={blockNumber.num}&ts={timestamp}`,
        },
      },
    ]);
    const tx = await env.transfer(to, CST);
    await env.mine();
    const [req] = await waitForRequests(() => env.http.deliveredAt("/get/ch/Transfer"), 1);
    const ev = await env.eventOf(tx);
    const block = await env.provider.getBlock(ev.blockNumber);

    expect(req!.method).toBe("GET");
    expect(req!.body).toBe("");
    const query = req!.url.split("?")[1]!;
    expect(query).toMatch(
      new RegExp(
        `^tx=${tx}&to=${to.toLowerCase()}&sig=Transfer\\(address%2Caddress%2Cuint256\\)&block=${ev.blockNumber}&ts=\\d{4}-\\d\\d-\\d\\dT\\d\\d%3A\\d\\d%3A\\d\\d[^&]*$`,
      ),
    );
    const ts = decodeURIComponent(new URLSearchParams(query).get("ts")!);
    expect(Math.floor(Date.parse(ts.endsWith("Z") ? ts : `${ts}Z`) / 1000)).toBe(block!.timestamp);

    const id = alertId(rule.id, ev.entityId, ev.blockHash);
    expect(req!.headers["idempotency-key"]).toBe(id);
    expect(req!.headers["x-chainsift-alert-id"]).toBe(id);
    expect(verifyWebhookSignature(await secretA(), req!.headers, req!.url)).toMatchObject({ ok: true });
    expect(verifyWebhookSignature(await secretB(), req!.headers, req!.url)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("Webhook (POST): the JSON body carries id, ruleId, status, sequence and the rule's payload items; signed with the account's secret", async () => {
    const to = env.newAddress();
    const rule = await ruleOfA(
      "POST on CST transfer",
      to,
      [{ type: "Webhook (POST)", parameters: { url: `${env.hook("ch-post")}?src={address}` }, payload: PAYLOAD }],
      { maxConfirmationCount: 1 },
    );
    const tx = await env.transfer(to, 2_500_000n);
    await env.mine();
    await env.waitAlerts("ch-post", 1);
    const req = env.http.deliveredAt("/hook/ch-post")[0]!;
    const ev = await env.eventOf(tx);
    const id = alertId(rule.id, ev.entityId, ev.blockHash);

    expect(req.method).toBe("POST");
    expect(req.url).toBe(`/hook/ch-post?src=${env.tokenAddress}`);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["user-agent"]).toMatch(/^chainsift-notify\/\d+\.\d+\.\d+/);
    expect(req.headers["idempotency-key"]).toBe(id);
    expect(req.headers["x-chainsift-alert-id"]).toBe(id);
    expect(Math.abs(Number(req.headers["x-chainsift-timestamp"]) - Date.now() / 1000)).toBeLessThan(120);

    const secret = await secretA();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await env.secrets.get(env.accounts.a.id)).toBe(secret);
    expect(verifyWebhookSignature(secret, req.headers, req.body)).toEqual({
      ok: true,
      timestampSec: Number(req.headers["x-chainsift-timestamp"]),
    });
    expect(verifyWebhookSignature(secret, req.headers, req.body.replace('"sequence":1', '"sequence":2')).ok).toBe(false);
    expect(verifyWebhookSignature(await secretB(), req.headers, req.body)).toEqual({ ok: false, reason: "mismatch" });

    const body = JSON.parse(req.body) as WebhookAlert;
    expect(Object.keys(body)).toEqual(DOCUMENTED_WEBHOOK_FIELDS);
    expect(body).toEqual({
      id,
      ruleId: rule.id,
      ruleVersion: 1,
      sequence: 1,
      status: "confirmed",
      confirmations: 1,
      maxConfirmationCount: 1,
      chain: { technology: "ethereum", blockchain: "ethereum", network: "anvil" },
      targetType: "Event",
      entityId: ev.entityId,
      blockHash: ev.blockHash,
      blockNumber: ev.blockNumber,
      payload: {
        transactionHash: tx,
        event: "Transfer",
        args: [
          { name: "from", value: { hex: env.deployer.address.toLowerCase(), scaled: null } },
          { name: "to", value: { hex: to.toLowerCase(), scaled: null } },
          { name: "value", value: { hex: "0x2625a0", scaled: 2.5 } },
        ],
      },
      emittedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
    });
  });

  it("Email: the local SMTP server receives a subject and a body with the rule name and the payload fields", async () => {
    const to = env.newAddress();
    const recipients = ["ops@example.test", "dev@example.test"];
    const rule = await ruleOfA("Big CST to treasury", to, [{ type: "Email", parameters: { recipients }, payload: PAYLOAD }]);
    const tx = await env.transfer(to, 4_200_000n);
    await env.mine();
    const [mail] = await waitForRequests(() => env.smtp.mails.filter((m) => m.headers.get("x-chainsift-rule-id") === rule.id), 1);
    const ev = await env.eventOf(tx);
    const id = alertId(rule.id, ev.entityId, ev.blockHash);

    expect(mail!.envelopeTo).toEqual(recipients);
    expect(mail!.to).toBe(recipients.join(", "));
    expect(mail!.from).toContain("alerts@chainsift.test");
    expect(mail!.subject).toBe(`[chainsift] confirmed: Big CST to treasury — Transfer in block ${ev.blockNumber}`);
    expect(mail!.messageId).toBe(`<${id}.0@chainsift.test>`);
    expect(mail!.headers.get("x-chainsift-alert-id")).toBe(id);
    expect(mail!.headers.get("x-chainsift-sequence")).toBe("1");
    for (const text of [mail!.text, mail!.html]) {
      expect(text).toContain("Big CST to treasury");
      expect(text).toContain(id);
      expect(text).toContain(tx);
      expect(text).toContain(to.toLowerCase());
      expect(text).toContain("4.2");
    }
    expect(mail!.text).toContain(`transactionHash: ${tx}`);
    expect(mail!.text).toContain("event: Transfer");
    expect(mail!.text).toContain(`args[1].value.hex: ${to.toLowerCase()}`);
    expect(mail!.text).toContain("args[2].value.scaled: 4.2");
    expect(mail!.text).toContain(`Block:`);
  });

  it("Slack: the Slack-shaped receiver gets {text, channel, username} as configured, plus a summary and the payload", async () => {
    const to = env.newAddress();
    const rule = await ruleOfA(
      "CST watch",
      to,
      [
        {
          type: "Slack",
          parameters: {
            url: `${env.slack.base}/services/T000/B000/XXXX`,
            text: ":rotating_light: CST moved",
            channel: "#alerts",
            username: "chainsift-bot",
          },
          payload: PAYLOAD,
        },
      ],
      { maxConfirmationCount: 1 },
    );
    const tx = await env.transfer(to, 6n * CST);
    await env.mine();
    const [req] = await waitForRequests(() => env.slack.deliveredAt("/services/T000/B000/XXXX").filter((r) => r.body.includes(rule.id)), 1);
    const ev = await env.eventOf(tx);
    const id = alertId(rule.id, ev.entityId, ev.blockHash);
    expect(req!.method).toBe("POST");
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(verifyWebhookSignature(await secretA(), req!.headers, req!.body).ok).toBe(true);
    const body = JSON.parse(req!.body) as { text: string; channel: string; username: string };
    expect(Object.keys(body)).toEqual(["text", "channel", "username"]);
    expect(body.channel).toBe("#alerts");
    expect(body.username).toBe("chainsift-bot");
    const lines = body.text.split("\n");
    expect(lines[0]).toBe(":rotating_light: CST moved");
    expect(lines[1]).toBe(`*confirmed: Transfer in block ${ev.blockNumber} on ethereum/anvil (1/1 confirmation)*`);
    expect(lines[2]).toBe(`Rule CST watch (${rule.id}, v1) · alert ${id.slice(0, 12)} · #1`);
    expect(lines).toContain(`• transactionHash: ${tx}`);
    expect(lines).toContain("• event: Transfer");
    expect(lines).toContain(`• args[1].value.hex: ${to.toLowerCase()}`);
    expect(lines).toContain("• args[2].value.scaled: 6");
  });

  it("Discord and Telegram (chainsift's own types) with message templates, through the API, match and notify stages", async () => {
    const to = env.newAddress();
    const template = "{alert.status}: {event} of {args.2.value.scaled} to {args.1.value.hex} in block {alert.blockNumber}";
    const rule = await ruleOfA("CST to Discord and Telegram", to, [
      { type: "Discord", parameters: { url: `${env.slack.base}/api/webhooks/42/d1sc0rd-t0ken`, username: "chainsift", template } },
      { type: "Telegram", parameters: { chatId: "-1001234567890", template } },
    ]);
    const tx = await env.transfer(to, 4_200_000n);
    await env.mine();
    const [discord] = await waitForRequests(() => env.slack.deliveredAt("/api/webhooks/42/d1sc0rd-t0ken"), 1);
    const [telegram] = await waitForRequests(() => env.slack.deliveredAt(`/bot${TELEGRAM_BOT_TOKEN}/sendMessage`), 1);
    const ev = await env.eventOf(tx);
    const text = `confirmed: Transfer of 4.2 to ${to.toLowerCase()} in block ${ev.blockNumber}`;
    expect(discord!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(discord!.body)).toEqual({ content: text, allowed_mentions: { parse: [] }, username: "chainsift" });
    expect(JSON.parse(telegram!.body)).toEqual({ chat_id: "-1001234567890", text, link_preview_options: { is_disabled: true } });

    const id = alertId(rule.id, ev.entityId, ev.blockHash);
    const entries = async () =>
      (await env.request<{ entries: DeliveryLogEntry[] }>("GET", `/alerting/rules/${rule.id}/deliveries/`, env.accounts.a.token)).body
        .entries;
    const log = (await waitForRequests(entries, 2)).filter((e) => e.alertId === id);
    expect(log.map((e) => [e.type, e.ok, e.destination]).sort()).toEqual([
      ["Discord", true, `${env.slack.base}/…`],
      ["Telegram", true, "telegram chat -1001234567890"],
    ]);
    // The rule as the API answers it holds no bot token (the operator's setting, not the rule's).
    const fetched = await env.request("GET", `/alerting/rules/${rule.id}/`, env.accounts.a.token);
    expect(JSON.stringify(fetched.body)).not.toContain(TELEGRAM_BOT_TOKEN);
  });

  it("one rule with all four actions: every channel gets the same alert, and the delivery log lists each action", async () => {
    const to = env.newAddress();
    const rule = await ruleOfA("all channels", to, [
      {
        type: "Webhook (POST)",
        parameters: { url: env.hook("ch-all") },
        payload: [{ fieldType: "Field", fieldName: "transactionHash" }],
      },
      { type: "Webhook (GET)", parameters: { url: `${env.http.base}/get/ch-all?tx={transactionHash}` } },
      { type: "Email", parameters: { recipients: ["all@example.test"] } },
      { type: "Slack", parameters: { url: `${env.slack.base}/services/T1/B1/all`, text: "all", channel: "#all", username: "bot" } },
    ]);
    const tx = await env.transfer(to, CST);
    await env.mine();
    const ev = await env.eventOf(tx);
    const id = alertId(rule.id, ev.entityId, ev.blockHash);
    const [post] = await env.waitAlerts("ch-all", 1);
    const [get] = await waitForRequests(() => env.http.deliveredAt("/get/ch-all"), 1);
    const [mail] = await waitForRequests(() => env.smtp.mails.filter((m) => m.headers.get("x-chainsift-rule-id") === rule.id), 1);
    const [chat] = await waitForRequests(() => env.slack.deliveredAt("/services/T1/B1/all"), 1);
    expect(post!.id).toBe(id);
    expect(post!.payload).toMatchObject({ transactionHash: tx });
    expect(get!.url).toBe(`/get/ch-all?tx=${tx}`);
    expect(get!.headers["idempotency-key"]).toBe(id);
    expect(mail!.headers.get("x-chainsift-alert-id")).toBe(id);
    expect(mail!.messageId).toBe(`<${id}.2@chainsift.test>`);
    expect(chat!.headers["idempotency-key"]).toBe(id);

    const log = await waitForRequests(async () => {
      const page = await env.request<{ total: number; entries: DeliveryLogEntry[] }>(
        "GET",
        `/alerting/rules/${rule.id}/deliveries/`,
        env.accounts.a.token,
      );
      return page.body.entries;
    }, 4);
    expect(log.map((e) => [e.actionIndex, e.type, e.ok, e.alertId]).sort()).toEqual([
      [0, "Webhook (POST)", true, id],
      [1, "Webhook (GET)", true, id],
      [2, "Email", true, id],
      [3, "Slack", true, id],
    ]);
    expect(log.find((e) => e.type === "Webhook (GET)")!.destination).toBe(`${env.http.base}/get/ch-all?…`);
    expect(log.find((e) => e.type === "Email")!).toMatchObject({ destination: "1 recipient", httpStatus: 250 });
    expect(log.find((e) => e.type === "Slack")!.destination).toBe(`${env.slack.base}/…`);
  });

  it("account isolation: B cannot GET/PUT/DELETE/list A's rule (404), and A's alerts never reach B's receivers", async () => {
    const { a, b } = env.accounts;
    const to = env.newAddress();
    const ruleA = await env.createRule(a.token, {
      ...transferRule("A's rule", to),
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("iso-a") } }],
    });
    const ruleB = await env.createRule(b.token, {
      ...transferRule("B's rule", to),
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("iso-b") } }],
    });
    expect(ruleA.accountId).toBe(a.id);
    expect(ruleB.accountId).toBe(b.id);

    const path = `/alerting/rules/${ruleA.id}/`;
    const notFound = { error: { code: "CS_RULE_NOT_FOUND", path: "params.rule_id" } };
    const asB = [
      await env.request("GET", path, b.token),
      await env.request("PUT", path, b.token, { name: "hijacked" }),
      await env.request("PUT", path, b.token, { name: "hijacked", version: 1 }),
      await env.request("DELETE", path, b.token),
      await env.request("GET", `${path}deliveries/`, b.token),
    ];
    for (const res of asB) expect(res).toMatchObject({ status: 404, body: notFound });
    // Exactly what a rule id that does not exist answers (never 403).
    const missing = await env.request<{ error: { code: string } }>("GET", `/alerting/rules/${crypto.randomUUID()}/`, b.token);
    expect(missing).toMatchObject({ status: 404, body: notFound });
    // A static token is yet another account ("static").
    const staticToken = env.config.api.tokens[0]!;
    expect(await env.request("GET", path, staticToken)).toMatchObject({ status: 404, body: notFound });
    expect(await env.request("GET", path, null)).toMatchObject({ status: 401 });

    const listed = async (token: string) => {
      const page = await env.request<{ rules: Rule[]; nextCursor: string | null }>("GET", "/alerting/rules/?limit=500", token);
      expect(page.status).toBe(200);
      return page.body.rules.map((r) => r.id);
    };
    const listA = await listed(a.token);
    const listB = await listed(b.token);
    expect(listA).toContain(ruleA.id);
    expect(listA).not.toContain(ruleB.id);
    expect(listB).toEqual([ruleB.id]);
    expect(await listed(staticToken)).toEqual([]);

    // A's rule is untouched.
    const own = await env.request<Rule>("GET", path, a.token);
    expect(own).toMatchObject({ status: 200, body: { id: ruleA.id, name: "A's rule", version: 1, accountId: a.id } });

    const tx = await env.transfer(to, 3n * CST);
    await env.mine();
    const [alertA] = await env.waitAlerts("iso-a", 1);
    const [alertB] = await env.waitAlerts("iso-b", 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(alertA).toMatchObject({ ruleId: ruleA.id, payload: { transactionHash: tx } });
    expect(alertB).toMatchObject({ ruleId: ruleB.id, payload: { transactionHash: tx } });
    // Every request carrying one of the two rules went to that rule's own receiver only.
    for (const r of env.http.requests.filter((x) => x.method === "POST")) {
      const ruleId = (JSON.parse(r.body) as { ruleId: string }).ruleId;
      if (ruleId === ruleA.id) expect(r.path).toBe("/hook/iso-a");
      if (ruleId === ruleB.id) expect(r.path).toBe("/hook/iso-b");
    }
    expect(env.http.at("/hook/iso-a")).toHaveLength(1);
    expect(env.http.at("/hook/iso-b")).toHaveLength(1);
    // Each account signs with its own secret.
    const [reqA] = env.http.at("/hook/iso-a");
    const [reqB] = env.http.at("/hook/iso-b");
    expect(await secretA()).not.toBe(await secretB());
    expect(verifyWebhookSignature(await secretA(), reqA!.headers, reqA!.body).ok).toBe(true);
    expect(verifyWebhookSignature(await secretB(), reqA!.headers, reqA!.body).ok).toBe(false);
    expect(verifyWebhookSignature(await secretB(), reqB!.headers, reqB!.body).ok).toBe(true);
    expect(verifyWebhookSignature(await secretA(), reqB!.headers, reqB!.body).ok).toBe(false);
    // Each sees only its own rule's delivery log.
    const logA = await env.request<{ total: number }>("GET", `${path}deliveries/`, a.token);
    expect(logA).toMatchObject({ status: 200, body: { total: 1 } });

    // B's failed DELETE left A's rule in place; A may still change and delete it.
    const put = await env.request<Rule>("PUT", path, a.token, { state: "disabled", version: 1 });
    expect(put).toMatchObject({ status: 200, body: { state: "disabled", version: 2 } });
    expect(await env.request("DELETE", path, a.token)).toMatchObject({ status: 204 });
    expect(await env.request("GET", path, a.token)).toMatchObject({ status: 404, body: notFound });
  });
});

/** Polls `get` until it returns at least `n` items (30 s), and returns them. */
async function waitForRequests<T>(get: () => T[] | Promise<T[]>, n: number): Promise<T[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const items = await get();
    if (items.length >= n) return items;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} item(s), got ${items.length}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
