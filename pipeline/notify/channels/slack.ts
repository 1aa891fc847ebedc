/**
 * The `Slack` channel: a POST of `slackBody` (rendered by `renderAction`, lib/alerting/rendered.ts) to the action's incoming-webhook URL (used as given:
 * chat URLs are not templated). Slack-compatible receivers (Mattermost, Rocket.Chat) accept it too.
 * @module
 */
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The Slack channel over `send`, signing with the account's secret from `secrets`; `options` give the explorer links. */
export function createSlackChannel(send: HttpSender, secrets: SecretSource, options: MessageOptions = {}): Channel {
  return {
    types: ["Slack"],
    async prepare(alert, action) {
      const { url, body } = renderAction(alert, action, options) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send("POST", url, secret, alert.id, body);
    },
  };
}
