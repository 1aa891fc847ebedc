/**
 * Message templates of alert actions: the `{field}` placeholders of webhook URLs
 * (`lib/alerting/render.ts` `renderUrl`), applied to the text of chat messages (Slack, Discord,
 * Telegram) and e-mails (subject and body). Pure and deterministic; shared by the notify stage and
 * anything else that renders alerts (e.g. a rule test), so it lives in `lib/`.
 *
 * A token names a field of the **template view** ({@link templateView}): the matched entity's own
 * fields, as for URLs (`{transactionHash}`, `{args.2.value.scaled}`), plus three computed
 * namespaces that shadow entity fields of the same name:
 *
 * | token | value |
 * |---|---|
 * | `{alert.<field>}` | the alert: `id`, `ruleId`, `ruleVersion`, `sequence`, `status`, `confirmations`, `maxConfirmationCount`, `chain` (e.g. `ethereum/mainnet`), `targetType`, `entityId`, `blockHash`, `blockNumber`, `emittedAt`, `ruleName`, `summary`, and for a `removed` alert the block that replaced the reorganised one: `replacedByNumber`, `replacedByHash` (both "" otherwise, and the hash "" when no block was known at that height yet) |
 * | `{explorer.tx}`, `{explorer.block}`, `{explorer.address}`, `{explorer.token}` | block-explorer links of the alert's chain ({@link explorerLinks}); empty when the chain has no explorer configured or the entity has no such value |
 * | `{amount.<arg>}` | the decoded argument `<arg>` as a token amount: scaled by the token's decimals with its symbol (`250000 USDT`) when the decoder knew the token, else the raw integer |
 *
 * The layouts are documented in docs/alerting-delivery.md ("Message templates").
 * @module
 */
import { type ChainId, DEFAULT_EXPLORER_URLS } from "../config/index.js";
import { NonRetryableError } from "../errors.js";
import type { Alert } from "./alert.js";
import { WEBHOOK_FIELDS } from "./webhook.js";

/** A `{field}` token names a field that the matched entity (or the template view) does not have. Non-retryable. */
export const CS_TEMPLATE_UNKNOWN_FIELD = "CS_TEMPLATE_UNKNOWN_FIELD";

/** `{path}` tokens: anything between braces that contains no brace. */
export const TOKEN = /\{([^{}]*)\}/g;
/** A valid token path: identifier segments separated by dots; segments after the first may be array indexes. */
export const TOKEN_PATH = /^[A-Za-z_$][\w$]*(\.[\w$]+)*$/;

/** The computed namespaces of the template view, which shadow entity fields of the same name. */
export const TEMPLATE_NAMESPACES = ["alert", "explorer", "amount"] as const;
/**
 * Fields of `{alert.…}`: those of the webhook body ({@link WEBHOOK_FIELDS}) but `payload`, with
 * `chain` as text (`ethereum/mainnet`), plus `ruleName`, the one-line `summary`, and the replacing
 * block of a `removed` alert (`replacedByNumber`, `replacedByHash`; the body's `replacedBy`).
 */
export const ALERT_TEMPLATE_FIELDS: readonly string[] = [
  ...WEBHOOK_FIELDS.filter((f) => f !== "payload"),
  "ruleName",
  "summary",
  "replacedByNumber",
  "replacedByHash",
];
/** Fields of `{explorer.…}`. */
export const EXPLORER_TEMPLATE_FIELDS = ["tx", "block", "address", "token"] as const;

/**
 * Resolves a dotted path (`a`, `a.b`, `args.0.name`) against an object, following **own**
 * properties only (so `{constructor}` or `{__proto__}` never reach the prototype chain).
 * @returns `{found: false}` when a segment is missing or the walk meets a non-object.
 */
export function resolvePath(root: unknown, path: string): { found: true; value: unknown } | { found: false } {
  let cur: unknown = root;
  for (const segment of path.split(".")) {
    if (cur === null || typeof cur !== "object") return { found: false };
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(segment)) return { found: false };
      const i = Number(segment);
      if (i >= cur.length) return { found: false };
      cur = cur[i];
    } else {
      if (!Object.hasOwn(cur, segment)) return { found: false };
      cur = (cur as Record<string, unknown>)[segment];
    }
  }
  return cur === undefined ? { found: false } : { found: true, value: cur };
}

/**
 * What is wrong with the tokens of a message template, checked when a rule is saved: every
 * `{…}` must be a field path ({@link TOKEN_PATH}); `{alert.x}` and `{explorer.x}` must name one of
 * their fields, `{amount.x}` exactly one argument. Entity fields cannot be checked before a match
 * (a misspelt one fails delivery with {@link CS_TEMPLATE_UNKNOWN_FIELD}).
 * @returns a message per bad token, empty when the template is fine.
 */
