/**
 * Publishing the alerts the confirmation tracker emits, crash-safe (transactional outbox, see
 * `confirmations/outbox.ts`): the tracker has stored every alert it returns in a Redis outbox; the
 * publisher sends them to the alerts topic (keyed by rule id), then acks them (removes them from the
 * outbox). An outbox sweep re-publishes alerts left unacknowledged for the tracker's visibility
 * window (their emitter died, or its publish failed, in between) and acks them. Nothing emitted is
 * lost; an alert id is published twice only when a process dies after publishing and before
 * acking (or a publish outlives the window and another instance's sweep claims it); the notify
 * stage's delivery log then sends each action once.
 * @module
 */
import type { Alert } from "../../lib/alerting/alert.js";
import { alertToAvro } from "../../lib/alerting/avro.js";
import type { Logger } from "../../lib/logger.js";
import type { RecordProducer } from "../kafka/bus.js";
import type { ConfirmationTracker } from "./confirmations/tracker.js";

/** Dependencies of {@link createAlertPublisher}. */
export interface AlertPublisherDeps {
  tracker: Pick<ConfirmationTracker, "ack" | "claimUnacked">;
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
   * Publishes alerts the tracker just emitted, then acks them (an ack failure is only logged: the
   * sweep publishes them again).
   * @throws the producer's errors (the alerts stay in the outbox for a sweep).
   */
  publish(alerts: readonly Alert[]): Promise<void>;
  /** One sweep now (joins a running one); resolves to how many alerts it re-published. */
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
  // Alerts this process is publishing: a sweep skips them even when they outlive the window.
  const inFlight = new Set<string>();
  let sweeping: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const sweepOnce = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const claimed = await tracker.claimUnacked({ limit: SWEEP_BATCH });
      const orphans = claimed.filter((a) => !inFlight.has(a.id));
      if (orphans.length > 0) {
        await send(orphans);
        await ack(orphans);
        total += orphans.length;
        logger.warn(
          { alerts: orphans.length, ids: orphans.slice(0, 10).map((a) => a.id) },
          "re-published alerts left unacknowledged in the outbox",
        );
      }
      if (claimed.length < SWEEP_BATCH) return total;
    }
  };
  const sweep = (): Promise<number> => {
    sweeping ??= sweepOnce().finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };

  return {
    async publish(alerts) {
      if (alerts.length === 0) return;
      for (const a of alerts) inFlight.add(a.id);
      try {
        await deps.beforePublish?.(alerts);
        await send(alerts);
        await ack(alerts);
      } finally {
        for (const a of alerts) inFlight.delete(a.id);
      }
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
