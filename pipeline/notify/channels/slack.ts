/**
 * The `Slack` channel, two ways, chosen by the action's `url`:
 *
 * - an **incoming webhook** (any other URL, used as given: chat URLs are not templated): a POST of
 *   `slackBody` (rendered by `renderAction`, lib/alerting/rendered.ts). Slack-compatible receivers
 *   (Mattermost, Rocket.Chat) accept it too. An incoming webhook cannot edit what it posted, so a
 *   retraction is a **follow-up message** that names the retracted one (its time and alert id).
 * - the **Web API** with the operator's bot token, when `url` is exactly
 *   `<CHAINSIFT_SLACK_API_URL>/chat.postMessage` (default `https://slack.com/api/chat.postMessage`)
 *   and `CHAINSIFT_SLACK_BOT_TOKEN` is set: `chat.postMessage`
 *   (https://api.slack.com/methods/chat.postMessage) with `Authorization: Bearer <token>` and the
 *   action's `channel`; the answer's `channel` and `ts` of a `pending` alert are remembered
 *   (`messages.ts`) and the match's `removed` alert **edits** that message with `chat.update`
 *   (https://api.slack.com/methods/chat.update). The token is sent only to that configured API
 *   origin, never to a URL a rule names. The Web API answers HTTP 200 with `{"ok": false, "error"}`
 *   on failure: `ratelimited` and the token's errors (`invalid_auth`, `not_authed`,
 *   `token_revoked`, `account_inactive`, `missing_scope`: the operator's to fix) are retried, the
 *   rest (`channel_not_found`, `not_in_channel`, …) are final ({@link CS_SLACK_API_ERROR}).
 * @module
 */
import type { Alert } from "../../../lib/alerting/alert.js";
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText } from "../../../lib/alerting/storm.js";
import type { SecretSource } from "../deliver.js";
import { type MessageStore, type PostedMessage, rememberQuietly, remembers } from "../messages.js";
import { type AttemptOutcome, oneLine } from "../outcome.js";
import type { Channel } from "./channel.js";
import type { HttpSender, SendOutcome } from "./http.js";

/** The Slack Web API answered `{"ok": false, "error"}` (retryable or not, see the module). */
export const CS_SLACK_API_ERROR = "CS_SLACK_API_ERROR";
/** A Web API Slack action while no bot token is configured; dead-lettered (final: false) for a replay once set. */
export const CS_SLACK_UNCONFIGURED = "CS_SLACK_UNCONFIGURED";

/** The operator's Slack Web API settings (config `notify.slackBotToken`, `notify.slackApiUrl`). */
export interface SlackConfig {
  /** Bot token (`xoxb-…`) with `chat:write`; undefined: Web API actions end with {@link CS_SLACK_UNCONFIGURED}. */
  botToken: string | undefined;
  /** Web API base URL without trailing slash, default `https://slack.com/api`. */
  apiUrl: string;
}

