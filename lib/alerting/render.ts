/**
 * Pure rendering of an {@link Alert} for each delivery channel: the templated webhook URL, the
 * chat messages (Slack, Discord, Telegram) and the e-mail, from the action's message template when
 * it has one (`lib/alerting/template.ts`); the JSON body of webhooks is `lib/alerting/webhook.ts`.
 * No I/O; every function here is deterministic in its inputs. The layouts are documented in `docs/alerting-delivery.md`.
 * @module
 */

import { NonRetryableError } from "../errors.js";
import type { SlackParameters } from "../rules/model.js";
import type { Alert } from "./alert.js";
import { sequenceSummary } from "./sequence-summary.js";
import {
  CS_TEMPLATE_UNKNOWN_FIELD,
  chainText,
  type ExplorerUrls,
  explorerLinks,
  renderTemplate,
  resolvePath,
  TOKEN,
  TOKEN_PATH,
  templateView,
} from "./template.js";

export { CS_TEMPLATE_UNKNOWN_FIELD, resolvePath };

/** A `{field}` token names an object or an array, which has no single URL rendering. Non-retryable. */
export const CS_TEMPLATE_NOT_SCALAR = "CS_TEMPLATE_NOT_SCALAR";
/**
 * A `{field}` token stands in the scheme, user info, host or port of the URL template, where a
 * value would choose the destination. Non-retryable. (Rule validation refuses such templates with
 * `CS_RULE_ALERT_PARAMETERS`; this is the delivery side's own check, for rules stored before it.)
 */
export const CS_TEMPLATE_HOST = "CS_TEMPLATE_HOST";
/**
 * A token's value makes a path segment `.` or `..` (e.g. a token symbol `..` in `/api/{symbol}/x`),
 * which URL parsing would remove together with the segment before it, so another path than the
 * template's would be called. Non-retryable.
 */
export const CS_TEMPLATE_DOT_SEGMENT = "CS_TEMPLATE_DOT_SEGMENT";

/**
 * A URL's scheme, its `:`, any slashes (WHATWG URL parsing accepts any number of `/` or `\` after
 * a special scheme such as `https:`), then the authority (user info, host, port), which ends at the
 * first `/`, `\`, `?` or `#` (WHATWG URL Standard, "authority state").
 */
