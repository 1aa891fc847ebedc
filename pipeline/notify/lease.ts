/**
 * A lane's lease while the notify scheduler (`scheduler.ts`) works its head job: renewed in the
 * background every third of its length, and checked (renewed by compare-and-set) before each side
 * effect, so a worker whose lease another claim took over stops (queue.ts, "fencing token").
 * @module
 */
import { type DeliveryQueue, LeaseLostError } from "./queue.js";

/** A claim's lease, renewed in the background while its job is worked. */
export interface Lease {
  /** The claim's fencing token (the queue's pop/reschedule/defer compare it). */
  token: string;
  /** Renews the lease now; throws {@link LeaseLostError} when another claim took it over. */
  check(): Promise<void>;
  /** Stops the background renewal (the lease then runs out after `leaseMs` unless released). */
  stop(): void;
}

/**
 * Holds the lease `token` of `lane`: renews it every `leaseMs / 3` (at least every 10 ms) in the
 * background; a failed renewal (lease taken over) makes the next {@link Lease.check} throw, an
 * unreachable Redis is tried again at the next renewal or check.
 * @param leaseMs - length of the lease, in ms ({@link DeliveryQueue.renew}).
 */
export function holdLease(queue: Pick<DeliveryQueue, "renew">, lane: string, token: string, leaseMs: number): Lease {
  let lost = false;
  const timer = setInterval(
    () => {
      queue.renew(lane, token, leaseMs).then(
        (held) => {
          if (!held) lost = true;
        },
        () => {
          // Redis unreachable: the next renewal or check tries again.
        },
      );
    },
    Math.max(10, Math.floor(leaseMs / 3)),
  );
  timer.unref();
  return {
    token,
    async check() {
      if (lost || !(await queue.renew(lane, token, leaseMs))) {
        lost = true;
        throw new LeaseLostError(lane);
      }
    },
    stop: () => clearInterval(timer),
  };
}
