/**
 * What one delivery attempt and one delivery can come to, shared by the channels (`channels/`) and
 * the retry loop (`deliver.ts`): the stable `CS_…` codes, the result shapes, and the classifiers of
 * HTTP answers and request errors.
 * @module
 */

import { CS_ACTION_INVALID } from "../../lib/alerting/rendered.js";
import { NonRetryableError } from "../../lib/errors.js";

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
/** The action's type or parameters are unusable (unknown type, missing url, no recipients). Non-retryable. Defined with the renderers (lib/alerting/rendered.ts). */
export { CS_ACTION_INVALID };
/** An Email action while no SMTP server is configured; dead-letter it (final: false) and replay once configured. */
export const CS_MAILER_UNCONFIGURED = "CS_MAILER_UNCONFIGURED";

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
export function nonRetryableIn(err: unknown): NonRetryableError | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    if (e instanceof NonRetryableError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function errText(err: unknown): string {
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

/** The message cut to `max` characters on one line (control characters become spaces). */
export function oneLine(s: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  const t = s.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** A final failure of an action that cannot be delivered as written ({@link CS_ACTION_INVALID}). */
export function invalid(message: string): NonRetryableError {
  return new NonRetryableError(CS_ACTION_INVALID, message);
}
