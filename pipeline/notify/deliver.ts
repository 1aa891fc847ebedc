/**
 * Delivery of one alert action with retries: one attempt function per channel (undici for
 * `Webhook (GET)`, `Webhook (POST)` and `Slack`; nodemailer for `Email`) inside a retry loop with
 * exponential backoff and full jitter. The loop ({@link runWithRetry}) is a pure function of an
 * injected `attempt` and `sleep`, so it is unit-tested without real waits.
 *
 * Outcomes ({@link DeliveryResult}):
 * - `ok: true` — delivered (2xx, or the SMTP server accepted the message);
 * - `ok: false, final: true` — refused for good (non-retryable 4xx, SMTP 5xx, SSRF refusal, bad
 *   template or action): retrying or replaying would fail the same way, so it is only logged;
 * - `ok: false, final: false, code: CS_DELIVERY_EXHAUSTED` (or `CS_MAILER_UNCONFIGURED`) — still
 *   deliverable later: the shell dead-letters the alert and `chainsift alerts replay` re-sends it.
 * @module
 */
import { createRequire } from "node:module";
import { createTransport } from "nodemailer";
import { type Dispatcher, request } from "undici";
import type { Logger } from "../../lib/logger.js";
import type { AlertDefinition } from "../../lib/rules/model.js";
import { NonRetryableError } from "../errors.js";
import { describeDestination } from "./log.js";
import { emailMessage, type NotifyAlert, renderUrl, slackBody, webhookJson } from "./render.js";
import { webhookHeaders } from "./sign.js";
import { checkDestination, createGuardedAgent, type DestinationPolicy, parseAllowlist } from "./ssrf.js";

/** The retry budget ran out on a transient failure; dead-letter the alert for a later replay. */
export const CS_DELIVERY_EXHAUSTED = "CS_DELIVERY_EXHAUSTED";
/** The receiver answered a final status (3xx, or 4xx other than 408/429). Non-retryable. */
export const CS_DELIVERY_REJECTED = "CS_DELIVERY_REJECTED";
/** The receiver answered 5xx, 408 or 429 (retryable). */
export const CS_DELIVERY_HTTP_STATUS = "CS_DELIVERY_HTTP_STATUS";
/** Connect, response-headers, body or overall attempt timeout (retryable). */
export const CS_DELIVERY_TIMEOUT = "CS_DELIVERY_TIMEOUT";
/** DNS failure, refused or reset connection, TLS failure, other socket error (retryable). */
export const CS_DELIVERY_NETWORK = "CS_DELIVERY_NETWORK";
/** The SMTP server answered 4xx, or authentication failed (retryable). */
export const CS_SMTP_TEMPORARY = "CS_SMTP_TEMPORARY";
/** The SMTP server answered 5xx (e.g. 550 unknown mailbox). Non-retryable. */
export const CS_SMTP_REJECTED = "CS_SMTP_REJECTED";
/** The action's type or parameters are unusable (unknown type, missing url, no recipients). Non-retryable. */
export const CS_ACTION_INVALID = "CS_ACTION_INVALID";
/** An Email action while no SMTP server is configured; dead-letter it (final: false) and replay once configured. */
export const CS_MAILER_UNCONFIGURED = "CS_MAILER_UNCONFIGURED";

const pkg = createRequire(import.meta.url)("../../package.json") as { version: string };
/** `User-Agent` of every webhook and chat request: `chainsift-notify/<package version>`. */
export const USER_AGENT = `chainsift-notify/${pkg.version}`;

/** Result of delivering one action of one alert. */
export interface DeliveryResult {
  /** Whether the receiver accepted the alert. */
  ok: boolean;
  /** Delivery attempts made (0 when the action could not be rendered, e.g. an unknown URL token). */
  attempts: number;
  /** HTTP status, or SMTP reply code, of the last attempt that got an answer. */
  status?: number;
  /** Why the last attempt failed (no response bodies beyond a 200-character excerpt; never secrets). */
  error?: string;
  /** Stable machine-readable code of the failure (`CS_…`). */
  code?: string;
  /**
   * true when nothing more should be done with this action: delivered, or refused for good.
   * false (only with `ok: false`) when it is worth sending again later: dead-letter it.
   */
  final: boolean;
  /** Where it went, redacted for logs: URL without credentials and query, or `3 recipients`. */
  destination?: string;
}

