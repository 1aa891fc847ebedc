/**
 * The notify stage's Kafka shell: consumes the alerts topic and **enqueues** one delivery job per
 * action of each alert in the Redis delivery queue (`queue.ts`), then commits. The scheduler
 * (`scheduler.ts`) delivers the jobs, retries failures on their own schedule and dead-letters
 * what runs out of budget, so a dead or slow destination never holds up the consuming loop or
 * other rules' alerts (docs/alerting-delivery.md, "Retry path and destination health").
 * @module
 */

import type { Registry } from "prom-client";
import type { Alert } from "../../lib/alerting/alert.js";
import { type AlertAvro, alertFromAvro } from "../../lib/alerting/avro.js";
import type { Config } from "../../lib/config/index.js";
import type { NonRetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { type RedisClient, sharedOrConnect } from "../../lib/redis.js";
import { REPLAY_HEADER } from "../../topics/index.js";
import { type Bus, createRecordProducer } from "../kafka/bus.js";
import { deadLetter, type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { createDeliverer, type Deliverer } from "./deliver.js";
import { destinationKey } from "./health.js";
import { createDeliveryLog, type DeliveryLog } from "./log.js";
import { createMessageStore } from "./messages.js";
import { createDeliveryQueue, type DeliveryJob, type DeliveryQueue, laneOf } from "./queue.js";
import { defaultRetryWindowMs, type Scheduler, type SchedulerOptions, startScheduler } from "./scheduler.js";
import { createSecretStore } from "./sign.js";
import { createStormStore } from "./storm.js";

/** Dependencies of {@link startNotifyStage}. */
export interface NotifyStageDeps {
  bus: Bus;
  config: Pick<Config, "notify" | "redisUrl" | "redisKeyPrefix">;
  logger: Logger;
  /** Replaces the deliverer built from config (tests). */
  deliverer?: Deliverer;
  /** Registry for the stage's metrics (`chainsift_notify_*`), e.g. the process's (lib/common.ts); default a private one. */
  registry?: Registry;
  /**
   * A connected Redis client for the delivery queue, log and secrets, e.g. the process's shared one
   * (lib/common.ts); left open on stop. Default: a client of the stage (`connectRedisClient` on
   * `config.redisUrl`), closed on stop.
   */
  redis?: RedisClient;
}

/** A running notify stage. */
export interface NotifyStage extends RunningConsumer {
  /** The delivery log (also read by the API's deliveries endpoint). */
  deliveryLog: DeliveryLog;
  /** The delivery queue (lanes, destination health). */
  queue: DeliveryQueue;
  /** The scheduler delivering the queue. */
  scheduler: Scheduler;
}

/**
 * The delivery jobs of one alert record: one per action, in the lane of its rule and action, with
 * the record's original bytes for a dead letter.
 * @param windowMs Time budget of each job (see {@link SchedulerOptions.retryWindowMs}).
 */
export function jobsOfAlert(
  avro: AlertAvro,
  alert: Alert,
  source: Pick<InputRecord, "topic" | "partition" | "offset" | "message">,
  nowMs: number,
  windowMs: number,
): DeliveryJob[] {
  return (alert.actions ?? []).map((action, actionIndex) => ({
    id: `${alert.id}:${actionIndex}`,
    alertId: alert.id,
    ruleId: alert.ruleId,
    actionIndex,
    lane: laneOf(alert.ruleId, actionIndex),
    destination: destinationKey(action),
    attempts: 0,
    enqueuedAtMs: nowMs,
    deadlineAtMs: nowMs + windowMs,
    alert: avro,
    source: {
      topic: source.topic,
      partition: source.partition,
      offset: source.offset,
      keyB64: source.message.key ? source.message.key.toString("base64") : null,
      valueB64: source.message.value ? source.message.value.toString("base64") : null,
    },
  }));
}

/**
 * Starts the notify stage: the alerts consumer and the delivery scheduler.
 * @param deps - bus, config (`notify`, `redisUrl`, `redisKeyPrefix`), logger, and optionally the
 *   shared Redis client, metrics registry and a deliverer ({@link NotifyStageDeps}).
 * @returns the running stage; `stop()` stops consuming, then the scheduler, and closes what the
 *   stage opened.
 * @throws when Redis (without `deps.redis`) or Kafka cannot be reached at startup.
 */
export async function startNotifyStage(deps: NotifyStageDeps): Promise<NotifyStage> {
  const { config, logger } = deps;
  const own = await sharedOrConnect(deps.redis, config.redisUrl, { logger, label: "notify" });
  const redis = own.client;
  const deliveryLog = createDeliveryLog({ redis, keyPrefix: config.redisKeyPrefix });
  const queue = createDeliveryQueue(redis, config.redisKeyPrefix);
  const n = config.notify;
  const retry = { maxAttempts: n.maxAttempts, baseDelayMs: n.baseDelayMs, maxDelayMs: n.maxDelayMs };
  const deliverer =
    deps.deliverer ??
    createDeliverer({
      fetchTimeoutMs: n.timeoutMs,
      retry,
      allowlist: n.allowlist,
      secrets: createSecretStore({ redis, keyPrefix: config.redisKeyPrefix }),
      mailer: n.smtpUrl ? { from: n.mailFrom, smtpUrl: n.smtpUrl } : undefined,
      telegram: { botToken: n.telegramBotToken, apiUrl: n.telegramApiUrl },
      slack: { botToken: n.slackBotToken, apiUrl: n.slackApiUrl },
      incidents: { pagerdutyApiUrl: n.pagerdutyApiUrl, opsgenieApiUrl: n.opsgenieApiUrl },
      messages: createMessageStore(redis, config.redisKeyPrefix),
      explorers: n.explorerUrls,
      log: logger.child({ stage: "notify" }),
    });
  const windowMs = n.retryWindowMs > 0 ? n.retryWindowMs : defaultRetryWindowMs(retry, n.timeoutMs);
  const dlq = await createRecordProducer(deps.bus);
  const scheduler = startScheduler({
    queue,
    deliverer,
    deliveryLog,
    logger,
    storm: createStormStore(redis, config.redisKeyPrefix),
    ...(deps.registry ? { registry: deps.registry } : {}),
    options: {
      retry,
      retryWindowMs: windowMs,
      attemptTimeoutMs: n.timeoutMs,
      health: { unhealthyAfter: n.unhealthyAfter, probeBaseDelayMs: Math.max(1000, n.baseDelayMs * 4), probeMaxDelayMs: n.maxDelayMs },
      perDestinationConcurrency: n.destinationConcurrency,
      maxInFlight: n.maxInFlight,
    },
    deadLetter: async (items) => {
      for (const { job, code, message } of items) {
        const { source } = job;
        await deadLetter(
          dlq,
          "notify",
          {
            topic: source.topic,
            partition: source.partition,
            offset: source.offset,
            message: {
              key: source.keyB64 === null ? null : Buffer.from(source.keyB64, "base64"),
              value: source.valueB64 === null ? null : Buffer.from(source.valueB64, "base64"),
            } as InputRecord["message"],
          },
          { code, message: `alert ${job.alertId} action ${job.actionIndex}: ${message}` },
        );
      }
    },
  });
  const running = await runConsumer({
    bus: deps.bus,
    logger,
    ...(deps.registry ? { registry: deps.registry } : {}),
    stage: "notify",
    topics: ["alerts"],
    // Enqueue only: a Redis failure throws (retryable: the batch is retried, nothing committed);
    // a malformed alert is dead-lettered by the shell.
    handler: async (inputs) => {
      const failures: HandlerFailure[] = [];
      // Alerts put back by `chainsift alerts replay` are queued even when their jobs were finished.
      const jobs: DeliveryJob[] = [];
      const replayed: DeliveryJob[] = [];
      const now = Date.now();
      for (const input of inputs) {
        try {
          const avro = input.record;
          const alert = alertFromAvro(avro);
          const into = input.message.headers?.[REPLAY_HEADER] === undefined ? jobs : replayed;
          into.push(...jobsOfAlert(avro, alert, input, now, windowMs));
        } catch (err) {
          failures.push({ input, error: err as NonRetryableError });
        }
      }
      if (jobs.length > 0) await queue.enqueue(jobs, now);
      if (replayed.length > 0) await queue.enqueue(replayed, now, { replay: true });
      if (jobs.length + replayed.length > 0) scheduler.wake();
      return failures;
    },
  });
  return {
    ...running,
    deadLettered: () => running.deadLettered() + scheduler.stats().deadLettered,
    deliveryLog,
    queue,
    scheduler,
    async stop() {
      await running.stop();
      await scheduler.stop();
      await dlq.disconnect().catch(() => {});
      await deliverer.close?.();
      await own.close();
    },
  };
}
