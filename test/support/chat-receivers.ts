/**
 * Local receivers (node:http on 127.0.0.1, a free port) of the chat API calls chainsift makes, each
 * answering the way the service's API reference describes, and keeping the resulting messages so a
 * test can read a channel as a person would (what was posted, then edited):
 *
 * - Discord "Execute Webhook" `POST /api/webhooks/<id>/<token>[?wait=true]`
 *   (https://discord.com/developers/docs/resources/webhook#execute-webhook): `204` without `wait`,
 *   `200` + the message JSON (`id`, `channel_id`, `content`) with `wait=true`; "Edit Webhook Message"
 *   `PATCH /api/webhooks/<id>/<token>/messages/<message id>` (…#edit-webhook-message): `200` + the
 *   message, `404` `{"message": "Unknown Message", "code": 10008}` for an unknown id.
 * - Telegram `POST /bot<token>/sendMessage` → `{"ok": true, "result": {message_id, date, chat, text}}`
 *   and `POST /bot<token>/editMessageText` (https://core.telegram.org/bots/api#editmessagetext) →
 *   the edited Message; `400` `message to edit not found` for an unknown one.
 * - Slack Web API `POST /api/chat.postMessage` and `/api/chat.update` with `Authorization: Bearer
 *   <bot token>` (https://api.slack.com/methods/chat.postMessage, …/chat.update): HTTP 200 with
 *   `{"ok": true, "channel", "ts"}` or `{"ok": false, "error": "invalid_auth" | "channel_not_found"
 *   | "message_not_found"}`.
 * - Slack incoming webhook `POST /slack/hook` → `200 ok` (it cannot edit).
 * - A plain webhook receiver `POST /webhook` → `204` (bodies in `requests`).
 * @module
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A message as a channel shows it. */
export interface ChatMessage {
  service: "discord" | "telegram" | "slack-api" | "slack-webhook";
  /** Discord snowflake, Telegram message_id, Slack ts, or a counter for incoming webhooks. */
  id: string;
  /** The text now shown (after edits). */
  text: string;
  /** Earlier texts, oldest first (one per edit). */
  history: string[];
  /** The `webhook-id` / alert id of the request that posted it. */
  alertId: string;
}

/** One request received (any path), for assertions on methods and paths. */
export interface ChatRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A running {@link startChatReceivers}. */
export interface ChatReceivers {
  /** `http://127.0.0.1:<port>`. */
  base: string;
  /** Discord webhook URL (`<base>/api/webhooks/<id>/<token>`). */
  discordUrl: string;
  /** Telegram Bot API base URL (`CHAINSIFT_TELEGRAM_API_URL`). */
  telegramApiUrl: string;
  /** Slack Web API base URL (`CHAINSIFT_SLACK_API_URL`). */
  slackApiUrl: string;
  /** Slack incoming-webhook URL. */
  slackHookUrl: string;
  /** A plain webhook URL (`Webhook (POST)`). */
  webhookUrl: string;
  /** Messages by service, in posting order. */
  messages: ChatMessage[];
  requests: ChatRequest[];
  close(): Promise<void>;
}

/** Starts the receivers; `botTokens` are what the Telegram path and the Slack `Authorization` must carry. */
export async function startChatReceivers(botTokens: { telegram: string; slack: string }): Promise<ChatReceivers> {
  const messages: ChatMessage[] = [];
  const requests: ChatRequest[] = [];
  let next = 1000;
  const hook = "/api/webhooks/112233445566778899/dIsCoRd-tOkEn";
  const json = (res: import("node:http").ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  const find = (service: ChatMessage["service"], id: string) => messages.find((m) => m.service === service && m.id === id);
  const edit = (m: ChatMessage, text: string) => {
    m.history.push(m.text);
    m.text = text;
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const u = new URL(req.url ?? "/", "http://x");
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        return json(res, 400, { message: "body is not JSON" });
      }
      requests.push({ method: req.method ?? "", path: `${u.pathname}${u.search}`, headers: req.headers, body });
      const alertId = String(req.headers["webhook-id"] ?? "");
      const p = u.pathname;
      if (req.method === "POST" && p === hook) {
        const id = String(++next * 1_000_000_007);
        messages.push({ service: "discord", id, text: String(body.content), history: [], alertId });
        if (u.searchParams.get("wait") === "true") return json(res, 200, { id, channel_id: "998877", content: body.content });
        return res.writeHead(204).end();
      }
      if (req.method === "PATCH" && p.startsWith(`${hook}/messages/`)) {
        const m = find("discord", p.slice(hook.length + "/messages/".length));
        if (!m) return json(res, 404, { message: "Unknown Message", code: 10008 });
        edit(m, String(body.content));
        return json(res, 200, { id: m.id, content: m.text });
      }
      if (req.method === "POST" && p === `/bot${botTokens.telegram}/sendMessage`) {
        const id = String(++next);
        messages.push({ service: "telegram", id, text: String(body.text), history: [], alertId });
        return json(res, 200, {
          ok: true,
          result: { message_id: Number(id), date: 1767323045, chat: { id: -1001234567890 }, text: body.text },
        });
      }
      if (req.method === "POST" && p === `/bot${botTokens.telegram}/editMessageText`) {
        const m = find("telegram", String(body.message_id));
        if (!m) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: message to edit not found" });
        edit(m, String(body.text));
        return json(res, 200, { ok: true, result: { message_id: Number(m.id), chat: { id: body.chat_id }, text: m.text } });
      }
      if (req.method === "POST" && (p === "/api/chat.postMessage" || p === "/api/chat.update")) {
        if (req.headers.authorization !== `Bearer ${botTokens.slack}`) return json(res, 200, { ok: false, error: "invalid_auth" });
        if (typeof body.channel !== "string" || body.channel === "") return json(res, 200, { ok: false, error: "channel_not_found" });
        if (p === "/api/chat.postMessage") {
          const ts = `1767323045.${String(++next).padStart(6, "0")}`;
          messages.push({ service: "slack-api", id: ts, text: String(body.text), history: [], alertId });
          return json(res, 200, { ok: true, channel: "C0123456", ts });
        }
        const m = find("slack-api", String(body.ts));
        if (!m || body.channel !== "C0123456") return json(res, 200, { ok: false, error: "message_not_found" });
        edit(m, String(body.text));
        return json(res, 200, { ok: true, channel: "C0123456", ts: m.id, text: m.text });
      }
      if (req.method === "POST" && p === "/slack/hook") {
        messages.push({ service: "slack-webhook", id: String(++next), text: String(body.text), history: [], alertId });
        return res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      }
      if (req.method === "POST" && p === "/webhook") return res.writeHead(204).end();
      return json(res, 404, { message: `unknown ${req.method} ${p}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    discordUrl: `${base}${hook}`,
    telegramApiUrl: base,
    slackApiUrl: `${base}/api`,
    slackHookUrl: `${base}/slack/hook`,
    webhookUrl: `${base}/webhook`,
    messages,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
