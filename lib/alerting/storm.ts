/**
 * Storm control of alert actions (pure): which policy an action has, which window an alert falls
 * in, and what a digest says. The notify stage keeps the state (pipeline/notify/storm.ts).
 *
 * An action may carry (beside `type`, `parameters`, `payload`; rules.md "Storm control"):
 * - `throttle: {max, windowSec}` — at most `max` messages per window of `windowSec` seconds (windows
 *   aligned to the epoch: `[k·windowSec, (k+1)·windowSec)`); the alerts beyond are held back and
 *   sent together in one **digest** when the window ends;
 * - `digest: {windowSec, maxEntities?}` — every alert of a window goes into one digest (no message
 *   per alert); `maxEntities` (default {@link DEFAULT_DIGEST_ENTITIES}) entities are listed by name;
 * - `throttle: false` — no storm control (the chat/e-mail default turned off).
 *
 * Defaults: the chat and e-mail channels (`chat` in lib/alerting/channels.ts: `Slack`, `Discord`,
 * `Telegram`, `Email`) are throttled at
 * {@link DEFAULT_CHAT_THROTTLE} (10 messages a minute) unless they say otherwise — below what the
 * services themselves accept (Slack incoming webhooks about 1 message a second, Discord webhooks 30 a
 * minute, a Telegram bot 20 a minute in a group) and about what a person reads; webhooks
 * (`Webhook (GET)`, `Webhook (POST)`) get every alert unless they opt in. `Webhook (GET)` has no
 * body to carry a digest (`digests: false`), so storm control never applies to it.
 * @module
 */
import { createHash } from "node:crypto";
import type { AlertDefinition } from "../rules/model.js";
import type { Alert, AlertStatus } from "./alert.js";
import { channelOf } from "./channels.js";
import { discordEscape, htmlEscape, slackEscape } from "./render.js";

/** Entities a digest names by default (the rest are counted). */
export const DEFAULT_DIGEST_ENTITIES = 10;
/** Largest `maxEntities`. */
export const MAX_DIGEST_ENTITIES = 50;
/** Default throttle of chat and e-mail actions: 10 messages per 60 s window. */
export const DEFAULT_CHAT_THROTTLE: Readonly<{ max: number; windowSec: number }> = { max: 10, windowSec: 60 };

/** The storm-control fields an action may carry (validated by the rule schema). */
export interface StormFields {
  /** At most `max` (≥ 1) messages per `windowSec` (1–86400) seconds; `false` turns the chat default off. */
  throttle?: { max: number; windowSec: number } | false;
  /** Every alert of a `windowSec` window in one message, naming the first `maxEntities` (1–50, default 10). */
  digest?: { windowSec: number; maxEntities?: number };
}

/** The storm-control policy of one action. */
export interface StormPolicy {
  /** Messages sent one by one per window (0 for a digest-only action). */
  max: number;
  /** Window length, in ms. */
  windowMs: number;
  /** Entities named in a digest. */
  maxEntities: number;
  /** Where the policy comes from: `throttle`, `digest` or the chat/e-mail `default`. */
  source: "throttle" | "digest" | "default";
}

/**
 * The policy of an action, or null when every alert is sent one by one (webhooks without opt-in,
 * `throttle: false`, a channel without digests such as `Webhook (GET)`). `digest` wins over `throttle` when both are given.
 */
export function stormPolicyOf(action: AlertDefinition | undefined): StormPolicy | null {
  const channel = channelOf(action);
  if (!action || channel?.digests === false) return null;
  const f = action as AlertDefinition & StormFields;
  const entities = (n: unknown) =>
    Number.isSafeInteger(n) && (n as number) >= 1 ? Math.min(MAX_DIGEST_ENTITIES, n as number) : DEFAULT_DIGEST_ENTITIES;
  const sec = (n: unknown) => (Number.isSafeInteger(n) && (n as number) >= 1 ? (n as number) : undefined);
  if (f.digest && sec(f.digest.windowSec)) {
    return { max: 0, windowMs: sec(f.digest.windowSec)! * 1000, maxEntities: entities(f.digest.maxEntities), source: "digest" };
  }
  if (f.throttle === false) return null;
  if (f.throttle && sec(f.throttle.windowSec) && Number.isSafeInteger(f.throttle.max) && f.throttle.max >= 1) {
    return { max: f.throttle.max, windowMs: sec(f.throttle.windowSec)! * 1000, maxEntities: DEFAULT_DIGEST_ENTITIES, source: "throttle" };
  }
  if (!channel?.chat) return null;
  return {
    max: DEFAULT_CHAT_THROTTLE.max,
    windowMs: DEFAULT_CHAT_THROTTLE.windowSec * 1000,
    maxEntities: DEFAULT_DIGEST_ENTITIES,
    source: "default",
  };
}

