/**
 * The HTTP request of the webhook and chat channels: SSRF-checked destination (`ssrf.ts`), signed
 * headers (`sign.ts`), one undici request bounded by the attempt timeout, the answer classified
 * (`classifyHttpStatus`). Redirects are not followed and no proxy is used.
 * @module
 */
import { createRequire } from "node:module";
import { type Dispatcher, request } from "undici";
import { type AttemptOutcome, classifyHttpStatus, oneLine } from "../outcome.js";
import { webhookHeaders } from "../sign.js";
import { checkDestination, type DestinationPolicy } from "../ssrf.js";

const pkg = createRequire(import.meta.url)("../../../package.json") as { version: string };
/** `User-Agent` of every webhook and chat request: `chainsift-notify/<package version>`. */
export const USER_AGENT = `chainsift-notify/${pkg.version}`;

/** Reads at most `maxBytes` of a response body (as UTF-8 text), then discards the rest. */
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
  return Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8");
}

/** Dependencies of {@link createHttpSender}. */
export interface HttpSenderDeps {
  /** The (SSRF-guarded) dispatcher requests go through. */
  dispatcher: Dispatcher;
  /** Refused ranges and allowlist, checked before each request. */
  policy: DestinationPolicy;
  /** Whole-attempt timeout (connect + headers + body), in ms. */
  timeoutMs: number;
  /** Clock: the signature timestamp and `Retry-After` dates. */
  now: () => Date;
}

/** Per-request options of an {@link HttpSender}. */
export interface SendOptions {
  /**
   * Reads the server's requested wait, in ms, from the start (at most 1 KiB) of a retryable
   * answer's body, for APIs that put it there (Discord's and Telegram's `retry_after`). Used when
   * the answer has no `Retry-After` header.
   */
  retryAfterFromBody?: (body: string) => number | undefined;
  /** Keep (at most 64 KiB of) a 2xx answer's body as `responseBody`: chat APIs answer the posted message's id. */
  keepBody?: boolean;
  /** Extra request headers (e.g. the Slack bot token's `Authorization`); never logged. */
  headers?: Record<string, string>;
}

/** An attempt's outcome, with the answer's body when {@link SendOptions.keepBody} asked for it. */
export type SendOutcome = AttemptOutcome & { responseBody?: string };

/** Sends one signed request; with a body it is JSON. */
export type HttpSender = (
  method: "GET" | "POST" | "PATCH",
  url: string,
  secret: string,
  alertId: string,
  body?: string,
  options?: SendOptions,
) => Promise<SendOutcome>;

/** Creates the {@link HttpSender} shared by the webhook and chat (Slack, Discord, Telegram) channels. */
export function createHttpSender(deps: HttpSenderDeps): HttpSender {
  const { dispatcher, policy, timeoutMs, now } = deps;
  return async (method, url, secret, alertId, body, options = {}) => {
    const { url: u } = await checkDestination(url, policy);
    const timestampSec = Math.floor(now().getTime() / 1000);
    const headers = webhookHeaders({
      alertId,
      secret,
      timestampSec,
      signedContent: body ?? `${u.pathname}${u.search}`,
      userAgent: USER_AGENT,
    });
    if (body !== undefined) headers["content-type"] = "application/json";
    if (options.headers) Object.assign(headers, options.headers);
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
    if (ok && options.keepBody) text = await excerpt(res.body, 64 * 1024);
    else if (ok) await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
    else text = await excerpt(res.body, 1024);
    const out = classifyHttpStatus(res.statusCode, res.headers["retry-after"], now().getTime(), oneLine(text, 200));
    if (out.ok && options.keepBody) return { ...out, responseBody: text };
    if (!out.ok && out.retryable && out.retryAfterMs === undefined && options.retryAfterFromBody) {
      const retryAfterMs = options.retryAfterFromBody(text);
      if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0)
        return { ...out, retryAfterMs: Math.ceil(retryAfterMs) };
    }
    return out;
  };
}
