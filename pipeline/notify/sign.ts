/**
 * Webhook signatures and per-account signing secrets.
 *
 * Every webhook and chat request carries `X-Chainsift-Signature: v1=<hex>` where `<hex>` is the
 * HMAC-SHA256 (RFC 2104, FIPS 180-4) of `<timestamp>.<signed content>` keyed with the account's
 * secret. The signed content is the request body for POST requests and the request target (path
 * and query, exactly as sent) for `Webhook (GET)`, which has no body. Receivers verify with
 * {@link verifyWebhookSignature}; see `docs/alerting-delivery.md` for a stand-alone snippet.
 *
 * Every request also carries the three headers of Standard Webhooks
 * (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
 * `webhook-id` (the alert id), `webhook-timestamp` (Unix seconds) and `webhook-signature`
 * (`v1,<base64 of HMAC-SHA256 of "<id>.<timestamp>.<signed content>">`, keyed with the base64
 * decoding of the secret after `whsec_`), so receivers can verify with the `standardwebhooks`
 * libraries (npm, PyPI, …) — {@link signStandardWebhook}.
 *
 * Secrets live in Redis under `<prefix>notify:secret:<accountId>` (string). Format:
 * `whsec_` + base64 (RFC 4648 §4, padded) of 32 random bytes, as Standard Webhooks expects; secrets
 * made before that used base64url (§5, unpadded), which {@link standardWebhookKey} reads too. The
 * `X-Chainsift-Signature` HMAC key is the UTF-8 bytes of the whole string.
 * @module
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Signature scheme version written before `=` in the signature header. */
export const SIGNATURE_SCHEME = "v1";
/** Default accepted clock difference between sender and receiver, in seconds (5 minutes). */
export const DEFAULT_TOLERANCE_SEC = 300;

/** Header names (lower-case, as node:http exposes them; HTTP header names are case-insensitive). */
export const HEADER = {
  alertId: "x-chainsift-alert-id",
  timestamp: "x-chainsift-timestamp",
  signature: "x-chainsift-signature",
  idempotencyKey: "idempotency-key",
  userAgent: "user-agent",
  /** Standard Webhooks: the message id (the alert id). */
  webhookId: "webhook-id",
  /** Standard Webhooks: Unix seconds (the same value as `x-chainsift-timestamp`). */
  webhookTimestamp: "webhook-timestamp",
  /** Standard Webhooks: `v1,<base64>` ({@link signStandardWebhook}). */
  webhookSignature: "webhook-signature",
} as const;

/** Prefix of Standard Webhooks secrets (and of chainsift's). */
export const SECRET_PREFIX = "whsec_";

/**
 * The Standard Webhooks HMAC key of a secret: the base64 decoding of what follows `whsec_`
 * (the whole string when it lacks the prefix). Node's base64 decoder also reads the URL-safe
 * alphabet and missing padding, so secrets created before the switch to padded base64 keep working
 * here; receivers' libraries need them in standard base64 (`-`→`+`, `_`→`/`, pad with `=`), or a
 * rotated secret.
 * @throws {RangeError} when the decoded key is empty.
 */
export function standardWebhookKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(b64, "base64");
  if (key.length === 0) throw new RangeError("webhook secret has an empty base64 key");
  return key;
}

/**
 * Signs as Standard Webhooks does: `"v1," + base64(HMAC-SHA256(key = standardWebhookKey(secret),
 * message = "<msgId>.<timestampSec>.<content>"))`.
 * @param msgId The `webhook-id` (chainsift sends the alert id).
 * @param timestampSec Unix time in whole seconds, sent as `webhook-timestamp`.
 * @param content The request body (POST), or the request target (path + query) for `Webhook (GET)`.
 * @returns e.g. `v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=`.
 * @throws {RangeError} when `timestampSec` is not a non-negative integer or the key is empty.
 */
export function signStandardWebhook(secret: string, msgId: string, timestampSec: number, content: string | Uint8Array): string {
  if (!Number.isSafeInteger(timestampSec) || timestampSec < 0)
    throw new RangeError(`timestampSec must be a non-negative integer, got ${timestampSec}`);
  const mac = createHmac("sha256", standardWebhookKey(secret));
  mac.update(`${msgId}.${timestampSec}.`, "utf8");
  mac.update(typeof content === "string" ? Buffer.from(content, "utf8") : content);
  return `v1,${mac.digest("base64")}`;
}

