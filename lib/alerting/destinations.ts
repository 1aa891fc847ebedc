/**
 * What the notify stage keeps about destinations and queued deliveries, as far as others read it:
 * the health record of a destination, the lane of an action, the Redis key names,
 * and the live delivery status of a rule's actions that the API's deliveries endpoint answers.
 * The notify stage writes these (pipeline/notify/queue.ts, scheduler.ts); see
 * docs/alerting-delivery.md "Retry path and destination health".
 * @module
 */

/** What the notify stage knows about one destination. */
export interface DestinationHealth {
  /** Failed attempts in a row (any alert, any rule), reset by a success. */
  consecutiveFailures: number;
  /** true once {@link HealthPolicy.unhealthyAfter} attempts in a row failed. */
  unhealthy: boolean;
  /** When it became unhealthy (ms since the epoch); 0 when healthy. */
  unhealthySinceMs: number;
  /** Earliest time of the next probe while unhealthy (ms since the epoch); 0 when healthy. */
  nextProbeAtMs: number;
  /** Current wait between probes, in ms (doubles per failed probe); 0 when healthy. */
  probeDelayMs: number;
  /** Code of the last failure (`CS_DELIVERY_TIMEOUT`, …), "" when none. */
  lastCode: string;
  /** Message of the last failure (at most 200 characters), "" when none. */
  lastError: string;
  /** Time of the last failure, ms since the epoch; 0 when none. */
  lastFailureAtMs: number;
  /** Time of the last success, ms since the epoch; 0 when none. */
  lastSuccessAtMs: number;
}

/** A destination nothing is known about (healthy). */
export const HEALTHY: Readonly<DestinationHealth> = {
  consecutiveFailures: 0,
  unhealthy: false,
  unhealthySinceMs: 0,
  nextProbeAtMs: 0,
  probeDelayMs: 0,
  lastCode: "",
  lastError: "",
  lastFailureAtMs: 0,
  lastSuccessAtMs: 0,
};

/** The lane of a rule's action: `<ruleId>:<actionIndex>`. */
export function laneOf(ruleId: string, actionIndex: number): string {
  return `${ruleId}:${actionIndex}`;
}

/** Key names (exported for tests and cleanup). */
export function queueKeys(keyPrefix: string) {
  const p = `${keyPrefix}notify:`;
  return {
    prefix: p,
    lane: (lane: string) => `${p}lane:${lane}`,
    due: `${p}due`,
    lease: (lane: string) => `${p}lease:${lane}`,
    queued: (jobId: string) => `${p}queued:${jobId}`,
    done: (jobId: string) => `${p}done:${jobId}`,
    dest: (destination: string) => `${p}dest:${destination}`,
    probe: (destination: string) => `${p}probe:${destination}`,
    destinations: `${p}destinations`,
    delivered: (jobId: string) => `${keyPrefix}notify:delivered:${jobId}`,
  };
}

/** Parses a destination's health hash (missing or unreadable fields count as 0 / empty). */
export function parseHealth(h: Record<string, string>): DestinationHealth {
  const num = (k: keyof DestinationHealth) => {
    const v = Number(h[k]);
    return Number.isFinite(v) ? v : 0;
  };
  return {
    consecutiveFailures: num("consecutiveFailures"),
    unhealthy: h.unhealthy === "1",
    unhealthySinceMs: num("unhealthySinceMs"),
    nextProbeAtMs: num("nextProbeAtMs"),
    probeDelayMs: num("probeDelayMs"),
    lastCode: h.lastCode ?? "",
    lastError: h.lastError ?? "",
    lastFailureAtMs: num("lastFailureAtMs"),
    lastSuccessAtMs: num("lastSuccessAtMs"),
  };
}

/** What the deliveries endpoint shows about one action of a rule: its destination's health and its queue. */
export interface ActionDeliveryStatus {
  /** Index of the action in the rule's `config.alerts`. */
  actionIndex: number;
  /** Destination key: the URL origin (`scheme://host:port`, no path, query or credentials), `smtp`, `telegram`, or `invalid`. */
  destination: string;
  /** Whether the destination is marked unhealthy (deliveries wait for a probe). */
  unhealthy: boolean;
  /** Failed attempts in a row at this destination (any rule). */
  consecutiveFailures: number;
  /** ISO time it became unhealthy, or null. */
  unhealthySince: string | null;
  /** ISO time of the next probe while unhealthy, or null. */
  nextProbeAt: string | null;
  /** Code and message of the destination's last failure, or null. */
  lastCode: string | null;
  lastError: string | null;
  /** ISO times of the destination's last failure and last success, or null. */
  lastFailureAt: string | null;
  lastSuccessAt: string | null;
  /** Deliveries of this rule and action waiting in the queue (the one being attempted included). */
  pending: number;
}
