/**
 * Unit tests of delivery: the pure retry loop and its classifiers, then the deliverer against
 * undici's MockAgent (no sockets) and a fake mail transport, with a fake sleep that records waits.
 */
import { errors, MockAgent } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import {
  type AttemptOutcome,
  classifyHttpStatus,
  classifySmtpError,
  createDeliverer,
  type Deliverer,
  type DelivererDeps,
  type MailTransport,
  type OutgoingMail,
  parseRetryAfter,
  retryDelayMs,
  runWithRetry,
  USER_AGENT,
} from "../../../../pipeline/notify/deliver.js";
import { verifyWebhookSignature } from "../../../../pipeline/notify/sign.js";
import { sampleAlert, TX_HASH } from "./fixtures.js";

const POLICY = { maxAttempts: 8, baseDelayMs: 500, maxDelayMs: 60_000 };
const NOW = new Date("2026-01-02T03:04:05.000Z");

describe("retryDelayMs / parseRetryAfter", () => {
  it("draws full jitter below an exponentially growing, capped ceiling", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, POLICY, undefined, () => 0.999999))).toEqual([499, 999, 1999, 3999]);
    expect(retryDelayMs(20, POLICY, undefined, () => 0.999999)).toBe(59_999);
    expect(retryDelayMs(3, POLICY, undefined, () => 0)).toBe(0);
  });

  it("waits at least Retry-After, capped at maxDelayMs", () => {
    expect(retryDelayMs(1, POLICY, 2000, () => 0)).toBe(2000);
    expect(retryDelayMs(1, POLICY, 3_600_000, () => 0)).toBe(60_000);
  });

  it("parses delay-seconds and HTTP-dates (RFC 9110 §10.2.3)", () => {
    const now = NOW.getTime();
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Fri, 02 Jan 2026 03:04:35 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Friday, 02-Jan-26 03:04:15 GMT", now)).toBe(10_000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("-1", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("classifies HTTP statuses", () => {
    const now = NOW.getTime();
    expect(classifyHttpStatus(204, undefined, now)).toEqual({ ok: true, status: 204 });
    for (const s of [408, 429, 500, 502, 503, 504])
      expect(classifyHttpStatus(s, undefined, now)).toMatchObject({ ok: false, retryable: true });
    for (const s of [301, 400, 401, 403, 404, 410, 422])
      expect(classifyHttpStatus(s, undefined, now)).toMatchObject({ ok: false, retryable: false, code: "CS_DELIVERY_REJECTED" });
    expect(classifyHttpStatus(429, "7", now)).toMatchObject({ retryAfterMs: 7000 });
  });

  it("classifies SMTP errors: 4xx temporary, 5xx permanent, auth and connection retryable", () => {
    expect(classifySmtpError(Object.assign(new Error("x"), { responseCode: 451, response: "451 4.7.1 try later" }))).toMatchObject({
      retryable: true,
      code: "CS_SMTP_TEMPORARY",
      status: 451,
    });
    expect(classifySmtpError(Object.assign(new Error("x"), { responseCode: 550, response: "550 5.1.1 no such user" }))).toMatchObject({
      retryable: false,
      code: "CS_SMTP_REJECTED",
      status: 550,
    });
    expect(classifySmtpError(Object.assign(new Error("x"), { code: "EAUTH", responseCode: 535 }))).toMatchObject({
      retryable: true,
      code: "CS_SMTP_TEMPORARY",
    });
    expect(classifySmtpError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ESOCKET" }))).toMatchObject({
      retryable: true,
      code: "CS_DELIVERY_NETWORK",
    });
    expect(classifySmtpError(Object.assign(new Error("Timeout"), { code: "ETIMEDOUT" }))).toMatchObject({
      retryable: true,
      code: "CS_DELIVERY_TIMEOUT",
    });
    expect(classifySmtpError(Object.assign(new Error("No recipients defined"), { code: "EENVELOPE" }))).toMatchObject({
      retryable: false,
      code: "CS_ACTION_INVALID",
    });
  });
});