/** Outcome of one attempt. */
export type AttemptOutcome =
  | { ok: true; status?: number }
  | {
      ok: false;
      /** Whether another attempt may succeed. */
      retryable: boolean;
      code: string;
      error: string;
      status?: number;
      /** Server-requested wait before the next attempt (from `Retry-After`), in ms. */
      retryAfterMs?: number;
    };

/** Retry budget. */
export interface RetryPolicy {
  /** Attempts in total, the first included. Default 8. */
  maxAttempts: number;
  /** Backoff ceiling before the first retry, in ms; doubles per attempt. Default 500. */
  baseDelayMs: number;
  /** Largest wait between attempts, in ms (also caps `Retry-After`). Default 60000. */
  maxDelayMs: number;
}

/** Defaults of {@link RetryPolicy}: 8 attempts; waits drawn from [0, 0.5 s], [0, 1 s], … [0, 32 s] (≤ 63.5 s in total). */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = { maxAttempts: 8, baseDelayMs: 500, maxDelayMs: 60_000 };

/**
 * Wait before the next attempt after `failedAttempt` (1-based) failed: "full jitter" — uniform in
 * [0, min(maxDelayMs, baseDelayMs · 2^(failedAttempt−1))). With a server-requested `retryAfterMs`,
 * at least that long, and never more than `maxDelayMs`.
 * @param random Uniform [0, 1) source (default `Math.random`).
 * @returns Milliseconds (integer).
 */
export function retryDelayMs(
  failedAttempt: number,
  policy: RetryPolicy,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, failedAttempt - 1));
  const jittered = Math.floor(random() * ceiling);
  if (retryAfterMs === undefined) return jittered;
  return Math.min(policy.maxDelayMs, Math.max(retryAfterMs, jittered));
}

/**
 * Parses a `Retry-After` header value (RFC 9110 §10.2.3): either `delay-seconds` (non-negative
 * integer) or an HTTP-date (IMF-fixdate; the obsolete RFC 850 and asctime forms are accepted too).
 * @param nowMs Current time in ms since the epoch (for dates).
 * @returns The wait in ms (0 for a date in the past), or undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | string[] | undefined | null, nowMs: number): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * Classifies an HTTP answer: 2xx → ok; 408, 429 and 5xx → retryable (with `Retry-After` when the
 * receiver sent one); anything else (3xx — redirects are not followed —, other 4xx) → final.
 * @param excerpt Start of the response body, included in the error message.
 */
export function classifyHttpStatus(status: number, retryAfter: string | string[] | undefined, nowMs: number, excerpt = ""): AttemptOutcome {
  if (status >= 200 && status < 300) return { ok: true, status };
  const detail = excerpt ? `: ${excerpt}` : "";
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(retryAfter, nowMs);
    return {
      ok: false,
      retryable: true,
      status,
      code: CS_DELIVERY_HTTP_STATUS,
      error: `HTTP ${status}${detail}`,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  return { ok: false, retryable: false, status, code: CS_DELIVERY_REJECTED, error: `HTTP ${status}${detail}` };
}

const TIMEOUT_CODES = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
  "ESOCKETTIMEDOUT",
]);

