/**
 * The `Email` channel: one message to all recipients of the action through the operator's SMTP
 * server (nodemailer), with a stable Message-ID per alert and action so mail clients can collapse
 * re-sends. SMTP reply classes: RFC 5321 §4.2.1.
 *
 * Retractions people can see: the Message-ID and subject of a delivered `pending` alert's e-mail
 * are remembered (`messages.ts`); the match's `removed` alert is sent in the same thread, with
 * `In-Reply-To` and `References` naming that Message-ID (RFC 5322 §3.6.4) and the subject
 * `Re: <first subject>`, so mail clients show the retraction under the message it retracts.
 * @module
 */
import { createTransport } from "nodemailer";
import type { Alert } from "../../../lib/alerting/alert.js";
import type { MessageOptions } from "../../../lib/alerting/render.js";
import { type RenderedEmail, renderAction } from "../../../lib/alerting/rendered.js";
import { digestEmail } from "../../../lib/alerting/storm.js";
import { isEmailAddress } from "../../../lib/email.js";
import { type MessageStore, type PostedMessage, rememberQuietly } from "../messages.js";
import {
  type AttemptOutcome,
  CS_ACTION_INVALID,
  CS_DELIVERY_NETWORK,
  CS_DELIVERY_TIMEOUT,
  CS_MAILER_UNCONFIGURED,
  CS_SMTP_REJECTED,
  CS_SMTP_TEMPORARY,
  nonRetryableIn,
  oneLine,
} from "../outcome.js";
import type { Channel } from "./channel.js";

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

/** Dependencies of {@link createEmailChannel}. */
export interface EmailChannelDeps {
  /** E-mail settings; without them Email actions end with {@link CS_MAILER_UNCONFIGURED} (dead-lettered for a replay). */
  mailer?: MailerConfig;
  /** Connection, greeting and socket-inactivity timeout of the SMTP transport, in ms. */
  timeoutMs: number;
  /** Explorer links of the messages. */
  messages?: MessageOptions;
  /** Where pending alerts' Message-IDs are remembered, so retractions thread under them. */
  posted?: MessageStore;
}

/** The outcome of an Email action while no SMTP server is configured: dead-lettered for a replay. */
const UNCONFIGURED = {
  ok: false,
  attempts: 0,
  final: false,
  code: CS_MAILER_UNCONFIGURED,
  error: "no SMTP server is configured for e-mail alerts",
} as const;

/** The `Email` channel. Recipients must pass the rules' e-mail syntax check (`isEmailAddress`). */
export function createEmailChannel(deps: EmailChannelDeps): Channel {
  const { mailer, timeoutMs, messages = {}, posted } = deps;
  let transport: MailTransport | undefined = mailer?.transport;

  async function send(alert: Alert, msg: RenderedEmail, actionIndex: number, thread: PostedMessage | null): Promise<AttemptOutcome> {
    if (!mailer) throw new Error("unreachable: no mailer");
    transport ??= createSmtpTransport(mailer.smtpUrl!, timeoutMs);
    const recipients = msg.recipients;
    const domain = /@([^>\s]+)>?\s*$/.exec(mailer.from)?.[1] ?? "chainsift.invalid";
    // The same alert and action always get the same Message-ID, so mail clients can collapse re-sends.
    const messageId = `<${alert.id}.${actionIndex}@${domain}>`;
    const replyTo = thread?.kind === "email" ? thread : null;
    try {
      await transport.sendMail({
        from: mailer.from,
        to: recipients,
        subject: replyTo ? `Re: ${replyTo.subject}` : msg.subject,
        text: msg.text,
        html: msg.html,
        messageId,
        headers: {
          "X-Chainsift-Alert-Id": alert.id,
          "X-Chainsift-Rule-Id": alert.ruleId,
          "X-Chainsift-Sequence": String(alert.sequence),
          ...(replyTo ? { "In-Reply-To": replyTo.messageId, References: replyTo.messageId } : {}),
        },
      });
      await rememberQuietly(posted, alert, actionIndex, { kind: "email", messageId, subject: msg.subject, at: new Date().toISOString() });
      return { ok: true, status: 250 };
    } catch (err) {
      return classifySmtpError(err);
    }
  }

  return {
    async prepare(alert, action, actionIndex) {
      const msg = renderAction(alert, action, messages) as RenderedEmail;
      if (!mailer || (!mailer.transport && !mailer.smtpUrl)) return UNCONFIGURED;
      const thread = alert.status === "removed" && posted ? await posted.get(alert, actionIndex) : null;
      return () => send(alert, msg, actionIndex, thread);
    },
    async prepareDigest(digest) {
      const r = (digest.action.parameters as { recipients?: unknown }).recipients;
      const recipients = Array.isArray(r) ? r.filter((x): x is string => typeof x === "string").map((x) => x.trim()) : [];
      if (recipients.length === 0 || !recipients.every(isEmailAddress)) {
        return {
          ok: false,
          attempts: 0,
          final: true,
          code: CS_ACTION_INVALID,
          error: "Email action needs a non-empty list of e-mail addresses in recipients",
        };
      }
      if (!mailer || (!mailer.transport && !mailer.smtpUrl)) return UNCONFIGURED;
      const msg = digestEmail(digest);
      return async () => {
        transport ??= createSmtpTransport(mailer.smtpUrl!, timeoutMs);
        const domain = /@([^>\s]+)>?\s*$/.exec(mailer.from)?.[1] ?? "chainsift.invalid";
        try {
          await transport.sendMail({
            from: mailer.from,
            to: recipients,
            ...msg,
            messageId: `<${digest.id}.${digest.actionIndex}@${domain}>`,
            headers: { "X-Chainsift-Digest-Id": digest.id, "X-Chainsift-Rule-Id": digest.ruleId },
          });
          return { ok: true, status: 250 };
        } catch (err) {
          return classifySmtpError(err);
        }
      };
    },
    async close() {
      transport?.close?.();
    },
  };
}
