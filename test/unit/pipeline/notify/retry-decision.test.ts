/** Unit tests of the scheduler's retry/dead-letter decision after a retryable failure (pure). */
import { describe, expect, it } from "vitest";
import { nextAttemptDueMs } from "../../../../pipeline/notify/attempt.js";

const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 8000 };
const healthy = { unhealthy: false, nextProbeAtMs: 0 };
const half = () => 0.5;

describe("nextAttemptDueMs", () => {
  it("gives up (null) when the attempts are spent or the time budget ran out", () => {
    expect(nextAttemptDueMs(4, 10_000, 99_999, retry, undefined, healthy, half)).toBeNull();
    expect(nextAttemptDueMs(1, 10_000, 10_000, retry, undefined, healthy, half)).toBeNull();
  });

  it("retries after the jittered backoff of the failed attempt", () => {
    // attempt 3 failed: ceiling min(8000, 1000 · 2²) = 4000, half of it.
    expect(nextAttemptDueMs(3, 10_000, 99_999, retry, undefined, healthy, half)).toBe(12_000);
  });

  it("never before the next probe of an unhealthy destination", () => {
    expect(nextAttemptDueMs(1, 10_000, 99_999, retry, undefined, { unhealthy: true, nextProbeAtMs: 30_000 }, half)).toBe(30_000);
    expect(nextAttemptDueMs(1, 10_000, 99_999, retry, undefined, { unhealthy: true, nextProbeAtMs: 5000 }, half)).toBe(10_500);
  });
});