/** The error or one of its causes that is a {@link NonRetryableError} (undici may wrap connect errors). */
function nonRetryableIn(err: unknown): NonRetryableError | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    if (e instanceof NonRetryableError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function errText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

/**
 * Classifies an error thrown by an HTTP attempt: a {@link NonRetryableError} (also as a cause)
 * keeps its code and is final; timeouts → {@link CS_DELIVERY_TIMEOUT}; everything else (DNS,
 * refused, reset, TLS) → {@link CS_DELIVERY_NETWORK}; both retryable.
 */
export function classifyRequestError(err: unknown): AttemptOutcome {
  const nr = nonRetryableIn(err);
  if (nr) return { ok: false, retryable: false, code: nr.code, error: nr.message };
  const e = err as { code?: string; name?: string } | undefined;
  if ((e?.code && TIMEOUT_CODES.has(e.code)) || e?.name === "TimeoutError") {
    return { ok: false, retryable: true, code: CS_DELIVERY_TIMEOUT, error: errText(err) };
  }
  return { ok: false, retryable: true, code: CS_DELIVERY_NETWORK, error: errText(err) };
}

/**
 * Classifies a nodemailer error: reply code 4xx → retryable {@link CS_SMTP_TEMPORARY}; 5xx → final
 * {@link CS_SMTP_REJECTED}, except failed authentication (`EAUTH`, `ENOAUTH`: the operator's SMTP
 * credentials, not the alert, are wrong) which is retryable so the alert is dead-lettered and can be
 * replayed; an envelope error without reply code (no valid recipient) → final
 * {@link CS_ACTION_INVALID}; no reply code (connection, TLS, timeout) → retryable.
 * SMTP reply classes: RFC 5321 §4.2.1.
 */
export function classifySmtpError(err: unknown): AttemptOutcome {
  const nr = nonRetryableIn(err);
  if (nr) return { ok: false, retryable: false, code: nr.code, error: nr.message };
  const e = (err ?? {}) as { code?: string; responseCode?: number; response?: string; message?: string };
  const status = typeof e.responseCode === "number" ? e.responseCode : undefined;
  const message = oneLine(e.response || e.message || String(err), 300);
  if (e.code === "EAUTH" || e.code === "ENOAUTH") {
    return {
      ok: false,
      retryable: true,
      code: CS_SMTP_TEMPORARY,
      error: `SMTP authentication failed: ${message}`,
      ...(status ? { status } : {}),
    };
  }
  if (status !== undefined && status >= 400 && status < 500)
    return { ok: false, retryable: true, status, code: CS_SMTP_TEMPORARY, error: message };
  if (status !== undefined && status >= 500) return { ok: false, retryable: false, status, code: CS_SMTP_REJECTED, error: message };
  if (e.code === "EENVELOPE") return { ok: false, retryable: false, code: CS_ACTION_INVALID, error: message };
  if (e.code === "ETIMEDOUT") return { ok: false, retryable: true, code: CS_DELIVERY_TIMEOUT, error: message };
  return { ok: false, retryable: true, code: CS_DELIVERY_NETWORK, error: e.code ? `${e.code}: ${message}` : message };
}

/** Hooks of {@link runWithRetry}. */
export interface RetryHooks {
  /** Waits `ms` milliseconds (tests record instead of waiting). */
  sleep: (ms: number) => Promise<void>;
  /** Uniform [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Called before each wait. */
  onRetry?: (info: { attempt: number; delayMs: number; outcome: Extract<AttemptOutcome, { ok: false }> }) => void;
}

/**
 * Runs `attempt(1)`, `attempt(2)`, … until one succeeds, one fails for good, or `maxAttempts` is
 * reached, sleeping {@link retryDelayMs} between attempts. An attempt that throws is classified with
 * {@link classifyRequestError}. Never throws itself.
 * @returns The {@link DeliveryResult} (without `destination`); exhaustion gives
 *   `{ok: false, final: false, code: CS_DELIVERY_EXHAUSTED}` with the last failure in `error`.
 */
export async function runWithRetry(
  attempt: (n: number) => Promise<AttemptOutcome>,
  policy: RetryPolicy,
  hooks: RetryHooks,
): Promise<DeliveryResult> {
  const max = Math.max(1, Math.floor(policy.maxAttempts));
  for (let n = 1; ; n++) {
    let out: AttemptOutcome;
    try {
      out = await attempt(n);
    } catch (err) {
      out = classifyRequestError(err);
    }
    if (out.ok) return { ok: true, attempts: n, final: true, ...(out.status === undefined ? {} : { status: out.status }) };
    const status = out.status === undefined ? {} : { status: out.status };
    if (!out.retryable) return { ok: false, attempts: n, final: true, code: out.code, error: out.error, ...status };
    if (n >= max) {
      return {
        ok: false,
        attempts: n,
        final: false,
        code: CS_DELIVERY_EXHAUSTED,
        error: `gave up after ${n} attempts; last: ${out.code} ${out.error}`,
        ...status,
      };
    }
    const delayMs = retryDelayMs(n, policy, out.retryAfterMs, hooks.random);
    hooks.onRetry?.({ attempt: n, delayMs, outcome: out });
    await hooks.sleep(delayMs);
  }
}

/** A message handed to the mail transport (the subset of nodemailer's `SendMailOptions` used). */
export interface OutgoingMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  messageId: string;
  headers: Record<string, string>;
}

/** The mail transport used: a nodemailer transporter, or a test double. */
export interface MailTransport {
  sendMail(message: OutgoingMail): Promise<{ accepted?: unknown[]; rejected?: unknown[]; response?: string }>;
  close?(): void;
}

