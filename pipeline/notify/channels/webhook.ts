/**
 * The `Webhook (GET)` and `Webhook (POST)` channels: the action's URL with its `{field}` tokens
 * filled from the matched entity (`renderUrl`), called with GET and no body, or POST with the alert
 * as JSON (`webhookJson`, lib/alerting/webhook.ts); signed per account (docs/alerting-delivery.md).
 * @module
 */
import { webhookJson } from "../../../lib/alerting/webhook.js";
import type { SecretSource } from "../deliver.js";
import { invalid } from "../outcome.js";
import { renderUrl } from "../render.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The webhook channels over `send`, signing with the account's secret from `secrets`. */
export function createWebhookChannel(send: HttpSender, secrets: SecretSource): Channel {
  return {
    types: ["Webhook (GET)", "Webhook (POST)"],
    async prepare(alert, action) {
      const template = (action.parameters as { url?: unknown }).url;
      if (typeof template !== "string" || template === "") throw invalid(`${action.type} action has no url`);
      const url = renderUrl(template, alert.entity ?? {});
      const body = action.type === "Webhook (POST)" ? webhookJson(alert) : undefined;
      const secret = await secrets.getOrCreate(alert.accountId);
      const method = action.type === "Webhook (GET)" ? "GET" : "POST";
      return () => send(method, url, secret, alert.id, body);
    },
  };
}