describe("runWithRetry", () => {
  const script = (outcomes: (AttemptOutcome | Error)[]) => {
    const calls: number[] = [];
    return {
      calls,
      attempt: async (n: number) => {
        calls.push(n);
        const o = outcomes[Math.min(n - 1, outcomes.length - 1)]!;
        if (o instanceof Error) throw o;
        return o;
      },
    };
  };
  const fail = (status: number, retryAfterMs?: number): AttemptOutcome =>
    ({ ...classifyHttpStatus(status, undefined, 0), ...(retryAfterMs ? { retryAfterMs } : {}) }) as AttemptOutcome;

  it("stops at the first success and sleeps between attempts only", async () => {
    const sleeps: number[] = [];
    const s = script([fail(500), fail(500), { ok: true, status: 200 }]);
    const r = await runWithRetry(s.attempt, POLICY, { sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 });
    expect(r).toEqual({ ok: true, attempts: 3, final: true, status: 200 });
    expect(s.calls).toEqual([1, 2, 3]);
    expect(sleeps).toEqual([250, 500]);
  });

  it("treats a thrown error as retryable and exhausts the budget", async () => {
    const sleeps: number[] = [];
    const s = script([new Error("socket hang up")]);
    const r = await runWithRetry(s.attempt, { ...POLICY, maxAttempts: 4 }, { sleep: async (ms) => void sleeps.push(ms), random: () => 0 });
    expect(r).toMatchObject({ ok: false, final: false, attempts: 4, code: "CS_DELIVERY_EXHAUSTED" });
    expect(r.error).toContain("socket hang up");
    expect(sleeps).toHaveLength(3);
  });

  it("returns a final failure at once", async () => {
    const s = script([fail(410)]);
    expect(await runWithRetry(s.attempt, POLICY, { sleep: async () => {} })).toMatchObject({
      ok: false,
      final: true,
      attempts: 1,
      status: 410,
      code: "CS_DELIVERY_REJECTED",
    });
  });
});

/**
 * Deliverer over a MockAgent; the receiver is the documentation address 203.0.113.10 (RFC 5737),
 * allowlisted: the SSRF guard refuses documentation ranges like every special-purpose range.
 */