/** E-mail settings of the operator. */
export interface MailerConfig {
  /** `From:` address, e.g. `chainsift <alerts@example.com>`. */
  from: string;
  /**
   * SMTP server URL for nodemailer, e.g. `smtp://user:pass@mail.example.com:587` (STARTTLS when
   * offered) or `smtps://…:465` (implicit TLS). Used when `transport` is not given.
   */
  smtpUrl?: string;
  /** A ready transport (instead of `smtpUrl`). */
  transport?: MailTransport;
}

/** Creates a nodemailer SMTP transport from a URL, with the given timeouts and file/URL access disabled. */
export function createSmtpTransport(smtpUrl: string, timeoutMs = 10_000): MailTransport {
  return createTransport({
    url: smtpUrl,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
  }) as unknown as MailTransport;
}

/** Where per-account signing secrets come from (see `createSecretStore` in `sign.ts`). */
export interface SecretSource {
  getOrCreate(accountId: string): Promise<string>;
}

/** Dependencies of {@link createDeliverer}. */
export interface DelivererDeps {
  /** Whole-attempt timeout of an HTTP request (connect + headers + body), and of each SMTP step, in ms. Default 10000. */
  fetchTimeoutMs?: number;
  /** Retry budget; missing fields take {@link DEFAULT_RETRY}. */
  retry?: Partial<RetryPolicy>;
  /** Hosts, IPs and CIDRs exempt from the SSRF refusal (e.g. `["127.0.0.1"]` in tests). Default none. */
  allowlist?: readonly string[];
  /** Host resolution override (tests); see {@link DestinationPolicy.resolve}. */
  resolve?: DestinationPolicy["resolve"];
  /** Per-account signing secrets. */
  secrets: SecretSource;
  /** E-mail settings; without them Email actions end with {@link CS_MAILER_UNCONFIGURED}. */
  mailer?: MailerConfig;
  /** Clock (default `() => new Date()`); gives the signature timestamp and `Retry-After` dates. */
  now?: () => Date;
  /** Wait function (default a `setTimeout` promise). */
  sleep?: (ms: number) => Promise<void>;
  /** Uniform [0, 1) source for jitter (default `Math.random`). */
  random?: () => number;
  /** Receives `warn` on each retry and final failure, `debug` on success. */
  log?: Pick<Logger, "warn" | "debug">;
  /** HTTP dispatcher override (default: an SSRF-guarded undici Agent, see `ssrf.ts`). */
  dispatcher?: Dispatcher;
}

/** A deliverer. */
export interface Deliverer {
  /**
   * Delivers action `actionIndex` (`action` = `alert.actions[actionIndex]`, passed explicitly) of an
   * alert, retrying as configured. Resolves with the outcome; rejects only when the secret store
   * fails (an infrastructure failure: the shell should retry the batch, not dead-letter).
   */
  deliver(alert: NotifyAlert, action: AlertDefinition, actionIndex: number): Promise<DeliveryResult>;
  /**
   * Makes **one** attempt of action `actionIndex` of an alert, without retrying: the unit of work of
   * the notify scheduler, which keeps the retry schedule itself (`scheduler.ts`). Resolves with the
   * outcome; rejects only when the secret store fails (infrastructure: retry later).
   */
  attempt(alert: NotifyAlert, action: AlertDefinition, actionIndex: number): Promise<AttemptResult>;
  /** Closes the HTTP agent and the SMTP transport. */
  close(): Promise<void>;
}

/**
 * Outcome of one attempt ({@link Deliverer.attempt}). `attempts` is 1 when something was sent and
 * 0 when the action could not be rendered or no mailer is configured.
 * - `ok: true` — delivered;
 * - `ok: false, retryable: true` — a transient failure (timeout, network, 5xx/408/429, SMTP 4xx):
 *   the scheduler retries it later, honouring `retryAfterMs`;
 * - `ok: false, retryable: false, final: true` — refused for good: only logged;
 * - `ok: false, retryable: false, final: false` — not deliverable now but later
 *   (`CS_MAILER_UNCONFIGURED`): dead-lettered at once for a replay.
 */
export interface AttemptResult extends DeliveryResult {
  /** Whether another attempt may succeed soon. */
  retryable: boolean;
  /** The receiver's `Retry-After`, in ms, when it sent one. */
  retryAfterMs?: number;
}

