/**
 * The `PagerDuty` channel (issue 35): PagerDuty Events API v2
 * (https://developer.pagerduty.com/docs/send-alert-event), `POST <api>/v2/enqueue` of the event
 * `pagerDutyEvent` renders (lib/alerting/incident.ts, through `renderAction`): a `trigger` with
 * `dedup_key` `chainsift-<match key>` for a `pending` or `confirmed` alert (PagerDuty groups the
 * confirmed trigger into the open alert instead of paging again), a `resolve` on the same key for
 * the match's `removed` alert. The API base is the operator's (`CHAINSIFT_PAGERDUTY_API_URL`); the
 * routing key is the rule's and is never logged (the delivery log shows its fingerprint; error
 * texts are PagerDuty's answers, which do not repeat it).
 *
 * Answers (https://developer.pagerduty.com/docs/events-api-v2-overview#response-codes--retry-logic):
 * 202 accepted; 400 (invalid event) final; 429 (too many events for the routing key) and 5xx
 * retried, honouring `Retry-After` when sent. Storm-control digests are one `trigger` per window
 * with `dedup_key` `chainsift-digest-<digest id>`.
 * @module
 */
import { DEFAULT_PAGERDUTY_SEVERITY, digestIncidentKey, PAGERDUTY_SUMMARY_MAX } from "../../../lib/alerting/incident.js";
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedIncident, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText, digestFacts } from "../../../lib/alerting/storm.js";
import { chainText } from "../../../lib/alerting/template.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/**
 * The PagerDuty channel over `send` to the Events API at `apiUrl` (no trailing slash), signing
 * with the account's secret from `secrets` (PagerDuty ignores the headers).
 */
export function createPagerDutyChannel(send: HttpSender, secrets: SecretSource, apiUrl: string, options: MessageOptions = {}): Channel {
  const url = `${apiUrl}/v2/enqueue`;
  return {
    async prepare(alert, action) {
      const { body } = renderAction(alert, action, options) as RenderedIncident;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send("POST", url, secret, alert.id, body);
    },
    async prepareDigest(digest) {
      const p = digest.action.parameters as { routingKey?: unknown; severity?: unknown };
      const text = digestChatText(digest, "plain", PAGERDUTY_SUMMARY_MAX);
      const body = JSON.stringify({
        routing_key: String(p.routingKey ?? ""),
        event_action: "trigger",
        dedup_key: digestIncidentKey(digest),
        payload: {
          summary: text.split("\n")[0] ?? "",
          source: `chainsift ${chainText(digest.chain)}`,
          severity: typeof p.severity === "string" ? p.severity : DEFAULT_PAGERDUTY_SEVERITY,
          timestamp: new Date(digest.windowEndMs).toISOString(),
          component: digest.targetType,
          group: digest.ruleName || digest.ruleId,
          class: "digest",
          custom_details: { ...digestFacts(digest), text },
        },
        client: "chainsift",
      });
      const secret = await secrets.getOrCreate(digest.accountId);
      return () => send("POST", url, secret, digest.id, body);
    },
  };
}
