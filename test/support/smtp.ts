/**
 * A local SMTP receiver for tests: smtp-server on 127.0.0.1 (a free port, no TLS, no auth) that
 * parses every message with mailparser's `simpleParser` and records it. A queue of reply codes
 * lets a test make the next RCPT TO commands fail (temporarily or permanently).
 * @module
 */
import type { AddressInfo } from "node:net";
import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

/** One mail received by the local SMTP server, parsed. */
export interface ReceivedMail {
  /** SMTP envelope `MAIL FROM` address (empty for a null sender). */
  envelopeFrom: string;
  /** SMTP envelope `RCPT TO` addresses. */
  envelopeTo: string[];
  /** `From:` header as text. */
  from: string;
  /** `To:` header(s) as text, joined with `, `. */
  to: string;
  subject: string;
  text: string;
  /** The HTML body, or `""` when there is none. */
  html: string;
  headers: Map<string, unknown>;
  messageId: string | undefined;
}

/** A running {@link startSmtpReceiver}. */
export interface SmtpReceiver {
  /** `smtp://127.0.0.1:<port>`. */
  url: string;
  /** Mails received so far, in order of arrival. */
  mails: ReceivedMail[];
  /**
   * Reply codes for the next RCPT TO commands, used in turn: a code of 500 or more rejects the
   * recipient permanently, a lower one temporarily; when empty, recipients are accepted.
   */
  rcptReplies: number[];
  /** Stops the server. */
  close(): Promise<void>;
}

/** Options of {@link startSmtpReceiver}. */
export interface SmtpReceiverOptions {
  /** Initial content of {@link SmtpReceiver.rcptReplies} (default: none). */
  rcptReplies?: number[];
}

/** Starts a local SMTP server on 127.0.0.1 (a free port) that records the mails it receives. */
export async function startSmtpReceiver(opts: SmtpReceiverOptions = {}): Promise<SmtpReceiver> {
  const mails: ReceivedMail[] = [];
  const rcptReplies: number[] = [...(opts.rcptReplies ?? [])];
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      const code = rcptReplies.shift();
      if (code) return callback(Object.assign(new Error(code >= 500 ? "no such mailbox" : "try again later"), { responseCode: code }));
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((m) => {
          mails.push({
            envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            from: m.from?.text ?? "",
            to: Array.isArray(m.to) ? m.to.map((t) => t.text).join(", ") : (m.to?.text ?? ""),
            subject: m.subject ?? "",
            text: m.text ?? "",
            html: typeof m.html === "string" ? m.html : "",
            headers: m.headers as Map<string, unknown>,
            messageId: m.messageId,
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    rcptReplies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