/** The window of time `nowMs`: index `floor(nowMs / windowMs)` and its bounds, in ms since the epoch. */
export function windowOf(nowMs: number, windowMs: number): { index: number; startMs: number; endMs: number } {
  const index = Math.floor(nowMs / windowMs);
  return { index, startMs: index * windowMs, endMs: (index + 1) * windowMs };
}

/**
 * Where an alert record came from: its alerts-topic position and original Kafka key and Avro value
 * bytes (base64), kept so that the alert can be dead-lettered as it was read (and replayed by
 * `chainsift alerts replay`).
 */
export interface AlertSource {
  /** The alerts topic's full name (with the deployment's topic prefix). */
  topic: string;
  /** Partition of the record. */
  partition: number;
  /** Kafka offset, as kafkajs gives it (a decimal string). */
  offset: string;
  /** The record's key bytes in base64, null for a null key. */
  keyB64: string | null;
  /** The record's Avro value bytes in base64 (null only for a tombstone, which is never an alert). */
  valueB64: string | null;
}

/** What a digest keeps of each alert it holds. */
export interface HeldAlert {
  alertId: string;
  sequence: number;
  status: AlertStatus;
  entityId: string;
  blockNumber: number;
  blockHash: string;
  /**
   * The alert's source record, to dead-letter it when its digest is given up. Absent in entries
   * held before it was kept (those can only be listed in the delivery log, not replayed).
   */
  source?: AlertSource;
}

/** The summary of an alert held back for a digest, with its source record when given. */
export function heldOf(alert: Alert, source?: AlertSource): HeldAlert {
  const { id: alertId, sequence, status, entityId, blockNumber, blockHash } = alert;
  return { alertId, sequence, status, entityId, blockNumber, blockHash, ...(source ? { source } : {}) };
}

/** What a digest is about: the rule, action and window (taken from the first alert held back). */
export interface DigestContext {
  ruleId: string;
  ruleName?: string | null;
  accountId: string;
  chain: Alert["chain"];
  targetType: Alert["targetType"];
  actionIndex: number;
  /** The action as the first held alert carried it. */
  action: AlertDefinition;
  policy: StormPolicy;
  windowStartMs: number;
  windowEndMs: number;
  /** The first held alert's entity (a `Webhook (POST)` URL's `{field}` tokens are filled from it). */
  entity: Record<string, unknown>;
}

/** A digest: the alerts of one action held back in one window. */
export interface Digest extends DigestContext {
  /** Stable id: hex SHA-256 of `digest|ruleId|actionIndex|windowStartMs` (sent as `webhook-id`). */
  id: string;
  /** Every held alert, by `sequence`. */
  alerts: HeldAlert[];
}

/** The digest of `held` alerts (any order) in `ctx`'s window. */
export function makeDigest(ctx: DigestContext, held: readonly HeldAlert[]): Digest {
  const alerts = [...held].sort((a, b) => a.sequence - b.sequence);
  const id = createHash("sha256").update(`digest|${ctx.ruleId}|${ctx.actionIndex}|${ctx.windowStartMs}`).digest("hex");
  return { ...ctx, id, alerts };
}

/** The plain facts of a digest, for every renderer. */
export function digestFacts(d: Digest) {
  const blocks = d.alerts.map((a) => a.blockNumber);
  const byStatus: Record<string, number> = {};
  for (const a of d.alerts) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
  return {
    count: d.alerts.length,
    firstBlock: blocks.length ? Math.min(...blocks) : null,
    lastBlock: blocks.length ? Math.max(...blocks) : null,
    byStatus,
    entities: d.alerts.slice(0, d.policy.maxEntities).map((a) => ({ entityId: a.entityId, blockNumber: a.blockNumber, status: a.status })),
    /** Where every held alert is listed: the rule's delivery log (entries with `state: "throttled"`). */
    deliveriesPath: `/alerting/rules/${d.ruleId}/deliveries/`,
  };
}

