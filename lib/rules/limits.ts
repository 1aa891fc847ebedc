/**
 * Limits and patterns of a rule (contract "Limits", plus chainsift's bounds) and the URL grammar
 * the rule schema (`lib/rules/schema.ts`, which re-exports what it always exported) validates
 * URLs with. Pure data; no imports.
 * @module
 */

// ---------------------------------------------------------------------------------------------
// Limits and patterns
// ---------------------------------------------------------------------------------------------

/** Size limits of a rule (contract "Limits", plus the bounds chainsift adds for nested arrays). */
export const RULE_LIMITS = {
  /** targetMap items: 1 to 10 (contract). */
  targetMapMin: 1,
  targetMapMax: 10,
  /** alerts: 1 to 10 (contract). */
  alertsMin: 1,
  alertsMax: 10,
  /** payload items per alert: at most 10 (contract). */
  payloadMax: 10,
  /** Items of an Inspect's operatorParameters: 1 to 10 (chainsift; the contract gives no bound). */
  operatorParametersMin: 1,
  operatorParametersMax: 10,
  /** Items of a Sub Field's subPayloads: 1 to 10 (chainsift; the contract gives no bound). */
  subPayloadsMin: 1,
  subPayloadsMax: 10,
  /** Longest e-mail address (RFC 5321 path limit), in characters. */
  emailMaxLength: 254,
  /** Recipients of one Email alert: 1 to 50 (chainsift: one alert never mails a crowd). */
  recipientsMax: 50,
  /** Longest rule `name`, in characters (Unicode code points, like JSON Schema `maxLength`). */
  nameMaxLength: 256,
  /** Longest rule `description`, in characters. */
  descriptionMaxLength: 4096,
  /** Longest target-definition `name` (an attribute path), at every level, in characters; it must not be empty either. */
  definitionNameMaxLength: 256,
  /** Longest `value` string, and longest element of an Equals any `value`, in characters. */
  valueMaxLength: 1024,
  /** Longest webhook or Slack `url`, in characters (what common HTTP stacks accept in a request line). */
  urlMaxLength: 2048,
  /** Longest Slack `text`, in characters (Slack truncates longer messages). */
  slackTextMaxLength: 4000,
  /** Longest Slack `channel` and `username`, and Discord `username`, in characters. */
  slackNameMaxLength: 256,
  /** Longest message template (`parameters.template` of Slack, Discord, Telegram and Email), in characters. */
  templateMaxLength: 4000,
  /** Longest e-mail subject template (`parameters.subject`), in characters. */
  subjectMaxLength: 250,
  /** Longest payload `fieldName`, at every level, in characters. */
  fieldNameMaxLength: 256,
  /** Additional top-level properties of a rule (besides the fields of {@link RULE_FIELDS}): at most 20. */
  extraPropertiesMax: 20,
  /** Size of the additional top-level properties together, as the UTF-8 bytes of the JSON object holding only them: at most 16 KiB. */
  extraPropertiesMaxBytes: 16 * 1024,
  /** Largest POST or PUT body of a rule, in bytes (the routes' `bodyLimit`; larger: 413 `CS_RULE_TOO_LARGE`). */
  bodyMaxBytes: 64 * 1024,
} as const;

/**
 * Top-level fields a rule has besides its additional properties: the contract's fields and the
 * service-managed ones. Everything else at the top level is an additional property (limited by
 * {@link RULE_LIMITS}`.extraPropertiesMax` and `.extraPropertiesMaxBytes`).
 */
export const RULE_FIELDS: readonly string[] = [
  "name",
  "maxConfirmationCount",
  "technology",
  "blockchain",
  "network",
  "config",
  "description",
  "version",
  "state",
  "sendPendingAlerts",
  "id",
  "accountId",
  "createdAt",
  "updatedAt",
];

// The URL grammar, built from parts so it can be read. Every string it matches parses with the
// WHATWG URL parser (`new URL`), which is what delivery uses: a test fuzzes this with strings
// generated from the pattern. No look-arounds, so schema-driven generators can use it.
/** A character of a host label (WHATWG hosts allow `_`; hyphens anywhere: CheckHyphens is off). */
const LABEL_CHAR = "[A-Za-z0-9_-]";
/**
 * A host label that does not start with the IDNA prefix `xn--` (any case): the URL parser decodes
 * such labels as Punycode and refuses most of them. `first` is the class of the first character
 * when it is not an `x`.
 */
const notPunycodeLabel = (first: string) =>
  `(?:${first}${LABEL_CHAR}*|[Xx](?:[A-MO-Za-mo-z0-9_-]${LABEL_CHAR}*)?|[Xx][Nn](?:[A-Za-z0-9_]${LABEL_CHAR}*)?|[Xx][Nn]-(?:[A-Za-z0-9_]${LABEL_CHAR}*)?)`;
/** A registered name: dot-separated labels, the last one starting with a letter (else the parser reads an IPv4 number). */
/** Part of the URL grammar (also the host of a Kafka broker, {@link KAFKA_BROKER_PATTERN} of lib/rules/schema.ts). */
export const REG_NAME = `(?:${notPunycodeLabel("[A-WYZa-wyz0-9_-]")}\\.)*${notPunycodeLabel("[A-WYZa-wyz]")}`;
const DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
/** Part of the URL grammar (also the host of a Kafka broker, {@link KAFKA_BROKER_PATTERN} of lib/rules/schema.ts). */
export const IPV4 = `(?:${DEC_OCTET}\\.){3}${DEC_OCTET}`;
const H16 = "[0-9A-Fa-f]{1,4}";
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** RFC 3986 `IPv6address` (no zone id). */
/** Part of the URL grammar (also the host of a Kafka broker, {@link KAFKA_BROKER_PATTERN} of lib/rules/schema.ts). */
export const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].join("|");
const PORT = "(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
/** RFC 3986 user info characters (no `{}`: no templates). */
const USERINFO = "[A-Za-z0-9._~!$&'()*+,;=:%-]*@";

/**
 * URLs accepted for webhooks and Slack: `http://` or `https://` (scheme in any case), optional user
 * info, a host (a registered name, an IPv4 address or a bracketed IPv6 address), an optional port
 * (0–65535), then optionally a path, query or fragment without whitespace. `{field}` tokens (replaced
 * by the matched entity's values at delivery) are allowed only after the host and port, in the
 * path, query and fragment: a `{` or `}` in the scheme, user info, host or port is refused, so a
 * token can never choose the server a webhook calls. Whether the host may be called (SSRF: private
 * addresses, metadata endpoints) is decided at delivery time.
 */
export const HTTP_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://(?:${USERINFO})?(?:${REG_NAME}|${IPV4}|\\[(?:${IPV6})\\])(?::${PORT})?(?:[/?#]\\S*)?$`;

/** Operators whose value is a string (every operator but Inspect and the two Equals any). */