const SCHEME_AND_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*[^/\\?#]*/;
/**
 * The spellings of a dot segment (WHATWG URL Standard, "single-dot URL path segment": `.` or
 * `%2e`; "double-dot URL path segment": `..`, `.%2e`, `%2e.`, `%2e%2e`; ASCII case-insensitive).
 */
const DOT_SEGMENTS: ReadonlySet<string> = new Set([".", "%2e", "..", ".%2e", "%2e.", "%2e%2e"]);

/** The encoded value of one `{rawPath}` token (see {@link renderUrl} for the errors). */
function tokenValue(rawPath: string, entity: Record<string, unknown>): string {
  const path = rawPath.trim();
  if (!TOKEN_PATH.test(path)) {
    throw new NonRetryableError(CS_TEMPLATE_UNKNOWN_FIELD, `URL token {${rawPath}} is not a field path`);
  }
  const r = resolvePath(entity, path);
  if (!r.found) throw new NonRetryableError(CS_TEMPLATE_UNKNOWN_FIELD, `URL token {${path}}: the matched entity has no such field`);
  const v = r.value;
  if (v === null) return "";
  if (typeof v === "object" || typeof v === "function" || typeof v === "symbol") {
    throw new NonRetryableError(CS_TEMPLATE_NOT_SCALAR, `URL token {${path}} names an object or array, not a single value`);
  }
  return encodeURIComponent(String(v));
}

/**
 * Throws {@link CS_TEMPLATE_DOT_SEGMENT} when a path segment of `url` that a token value wrote
 * (wholly or partly) is a dot segment. The path runs from `pathAt` to the first `?` or `#`;
 * segments are separated by `/` or `\` (the same for special schemes); ASCII tabs and newlines,
 * which URL parsing strips, are ignored. The template's own dot segments are left alone.
 * @param spans - `[start, end)` of every token value in `url` (empty values included).
 */
function assertNoDotSegment(url: string, pathAt: number, spans: ReadonlyArray<readonly [number, number]>): void {
  const q = url.slice(pathAt).search(/[?#]/);
  const pathEnd = q < 0 ? url.length : pathAt + q;
  let start = pathAt;
  for (let i = pathAt; i <= pathEnd; i++) {
    if (i < pathEnd && url[i] !== "/" && url[i] !== "\\") continue;
    const segment = url.slice(start, i);
    const fromToken = spans.some(([s, e]) => s <= i && e >= start);
    if (fromToken && DOT_SEGMENTS.has(segment.replace(/[\t\n\r]/g, "").toLowerCase())) {
      throw new NonRetryableError(
        CS_TEMPLATE_DOT_SEGMENT,
        `a URL token makes the path segment ${JSON.stringify(segment)}, which URL parsing would remove; the URL would name another path`,
      );
    }
    start = i + 1;
  }
}

/**
 * Replaces every `{field}` / `{a.b}` / `{args.0.value.hex}` token of a webhook URL template by the
 * matched entity's value, encoded with `encodeURIComponent(String(value))` (so a value can never add
 * path segments, a query or a fragment). `null` renders as the empty string. Text outside tokens is
 * left exactly as written.
 *
 * Values come from the chain (anyone can name a token `..`), so two renderings are refused rather
 * than sent: a token in the scheme, user info, host or port (it would choose the destination), and
 * a value that makes a path segment `.` or `..`. No encoding keeps such a segment: WHATWG URL
 * parsing (`new URL`, and so undici and fetch on the wire) treats `%2e`/`%2E` as a dot there, and
 * a double encoding (`%252E`) would hand the receiver another value than the entity's.
 *
 * @param template The action's `parameters.url` (contract: "a token in braces such as
 *   {transactionHash} is replaced by the matching value of the matched entity").
 * @param entity The whole matched entity ({@link Alert.entity}).
 * @returns The URL to call (not yet validated as a URL; see `ssrf.ts`).
 * @throws {NonRetryableError} code {@link CS_TEMPLATE_HOST} when a token stands before the path
 *   (or the template has no `scheme:` before its first token); {@link CS_TEMPLATE_UNKNOWN_FIELD}
 *   when a token is not a valid path or names a field the entity lacks;
 *   {@link CS_TEMPLATE_NOT_SCALAR} when it names an object or array; {@link CS_TEMPLATE_DOT_SEGMENT}
 *   when a value makes a dot segment. Delivery of the action then fails for good (retrying would
 *   render the same URL).
 */
export function renderUrl(template: string, entity: Record<string, unknown>): string {
  // Nothing before the path is replaced, so the path starts at the same index in the template and in the result.
  const pathAt = SCHEME_AND_AUTHORITY.exec(template)?.[0].length ?? -1;
  const spans: Array<readonly [number, number]> = [];
  let url = "";
  let last = 0;
  for (const m of template.matchAll(TOKEN)) {
    if (pathAt < 0 || m.index < pathAt) {
      throw new NonRetryableError(
        CS_TEMPLATE_HOST,
        `URL token ${m[0]} stands in the scheme, user info, host or port; tokens may only stand in the path, query or fragment`,
      );
    }
    url += template.slice(last, m.index);
    const value = tokenValue(m[1] ?? "", entity);
    spans.push([url.length, url.length + value.length]);
    url += value;
    last = m.index + m[0].length;
  }
  if (spans.length === 0) return template;
  url += template.slice(last);
  assertNoDotSegment(url, pathAt, spans);
  return url;
}

/** Longest rendering of one payload value in chat and e-mail (characters); longer values end in `…`. */
const MAX_VALUE_CHARS = 500;
/** Most payload lines shown in chat and e-mail; the rest is summarised as `… n more`. */
const MAX_LINES = 50;

/** One displayed payload field: a flattened path (`args[0].value.hex`) and its text. */
export interface PayloadLine {
  key: string;
  value: string;
}

function scalarText(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") return String(v);
  return JSON.stringify(v) ?? String(v);
}

/** Clips `s` to `max` characters (default 500), the last being `…`. */
export function clip(s: string, max = MAX_VALUE_CHARS): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * Flattens a payload for display: nested objects become dotted keys, arrays `[i]` indexes; empty
 * objects and arrays show as `{}` / `[]`. At most {@link MAX_LINES} lines (then one `…` line); values
 * are clipped to 500 characters. Order: the payload's own key order.
 */
export function payloadLines(payload: Record<string, unknown>): PayloadLine[] {
  const out: PayloadLine[] = [];
  let total = 0;
  const walk = (v: unknown, key: string, depth: number): void => {
    if (v !== null && typeof v === "object" && depth < 6) {
      const entries = Array.isArray(v)
        ? v.map((x, i) => [`${key}[${i}]`, x] as const)
        : Object.entries(v).map(([k, x]) => [key ? `${key}.${k}` : k, x] as const);
      if (entries.length === 0) {
        total++;
        if (out.length < MAX_LINES) out.push({ key, value: Array.isArray(v) ? "[]" : "{}" });
        return;
      }
      for (const [k, x] of entries) walk(x, k, depth + 1);
      return;
    }
    total++;
    if (out.length < MAX_LINES) out.push({ key, value: clip(scalarText(v)) });
  };
  walk(payload, "", 0);
  if (total > out.length) out.push({ key: "…", value: `${total - out.length} more field(s)` });
  return out;
}

/**
 * What matched, in a few words: the event name for events (`entity.event`, e.g. `Transfer`),
 * otherwise the target type (`Transaction`, `Log`, …).
 */
export function entityLabel(alert: Alert): string {
  const ev = alert.entity?.event;
  return typeof ev === "string" && ev.trim() !== "" ? oneLine(ev) : alert.targetType;
}

/** Collapses control characters (CR, LF, tabs, …) to spaces so a value cannot add header lines. */
function oneLine(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return s.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
}

/** Confirmations a match needs: maxConfirmationCount, at least 1 (0 and 1 both confirm at first sight). */
function threshold(alert: Pick<Alert, "maxConfirmationCount">): number {
  return Math.max(1, alert.maxConfirmationCount);
}

/**
 * One-line summary, e.g. `confirmed: Transfer in block 123 on ethereum/mainnet (12/12 confirmations)`.
 * `removed` alerts say `removed from the chain` instead of confirmations.
 */
export function summaryLine(alert: Alert): string {
  const win = windowSummary(alert) || sequenceSummary(alert);
  if (win) return `${alert.status}: ${win}`;
  const where = `${entityLabel(alert)} in block ${alert.blockNumber} on ${chainText(alert.chain)}`;
  const conf =
    alert.status === "removed"
      ? "block left the canonical chain"
      : `${alert.confirmations}/${threshold(alert)} confirmation${threshold(alert) === 1 ? "" : "s"}`;
  return `${alert.status}: ${where} (${conf})`;
}

/**
 * What a window alert says crossed, in one line (empty for other alerts), e.g.
 * `window 21 over blocks 100–109 (21 records) on ethereum/mainnet, group 0xab…`; an absence rule's:
 * `silence: no matching record in blocks 100–109 on ethereum/mainnet`.
 */
export function windowSummary(alert: Alert): string {
  const w = alert.entity?.window as
    | { group: string | null; aggregate: string; recordCount: number; window: { fromBlock: number; toBlock: number } }
    | undefined;
  if (typeof w !== "object" || w === null || typeof w.window !== "object") return "";
  const group = w.group === null ? "" : `, group ${clip(oneLine(String(w.group)), 100)}`;
  if (alert.entity?.absence === true)
    return `silence: no matching record in blocks ${w.window.fromBlock}–${w.window.toBlock} on ${chainText(alert.chain)}`;
  return `window ${clip(oneLine(String(w.aggregate)), 80)} over blocks ${w.window.fromBlock}–${w.window.toBlock} (${w.recordCount} records) on ${chainText(alert.chain)}${group}`;
}

function ruleText(alert: Alert): string {
  const name = alert.ruleName ? oneLine(alert.ruleName) : "";
  return name ? `${clip(name, 200)} (${alert.ruleId}, v${alert.ruleVersion})` : `${alert.ruleId} (v${alert.ruleVersion})`;
}

/** Options every message renderer takes. */
export interface MessageOptions {
  /** Block-explorer base URLs by chain (default `DEFAULT_EXPLORER_URLS` of lib/alerting/template.ts). */
  explorers?: ExplorerUrls;
}

/** A block hash shortened for people: `0x88e9…6cb6`. */
function shortHash(hash: string): string {
  return hash.length > 14 ? `${hash.slice(0, 6)}…${hash.slice(-4)}` : hash;
}

/**
 * The first line of every message of a `removed` alert, whatever the channel and template, naming
 * the replacing block (`replacedBy`, set by the match stage):
 * `RETRACTED: block 123 (0x88e9…6cb6) was reorganised away and replaced by block 123 (0x5b1c…09fa); the earlier pending alert for this match no longer holds.`
 * When no block was known at that height yet (`replacedBy.hash` null):
 * `RETRACTED: block 123 (0x88e9…6cb6) was reorganised away; no block had replaced it at height 123 yet; …`.
 * A `removed` alert without `replacedBy` (emitted before the field existed):
 * `RETRACTED: block 123 (0x88e9…6cb6) was reorganised away (it left the canonical chain); …`.
 * Empty for other statuses.
 */
export function retractionLine(alert: Pick<Alert, "status" | "blockNumber" | "blockHash" | "replacedBy">): string {
  if (alert.status !== "removed") return "";
  const by = alert.replacedBy;
  const what = !by
    ? " (it left the canonical chain)"
    : by.hash === null
      ? `; no block had replaced it at height ${by.number} yet`
      : ` and replaced by block ${by.number} (${shortHash(by.hash)})`;
  return `RETRACTED: block ${alert.blockNumber} (${shortHash(alert.blockHash)}) was reorganised away${what}; the earlier pending alert for this match no longer holds.`;
}

/** The most useful explorer link of an alert: its transaction, else its block; "" without an explorer. */
function mainLink(alert: Alert, options: MessageOptions): string {
  const links = explorerLinks(alert, options.explorers);
  return links.tx || links.block;
}

/** The header lines of chat and e-mail bodies: `[label, value]` pairs. */
function detailPairs(alert: Alert, options: MessageOptions): [string, string][] {
  const link = mainLink(alert, options);
  return [
    ["Rule", ruleText(alert)],
    ["Status", alert.status],
    ["Confirmations", `${alert.confirmations}/${threshold(alert)}`],
    ["Chain", chainText(alert.chain)],
    ["Target", `${alert.targetType} ${alert.entityId}`],
    ["Block", `${alert.blockNumber} (${alert.blockHash})`],
    ...(link ? [["Explorer", link] as [string, string]] : []),
    ["Alert id", alert.id],
    ["Sequence", String(alert.sequence)],
    ["Emitted at", alert.emittedAt],
  ];
}

/** Escapes the three characters Slack mrkdwn reserves (`&`, `<`, `>`). */
export function slackEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Escapes Discord markdown in a value with a backslash: `\`, `*`, `_`, `~`, `` ` ``, `|`, `<`, `>`
 * (emphasis, strike, code, spoilers, quotes, mentions and custom emoji). Links are left alone: they
 * never contain these characters.
 */
export function discordEscape(s: string): string {
  return s.replace(/[\\*_~`|<>]/g, "\\$&");
}

/** How a chat service marks text up. */
interface ChatMarkup {
  /** Escapes a value (chain data) for the service. */
  escape: (s: string) => string;
  /** Bold text (already escaped). */
  bold: (s: string) => string;
}

/** Slack mrkdwn. */
const SLACK_MARKUP: ChatMarkup = { escape: slackEscape, bold: (s) => `*${s}*` };
/** Discord markdown. */
const DISCORD_MARKUP: ChatMarkup = { escape: discordEscape, bold: (s) => `**${s}**` };
/** Plain text (Telegram without parse_mode). */
const PLAIN_MARKUP: ChatMarkup = { escape: (s) => s, bold: (s) => s };

/**
 * The message of a chat action. With a `template` ({@link renderTemplate}, values escaped for the
 * service), the rendered template, after the {@link retractionLine} of a `removed` alert. Without,
 * the default: the retraction line (removed only), the summary in bold, the rule, alert id and
 * sequence, the explorer link of the transaction (or block), then up to 50 payload fields
 * (`• key: value`).
 */
function chatText(alert: Alert, template: string | undefined, markup: ChatMarkup, options: MessageOptions): string {
  const retraction = alert.status === "removed" ? markup.bold(markup.escape(retractionLine(alert))) : "";
  if (template !== undefined && template !== "") {
    const view = templateView(alert, { summary: summaryLine(alert), ...(options.explorers ? { explorers: options.explorers } : {}) });
    return [retraction, renderTemplate(template, view, markup.escape)].filter((s) => s !== "").join("\n");
  }
  const link = mainLink(alert, options);
  const fields = payloadLines(alert.payload).map((l) => `• ${markup.escape(l.key)}: ${markup.escape(l.value)}`);
  return [
    retraction,
    markup.bold(markup.escape(summaryLine(alert))),
    `Rule ${markup.escape(ruleText(alert))} · alert ${alert.id.slice(0, 12)} · #${alert.sequence}`,
    link,
    ...fields,
  ]
    .filter((s) => s !== "")
    .join("\n");
}

/**
 * The message of an action as plain text ({@link chatText} without markup): `template` rendered, or
 * the default chat message; a `removed` alert's starts with its {@link retractionLine}. Not clipped.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function plainText(alert: Alert, template: string | undefined, options: MessageOptions = {}): string {
  return chatText(alert, template, PLAIN_MARKUP, options);
}

/**
 * The one-line title of an alert in an incident tool (PagerDuty `payload.summary`, Opsgenie
 * `message`): `template` rendered as plain text, or `<rule name or id>: <summaryLine>`; control
 * characters collapsed to spaces, clipped to `max` characters with `…`.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function incidentTitle(alert: Alert, template: string | undefined, max: number, options: MessageOptions = {}): string {
  const text =
    template !== undefined && template !== ""
      ? renderTemplate(
          template,
          templateView(alert, { summary: summaryLine(alert), ...(options.explorers ? { explorers: options.explorers } : {}) }),
          (v) => v,
        )
      : `${alert.ruleName ? clip(oneLine(alert.ruleName), 120) : alert.ruleId}: ${summaryLine(alert)}`;
  return clip(oneLine(text), max);
}

/** The explorer link of an alert's transaction (else its block), "" without an explorer for its chain. */
export function explorerLink(alert: Alert, options: MessageOptions = {}): string {
  return mainLink(alert, options);
}

/** Body of a chat (Slack incoming-webhook) message. */
export interface SlackBody {
  /** `parameters.text` (verbatim, emoticons and Slack link syntax kept), a newline, then the message ({@link chatText}). */
  text: string;
  channel: string;
  username: string;
  /** Block Kit layout (only with `{blocks: true}`); `text` is then the notification fallback. */
  blocks?: unknown[];
}

/** Options of {@link slackBody}. */
export interface SlackBodyOptions extends MessageOptions {
  /** Also send a Block Kit `blocks` layout (Slack only; Slack-compatible receivers may reject it). Default false. */
  blocks?: boolean;
}

/**
 * Builds the chat webhook body `{text, channel, username, blocks?}`. `text` is the action's own
 * text followed by the message: `parameters.template` rendered, or the default (summary, rule,
 * explorer link, up to 50 payload fields as `• key: value`); our values are mrkdwn-escaped, the
 * operator's `parameters.text` and template text are not. Without blocks (default) the body also
 * suits Slack-compatible receivers (Mattermost, Rocket.Chat).
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function slackBody(alert: Alert, params: SlackParameters, options: SlackBodyOptions = {}): SlackBody {
  const intro = params.text ?? "";
  const text = [intro, chatText(alert, params.template, SLACK_MARKUP, options)].filter((s) => s !== "").join("\n");
  const body: SlackBody = { text, channel: params.channel, username: params.username };
  if (options.blocks) {
    const lines = payloadLines(alert.payload);
    const head = `*${slackEscape(summaryLine(alert))}*\nRule ${slackEscape(ruleText(alert))} · alert ${alert.id.slice(0, 12)} · #${alert.sequence}`;
    body.blocks = [
      { type: "section", text: { type: "mrkdwn", text: clip([intro, head].filter((s) => s !== "").join("\n"), 3000) } },
      ...(lines.length > 0
        ? [
            {
              type: "section",
              fields: lines
                .slice(0, 10)
                .map((l) => ({ type: "mrkdwn", text: clip(`*${slackEscape(l.key)}*\n${slackEscape(l.value)}`, 2000) })),
            },
          ]
        : []),
    ];
  }
  return body;
}

/** Longest Discord message `content`, in characters (Discord API, Execute Webhook: "up to 2000 characters"). */
export const DISCORD_CONTENT_MAX = 2000;
/** Longest Telegram message `text`, in characters (Bot API sendMessage: "1-4096 characters after entities parsing"). */
export const TELEGRAM_TEXT_MAX = 4096;

/**
 * JSON body of a Discord Execute Webhook request
 * (https://discord.com/developers/docs/resources/webhook#execute-webhook).
 */
export interface DiscordBody {
  /** The message, Discord markdown, at most {@link DISCORD_CONTENT_MAX} characters. */
  content: string;
  /** No mention in the message pings anyone (`{parse: []}`): chain data must not reach `@everyone`. */
  allowed_mentions: { parse: string[] };
  /** `parameters.username`, when given: overrides the webhook's default name. */
  username?: string;
}

/**
 * Builds the Discord message of an action: `content` is `parameters.template` rendered (values
 * escaped for Discord markdown) or the default chat message, clipped to 2000 characters.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function discordBody(alert: Alert, params: { template?: string; username?: string }, options: MessageOptions = {}): DiscordBody {
  const content = clip(chatText(alert, params.template, DISCORD_MARKUP, options), DISCORD_CONTENT_MAX);
  return { content, allowed_mentions: { parse: [] }, ...(params.username ? { username: params.username } : {}) };
}

/** JSON body of a Telegram Bot API `sendMessage` request (https://core.telegram.org/bots/api#sendmessage). */
export interface TelegramBody {
  /** `parameters.chatId`: a chat id (`-1001234567890`) or a channel's `@username`. */
  chat_id: string;
  /** The message, plain text (no `parse_mode`, so no value can break the markup), at most {@link TELEGRAM_TEXT_MAX} characters. */
  text: string;
  /** Link previews are off: an alert is a list of facts, not a page preview. */
  link_preview_options: { is_disabled: true };
  /** `parameters.messageThreadId`, when given: the topic of a forum supergroup. */
  message_thread_id?: number;
}

/**
 * Builds the Telegram `sendMessage` body of an action: `text` is `parameters.template` rendered or
 * the default chat message, as plain text, clipped to 4096 characters.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function telegramBody(
  alert: Alert,
  params: { chatId: string; template?: string; messageThreadId?: number },
  options: MessageOptions = {},
): TelegramBody {
  return {
    chat_id: params.chatId,
    text: clip(chatText(alert, params.template, PLAIN_MARKUP, options), TELEGRAM_TEXT_MAX),
    link_preview_options: { is_disabled: true },
    ...(params.messageThreadId === undefined ? {} : { message_thread_id: params.messageThreadId }),
  };
}

/** A rendered e-mail (addresses and headers are added by the deliverer). */
export interface EmailMessage {
  /** e.g. `[chainsift] confirmed: Big transfers — Transfer in block 123`; single line, at most 250 characters. */
  subject: string;
  /** Plain-text body. */
  text: string;
  /** HTML body (every value escaped). */
  html: string;
}

/** Escapes text for HTML element content and attribute values. */
export function htmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/** The e-mail templates of an Email action (`parameters.subject`, `parameters.template`). */
export interface EmailTemplates {
  recipients?: string[];
  /** Subject template; default `[chainsift] <status>: [<rule name> — ]<label> in block <n>`. */
  subject?: string;
  /** Plain-text body template; default the full layout (summary, details, payload). */
  template?: string;
}

/**
 * Renders the e-mail of an alert. Subject: `parameters.subject` rendered, or `[chainsift] <status>:
 * [<rule name> — ]<label> in block <n>` (label per {@link entityLabel}); control characters
 * removed, at most 250 characters; a `removed` alert's subject starts with `RETRACTED: ` (custom)
 * or reads `[chainsift] RETRACTED (removed): …` (default). Body: `parameters.template` rendered as
 * plain text (HTML: the same text, escaped), or the default layout: the summary, the alert's
 * details (rule, status, confirmations, chain, target, block, explorer link, id, sequence, time)
 * and the payload fields (per {@link payloadLines}). A `removed` alert's body starts with the
 * {@link retractionLine}.
 * @throws {NonRetryableError} `CS_TEMPLATE_UNKNOWN_FIELD` for a template token the alert cannot fill.
 */
export function emailMessage(alert: Alert, params: EmailTemplates = {}, options: MessageOptions = {}): EmailMessage {
  const removed = alert.status === "removed";
  const retraction = retractionLine(alert);
  const view = () => templateView(alert, { summary: summaryLine(alert), ...(options.explorers ? { explorers: options.explorers } : {}) });
  let subject: string;
  if (params.subject) subject = `${removed ? "RETRACTED: " : ""}${renderTemplate(params.subject, view())}`;
  else {
    const name = alert.ruleName ? `${clip(oneLine(alert.ruleName), 120)} — ` : "";
    subject = `[chainsift] ${removed ? "RETRACTED (removed)" : alert.status}: ${name}${entityLabel(alert)} in block ${alert.blockNumber}`;
  }
  subject = clip(oneLine(subject), 250);
  if (params.template) {
    const text = `${removed ? `${retraction}\n` : ""}${renderTemplate(params.template, view())}\n`;
    const html = [
      "<!doctype html>",
      '<html><body style="font-family:sans-serif">',
      `<div style="white-space:pre-wrap">${htmlEscape(text)}</div>`,
      "</body></html>",
      "",
    ].join("\n");
    return { subject, text, html };
  }
  const details = detailPairs(alert, options);
  const lines = payloadLines(alert.payload);
  const width = Math.max(...details.map(([k]) => k.length)) + 2;
  const text = [
    ...(removed ? [retraction, ""] : []),
    summaryLine(alert),
    "",
    ...details.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`),
    "",
    "Payload",
    ...(lines.length === 0 ? ["  (empty)"] : lines.map((l) => `  ${l.key}: ${l.value}`)),
    "",
    "-- ",
    "Sent by chainsift. Receivers deduplicate by the alert id; see docs/alerting-delivery.md.",
    "",
  ].join("\n");
  const row = (k: string, v: string) =>
    `<tr><th align="left" style="padding:2px 12px 2px 0">${htmlEscape(k)}</th><td><code>${htmlEscape(v)}</code></td></tr>`;
  const html = [
    "<!doctype html>",
    '<html><body style="font-family:sans-serif">',
    ...(removed ? [`<p><strong>${htmlEscape(retraction)}</strong></p>`] : []),
    `<p><strong>${htmlEscape(summaryLine(alert))}</strong></p>`,
    `<table>${details.map(([k, v]) => row(k, v)).join("")}</table>`,
    "<h3>Payload</h3>",
    lines.length === 0 ? "<p>(empty)</p>" : `<table>${lines.map((l) => row(l.key, l.value)).join("")}</table>`,
    '<p style="color:#777;font-size:small">Sent by chainsift. Receivers deduplicate by the alert id.</p>',
    "</body></html>",
    "",
  ].join("\n");
  return { subject, text, html };
}
