/**
 * The `Slack` channel: a POST of `slackBody` to the action's incoming-webhook URL (used as given:
 * chat URLs are not templated). Slack-compatible receivers (Mattermost, Rocket.Chat) accept it too.
 * @module
 */
import type { SecretSource } from "../deliver.js";
import { invalid } from "../outcome.js";
import { slackBody } from "../render.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The Slack channel over `send`, signing with the account's secret from `secrets`. */
export function createSlackChannel(send: HttpSender, secrets: SecretSource): Channel {
  return {
    types: ["Slack"],
    async prepare(alert, action) {
      const p = action.parameters as { url?: unknown; text?: unknown; channel?: unknown; username?: unknown };
      if (typeof p.url !== "string" || p.url === "") throw invalid("Slack action has no url");
      const url = p.url;
      const body = JSON.stringify(
        slackBody(alert, { url, text: String(p.text ?? ""), channel: String(p.channel ?? ""), username: String(p.username ?? "") }),
      );
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send("POST", url, secret, alert.id, body);
    },
  };
}
