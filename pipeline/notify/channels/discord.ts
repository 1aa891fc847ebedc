/**
 * The `Discord` channel: a POST of `discordBody` (rendered by `renderAction`, lib/alerting/rendered.ts)
 * to the action's Discord webhook URL, Discord's
 * "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook): JSON
 * `{content, allowed_mentions, username?}`, answered `204 No Content` (without `?wait=true`). The
 * URL is used as given (chat URLs are not templated); its path holds the webhook's token, so the
 * delivery log shows only its origin. Rate limits (https://discord.com/developers/docs/topics/rate-limits):
 * a 429 carries `Retry-After` and a JSON body `{"retry_after": <seconds, float>, "global": …}`;
 * the wait is honoured like any `Retry-After`.
 *
 * Retractions people can see: a `pending` alert is posted with `?wait=true`, so Discord answers
 * the message (200, JSON with its `id`), which is remembered (`messages.ts`); the match's `removed`
 * alert then edits that message ("Edit Webhook Message", `PATCH <webhook url>/messages/<id>`,
 * https://discord.com/developers/docs/resources/webhook#edit-webhook-message) to the retraction.
 * An unknown message (404: deleted) or no remembered one: the retraction is posted as a new message.
 * @module
 */
import { DISCORD_CONTENT_MAX, type MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText } from "../../../lib/alerting/storm.js";
import type { SecretSource } from "../deliver.js";
import { type MessageStore, type PostedMessage, rememberQuietly, remembers } from "../messages.js";
import type { Channel } from "./channel.js";
import type { HttpSender, SendOutcome } from "./http.js";

/**
 * The wait a rate-limited answer asks for, in ms: `retry_after` (seconds) of a Discord 429 body,
 * or `parameters.retry_after` of a Telegram Bot API error body; undefined when the body holds neither.
 */
export function retryAfterFromJson(body: string): number | undefined {
  try {
    const j = JSON.parse(body) as { retry_after?: unknown; parameters?: { retry_after?: unknown } };
    const s = typeof j?.retry_after === "number" ? j.retry_after : j?.parameters?.retry_after;
    return typeof s === "number" && Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The webhook URL with `wait=true` (other query parameters, e.g. `thread_id`, kept). */
export function discordWaitUrl(url: string): string {
  const u = new URL(url);
  u.searchParams.set("wait", "true");
  return u.toString();
}

/** The "Edit Webhook Message" URL of message `id` of a webhook URL (`thread_id` kept, `wait` dropped). */
export function discordMessageUrl(url: string, id: string): string {
  const u = new URL(url);
  u.pathname = `${u.pathname.replace(/\/+$/, "")}/messages/${encodeURIComponent(id)}`;
  u.searchParams.delete("wait");
  return u.toString();
}

/** The posted message of a `?wait=true` answer (`{"id": "<snowflake>", …}`), or null. */
function postedOf(out: SendOutcome, at: string): PostedMessage | null {
  try {
    const id = (JSON.parse(out.responseBody ?? "") as { id?: unknown }).id;
    return typeof id === "string" && /^\d{1,25}$/.test(id) ? { kind: "discord", id, at } : null;
  } catch {
    return null;
  }
}

/**
 * The Discord channel over `send`, signing with the account's secret from `secrets` (Discord ignores
 * the headers). With `messages`, pending alerts' messages are remembered and retractions edit them.
 */
export function createDiscordChannel(
  send: HttpSender,
  secrets: SecretSource,
  options: MessageOptions = {},
  messages?: MessageStore,
): Channel {
  const opts = { retryAfterFromBody: retryAfterFromJson };
  return {
    async prepare(alert, action, actionIndex) {
      const { url, body } = renderAction(alert, action, options) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      const post = () => send("POST", url, secret, alert.id, body, opts);
      const posted = alert.status === "removed" && messages ? await messages.get(alert, actionIndex) : null;
      if (posted?.kind === "discord") {
        const { content, allowed_mentions } = JSON.parse(body!) as { content: string; allowed_mentions: unknown };
        const edit = JSON.stringify({ content, allowed_mentions });
        return async () => {
          const out = await send("PATCH", discordMessageUrl(url, posted.id), secret, alert.id, edit, opts);
          return !out.ok && out.status === 404 ? post() : out; // the message was deleted: post the retraction
        };
      }
      if (!messages || !remembers(alert)) return post;
      return async () => {
        const out = await send("POST", discordWaitUrl(url), secret, alert.id, body, { ...opts, keepBody: true });
        if (out.ok) await rememberQuietly(messages, alert, actionIndex, postedOf(out, new Date().toISOString()));
        return out;
      };
    },
    async prepareDigest(digest) {
      const url = String((digest.action.parameters as { url?: unknown }).url ?? "");
      const username = (digest.action.parameters as { username?: unknown }).username;
      const content = digestChatText(digest, "discord", DISCORD_CONTENT_MAX);
      const body = JSON.stringify({
        content,
        allowed_mentions: { parse: [] },
        ...(typeof username === "string" && username ? { username } : {}),
      });
      const secret = await secrets.getOrCreate(digest.accountId);
      return () => send("POST", url, secret, digest.id, body, opts);
    },
  };
}
