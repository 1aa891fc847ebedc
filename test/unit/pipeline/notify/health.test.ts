/** Unit tests of destination health (pure): when a destination turns unhealthy, probe spacing, recovery, destination keys. */
import { describe, expect, it } from "vitest";
import { afterFailure, afterSuccess, DEFAULT_HEALTH, destinationKey, HEALTHY } from "../../../../pipeline/notify/health.js";

const fail = { code: "CS_DELIVERY_NETWORK", error: "ECONNREFUSED" };
const policy = { unhealthyAfter: 3, probeBaseDelayMs: 2000, probeMaxDelayMs: 60_000 };
const upper = () => 0.999999;

describe("afterFailure / afterSuccess", () => {
  it("stays healthy below unhealthyAfter failures in a row, then turns unhealthy with a probe time", () => {
    let h = { ...HEALTHY };
    h = afterFailure(h, fail, 1000, policy, upper);
    h = afterFailure(h, fail, 2000, policy, upper);
    expect(h).toMatchObject({
      consecutiveFailures: 2,
      unhealthy: false,
      nextProbeAtMs: 0,
      lastCode: "CS_DELIVERY_NETWORK",
      lastFailureAtMs: 2000,
    });
    h = afterFailure(h, fail, 3000, policy, upper);
    expect(h).toMatchObject({ consecutiveFailures: 3, unhealthy: true, unhealthySinceMs: 3000, probeDelayMs: 2000 });
    expect(h.nextProbeAtMs).toBeGreaterThanOrEqual(3000 + 1000);
    expect(h.nextProbeAtMs).toBeLessThan(3000 + 2000);
  });

  it("doubles the probe delay per failed probe up to the maximum and keeps unhealthySince", () => {
    let h = { ...HEALTHY };
    for (let i = 0; i < 3; i++) h = afterFailure(h, fail, 0, policy, upper);
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      h = afterFailure(h, fail, 10_000 * (i + 1), policy, upper);
      delays.push(h.probeDelayMs);
    }
    expect(delays).toEqual([4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000]);
    expect(h.unhealthySinceMs).toBe(0);
  });

  it("honours a Retry-After longer than the probe delay, capped at the maximum", () => {
    let h = { ...HEALTHY };
    for (let i = 0; i < 2; i++) h = afterFailure(h, fail, 0, policy, upper);
    expect(afterFailure(h, { ...fail, retryAfterMs: 30_000 }, 100, policy, upper).nextProbeAtMs).toBe(30_100);
    expect(afterFailure(h, { ...fail, retryAfterMs: 600_000 }, 100, policy, upper).nextProbeAtMs).toBe(60_100);
  });

  it("one success makes it healthy again and remembers the last error", () => {
    let h = { ...HEALTHY };
    for (let i = 0; i < 5; i++) h = afterFailure(h, fail, i, DEFAULT_HEALTH, upper);
    const ok = afterSuccess(h, 99);
    expect(ok).toMatchObject({
      consecutiveFailures: 0,
      unhealthy: false,
      nextProbeAtMs: 0,
      probeDelayMs: 0,
      lastSuccessAtMs: 99,
      lastCode: "CS_DELIVERY_NETWORK",
    });
  });
});

describe("destinationKey", () => {
  it("is the origin of the URL template, smtp for e-mail, invalid otherwise", () => {
    expect(
      destinationKey({ type: "Webhook (POST)", parameters: { url: "https://Hooks.Example.com:443/a/{transactionHash}?x={args.from}" } }),
    ).toBe("https://hooks.example.com");
    expect(destinationKey({ type: "Webhook (GET)", parameters: { url: "http://127.0.0.1:8080/{x}" } })).toBe("http://127.0.0.1:8080");
    expect(destinationKey({ type: "Slack", parameters: { url: "https://hooks.slack.com/services/T/B/secret" } } as never)).toBe(
      "https://hooks.slack.com",
    );
    expect(destinationKey({ type: "Email", parameters: { recipients: ["a@b.example"] } } as never)).toBe("smtp");
    expect(destinationKey({ type: "Webhook (GET)", parameters: { url: "not a url" } })).toBe("invalid");
    expect(destinationKey(undefined)).toBe("invalid");
  });
});