/** Why the alerts were held: `throttle (10 per 60 s)` or `digest (every 300 s)`. */
function reason(p: StormPolicy): string {
  const s = p.windowMs / 1000;
  return p.max > 0 ? `${p.source === "default" ? "default throttle" : "throttle"} (${p.max} per ${s} s)` : `digest (every ${s} s)`;
}

/**
 * The digest as text lines (plain; chat renderers escape and bold the first one):
 * the count and reason, the window, the block range and statuses, the first entities, and where to
 * see them all.
 */
export function digestLines(d: Digest): string[] {
  const f = digestFacts(d);
  const name = d.ruleName ? `"${d.ruleName}"` : d.ruleId;
  const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
  const statuses = Object.entries(f.byStatus)
    .map(([s, n]) => `${n} ${s}`)
    .join(", ");
  return [
    `DIGEST: ${f.count} alert${f.count === 1 ? "" : "s"} of rule ${name} held back by its ${reason(d.policy)}`,
    `Window ${iso(d.windowStartMs)} – ${iso(d.windowEndMs)} · blocks ${f.firstBlock}–${f.lastBlock} · ${statuses}`,
    ...f.entities.map((e) => `• ${d.targetType} ${e.entityId} in block ${e.blockNumber} (${e.status})`),
    ...(f.count > f.entities.length ? [`… and ${f.count - f.entities.length} more`] : []),
    `All of them: GET ${f.deliveriesPath} (entries with state "throttled", rule ${d.ruleId})`,
  ];
}

/** JSON body of a `Webhook (POST)` digest (version 1). */
export function digestWebhookJson(d: Digest): string {
  const f = digestFacts(d);
  return JSON.stringify({
    type: "digest",
    id: d.id,
    ruleId: d.ruleId,
    actionIndex: d.actionIndex,
    chain: d.chain,
    targetType: d.targetType,
    window: { start: new Date(d.windowStartMs).toISOString(), end: new Date(d.windowEndMs).toISOString() },
    policy: { max: d.policy.max, windowSec: d.policy.windowMs / 1000, source: d.policy.source },
    count: f.count,
    firstBlock: f.firstBlock,
    lastBlock: f.lastBlock,
    byStatus: f.byStatus,
    entities: f.entities,
    alerts: d.alerts.map((a) => ({
      id: a.alertId,
      sequence: a.sequence,
      status: a.status,
      entityId: a.entityId,
      blockNumber: a.blockNumber,
    })),
    deliveries: f.deliveriesPath,
  });
}

/** Clips to `max` characters with an ellipsis. */
function clipTo(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** The digest in a chat's markup: the first line bold, values escaped. */
export function digestChatText(d: Digest, markup: "slack" | "discord" | "plain", max: number): string {
  const esc = markup === "slack" ? slackEscape : markup === "discord" ? discordEscape : (s: string) => s;
  const bold = markup === "slack" ? (s: string) => `*${s}*` : markup === "discord" ? (s: string) => `**${s}**` : (s: string) => s;
  const [first = "", ...rest] = digestLines(d);
  return clipTo([bold(esc(first)), ...rest.map(esc)].join("\n"), max);
}

/** The digest as an e-mail: subject `[chainsift] DIGEST: <n> alerts of <rule> in blocks <a>–<b>`, text and HTML. */
export function digestEmail(d: Digest): { subject: string; text: string; html: string } {
  const f = digestFacts(d);
  const name = d.ruleName ? clipTo(d.ruleName.replace(/[\r\n\t]+/g, " "), 120) : d.ruleId;
  const lines = digestLines(d);
  return {
    subject: clipTo(`[chainsift] DIGEST: ${f.count} alerts of ${name} in blocks ${f.firstBlock}–${f.lastBlock}`, 250),
    text: `${lines.join("\n")}\n`,
    html: `<p><strong>${htmlEscape(lines[0] ?? "")}</strong></p>\n<p>${lines.slice(1).map(htmlEscape).join("<br>\n")}</p>\n`,
  };
}
