/**
 * What a `Teams` action sends (issue 35), pure: a Microsoft Teams message carrying one Adaptive
 * Card (https://learn.microsoft.com/en-us/microsoftteams/platform/task-modules-and-cards/cards/cards-reference#adaptive-card),
 * the body Teams Workflows ("Post to a channel when a webhook request is received") and the older
 * Office 365 incoming webhooks accept:
 * `{"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": <card>}]}`
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using#send-adaptive-cards-using-an-incoming-webhook).
 *
 * The card: the summary (or the action's `template`) in bold, then a FactSet of the alert's facts
 * and payload fields, and an "Open in explorer" button when the chain has an explorer. A webhook
 * cannot edit what it posted, so a `removed` alert is a **follow-up card** that starts with the
 * {@link retractionLine} (the reorganised-away block and the block that replaced it) in the
 * attention colour and names the pending alert it retracts (its id, as the pending card showed it);
 * no posted-message store is needed. Texts are plain: Teams renders a Markdown subset in TextBlocks
 * and facts, so values are shown as the chain has them.
 * @module
 */
import { type Alert, alertId } from "./alert.js";
import { alertFacts } from "./incident.js";
import { clip, explorerLink, incidentTitle, type MessageOptions, payloadLines, retractionLine } from "./render.js";

/** Longest card heading (summary or rendered template), in characters. */
export const TEAMS_TITLE_MAX = 2000;
/** The Adaptive Card schema version used (1.4: Teams desktop, web and mobile). */
const CARD_VERSION = "1.4";

/** An Adaptive Card element (the subset used). */
export type CardElement =
  | { type: "TextBlock"; text: string; wrap: true; weight?: "Bolder"; size?: "Medium"; color?: "Attention" }
  | { type: "FactSet"; facts: { title: string; value: string }[] };

/** A Teams message with one Adaptive Card. */
export interface TeamsMessage {
  type: "message";
  attachments: {
    contentType: "application/vnd.microsoft.card.adaptive";
    contentUrl: null;
    content: {
      $schema: "http://adaptivecards.io/schemas/adaptive-card.json";
      type: "AdaptiveCard";
      version: string;
      body: CardElement[];
      actions?: { type: "Action.OpenUrl"; title: string; url: string }[];
    };
  }[];
}

/** A text block of a card (wrapped). */
export function textBlock(
  text: string,
  style: Partial<Pick<Extract<CardElement, { type: "TextBlock" }>, "weight" | "size" | "color">> = {},
): CardElement {
  return { type: "TextBlock", text, wrap: true, ...style };
}

/** The Teams message of a card made of `body` (and an explorer `link` button when given). */
export function teamsMessage(body: CardElement[], link = ""): TeamsMessage {
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: CARD_VERSION,
          body,
          ...(link ? { actions: [{ type: "Action.OpenUrl" as const, title: "Open in explorer", url: link }] } : {}),
        },
      },
    ],
  };
}

/**
 * The Teams message of an alert (see the module): for `removed`, the retraction and the pending
 * alert it follows up; the heading (`template` rendered, or the rule and summary line); the facts
 * and payload fields.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function teamsBody(alert: Alert, params: { template?: string }, options: MessageOptions = {}): TeamsMessage {
  const retraction =
    alert.status === "removed"
      ? [
          textBlock(retractionLine(alert), { weight: "Bolder", color: "Attention" }),
          textBlock(
            `Follows up the pending alert ${alertId(alert.ruleId, alert.entityId, alert.blockHash, "pending").slice(0, 12)} of this match.`,
          ),
        ]
      : [];
  const facts = [
    ...Object.entries(alertFacts(alert, options)).map(([title, value]) => ({ title, value: String(value) })),
    ...payloadLines(alert.payload).map((l) => ({ title: clip(l.key, 100), value: l.value })),
  ];
  return teamsMessage(
    [
      ...retraction,
      textBlock(incidentTitle(alert, params.template, TEAMS_TITLE_MAX, options), { weight: "Bolder", size: "Medium" }),
      { type: "FactSet", facts },
    ],
    explorerLink(alert, options),
  );
}