describe("createDeliverer (MockAgent)", () => {
  const ORIGIN = "http://203.0.113.10";
  const SECRET = "whsec_unit";
  let mock: MockAgent;
  let sleeps: number[];
  let deliverer: Deliverer;
  let mails: OutgoingMail[];

  const make = (over: Partial<DelivererDeps> = {}) =>
    createDeliverer({
      dispatcher: mock,
      secrets: { getOrCreate: async () => SECRET },
      sleep: async (ms) => void sleeps.push(ms),
      random: () => 0.5,
      now: () => NOW,
      resolve: async (host) => (host === "hooks.slack.example" ? [{ address: "203.0.113.20", family: 4 }] : []),
      allowlist: ["203.0.113.0/24"],
      ...over,
    });

  beforeEach(() => {
    mock = new MockAgent();
    mock.disableNetConnect();
    sleeps = [];
    mails = [];
    deliverer = make();
  });
  afterEach(async () => {
    await deliverer.close();
    await mock.close();
  });

  const post: AlertDefinition = { type: "Webhook (POST)", parameters: { url: `${ORIGIN}/hook?token=abc` } };
  const alert = sampleAlert({ actions: [post] });

  it("POST: 500 → 500 → 200 is delivered on the 3rd attempt, signed, with the JSON body", async () => {
    const seen: { headers: Record<string, string>; body: string }[] = [];
    const pool = mock.get(ORIGIN);
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply(500, "boom").times(2);
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply((o) => {
      seen.push({ headers: o.headers as Record<string, string>, body: String(o.body) });
      return { statusCode: 200, data: "ok" };
    });
    const r = await deliverer.deliver(alert, post, 0);
    expect(r).toEqual({ ok: true, attempts: 3, final: true, status: 200, destination: `${ORIGIN}/hook?…` });
    expect(sleeps).toEqual([250, 500]);
    const { headers, body } = seen[0]!;
    expect(JSON.parse(body)).toMatchObject({ id: alert.id, sequence: 42, status: "confirmed" });
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["idempotency-key"]).toBe(alert.id);
    expect(headers["x-chainsift-alert-id"]).toBe(alert.id);
    expect(headers["user-agent"]).toBe(USER_AGENT);
    expect(headers["x-chainsift-timestamp"]).toBe(String(NOW.getTime() / 1000));
    expect(verifyWebhookSignature(SECRET, headers, body, 300, NOW.getTime() / 1000).ok).toBe(true);
  });

  it("404 is final after one attempt, with the start of the response body", async () => {
    mock.get(ORIGIN).intercept({ path: "/hook?token=abc", method: "POST" }).reply(404, "no such hook");
    const r = await deliverer.deliver(alert, post, 0);
    expect(r).toMatchObject({
      ok: false,
      final: true,
      attempts: 1,
      status: 404,
      code: "CS_DELIVERY_REJECTED",
      error: "HTTP 404: no such hook",
    });
    expect(sleeps).toEqual([]);
  });

  it("429 with Retry-After: 2 waits at least 2000 ms", async () => {
    const pool = mock.get(ORIGIN);
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply(429, "slow down", { headers: { "retry-after": "2" } });
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply(200, "ok");
    const r = await deliverer.deliver(alert, post, 0);
    expect(r).toMatchObject({ ok: true, attempts: 2 });
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(2000);
  });

  it("503 with an HTTP-date Retry-After waits until that date", async () => {
    const pool = mock.get(ORIGIN);
    pool
      .intercept({ path: "/hook?token=abc", method: "POST" })
      .reply(503, "", { headers: { "retry-after": "Fri, 02 Jan 2026 03:04:15 GMT" } });
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply(202, "");
    expect(await deliverer.deliver(alert, post, 0)).toMatchObject({ ok: true, attempts: 2, status: 202 });
    expect(sleeps).toEqual([10_000]);
  });

  it("a timeout is retried", async () => {
    const pool = mock.get(ORIGIN);
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).replyWithError(new errors.HeadersTimeoutError());
    pool.intercept({ path: "/hook?token=abc", method: "POST" }).reply(200, "ok");
    expect(await deliverer.deliver(alert, post, 0)).toMatchObject({ ok: true, attempts: 2 });
    expect(sleeps).toHaveLength(1);
  });

  it("gives up with CS_DELIVERY_EXHAUSTED (final: false) after maxAttempts", async () => {
    await deliverer.close();
    deliverer = make({ retry: { maxAttempts: 3 } });
    mock.get(ORIGIN).intercept({ path: "/hook?token=abc", method: "POST" }).reply(502, "bad gateway").persist();
    const r = await deliverer.deliver(alert, post, 0);
    expect(r).toMatchObject({ ok: false, final: false, attempts: 3, status: 502, code: "CS_DELIVERY_EXHAUSTED" });
    expect(r.error).toContain("HTTP 502");
    expect(sleeps).toHaveLength(2);
  });

  it("GET: fills URL tokens and signs the request target", async () => {
    const get: AlertDefinition = { type: "Webhook (GET)", parameters: { url: `${ORIGIN}/t/{transactionHash}?m={memo}` } };
    let seen: { path: string; headers: Record<string, string> } | undefined;
    mock
      .get(ORIGIN)
      .intercept({ path: `/t/${TX_HASH}?m=a%20b%26c%2Fd%3Fe%23f`, method: "GET" })
      .reply((o) => {
        seen = { path: o.path, headers: o.headers as Record<string, string> };
        return { statusCode: 200, data: "" };
      });
    expect(await deliverer.deliver(alert, get, 1)).toMatchObject({ ok: true, attempts: 1 });
    expect(verifyWebhookSignature(SECRET, seen!.headers, seen!.path, 300, NOW.getTime() / 1000).ok).toBe(true);
  });

  it("an unknown URL token fails for good before any request", async () => {
    const get: AlertDefinition = { type: "Webhook (GET)", parameters: { url: `${ORIGIN}/t/{nope}` } };
    expect(await deliverer.deliver(alert, get, 0)).toMatchObject({
      ok: false,
      final: true,
      attempts: 0,
      code: "CS_TEMPLATE_UNKNOWN_FIELD",
    });
  });

  it("a private destination is refused without a request", async () => {
    const get: AlertDefinition = { type: "Webhook (POST)", parameters: { url: "http://10.0.0.7/hook" } };
    expect(await deliverer.deliver(alert, get, 0)).toMatchObject({ ok: false, final: true, attempts: 1, code: "CS_DESTINATION_FORBIDDEN" });
    expect(sleeps).toEqual([]);
  });

  it("Slack: posts {text, channel, username} to the chat URL, redacting its path in the result", async () => {
    const slack: AlertDefinition = {
      type: "Slack",
      parameters: { url: "https://hooks.slack.example/services/T1/B2/sekrit", text: ":bell: USDT", channel: "#ops", username: "chainsift" },
    };
    let body: Record<string, unknown> = {};
    mock
      .get("https://hooks.slack.example")
      .intercept({ path: "/services/T1/B2/sekrit", method: "POST" })
      .reply((o) => {
        body = JSON.parse(String(o.body));
        return { statusCode: 200, data: "ok" };
      });
    expect(await deliverer.deliver(alert, slack, 2)).toMatchObject({ ok: true, destination: "https://hooks.slack.example/…" });
    expect(body).toMatchObject({ channel: "#ops", username: "chainsift" });
    expect(body.text).toMatch(/^:bell: USDT\n/);
  });

  it("rejects unusable actions as CS_ACTION_INVALID", async () => {
    for (const a of [
      { type: "Pager", parameters: {} },
      { type: "Webhook (POST)", parameters: {} },
      { type: "Email", parameters: { recipients: [] } },
      { type: "Email", parameters: { recipients: ["not an address"] } },
    ] as unknown as AlertDefinition[]) {
      expect(await deliverer.deliver(alert, a, 0)).toMatchObject({ ok: false, final: true, code: "CS_ACTION_INVALID" });
    }
  });

  it("propagates a secret store failure (infrastructure) instead of reporting a delivery result", async () => {
    await deliverer.close();
    deliverer = make({ secrets: { getOrCreate: async () => Promise.reject(new Error("redis down")) } });
    await expect(deliverer.deliver(alert, post, 0)).rejects.toThrow("redis down");
  });

  describe("Email", () => {
    const email: AlertDefinition = { type: "Email", parameters: { recipients: ["ops@example.com", " dev@example.com "] } };
    const transport = (failures: Error[]): MailTransport => ({
      async sendMail(m) {
        const f = failures.shift();
        if (f) throw f;
        mails.push(m);
        return { accepted: m.to, rejected: [] };
      },
    });
    const smtpError = (code: number) =>
      Object.assign(new Error(`Can't send mail - ${code}`), { code: "EENVELOPE", responseCode: code, response: `${code} test` });

    it("SMTP 4xx is retried, then the mail goes out", async () => {
      await deliverer.close();
      deliverer = make({
        mailer: { from: "chainsift <alerts@chainsift.example>", transport: transport([smtpError(451), smtpError(421)]) },
      });
      expect(await deliverer.deliver(alert, email, 3)).toMatchObject({ ok: true, attempts: 3, destination: "2 recipients" });
      expect(sleeps).toHaveLength(2);
      expect(mails[0]).toMatchObject({
        from: "chainsift <alerts@chainsift.example>",
        to: ["ops@example.com", "dev@example.com"],
        subject: "[chainsift] confirmed: Transfer in block 123",
        messageId: `<${alert.id}.3@chainsift.example>`,
        headers: { "X-Chainsift-Alert-Id": alert.id },
      });
    });

    it("SMTP 5xx is final", async () => {
      await deliverer.close();
      deliverer = make({ mailer: { from: "alerts@chainsift.example", transport: transport([smtpError(550)]) } });
      expect(await deliverer.deliver(alert, email, 0)).toMatchObject({
        ok: false,
        final: true,
        attempts: 1,
        status: 550,
        code: "CS_SMTP_REJECTED",
      });
      expect(mails).toEqual([]);
    });

    it("without a mailer the alert is kept for replay (final: false)", async () => {
      expect(await deliverer.deliver(alert, email, 0)).toMatchObject({
        ok: false,
        final: false,
        attempts: 0,
        code: "CS_MAILER_UNCONFIGURED",
      });
    });
  });
});
