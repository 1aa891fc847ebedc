/**
 * The `Discord` channel: a POST of `discordBody` (rendered by `renderAction`, lib/alerting/rendered.ts)
 * to the action's Discord webhook URL, Discord's
 * "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook): JSON
 * `{content, allowed_mentions, username?}`, answered `204 No Content` (without `?wait=true`). The
 * URL is used as given (chat URLs are not templated); its path holds the webhook's token, so the
 * delivery log shows only its origin. Rate limits (https://discord.com/developers/docs/topics/rate-limits):
 * a 429 carries `Retry-After` and a JSON body `{"retry_after": <seconds, float>, "global": …}`;
 * the wait is honoured like any `Retry-After`.
 * @module
 */
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

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

/** The Discord channel over `send`, signing with the account's secret from `secrets` (Discord ignores the headers). */
export function createDiscordChannel(send: HttpSender, secrets: SecretSource, options: MessageOptions = {}): Channel {
  return {
    types: ["Discord"],
    async prepare(alert, action) {
      const { url, body } = renderAction(alert, action, options) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send("POST", url, secret, alert.id, body, { retryAfterFromBody: retryAfterFromJson });
    },
  };
}
