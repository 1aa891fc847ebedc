/**
 * The one e-mail address syntax of chainsift, used for account contacts (`lib/accounts/model.ts`),
 * rule recipients (`lib/rules/validate.ts`, and the published rule schema's `pattern`) and the
 * notify stage's Email channel.
 * @module
 */

/**
 * `local@domain.tld`: no whitespace, exactly one `@`, a domain of at least two non-empty
 * dot-separated labels. Deliberately loose: deliverability is decided by the mail server, not by a
 * regex (RFC 5321 §4.1.2 allows far more than any short pattern can say).
 */
export const EMAIL_PATTERN = "^[^\\s@]+@[^\\s@.]+(\\.[^\\s@.]+)+$";

/** Longest address, in characters (RFC 5321 §4.5.3.1.3: a path is at most 256 octets including `<>`). */
export const MAX_EMAIL_LENGTH = 254;

const EMAIL_RE = new RegExp(EMAIL_PATTERN, "u");

/**
 * Whether `s` matches {@link EMAIL_PATTERN} and is at most {@link MAX_EMAIL_LENGTH} characters,
 * counted as Unicode code points like the `maxLength` of the published rule schema (an emoji is one
 * character, two UTF-16 code units).
 */
export function isEmailAddress(s: string): boolean {
  const short = s.length <= MAX_EMAIL_LENGTH || (s.length <= 2 * MAX_EMAIL_LENGTH && [...s].length <= MAX_EMAIL_LENGTH);
  return short && EMAIL_RE.test(s);
}
