/**
 * The `Webhook (GET)` and `Webhook (POST)` channels: the action's URL with its `{field}` tokens
 * filled from the matched entity, called with GET and no body, or POST with the alert as JSON
 * (`renderAction`, lib/alerting/rendered.ts); signed per account (docs/alerting-delivery.md).
 * @module
 */
import { renderUrl } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import { digestWebhookJson } from "../../../lib/alerting/storm.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The webhook channels over `send`, signing with the account's secret from `secrets`. */
export function createWebhookChannel(send: HttpSender, secrets: SecretSource): Channel {
  return {
    async prepare(alert, action) {
      const { method, url, body } = renderAction(alert, action) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send(method, url, secret, alert.id, body);
    },
    async prepareDigest(digest) {
      // POST only (a GET has no body): the URL's tokens are filled from the first held alert's entity.
      const url = renderUrl(String((digest.action.parameters as { url?: unknown }).url ?? ""), digest.entity);
      const secret = await secrets.getOrCreate(digest.accountId);
      const body = digestWebhookJson(digest);
      return () => send("POST", url, secret, digest.id, body);
    },
  };
}