/**
 * The string that is signed: `${timestampSec}.${content}` (content as UTF-8 when given as text).
 * @param timestampSec Unix time in whole seconds.
 */
function signedBytes(timestampSec: number, content: string | Uint8Array): Buffer {
  const prefix = Buffer.from(`${timestampSec}.`, "utf8");
  return Buffer.concat([prefix, typeof content === "string" ? Buffer.from(content, "utf8") : content]);
}

/**
 * Signs a webhook: `"v1=" + hex(HMAC-SHA256(key = secret, message = `${timestampSec}.${body}`))`
 * (RFC 2104 HMAC with SHA-256).
 * @param secret The account's signing secret (its UTF-8 bytes are the key), or raw key bytes.
 * @param timestampSec Unix time in whole seconds, also sent as `X-Chainsift-Timestamp`.
 * @param body The signed content: the exact request body bytes (POST), or the request target
 *   (path + query, e.g. `/hook?tx=0xab`) for `Webhook (GET)`.
 * @returns e.g. `v1=5257a869e7…` (64 lower-case hex digits after `v1=`).
 * @throws {RangeError} when `timestampSec` is not a non-negative integer.
 */
export function signWebhook(secret: string | Uint8Array, timestampSec: number, body: string | Uint8Array): string {
  if (!Number.isSafeInteger(timestampSec) || timestampSec < 0)
    throw new RangeError(`timestampSec must be a non-negative integer, got ${timestampSec}`);
  const mac = createHmac("sha256", typeof secret === "string" ? Buffer.from(secret, "utf8") : secret);
  mac.update(signedBytes(timestampSec, body));
  return `${SIGNATURE_SCHEME}=${mac.digest("hex")}`;
}

/** Input of {@link webhookHeaders}. */
export interface WebhookHeaderInput {
  /** {@link Alert.id}: sent as `X-Chainsift-Alert-Id` and `Idempotency-Key`. */
  alertId: string;
  /** The account's signing secret. */
  secret: string;
  /** Unix time in whole seconds (taken fresh for every attempt, so retries are not stale). */
  timestampSec: number;
  /** The signed content (see {@link signWebhook}). */
  signedContent: string | Uint8Array;
  /** Value of `User-Agent`, e.g. `chainsift-notify/0.1.0`. */
  userAgent: string;
}

/**
 * The headers of every webhook and chat request: `X-Chainsift-Alert-Id`, `Idempotency-Key` (both
 * the alert id), `X-Chainsift-Timestamp` (Unix seconds), `X-Chainsift-Signature` (`v1=<hex>`),
 * the Standard Webhooks `webhook-id` (the alert id), `webhook-timestamp` (the same seconds) and
 * `webhook-signature` (`v1,<base64>`), and `User-Agent`. `Content-Type` is added by the deliverer
 * for bodies.
 */
export function webhookHeaders(input: WebhookHeaderInput): Record<string, string> {
  return {
    [HEADER.alertId]: input.alertId,
    [HEADER.idempotencyKey]: input.alertId,
    [HEADER.timestamp]: String(input.timestampSec),
    [HEADER.signature]: signWebhook(input.secret, input.timestampSec, input.signedContent),
    [HEADER.webhookId]: input.alertId,
    [HEADER.webhookTimestamp]: String(input.timestampSec),
    [HEADER.webhookSignature]: signStandardWebhook(input.secret, input.alertId, input.timestampSec, input.signedContent),
    [HEADER.userAgent]: input.userAgent,
  };
}

/** Why {@link verifyWebhookSignature} refused a request. */
export type VerifyFailure = "missing-header" | "malformed-timestamp" | "stale-timestamp" | "malformed-signature" | "mismatch";

/** Outcome of {@link verifyWebhookSignature}. */
export type VerifyResult = { ok: true; timestampSec: number } | { ok: false; reason: VerifyFailure };

/** Request headers in any of the usual shapes: node:http `IncomingHttpHeaders`, a plain record, or a WHATWG `Headers`. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const rec = headers as Record<string, string | string[] | undefined>;
  let v = rec[name];
  if (v === undefined) {
    const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : rec[key];
  }
  return Array.isArray(v) ? v.join(",") : v;
}

/**
 * Verifies a received webhook (for receivers and tests). Checks, in order: both headers present;
 * the timestamp is an integer within `toleranceSec` of `nowSec` (either direction, to bound replays
 * while allowing clock skew); one of the `v1=` signatures in the header equals the HMAC of
 * `${timestamp}.${body}` under one of the given secrets (constant-time comparison).
 *
 * @param secret The account's secret, or several (e.g. old and new around a rotation).
 * @param headers Request headers (names case-insensitive).
 * @param body The exact raw request body (POST), or the request target `req.url` (GET). Parse the
 *   JSON only after verifying: re-serialising changes the bytes.
 * @param toleranceSec Largest accepted |now − timestamp|, in seconds. Default 300.
 * @param nowSec Current Unix time in seconds (default the system clock).
 */
