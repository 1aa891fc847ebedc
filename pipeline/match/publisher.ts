/**
 * Publishing the alerts the confirmation tracker emits, crash-safe (transactional outbox, see
 * `confirmations/outbox.ts`): the tracker has stored every alert it returns in a Redis outbox; the
 * publisher sends them to the alerts topic (keyed by rule id), then acks them (removes them from the
 * outbox). An outbox sweep re-publishes alerts left unacknowledged for the tracker's visibility
 * window (their emitter died, or its publish failed, in between) and acks them. Nothing emitted is
 * lost; an alert id is published twice only when a process dies after publishing and before
 * acking (or a publish outlives the window and another instance's sweep claims it); the notify
 * stage's delivery log then sends each action once.
 *
 * **Order (issue 19 §3 e).** Every send — of newly emitted alerts or of a sweep's orphans — first
 * sends the alerts of the same rules still in the outbox with a lower `sequence` (emitted earlier:
 * a publish that failed, is slow, or belongs to another instance), in emission order, in the same
 * producer request. The producer keeps one request in flight and the alerts topic is keyed by rule,
 * so on the rule's partition the first copy of every alert comes before every alert of the rule
 * with a higher `sequence`: a match's `pending` before its `confirmed` or `removed`. An alert absent
 * from the outbox was acked, hence sent before. Only duplicates can come late, and they carry their
 * lower `sequence` (stale for the receiver). Within a process, emit + publish and sweeps run one at
 * a time ({@link AlertPublisher.emitAndPublish}).
 * @module
 */
import type { Alert } from "../../lib/alerting/alert.js";
import { alertToAvro } from "../../lib/alerting/avro.js";
import type { Logger } from "../../lib/logger.js";
import type { RecordProducer } from "../kafka/bus.js";
import type { ConfirmationTracker } from "./confirmations/tracker.js";

/** Dependencies of {@link createAlertPublisher}. */
export interface AlertPublisherDeps {
  tracker: Pick<ConfirmationTracker, "ack" | "claimUnacked" | "unacked">;
  producer: Pick<RecordProducer, "send">;
  /** The current name of a rule, for alerts whose snapshot has none (templates stored before names were snapshotted). */
  ruleName(ruleId: string): string | null | undefined;
  logger: Logger;
  /** Test hook: runs before emitted alerts are published (not for sweeps); see `MatchStageDeps.beforePublish`. */
  beforePublish?: (alerts: readonly Alert[]) => Promise<void>;
}

/** Publishes emitted alerts and sweeps the outbox. */
export interface AlertPublisher {
  /**
   * Publishes alerts the tracker just emitted, preceded by the earlier alerts of their rules still
   * in the outbox (module doc, Order), then acks all of them (an ack failure is only logged: the
   * sweep publishes them again). Alerts no longer in the outbox (another instance sent them) are
   * not sent again.
   * @throws the producer's or Redis's errors (the alerts stay in the outbox: the next publish of
   *   their rules or a sweep sends them, in order).
   */
  publish(alerts: readonly Alert[]): Promise<void>;
  /**
   * Runs `emit` (the tracker call that emits alerts) and publishes what it returns, as one critical
   * section of this process, behind earlier calls and sweeps (so a batch that took lower sequence
   * numbers is published first).
   * @throws what `emit` or {@link AlertPublisher.publish} throws.
   */
  emitAndPublish(emit: () => Promise<readonly Alert[]>): Promise<readonly Alert[]>;
  /**
   * One sweep now (joins a running one), in the critical section of {@link AlertPublisher.emitAndPublish};
   * resolves to how many alerts it published (orphans and the earlier alerts of their rules).
   */
  sweep(): Promise<number>;
  /** Sweeps every `intervalMs` (errors are logged) until {@link AlertPublisher.stop}. */
  startSweeping(intervalMs: number): void;
  /** Stops sweeping and waits for a running sweep. */
  stop(): Promise<void>;
}

/** Alerts claimed from the outbox per round of a sweep. */
const SWEEP_BATCH = 500;

/** Creates an {@link AlertPublisher}. */
export function createAlertPublisher(deps: AlertPublisherDeps): AlertPublisher {
  const { tracker, producer, logger } = deps;
  /**
   * What to send for `alerts`: the outbox alerts of the same rules with a `sequence` up to the
   * highest of `alerts` on that rule, in emission order (sequence order per rule).
   */
  const inOrder = async (alerts: readonly Alert[]): Promise<Alert[]> => {
    const upTo = new Map<string, number>();
    for (const a of alerts) upTo.set(a.ruleId, Math.max(upTo.get(a.ruleId) ?? 0, a.sequence));
    const outbox = await tracker.unacked();
    return outbox.filter((a) => a.sequence <= (upTo.get(a.ruleId) ?? -1));
  };
  const send = async (alerts: readonly Alert[]) => {
    await producer.send(
      alerts.map((a) => ({
        kind: "alerts" as const,
        key: a.ruleId,
        record: alertToAvro({ ...a, ruleName: a.ruleName ?? deps.ruleName(a.ruleId) ?? null }),
      })),
    );
  };
  const ack = async (alerts: readonly Alert[]) => {
    try {
      await tracker.ack(alerts.map((a) => a.id));
    } catch (err) {
      // Published already: failing the batch would not help. The sweep re-publishes them (duplicates).
      logger.warn({ err, alerts: alerts.length }, "outbox ack failed; the outbox sweep will publish these alerts again");
    }
  };
  // The critical section: emit + publish, and sweeps, one at a time in this process.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const mine = turn.then(fn);
    turn = mine.catch(() => {});
    return mine;
  };
  let sweeping: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const publish = async (alerts: readonly Alert[]): Promise<void> => {
    if (alerts.length === 0) return;
    await deps.beforePublish?.(alerts);
    const ordered = await inOrder(alerts);
    if (ordered.length === 0) return;
    await send(ordered);
    await ack(ordered);
    const mine = new Set(alerts.map((a) => a.id));
    const earlier = ordered.filter((o) => !mine.has(o.id)).length;
    if (earlier > 0) logger.warn({ alerts: earlier }, "published earlier alerts of the same rules left in the outbox first (order)");
  };

  const sweepOnce = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const claimed = await tracker.claimUnacked({ limit: SWEEP_BATCH });
      if (claimed.length > 0) {
        const ordered = await inOrder(claimed);
        if (ordered.length > 0) {
          await send(ordered);
          await ack(ordered);
          total += ordered.length;
          logger.warn(
            { alerts: ordered.length, ids: ordered.slice(0, 10).map((a) => a.id) },
            "re-published alerts left unacknowledged in the outbox",
          );
        }
      }
      if (claimed.length < SWEEP_BATCH) return total;
    }
  };
  const sweep = (): Promise<number> => {
    sweeping ??= exclusive(sweepOnce).finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };

  return {
    publish,
    emitAndPublish(emit) {
      return exclusive(async () => {
        const alerts = await emit();
        await publish(alerts);
        return alerts;
      });
    },
    sweep,
    startSweeping(intervalMs) {
      timer = setInterval(() => {
        if (!stopped) void sweep().catch((err) => logger.warn({ err }, "outbox sweep failed; retried periodically"));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await sweeping?.catch(() => {});
    },
  };
}
