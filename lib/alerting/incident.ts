/**
 * What the incident-tool channels send (issue 35), pure: the PagerDuty Events API v2 event and the
 * Opsgenie Alert API request of an alert. The senders
 * (pipeline/notify/channels/pagerduty.ts, opsgenie.ts) post them to the operator's API base URL.
 *
 * One incident per match: the PagerDuty `dedup_key` and the Opsgenie `alias` are
 * `chainsift-<match key>` ({@link incidentKey}; the match key, lib/alerting/alert.ts, is the same
 * for a match's `pending`, `confirmed` and `removed` alerts). So:
 * - `pending` opens the incident (PagerDuty `trigger`, Opsgenie "Create Alert");
 * - `confirmed` sends the same request on the same key, which the tool **deduplicates** into the
 *   open incident instead of paging twice (PagerDuty: "subsequent events with the same dedup_key
 *   … will be grouped into the same alert"; Opsgenie: an open alert with the same alias has its
 *   `count` increased);
 * - `removed` (a reorg retracted the match) resolves it: PagerDuty `resolve` on the same
 *   `dedup_key`, Opsgenie "Close Alert" by alias, with the {@link retractionLine} as the note.
 *
 * Sources: https://developer.pagerduty.com/docs/send-alert-event (fields, limits: `summary` 1024
 * characters, `dedup_key` 255), https://docs.opsgenie.com/docs/alert-api (Create Alert: `message`
 * 130 characters, `alias` 512, `description` 15000, `details` a map of strings; Close Alert:
 * `note` 25000). The digests of storm control are rendered by the senders, which import
 * lib/alerting/storm.ts (that module imports the channel table, which imports this one).
 * @module
 */
import type { OpsgeniePriority, PagerDutySeverity } from "../rules/model.js";
import { type Alert, matchKey } from "./alert.js";
import { clip, explorerLink, incidentTitle, type MessageOptions, payloadLines, plainText, retractionLine } from "./render.js";
import { chainText } from "./template.js";

/** Longest PagerDuty `payload.summary`, in characters (Events API v2). */
export const PAGERDUTY_SUMMARY_MAX = 1024;
/** Longest Opsgenie alert `message`, in characters (Alert API, Create Alert). */
export const OPSGENIE_MESSAGE_MAX = 130;
/** Longest Opsgenie alert `description`, in characters (Alert API, Create Alert). */
export const OPSGENIE_DESCRIPTION_MAX = 15_000;
/** Default PagerDuty severity of an action without `severity`. */
export const DEFAULT_PAGERDUTY_SEVERITY: PagerDutySeverity = "error";
/** Default Opsgenie priority of an action without `priority` (Opsgenie's own default). */
export const DEFAULT_OPSGENIE_PRIORITY: OpsgeniePriority = "P3";
/** The `source` of every PagerDuty event's payload prefix and of Opsgenie requests. */
const SOURCE = "chainsift";

/** The PagerDuty `dedup_key` and Opsgenie `alias` of an alert's match: `chainsift-<match key>` (73 characters). */
export function incidentKey(alert: Pick<Alert, "ruleId" | "entityId" | "blockHash">): string {
  return `${SOURCE}-${matchKey(alert)}`;
}

/** The incident key of a storm-control digest: `chainsift-digest-<digest id>` (one incident per digest window). */
export function digestIncidentKey(digest: { id: string }): string {
  return `${SOURCE}-digest-${digest.id}`;
}

/** The facts of an alert every incident tool (and the Teams card) shows next to the payload: rule, status, confirmations, chain, target, block, explorer link, alert id, sequence. */
export function alertFacts(alert: Alert, options: MessageOptions = {}): Record<string, string | number> {
  const link = explorerLink(alert, options);
  return {
    rule: alert.ruleName ? `${alert.ruleName} (${alert.ruleId}, v${alert.ruleVersion})` : `${alert.ruleId} (v${alert.ruleVersion})`,
    status: alert.status,
    confirmations: `${alert.confirmations}/${Math.max(1, alert.maxConfirmationCount)}`,
    chain: chainText(alert.chain),
    target: `${alert.targetType} ${alert.entityId}`,
    block: `${alert.blockNumber} (${alert.blockHash})`,
    ...(link ? { explorer: link } : {}),
    alertId: alert.id,
    sequence: alert.sequence,
  };
}