export function verifyWebhookSignature(
  secret: string | readonly string[],
  headers: HeaderSource,
  body: string | Uint8Array,
  toleranceSec: number = DEFAULT_TOLERANCE_SEC,
  nowSec: number = Math.floor(Date.now() / 1000),
): VerifyResult {
  const ts = header(headers, HEADER.timestamp);
  const sig = header(headers, HEADER.signature);
  if (ts === undefined || sig === undefined) return { ok: false, reason: "missing-header" };
  if (!/^\d{1,15}$/.test(ts.trim())) return { ok: false, reason: "malformed-timestamp" };
  const timestampSec = Number(ts.trim());
  if (Math.abs(nowSec - timestampSec) > toleranceSec) return { ok: false, reason: "stale-timestamp" };
  const given = sig
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.startsWith(`${SIGNATURE_SCHEME}=`))
    .map((s) => s.slice(SIGNATURE_SCHEME.length + 1))
    .filter((hex) => /^[0-9a-f]{64}$/i.test(hex))
    .map((hex) => Buffer.from(hex, "hex"));
  if (given.length === 0) return { ok: false, reason: "malformed-signature" };
  const secrets = typeof secret === "string" ? [secret] : secret;
  let match = false;
  for (const s of secrets) {
    const expected = Buffer.from(signWebhook(s, timestampSec, body).slice(SIGNATURE_SCHEME.length + 1), "hex");
    for (const g of given) if (timingSafeEqual(expected, g)) match = true;
  }
  return match ? { ok: true, timestampSec } : { ok: false, reason: "mismatch" };
}

/**
 * Creates a new signing secret: `whsec_` + base64 (RFC 4648 §4, padded: 44 characters) of 32 bytes
 * from the OS CSPRNG — the Standard Webhooks secret format, which its libraries decode.
 */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

/**
 * The Redis commands the secret store uses: a structural subset of a node-redis v5 client
 * (`createClient()` from `redis`), so such a client, or a test double, can be passed.
 */
export interface SecretRedis {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options?: { condition?: "NX" }): Promise<string | null>;
}

/** Dependencies of {@link createSecretStore}. */
export interface SecretStoreDeps {
  /** A connected Redis client; the store does not close it. */
  redis: SecretRedis;
  /** Prepended to every key (config `redisKeyPrefix`, e.g. `cs:`); tests use a unique one. */
  keyPrefix: string;
}

/** Per-account webhook signing secrets. */
export interface SecretStore {
  /** The account's secret, or null when none was created yet. */
  get(accountId: string): Promise<string | null>;
  /** The account's secret, creating it atomically (SET NX) on first use; concurrent callers get the same one. */
  getOrCreate(accountId: string): Promise<string>;
  /**
   * Replaces the account's secret with a new one and returns it. Takes effect for the next signed
   * request; receivers should accept both the old and the new secret until they have switched
   * (`verifyWebhookSignature` takes an array).
   */
  rotate(accountId: string): Promise<string>;
}

/** Redis key of an account's secret. */
export function secretKey(keyPrefix: string, accountId: string): string {
  return `${keyPrefix}notify:secret:${accountId}`;
}

/** Creates the Redis-backed {@link SecretStore}. Secrets are never cached in process, so a rotation is seen at once. */
export function createSecretStore(deps: SecretStoreDeps): SecretStore {
  const { redis, keyPrefix } = deps;
  return {
    get: (accountId) => redis.get(secretKey(keyPrefix, accountId)),
    async getOrCreate(accountId) {
      const key = secretKey(keyPrefix, accountId);
      const existing = await redis.get(key);
      if (existing !== null) return existing;
      await redis.set(key, generateSecret(), { condition: "NX" });
      const stored = await redis.get(key);
      if (stored === null) throw new Error(`webhook secret of account ${accountId} vanished right after creation`);
      return stored;
    },
    async rotate(accountId) {
      const secret = generateSecret();
      await redis.set(secretKey(keyPrefix, accountId), secret);
      return secret;
    },
  };
}
