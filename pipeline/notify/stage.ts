/**
 * The notify stage's Kafka shell: consumes the alerts topic (keyed by rule id, so one rule's
 * alerts are handled in order within a partition), delivers every action of each alert with
 * {@link deliverAlert}, and dead-letters an alert whose actions ran out of attempts so
 * `chainsift alerts replay` can re-send it (actions already delivered are skipped then).
 * @module
 */
import { createClient } from "redis";
import type { Config } from "../../lib/config.js";
import type { Logger } from "../../lib/logger.js";
import type { AlertDefinition } from "../../lib/rules/model.js";
import { NonRetryableError } from "../errors.js";
import type { Bus } from "../kafka/bus.js";
import { type HandlerFailure, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { createDeliverer, type Deliverer } from "./deliver.js";
import { deliverAlert } from "./handle.js";
import { createDeliveryLog, type DeliveryLog } from "./log.js";
import type { NotifyAlert } from "./render.js";
import { createSecretStore } from "./sign.js";

/** The Avro record of an alert (see `topics/schemas.ts` alertSchema). */
export interface AlertAvro {
  id: string;
  ruleId: string;
  ruleVersion: number;
  ruleName: string | null;
  accountId: string;
  sequence: number;
  status: NotifyAlert["status"];
  confirmations: number;
  maxConfirmationCount: number;
  chain: NotifyAlert["chain"];
  targetType: string;
  entityId: string;
  blockHash: string;
  blockNumber: number;
  payloadJson: string;
  entityJson: string;
  actionsJson: string;
  emittedAt: string;
}

/** Alert → Avro record (pure). */
export function alertToAvro(a: NotifyAlert): AlertAvro {
  return {
    id: a.id,
    ruleId: a.ruleId,
    ruleVersion: a.ruleVersion,
    ruleName: a.ruleName ?? null,
    accountId: a.accountId,
    sequence: a.sequence,
    status: a.status,
    confirmations: a.confirmations,
    maxConfirmationCount: a.maxConfirmationCount,
    chain: a.chain,
    targetType: a.targetType,
    entityId: a.entityId,
    blockHash: a.blockHash,
    blockNumber: a.blockNumber,
    payloadJson: JSON.stringify(a.payload),
    entityJson: JSON.stringify(a.entity),
    actionsJson: JSON.stringify(a.actions),
    emittedAt: a.emittedAt,
  };
}

/**
 * Avro record → alert (pure).
 * @throws {NonRetryableError} `CS_ALERT_MALFORMED` when a JSON part does not parse.
 */
export function alertFromAvro(r: AlertAvro): NotifyAlert {
  try {
    return {
      id: r.id,
      ruleId: r.ruleId,
      ruleVersion: r.ruleVersion,
      ruleName: r.ruleName,
      accountId: r.accountId,
      sequence: Number(r.sequence),
      status: r.status,
      confirmations: r.confirmations,
      maxConfirmationCount: r.maxConfirmationCount,
      chain: r.chain,
      targetType: r.targetType as NotifyAlert["targetType"],
      entityId: r.entityId,
      blockHash: r.blockHash,
      blockNumber: Number(r.blockNumber),
      payload: JSON.parse(r.payloadJson) as Record<string, unknown>,
      entity: JSON.parse(r.entityJson) as Record<string, unknown>,
      actions: JSON.parse(r.actionsJson) as AlertDefinition[],
      emittedAt: r.emittedAt,
    };
  } catch (err) {
    throw new NonRetryableError("CS_ALERT_MALFORMED", `alert ${r.id}: ${(err as Error).message}`, { cause: err });
  }
}

/** Dependencies of {@link startNotifyStage}. */
export interface NotifyStageDeps {
  bus: Bus;
  config: Pick<Config, "notify" | "redisUrl" | "redisKeyPrefix">;
  logger: Logger;
  /** Replaces the deliverer built from config (tests). */
  deliverer?: Deliverer;
}

/** A running notify stage. */
export interface NotifyStage extends RunningConsumer {
  /** The delivery log (also read by the API's deliveries endpoint). */
  log: DeliveryLog;
}

/** Starts the notify stage. */
export async function startNotifyStage(deps: NotifyStageDeps): Promise<NotifyStage> {
  const { config, logger } = deps;
  const redis = createClient({ url: config.redisUrl });
  redis.on("error", (err) => logger.warn({ err }, "notify: redis error"));
  await redis.connect();
  const log = createDeliveryLog({ redis, keyPrefix: config.redisKeyPrefix });
  const deliverer =
    deps.deliverer ??
    createDeliverer({
      fetchTimeoutMs: config.notify.timeoutMs,
      retry: { maxAttempts: config.notify.maxAttempts, baseDelayMs: config.notify.baseDelayMs, maxDelayMs: config.notify.maxDelayMs },
      allowlist: config.notify.allowlist,
      secrets: createSecretStore({ redis, keyPrefix: config.redisKeyPrefix }),
      mailer: config.notify.smtpUrl ? { from: config.notify.mailFrom, smtpUrl: config.notify.smtpUrl } : undefined,
      log: logger.child({ stage: "notify" }),
    });
  const running = await runConsumer({
    bus: deps.bus,
    logger,
    stage: "notify",
    topics: ["alerts"],
    // One rule's alerts are delivered in order; a whole retry budget may pass inside one batch
    // (the consumer shell keeps heartbeating meanwhile).
    handler: async (inputs) => {
      const failures: HandlerFailure[] = [];
      for (const input of inputs) {
        let alert: NotifyAlert;
        try {
          alert = alertFromAvro(input.record as AlertAvro);
        } catch (err) {
          failures.push({ input, error: err as NonRetryableError });
          continue;
        }
        const outcome = await deliverAlert(alert, { deliverer, log });
        if (outcome.retryLater.length > 0) {
          const first = outcome.actions.find((a) => a.actionIndex === outcome.retryLater[0]);
          const code = first?.result?.code ?? "CS_DELIVERY_EXHAUSTED";
          failures.push({
            input,
            error: new NonRetryableError(
              code,
              `alert ${alert.id}: actions ${outcome.retryLater.join(", ")} not delivered (${first?.result?.error ?? code})`,
            ),
          });
        }
      }
      return failures;
    },
  });
  return {
    ...running,
    log,
    async stop() {
      await running.stop();
      await deliverer.close?.();
      await redis.quit().catch(() => {});
    },
  };
}
