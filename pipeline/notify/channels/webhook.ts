/**
 * The `Webhook (GET)` and `Webhook (POST)` channels: the action's URL with its `{field}` tokens
 * filled from the matched entity, called with GET and no body, or POST with the alert as JSON
 * (`renderAction`, lib/alerting/rendered.ts); signed per account (docs/alerting-delivery.md).
 * @module
 */
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The webhook channels over `send`, signing with the account's secret from `secrets`. */
export function createWebhookChannel(send: HttpSender, secrets: SecretSource): Channel {
  return {
    types: ["Webhook (GET)", "Webhook (POST)"],
    async prepare(alert, action) {
      const { method, url, body } = renderAction(alert, action) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send(method, url, secret, alert.id, body);
    },
  };
}