function oneLine(s: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  const t = s.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** Reads at most `maxBytes` of a response body, then discards the rest. */
async function excerpt(body: Dispatcher.ResponseData["body"], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      chunks.push(b);
      size += b.length;
      if (size >= maxBytes) break;
    }
  } catch {
    // the status is what matters
  } finally {
    if (!body.destroyed) body.destroy();
  }
  return oneLine(Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8"), 200);
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function invalid(message: string): NonRetryableError {
  return new NonRetryableError(CS_ACTION_INVALID, message);
}

/**
 * Creates a deliverer. Webhook and chat requests go through an SSRF-guarded undici Agent (no
 * redirects followed, no proxy); every attempt re-checks the destination, takes a fresh timestamp
 * and signature, and is bounded by `fetchTimeoutMs`. E-mails go through nodemailer.
 * @throws {Error} when `allowlist` holds an entry that is not an IP, CIDR or host name.
 */
export function createDeliverer(deps: DelivererDeps): Deliverer {
  const timeoutMs = deps.fetchTimeoutMs ?? 10_000;
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...deps.retry };
  const allowlist = parseAllowlist(deps.allowlist ?? []);
  const destPolicy: DestinationPolicy = { allowlist, ...(deps.resolve ? { resolve: deps.resolve } : {}) };
  const ownAgent = deps.dispatcher
    ? undefined
    : createGuardedAgent(destPolicy, { connectTimeoutMs: timeoutMs, headersTimeoutMs: timeoutMs, bodyTimeoutMs: timeoutMs });
  const dispatcher: Dispatcher = deps.dispatcher ?? ownAgent!;
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? defaultSleep;
  const mailer = deps.mailer;
  let transport: MailTransport | undefined = mailer?.transport;

  async function httpAttempt(method: "GET" | "POST", url: string, secret: string, alertId: string, body?: string): Promise<AttemptOutcome> {
    const { url: u } = await checkDestination(url, destPolicy);
    const timestampSec = Math.floor(now().getTime() / 1000);
    const headers = webhookHeaders({
      alertId,
      secret,
      timestampSec,
      signedContent: body ?? `${u.pathname}${u.search}`,
      userAgent: USER_AGENT,
    });
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await request(u, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      dispatcher,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    let text = "";
    if (ok) await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
    else text = await excerpt(res.body, 1024);
    return classifyHttpStatus(res.statusCode, res.headers["retry-after"], now().getTime(), text);
  }

  async function mailAttempt(alert: NotifyAlert, recipients: string[], actionIndex: number): Promise<AttemptOutcome> {
    if (!mailer) throw new Error("unreachable: no mailer");
    transport ??= createSmtpTransport(mailer.smtpUrl!, timeoutMs);
    const msg = emailMessage(alert, { recipients });
    const domain = /@([^>\s]+)>?\s*$/.exec(mailer.from)?.[1] ?? "chainsift.invalid";
    try {
      await transport.sendMail({
        from: mailer.from,
        to: recipients,
        subject: msg.subject,
        text: msg.text,
        html: msg.html,
        // The same alert and action always get the same Message-ID, so mail clients can collapse re-sends.
        messageId: `<${alert.id}.${actionIndex}@${domain}>`,
        headers: { "X-Chainsift-Alert-Id": alert.id, "X-Chainsift-Rule-Id": alert.ruleId, "X-Chainsift-Sequence": String(alert.sequence) },
      });
      return { ok: true, status: 250 };
    } catch (err) {
      return classifySmtpError(err);
    }
  }

  /** Validates the action and returns the attempt function, or throws NonRetryableError. */
  async function prepare(
    alert: NotifyAlert,
    action: AlertDefinition,
    actionIndex: number,
  ): Promise<((n: number) => Promise<AttemptOutcome>) | DeliveryResult> {
    const p = (action?.parameters ?? {}) as unknown as Record<string, unknown>;
    switch (action?.type) {
      case "Webhook (GET)":
      case "Webhook (POST)":
      case "Slack": {
        if (typeof p.url !== "string" || p.url === "") throw invalid(`${action.type} action has no url`);
        const url = action.type === "Slack" ? p.url : renderUrl(p.url, alert.entity ?? {});
        const body =
          action.type === "Webhook (POST)"
            ? webhookJson(alert)
            : action.type === "Slack"
              ? JSON.stringify(
                  slackBody(alert, {
                    url,
                    text: String(p.text ?? ""),
                    channel: String(p.channel ?? ""),
                    username: String(p.username ?? ""),
                  }),
                )
              : undefined;
        const secret = await deps.secrets.getOrCreate(alert.accountId);
        const method = action.type === "Webhook (GET)" ? "GET" : "POST";
        return () => httpAttempt(method, url, secret, alert.id, body);
      }
      case "Email": {
        const r = p.recipients;
        if (!Array.isArray(r) || r.length === 0 || !r.every((x) => typeof x === "string" && /^[^\s@]+@[^\s@]+$/.test(x.trim()))) {
          throw invalid("Email action needs a non-empty list of e-mail addresses in recipients");
        }
        if (!mailer || (!mailer.transport && !mailer.smtpUrl)) {
          return {
            ok: false,
            attempts: 0,
            final: false,
            code: CS_MAILER_UNCONFIGURED,
            error: "no SMTP server is configured for e-mail alerts",
          };
        }
        const recipients = r.map((x: string) => x.trim());
        return () => mailAttempt(alert, recipients, actionIndex);
      }
      default:
        throw invalid(`unknown alert action type ${JSON.stringify((action as { type?: unknown })?.type)}`);
    }
  }

  /**
   * The redacted destination and either the attempt function or the outcome that makes an attempt
   * pointless (bad template or action: final; no mailer: `CS_MAILER_UNCONFIGURED`). Rejects only
   * when the secret store fails.
   */
  async function begin(
    alert: NotifyAlert,
    action: AlertDefinition,
    actionIndex: number,
  ): Promise<{ destination: string; run?: (n: number) => Promise<AttemptOutcome>; result?: DeliveryResult }> {
    const base = { alertId: alert.id, ruleId: alert.ruleId, actionIndex, type: action?.type };
    let destination: string;
    try {
      destination = describeDestination(action, alert.entity);
    } catch {
      destination = "(invalid)";
    }
    try {
      const prepared = await prepare(alert, action, actionIndex);
      if (typeof prepared === "function") return { destination, run: prepared };
      deps.log?.warn({ ...base, code: prepared.code }, prepared.error ?? "alert action not delivered");
      return { destination, result: { ...prepared, destination } };
    } catch (err) {
      const nr = nonRetryableIn(err);
      if (!nr) throw err; // secret store failure: infrastructure, let the caller retry
      deps.log?.warn({ ...base, code: nr.code, err: nr.message }, "alert action cannot be delivered");
      return { destination, result: { ok: false, attempts: 0, final: true, code: nr.code, error: nr.message, destination } };
    }
  }

  return {
    async deliver(alert, action, actionIndex) {
      const base = { alertId: alert.id, ruleId: alert.ruleId, actionIndex, type: action?.type };
      const { destination, run: prepared, result: early } = await begin(alert, action, actionIndex);
      if (!prepared) return early!;
      const result = await runWithRetry(prepared, policy, {
        sleep,
        ...(deps.random ? { random: deps.random } : {}),
        onRetry: ({ attempt, delayMs, outcome }) =>
          deps.log?.warn(
            { ...base, attempt, delayMs, code: outcome.code, status: outcome.status, err: outcome.error },
            "alert delivery attempt failed; retrying",
          ),
      });
      if (result.ok) deps.log?.debug({ ...base, attempts: result.attempts, status: result.status }, "alert delivered");
      else
        deps.log?.warn(
          { ...base, attempts: result.attempts, code: result.code, final: result.final, err: result.error },
          "alert delivery failed",
        );
      return { ...result, destination };
    },
    async attempt(alert, action, actionIndex) {
      const { destination, run: prepared, result: early } = await begin(alert, action, actionIndex);
      if (!prepared) return { ...early!, retryable: false };
      let out: AttemptOutcome;
      try {
        out = await prepared(1);
      } catch (err) {
        out = classifyRequestError(err);
      }
      if (out.ok)
        return {
          ok: true,
          attempts: 1,
          final: true,
          retryable: false,
          destination,
          ...(out.status === undefined ? {} : { status: out.status }),
        };
      return {
        ok: false,
        attempts: 1,
        final: !out.retryable,
        retryable: out.retryable,
        code: out.code,
        error: out.error,
        destination,
        ...(out.status === undefined ? {} : { status: out.status }),
        ...(out.retryAfterMs === undefined ? {} : { retryAfterMs: out.retryAfterMs }),
      };
    },
    async close() {
      await ownAgent?.close();
      transport?.close?.();
    },
  };
}
