/**
 * The `Teams` channel (issue 35): a POST of `teamsBody` (one Adaptive Card, lib/alerting/teams.ts,
 * rendered by `renderAction`) to the action's Microsoft Teams webhook URL — a Workflows "When a
 * Teams webhook request is received" URL (answers `202 Accepted`) or an older Office 365 incoming
 * webhook (answers `200`, text `1`). The URL is used as given (chat URLs are not templated); its
 * path and query hold the webhook's secret, so the delivery log shows only its origin. `429` and
 * 5xx are retried, honouring `Retry-After`; other 4xx are final.
 *
 * A webhook cannot edit what it posted: a `removed` alert is a follow-up card naming the retracted
 * block, its replacement and the pending alert (rendered from the alert alone). A storm-control
 * digest is one card with the digest text.
 * @module
 */
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedRequest, renderAction } from "../../../lib/alerting/rendered.js";
import { digestChatText } from "../../../lib/alerting/storm.js";
import { TEAMS_TITLE_MAX, teamsMessage, textBlock } from "../../../lib/alerting/teams.js";
import type { SecretSource } from "../deliver.js";
import type { Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** Longest digest text in a card, in characters (well below Teams' message size limit of about 28 KB). */
const DIGEST_TEXT_MAX = 8000;

/** The Teams channel over `send`, signing with the account's secret from `secrets` (Teams ignores the headers). */
export function createTeamsChannel(send: HttpSender, secrets: SecretSource, options: MessageOptions = {}): Channel {
  return {
    async prepare(alert, action) {
      const { url, body } = renderAction(alert, action, options) as RenderedRequest;
      const secret = await secrets.getOrCreate(alert.accountId);
      return () => send("POST", url, secret, alert.id, body);
    },
    async prepareDigest(digest) {
      const url = String((digest.action.parameters as { url?: unknown }).url ?? "");
      const [first = "", ...rest] = digestChatText(digest, "plain", DIGEST_TEXT_MAX).split("\n");
      const card = teamsMessage([
        textBlock(first.slice(0, TEAMS_TITLE_MAX), { weight: "Bolder", size: "Medium" }),
        textBlock(rest.join("\n\n")),
      ]);
      const secret = await secrets.getOrCreate(digest.accountId);
      return () => send("POST", url, secret, digest.id, JSON.stringify(card));
    },
  };
}