/** Web API errors that are the operator's (token) or transient: retried. */
const RETRYABLE_API_ERRORS = new Set([
  "ratelimited",
  "invalid_auth",
  "not_authed",
  "token_revoked",
  "token_expired",
  "account_inactive",
  "missing_scope",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);

/** Reads a Web API answer: `{ok: true, channel, ts}` or the classified failure. */
export function slackApiAnswer(out: SendOutcome): { outcome: AttemptOutcome; channel?: string; ts?: string } {
  if (!out.ok) return { outcome: out };
  let j: { ok?: unknown; error?: unknown; channel?: unknown; ts?: unknown } = {};
  try {
    j = JSON.parse(out.responseBody ?? "");
  } catch {
    // not JSON: a Web API always answers JSON
  }
  if (j.ok === true) {
    return {
      outcome: out,
      ...(typeof j.channel === "string" ? { channel: j.channel } : {}),
      ...(typeof j.ts === "string" ? { ts: j.ts } : {}),
    };
  }
  const error = typeof j.error === "string" ? j.error : "not a Slack Web API answer";
  const retryable = RETRYABLE_API_ERRORS.has(error);
  return {
    outcome: {
      ok: false,
      retryable,
      code: CS_SLACK_API_ERROR,
      error: oneLine(`Slack API error ${error}${retryable && error !== "ratelimited" ? " (check CHAINSIFT_SLACK_BOT_TOKEN)" : ""}`, 200),
      ...(out.status === undefined ? {} : { status: out.status }),
    },
  };
}

/** The first line of a follow-up retraction through an incoming webhook: names the retracted message. */
export function followUpLine(posted: Extract<PostedMessage, { kind: "slack-webhook" }>): string {
  return `:arrow_right_hook: Retracts the message posted at ${posted.at} (pending alert ${posted.alertId.slice(0, 12)}).`;
}

/**
 * The Slack channel over `send`, signing with the account's secret from `secrets`; `options` give
 * the explorer links; `slack` the operator's Web API bot (optional); with `messages`, pending
 * alerts' messages are remembered so retractions edit (Web API) or name (incoming webhook) them.
 */
export function createSlackChannel(
  send: HttpSender,
  secrets: SecretSource,
  options: MessageOptions = {},
  slack: SlackConfig = { botToken: undefined, apiUrl: "https://slack.com/api" },
  messages?: MessageStore,
): Channel {
  const postUrl = `${slack.apiUrl}/chat.postMessage`;

  async function viaApi(alert: Alert, body: string, secret: string, actionIndex: number) {
    const headers = { authorization: `Bearer ${slack.botToken}` };
    const keep = !!messages && remembers(alert);
    const post = async (): Promise<AttemptOutcome> => {
      const answer = slackApiAnswer(await send("POST", postUrl, secret, alert.id, body, { keepBody: true, headers }));
      if (answer.outcome.ok && keep && answer.channel && answer.ts) {
        const posted: PostedMessage = { kind: "slack-api", channel: answer.channel, ts: answer.ts, at: new Date().toISOString() };
        await rememberQuietly(messages, alert, actionIndex, posted);
      }
      return answer.outcome;
    };
    const posted = alert.status === "removed" && messages ? await messages.get(alert, actionIndex) : null;
    if (posted?.kind !== "slack-api") return post;
    const { text, blocks } = JSON.parse(body) as { text: string; blocks?: unknown };
    const update = JSON.stringify({ channel: posted.channel, ts: posted.ts, text, ...(blocks ? { blocks } : {}) });
    return async () => {
      const answer = slackApiAnswer(
        await send("POST", `${slack.apiUrl}/chat.update`, secret, alert.id, update, { keepBody: true, headers }),
      );
      const o = answer.outcome;
      return !o.ok && /message_not_found|cant_update_message/.test(o.error) ? post() : o;
    };
  }

  return {
    async prepare(alert, action, actionIndex) {
      const { url, body } = renderAction(alert, action, options) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      if (url === postUrl) {
        if (!slack.botToken)
          return { ok: false, attempts: 0, final: false, code: CS_SLACK_UNCONFIGURED, error: "no Slack bot token is configured" };
        const { username, ...rest } = JSON.parse(body!) as { username?: string };
        return viaApi(alert, JSON.stringify(username ? { ...rest, username } : rest), secret, actionIndex);
      }
      const posted = alert.status === "removed" && messages ? await messages.get(alert, actionIndex) : null;
      if (posted?.kind === "slack-webhook") {
        const b = JSON.parse(body!) as { text: string };
        const followUp = JSON.stringify({ ...b, text: `${followUpLine(posted)}\n${b.text}` });
        return () => send("POST", url, secret, alert.id, followUp);
      }
      if (!messages || !remembers(alert)) return () => send("POST", url, secret, alert.id, body);
      return async () => {
        const out = await send("POST", url, secret, alert.id, body);
        if (out.ok)
          await rememberQuietly(messages, alert, actionIndex, { kind: "slack-webhook", alertId: alert.id, at: new Date().toISOString() });
        return out;
      };
    },
    async prepareDigest(digest) {
      const p = digest.action.parameters as { url?: unknown; channel?: unknown; username?: unknown };
      const url = String(p.url ?? "");
      const channel = String(p.channel ?? "");
      const username = String(p.username ?? "");
      const body = JSON.stringify({ text: digestChatText(digest, "slack", 40_000), channel, ...(username ? { username } : {}) });
      const secret = await secrets.getOrCreate(digest.accountId);
      if (url !== postUrl) return () => send("POST", url, secret, digest.id, body);
      if (!slack.botToken)
        return { ok: false, attempts: 0, final: false, code: CS_SLACK_UNCONFIGURED, error: "no Slack bot token is configured" };
      const headers = { authorization: `Bearer ${slack.botToken}` };
      return async () => slackApiAnswer(await send("POST", postUrl, secret, digest.id, body, { keepBody: true, headers })).outcome;
    },
  };
}
