/**
 * Destination health, as pure functions: a destination (the origin of a webhook or chat URL,
 * `scheme://host:port`, or `smtp` for e-mail) that keeps failing is marked **unhealthy**, and then
 * only one delivery at a time probes it, on a doubling schedule; every other delivery to it waits
 * without an attempt of its own. One success marks it healthy again. The notify scheduler
 * (`scheduler.ts`) keeps this state in Redis (`queue.ts`) so every notify process sees the same.
 *
 * A circuit breaker in the sense of M. Nygard, "Release It!" (closed → open → half-open probe),
 * with the probe interval growing like the per-delivery backoff.
 * @module
 */
import type { DestinationHealth } from "../../lib/alerting/destinations.js";

export { destinationKey } from "../../lib/alerting/channels.js";
export { type DestinationHealth, HEALTHY } from "../../lib/alerting/destinations.js";

/** When a destination counts as unhealthy and how often it is probed then. */
export interface HealthPolicy {
  /** Failed attempts in a row that mark a destination unhealthy. Default 3. */
  unhealthyAfter: number;
  /** First wait between probes, in ms; doubles per failed probe. Default 2000. */
  probeBaseDelayMs: number;
  /** Longest wait between probes, in ms. Default 60000. */
  probeMaxDelayMs: number;
}

/** Defaults of {@link HealthPolicy}. */
export const DEFAULT_HEALTH: Readonly<HealthPolicy> = { unhealthyAfter: 3, probeBaseDelayMs: 2000, probeMaxDelayMs: 60_000 };

/** The state after a successful delivery: healthy, failure count reset, the last error kept for the log. */
export function afterSuccess(h: DestinationHealth, nowMs: number): DestinationHealth {
  return { ...h, consecutiveFailures: 0, unhealthy: false, unhealthySinceMs: 0, nextProbeAtMs: 0, probeDelayMs: 0, lastSuccessAtMs: nowMs };
}

/**
 * The state after a failed attempt that may succeed later (timeout, network error, 5xx/408/429).
 * Final refusals (4xx, SSRF) say nothing about the destination's health and must not be passed here.
 * Reaching `unhealthyAfter` failures marks it unhealthy with the first probe `probeBaseDelayMs`
 * later; each further failure (a failed probe) doubles the wait up to `probeMaxDelayMs`. A
 * receiver's `Retry-After` pushes the next probe later, never earlier. Jitter: the wait is drawn
 * from [wait/2, wait) so that many chainsift processes do not probe in lockstep.
 * @param retryAfterMs The receiver's `Retry-After`, in ms, if it sent one.
 * @param random Uniform [0, 1) (default `Math.random`).
 */
export function afterFailure(
  h: DestinationHealth,
  failure: { code: string; error: string; retryAfterMs?: number },
  nowMs: number,
  policy: HealthPolicy = DEFAULT_HEALTH,
  random: () => number = Math.random,
): DestinationHealth {
  const consecutiveFailures = h.consecutiveFailures + 1;
  const base = {
    ...h,
    consecutiveFailures,
    lastCode: failure.code,
    lastError: failure.error.slice(0, 200),
    lastFailureAtMs: nowMs,
  };
  if (consecutiveFailures < Math.max(1, policy.unhealthyAfter)) return base;
  const probeDelayMs = h.unhealthy
    ? Math.min(policy.probeMaxDelayMs, Math.max(policy.probeBaseDelayMs, h.probeDelayMs * 2))
    : Math.min(policy.probeMaxDelayMs, policy.probeBaseDelayMs);
  const wait = Math.max(Math.floor(probeDelayMs / 2 + random() * (probeDelayMs / 2)), failure.retryAfterMs ?? 0);
  return {
    ...base,
    unhealthy: true,
    unhealthySinceMs: h.unhealthy ? h.unhealthySinceMs : nowMs,
    probeDelayMs,
    nextProbeAtMs: nowMs + Math.min(wait, policy.probeMaxDelayMs),
  };
}