/** A PagerDuty Events API v2 event (https://developer.pagerduty.com/docs/send-alert-event). */
export interface PagerDutyEvent {
  routing_key: string;
  event_action: "trigger" | "resolve";
  dedup_key: string;
  /** Only on `trigger`. */
  payload?: {
    summary: string;
    source: string;
    severity: PagerDutySeverity;
    /** ISO 8601: when the match stage emitted the alert. */
    timestamp: string;
    /** What matched: the event name or the target type. */
    component: string;
    /** The rule's name, or its id. */
    group: string;
    /** The alert's status (`pending`, `confirmed`). */
    class: string;
    /** The alert's facts and its `payload` (the rule's payload items). */
    custom_details: Record<string, unknown>;
  };
  client?: string;
  /** The explorer link of the transaction or block, when the chain has an explorer. */
  links?: { href: string; text: string }[];
}

/** The parameters of a PagerDuty action the renderer uses (validated by the rule schema). */
export interface PagerDutyRenderParameters {
  routingKey: string;
  severity?: PagerDutySeverity;
  template?: string;
}

/**
 * The Events API v2 event of an alert: `trigger` (summary, severity, custom details: the alert's
 * facts and its payload) for `pending` and `confirmed`, `resolve` for `removed`, both with
 * `dedup_key` {@link incidentKey}.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function pagerDutyEvent(alert: Alert, params: PagerDutyRenderParameters, options: MessageOptions = {}): PagerDutyEvent {
  const base = { routing_key: params.routingKey, dedup_key: incidentKey(alert) };
  if (alert.status === "removed") return { ...base, event_action: "resolve" };
  const link = explorerLink(alert, options);
  return {
    ...base,
    event_action: "trigger",
    payload: {
      summary: incidentTitle(alert, params.template, PAGERDUTY_SUMMARY_MAX, options),
      source: `${SOURCE} ${chainText(alert.chain)}`,
      severity: params.severity ?? DEFAULT_PAGERDUTY_SEVERITY,
      timestamp: alert.emittedAt,
      component: alert.entity && typeof alert.entity.event === "string" && alert.entity.event ? alert.entity.event : alert.targetType,
      group: alert.ruleName || alert.ruleId,
      class: alert.status,
      custom_details: { ...alertFacts(alert, options), payload: alert.payload },
    },
    client: SOURCE,
    ...(link ? { links: [{ href: link, text: "explorer" }] } : {}),
  };
}

/** An Opsgenie Alert API request: its method-less path (relative to the API base) and JSON body. */
export interface OpsgenieRequest {
  /** `/v2/alerts` (Create Alert) or `/v2/alerts/<alias>/close?identifierType=alias` (Close Alert). */
  path: string;
  body: Record<string, unknown>;
}

/** The parameters of an Opsgenie action the renderer uses (validated by the rule schema; `apiKey` is the sender's). */
export interface OpsgenieRenderParameters {
  priority?: OpsgeniePriority;
  template?: string;
}

/**
 * The Opsgenie request of an alert: "Create Alert" (`message`, `alias` {@link incidentKey},
 * `description` the plain chat message, `details` the facts and the payload flattened to strings,
 * `priority`, `source`, `entity`, `tags`) for `pending` and `confirmed`; "Close Alert" by that
 * alias with the retraction as `note` for `removed`.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function opsgenieRequest(alert: Alert, params: OpsgenieRenderParameters, options: MessageOptions = {}): OpsgenieRequest {
  const alias = incidentKey(alert);
  if (alert.status === "removed") {
    return {
      path: `/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`,
      body: { source: SOURCE, note: retractionLine(alert) },
    };
  }
  const details: Record<string, string> = {};
  for (const [k, v] of Object.entries(alertFacts(alert, options))) details[k] = String(v);
  for (const line of payloadLines(alert.payload)) details[`payload.${line.key}`] = line.value;
  return {
    path: "/v2/alerts",
    body: {
      message: incidentTitle(alert, params.template, OPSGENIE_MESSAGE_MAX, options),
      alias,
      description: clip(plainText(alert, undefined, options), OPSGENIE_DESCRIPTION_MAX),
      details,
      priority: params.priority ?? DEFAULT_OPSGENIE_PRIORITY,
      source: SOURCE,
      entity: clip(`${alert.targetType} ${alert.entityId}`, 512),
      tags: [SOURCE, alert.status],
    },
  };
}
