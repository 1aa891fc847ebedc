/** Unit tests of webhook signing and verification, and of the secret store against an in-memory Redis double. */
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  createSecretStore,
  generateSecret,
  type SecretRedis,
  secretKey,
  signStandardWebhook,
  signWebhook,
  standardWebhookKey,
  verifyWebhookSignature,
  webhookHeaders,
} from "../../../../pipeline/notify/sign.js";

const SECRET = "whsec_test-secret";
const BODY = '{"id":"abc","sequence":1}';
const TS = 1_767_323_045;

describe("signWebhook", () => {
  it("is v1= + hex HMAC-SHA256 of <timestamp>.<body> (independent computation)", () => {
    const expected = createHmac("sha256", SECRET).update(`${TS}.${BODY}`).digest("hex");
    expect(signWebhook(SECRET, TS, BODY)).toBe(`v1=${expected}`);
    expect(signWebhook(SECRET, TS, Buffer.from(BODY))).toBe(`v1=${expected}`);
  });

  it("matches a vector computed with openssl (docs/alerting-delivery.md uses it)", () => {
    // printf '%s' '1767323045.{"id":"abc","sequence":1}' | openssl dgst -sha256 -hmac 'whsec_test-secret'
    expect(signWebhook(SECRET, TS, BODY)).toBe("v1=51ce8b86ac01a40ffecbc2421745c0d04823ddc4ec64fdc850b19d5ea3f79ba7");
  });

  it("rejects a non-integer timestamp", () => {
    expect(() => signWebhook(SECRET, 1.5, BODY)).toThrow(RangeError);
  });
});

describe("signStandardWebhook (Standard Webhooks)", () => {
  it("matches the specification's example (secret, msg id, timestamp, payload from the spec)", () => {
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md (signature scheme example)
    const sig = signStandardWebhook(
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      "msg_p5jXN8AQM9LWM0D4loKWxJek",
      1614265330,
      '{"test": 2432232314}',
    );
    expect(sig).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("verifies with the official standardwebhooks library for a new secret", () => {
    const secret = generateSecret();
    const headers = webhookHeaders({ alertId: "a1", secret, timestampSec: TS, signedContent: BODY, userAgent: "x" });
    const wh = new Webhook(secret);
    // the library checks the timestamp against its clock: use its own signing as the oracle
    expect(headers["webhook-signature"]).toBe(wh.sign("a1", new Date(TS * 1000), BODY));
    const fresh = Math.floor(Date.now() / 1000);
    const now = webhookHeaders({ alertId: "a1", secret, timestampSec: fresh, signedContent: BODY, userAgent: "x" });
    expect(wh.verify(BODY, now)).toEqual(JSON.parse(BODY));
    expect(() => wh.verify(`${BODY} `, now)).toThrow();
  });

  it("reads secrets made before the switch (base64url, unpadded) as the same key", () => {
    const bytes = Buffer.from("00ff".repeat(16), "hex");
    expect(standardWebhookKey(`whsec_${bytes.toString("base64url")}`)).toEqual(bytes);
    expect(standardWebhookKey(`whsec_${bytes.toString("base64")}`)).toEqual(bytes);
    expect(() => standardWebhookKey("whsec_")).toThrow(RangeError);
  });
});

describe("webhookHeaders + verifyWebhookSignature", () => {
  const headers = webhookHeaders({
    alertId: "abc",
    secret: SECRET,
    timestampSec: TS,
    signedContent: BODY,
    userAgent: "chainsift-notify/0.1.0",
  });

  it("sends the alert id twice, the timestamp, the signature and the user agent", () => {
    expect(headers).toEqual({
      "x-chainsift-alert-id": "abc",
      "idempotency-key": "abc",
      "x-chainsift-timestamp": String(TS),
      "x-chainsift-signature": signWebhook(SECRET, TS, BODY),
      "webhook-id": "abc",
      "webhook-timestamp": String(TS),
      "webhook-signature": signStandardWebhook(SECRET, "abc", TS, BODY),
      "user-agent": "chainsift-notify/0.1.0",
    });
  });

  it("accepts the genuine request (plain record, mixed-case names, WHATWG Headers)", () => {
    expect(verifyWebhookSignature(SECRET, headers, BODY, 300, TS + 10)).toEqual({ ok: true, timestampSec: TS });
    const mixed = { "X-Chainsift-Timestamp": String(TS), "X-Chainsift-Signature": headers["x-chainsift-signature"] };
    expect(verifyWebhookSignature(SECRET, mixed, BODY, 300, TS).ok).toBe(true);
    expect(verifyWebhookSignature(SECRET, new Headers(headers), Buffer.from(BODY), 300, TS).ok).toBe(true);
  });

  it("refuses a tampered body, a wrong secret, a stale or future timestamp", () => {
    expect(verifyWebhookSignature(SECRET, headers, BODY.replace("1", "2"), 300, TS)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyWebhookSignature("whsec_other", headers, BODY, 300, TS)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyWebhookSignature(SECRET, headers, BODY, 300, TS + 301)).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(verifyWebhookSignature(SECRET, headers, BODY, 300, TS - 301)).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(verifyWebhookSignature(SECRET, headers, BODY, 300, TS + 300).ok).toBe(true);
  });

  it("refuses a replay with a new timestamp but the old signature", () => {
    const replay = { ...headers, "x-chainsift-timestamp": String(TS + 100) };
    expect(verifyWebhookSignature(SECRET, replay, BODY, 300, TS + 100)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("reports missing and malformed headers", () => {
    expect(verifyWebhookSignature(SECRET, {}, BODY, 300, TS)).toEqual({ ok: false, reason: "missing-header" });
    expect(verifyWebhookSignature(SECRET, { ...headers, "x-chainsift-timestamp": "soon" }, BODY, 300, TS)).toEqual({
      ok: false,
      reason: "malformed-timestamp",
    });
    expect(verifyWebhookSignature(SECRET, { ...headers, "x-chainsift-signature": "v0=abc" }, BODY, 300, TS)).toEqual({
      ok: false,
      reason: "malformed-signature",
    });
  });

  it("accepts any of several secrets (rotation) and any of several v1 signatures", () => {
    expect(verifyWebhookSignature(["whsec_new", SECRET], headers, BODY, 300, TS).ok).toBe(true);
    const two = { ...headers, "x-chainsift-signature": `v1=${"0".repeat(64)}, ${headers["x-chainsift-signature"]}` };
    expect(verifyWebhookSignature(SECRET, two, BODY, 300, TS).ok).toBe(true);
  });
});

describe("createSecretStore", () => {
  function memoryRedis(): SecretRedis & { data: Map<string, string> } {
    const data = new Map<string, string>();
    return {
      data,
      async get(k) {
        return data.get(k) ?? null;
      },
      async set(k, v, o) {
        if (o?.condition === "NX" && data.has(k)) return null;
        data.set(k, v);
        return "OK";
      },
    };
  }

  it("creates a 32-byte secret once, returns it afterwards, and rotates it", async () => {
    const redis = memoryRedis();
    const store = createSecretStore({ redis, keyPrefix: "t:" });
    expect(await store.get("acc")).toBeNull();
    const [a, b] = await Promise.all([store.getOrCreate("acc"), store.getOrCreate("acc")]);
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), "base64")).toHaveLength(32);
    expect(b).toBe(a);
    expect(redis.data.get(secretKey("t:", "acc"))).toBe(a);
    const rotated = await store.rotate("acc");
    expect(rotated).not.toBe(a);
    expect(await store.getOrCreate("acc")).toBe(rotated);
    expect(await store.getOrCreate("other")).not.toBe(rotated);
  });
});
