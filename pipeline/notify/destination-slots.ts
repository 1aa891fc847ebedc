/**
 * The notify scheduler's per-destination bound (`scheduler.ts`, "Isolation"): at most
 * `perDestination` attempts in flight against one destination in this process, so a slow endpoint
 * holds a few connections, not all of them.
 * @module
 */

/** Attempts in flight per destination, and the destination of each lane seen so far. */
export interface DestinationSlots {
  /** Remembers `lane`'s destination (learned when one of its jobs is claimed). */
  noteLane(lane: string, destination: string): void;
  /** True when `lane`'s destination is known and at its bound (the lane is not worth claiming now). */
  laneFull(lane: string): boolean;
  /** Takes a slot of `destination`; false (nothing taken) when it is at its bound. */
  tryTake(destination: string): boolean;
  /** Gives back a slot {@link DestinationSlots.tryTake} took. */
  give(destination: string): void;
}

/**
 * In-memory slots (one process).
 * @param perDestination - attempts in flight against one destination, ≥ 1.
 */
export function createDestinationSlots(perDestination: number): DestinationSlots {
  const laneDestination = new Map<string, string>();
  const inFlight = new Map<string, number>();
  return {
    noteLane: (lane, destination) => laneDestination.set(lane, destination),
    laneFull(lane) {
      const d = laneDestination.get(lane);
      return d !== undefined && (inFlight.get(d) ?? 0) >= perDestination;
    },
    tryTake(destination) {
      const busy = inFlight.get(destination) ?? 0;
      if (busy >= perDestination) return false;
      inFlight.set(destination, busy + 1);
      return true;
    },
    give: (destination) => inFlight.set(destination, (inFlight.get(destination) ?? 1) - 1),
  };
}
