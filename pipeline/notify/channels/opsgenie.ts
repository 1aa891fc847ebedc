/**
 * The `Opsgenie` channel (issue 35): Opsgenie Alert API (https://docs.opsgenie.com/docs/alert-api)
 * with `Authorization: GenieKey <apiKey>` (the rule's API integration key, sent only to the
 * operator's API base `CHAINSIFT_OPSGENIE_API_URL`, never logged: the delivery log shows its
 * fingerprint). A `pending` or `confirmed` alert is "Create Alert" (`POST <api>/v2/alerts`) with
 * `alias` `chainsift-<match key>`, so the confirmed one is deduplicated into the open alert (its
 * count goes up); the match's `removed` alert is "Close Alert" by that alias
 * (`POST <api>/v2/alerts/<alias>/close?identifierType=alias`) with the retraction as the note.
 * Requests are rendered by `opsgenieRequest` (lib/alerting/incident.ts, through `renderAction`).
 *
 * Answers: 202 accepted (Opsgenie processes requests asynchronously); 429 and 5xx retried,
 * honouring `Retry-After` when sent; other 4xx (401/403 a wrong key, 422 an invalid request)
 * final. Storm-control digests are one alert per window with alias `chainsift-digest-<digest id>`.
 * @module
 */

import {
  DEFAULT_OPSGENIE_PRIORITY,
  digestIncidentKey,
  OPSGENIE_DESCRIPTION_MAX,
  OPSGENIE_MESSAGE_MAX,
} from "../../../lib/alerting/incident.js";
import { clip, type MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedIncident, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText } from "../../../lib/alerting/storm.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The `Authorization` header of an action's API key. */
function auth(parameters: unknown): { authorization: string } {
  return { authorization: `GenieKey ${String((parameters as { apiKey?: unknown })?.apiKey ?? "")}` };
}

/**
 * The Opsgenie channel over `send` to the Alert API at `apiUrl` (no trailing slash), signing with
 * the account's secret from `secrets` (Opsgenie ignores the headers).
 */
export function createOpsgenieChannel(send: HttpSender, secrets: SecretSource, apiUrl: string, options: MessageOptions = {}): Channel {
  return {
    async prepare(alert, action) {
      const { path, body } = renderAction(alert, action, options) as RenderedIncident;
      const secret = await secrets.getOrCreate(alert.accountId);
      const headers = auth(action.parameters);
      return () => send("POST", `${apiUrl}${path}`, secret, alert.id, body, { headers });
    },
    async prepareDigest(digest) {
      const p = digest.action.parameters as { priority?: unknown };
      const text = digestChatText(digest, "plain", OPSGENIE_DESCRIPTION_MAX);
      const body = JSON.stringify({
        message: clip(text.split("\n")[0] ?? "", OPSGENIE_MESSAGE_MAX),
        alias: digestIncidentKey(digest),
        description: text,
        priority: typeof p.priority === "string" ? p.priority : DEFAULT_OPSGENIE_PRIORITY,
        source: "chainsift",
        tags: ["chainsift", "digest"],
      });
      const secret = await secrets.getOrCreate(digest.accountId);
      const headers = auth(digest.action.parameters);
      return () => send("POST", `${apiUrl}/v2/alerts`, secret, digest.id, body, { headers });
    },
  };
}