export function templateProblems(template: string): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(TOKEN)) {
    const path = (m[1] ?? "").trim();
    if (!TOKEN_PATH.test(path)) {
      out.push(`${m[0]} is not a field path (letters, digits, _ and $, dot-separated)`);
      continue;
    }
    const [head, ...rest] = path.split(".");
    if (head === "alert" && !(rest.length === 1 && ALERT_TEMPLATE_FIELDS.includes(rest[0]!)))
      out.push(`${m[0]}: alert fields are ${ALERT_TEMPLATE_FIELDS.join(", ")}`);
    else if (head === "explorer" && !(rest.length === 1 && (EXPLORER_TEMPLATE_FIELDS as readonly string[]).includes(rest[0]!)))
      out.push(`${m[0]}: explorer links are ${EXPLORER_TEMPLATE_FIELDS.join(", ")}`);
    else if (head === "amount" && rest.length !== 1) out.push(`${m[0]}: write {amount.<argument name>}, e.g. {amount.value}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Block explorers
// ---------------------------------------------------------------------------------------------

/**
 * Block-explorer base URLs by chain key `technology/blockchain/network` (see {@link chainKey}),
 * without trailing slash, e.g. `{"ethereum/ethereum/mainnet": "https://etherscan.io"}`; config
 * `notify.explorerUrls`, defaults `DEFAULT_EXPLORER_URLS` (lib/config/index.ts).
 */
export type ExplorerUrls = Readonly<Record<string, string>>;

/** The key of a chain in {@link ExplorerUrls}: `technology/blockchain/network`. */
export function chainKey(chain: ChainId): string {
  return `${chain.technology}/${chain.blockchain}/${chain.network}`;
}

/** Explorer links of an alert (each "" when not applicable). */
export interface ExplorerLinks {
  /** `<base>/tx/<transactionHash>` (the entity's `transactionHash`, or `hash` of a Transaction). */
  tx: string;
  /** `<base>/block/<blockNumber>`. */
  block: string;
  /** `<base>/address/<address>` (the entity's `address`: emitting or called contract, created contract, token). */
  address: string;
  /** `<base>/token/<address>` for events, Token entities and methods of a token standard (erc20, erc721, weth). */
  token: string;
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The explorer links of an alert on its chain. Values are used only when they look like what
 * they are (a 32-byte hash, a 20-byte address), so chain data cannot put other text in a link.
 * @param explorers base URLs by chain (default {@link DEFAULT_EXPLORER_URLS}).
 */
export function explorerLinks(
  alert: Pick<Alert, "chain" | "blockNumber" | "entity" | "targetType">,
  explorers?: ExplorerUrls,
): ExplorerLinks {
  const base = (explorers ?? DEFAULT_EXPLORER_URLS)[chainKey(alert.chain)]?.replace(/\/+$/, "");
  const none: ExplorerLinks = { tx: "", block: "", address: "", token: "" };
  if (!base) return none;
  const e = alert.entity ?? {};
  const txHash = typeof e.transactionHash === "string" ? e.transactionHash : alert.targetType === "Transaction" ? e.hash : undefined;
  const address = typeof e.address === "string" && ADDRESS.test(e.address) ? e.address : "";
  const standard = typeof e.standard === "string" ? e.standard : "";
  const tokenish = alert.targetType === "Token" || (address !== "" && /erc20|erc721|weth/.test(standard));
  return {
    tx: typeof txHash === "string" && HASH.test(txHash) ? `${base}/tx/${txHash}` : "",
    block: Number.isSafeInteger(alert.blockNumber) && alert.blockNumber >= 0 ? `${base}/block/${alert.blockNumber}` : "",
    address: address ? `${base}/address/${address}` : "",
    token: tokenish && address ? `${base}/token/${address}` : "",
  };
}

// ---------------------------------------------------------------------------------------------
// Token amounts
// ---------------------------------------------------------------------------------------------

/** `v / 10^decimals` as an exact decimal string without trailing zeros (`1.5`, `2`, `-0.000001`). */
export function decimalAmount(v: bigint, decimals: number): string {
  const neg = v < 0n;
  const digits = (neg ? -v : v).toString().padStart(decimals + 1, "0");
  const int = digits.slice(0, digits.length - decimals);
  const frac = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}

/** The integer of a decoded argument's `hex` (`0x…` or `-0x…`), or undefined when it is not one. */
function hexInteger(hex: unknown): bigint | undefined {
  if (typeof hex !== "string" || !/^-?0x[0-9a-fA-F]+$/.test(hex)) return undefined;
  return hex.startsWith("-") ? -BigInt(hex.slice(1)) : BigInt(hex);
}

/**
 * The token amount of each integer (`uint…`/`int…`) argument of a decoded entity (`args[]` of events, methods and
 * calls), by argument name. When the decoder scaled the argument (`value.scaled`, set when it knew
 * the emitting token's decimals), the exact decimal (from `value.hex`; the decimals are the power
 * of ten that gives `scaled`) followed by the token symbol the decoder wrote into `str`
 * (`value=250000000000 [250000 USDT]`; none when the decoder had no symbol: `[250000]`); otherwise
 * the raw integer in decimal.
 */
export function tokenAmounts(entity: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const args = Array.isArray(entity.args) ? entity.args : [];
  const str = typeof entity.str === "string" ? entity.str : "";
  for (const a of args) {
    const name = (a as { name?: unknown })?.name;
    const value = (a as { value?: { hex?: unknown; scaled?: unknown; type?: unknown } })?.value;
    const v = hexInteger(value?.hex);
    if (typeof name !== "string" || v === undefined || Object.hasOwn(out, name)) continue;
    if (typeof value?.type !== "string" || !/^u?int\d*$/.test(value.type)) continue;
    const scaled = value?.scaled;
    let text = v.toString();
    if (typeof scaled === "number" && Number.isFinite(scaled)) {
      for (let d = 0; d <= 255; d++) {
        const dec = decimalAmount(v, d);
        if (Number(dec) !== scaled) continue;
        const symbol = new RegExp(`\\[${dec.replace(/[.\\-]/g, "\\$&")} ([^\\]]+)\\]`).exec(str)?.[1]?.trim();
        text = symbol ? `${dec} ${symbol}` : dec;
        break;
      }
    }
    out[name] = text;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The view and the renderer
// ---------------------------------------------------------------------------------------------

/** `ethereum/mainnet` when technology and blockchain agree, else `technology/blockchain/network`. */
export function chainText(c: ChainId): string {
  return c.technology === c.blockchain ? `${c.blockchain}/${c.network}` : `${c.technology}/${c.blockchain}/${c.network}`;
}

/** Inputs of {@link templateView} besides the alert. */
export interface TemplateViewOptions {
  /** Explorer base URLs (default {@link DEFAULT_EXPLORER_URLS}). */
  explorers?: ExplorerUrls;
  /** The one-line summary `{alert.summary}` stands for (the renderer's; default `""`). */
  summary?: string;
}

/**
 * The object tokens resolve against: the matched entity's fields, then `alert`, `explorer` and
 * `amount` (see the module table), which replace entity fields of those names.
 */
export function templateView(alert: Alert, options: TemplateViewOptions = {}): Record<string, unknown> {
  const entity = alert.entity ?? {};
  return {
    ...entity,
    alert: {
      ...Object.fromEntries(WEBHOOK_FIELDS.filter((f) => f !== "payload").map((f) => [f, alert[f]])),
      chain: chainText(alert.chain),
      ruleName: alert.ruleName ?? "",
      summary: options.summary ?? "",
      // Only a retraction names a replacing block (set by the match stage, lib/alerting/alert.ts).
      replacedByNumber: alert.status === "removed" && alert.replacedBy ? alert.replacedBy.number : "",
      replacedByHash: alert.status === "removed" && alert.replacedBy ? (alert.replacedBy.hash ?? "") : "",
    },
    explorer: explorerLinks(alert, options.explorers),
    amount: tokenAmounts(entity),
  };
}

/** Longest rendering of one object-valued token, in characters (longer ones end in `…`). */
const MAX_OBJECT_CHARS = 500;

/**
 * How a value reads in a message: null → ""; strings as they are; numbers without exponent
 * (`0.00000015`, `25000000000000000000000`); a quantity `{num, raw}` as the exact decimal of `raw`;
 * other objects and arrays as compact JSON (at most 500 characters).
 */
export function displayText(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (typeof v === "bigint" || typeof v === "boolean") return String(v);
  if (typeof v === "number") {
    const s = String(v);
    return /e/i.test(s) && Number.isFinite(v) ? v.toLocaleString("en-US", { useGrouping: false, maximumSignificantDigits: 16 }) : s;
  }
  const raw = (v as { raw?: unknown }).raw;
  if (typeof raw === "string" && /^0x[0-9a-fA-F]+$/.test(raw) && "num" in (v as object)) return BigInt(raw).toString();
  const json = JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)) ?? "";
  return json.length > MAX_OBJECT_CHARS ? `${json.slice(0, MAX_OBJECT_CHARS - 1)}…` : json;
}

/**
 * Fills a message template: every `{path}` token is replaced by `escapeValue(displayText(value))`, the
 * value resolved in `view` ({@link templateView}); text outside tokens is kept as written (it is
 * the rule author's, with the channel's own markup).
 * @param escapeValue the channel's escaping of values (Slack mrkdwn, Discord markdown; identity for plain text).
 * @throws {NonRetryableError} {@link CS_TEMPLATE_UNKNOWN_FIELD} when a token is not a field path or
 *   names a field the view lacks: every alert of the rule would render the same way, so the action
 *   fails for good rather than send a message with a hole.
 */
export function renderTemplate(template: string, view: Record<string, unknown>, escapeValue: (s: string) => string = (s) => s): string {
  return template.replace(TOKEN, (token, rawPath: string) => {
    const path = rawPath.trim();
    if (!TOKEN_PATH.test(path)) throw new NonRetryableError(CS_TEMPLATE_UNKNOWN_FIELD, `template token ${token} is not a field path`);
    const r = resolvePath(view, path);
    if (!r.found) throw new NonRetryableError(CS_TEMPLATE_UNKNOWN_FIELD, `template token {${path}}: no such field`);
    return escapeValue(displayText(r.value));
  });
}
