/**
 * kafkajs's log lines in our pino logger.
 *
 * **Levels.** kafkajs logs at error level conditions it then retries by itself, and which are
 * normal while Kafka starts or a consumer group forms: the group coordinator is loading its
 * offsets or is not elected yet, the group is rebalancing, a new topic has no partition leader
 * yet. A newcomer reads those lines as failures. {@link kafkaLogLevel} demotes exactly those
 * ({@link TRANSIENT_KAFKA_CONDITIONS}, matched on the message and on the broker error it carries)
 * to debug; every other entry keeps its level. A condition that outlasts kafkajs's retries still
 * surfaces: the operation fails with the error, which our callers log.
 *
 * **TimeoutNegativeWarning.** kafkajs 2.2.4 made Node 24 print one (tulios/kafkajs#1751); the patch
 * that `npm install` applies to kafkajs (patches/kafkajs+2.2.4.patch, docs/kafka-client.md#the-kafkajs-patch)
 * removes its cause, so no warning is filtered here.
 * @module
 */
import { logLevel as KafkaLogLevel, type logCreator } from "kafkajs";
import type { Logger } from "../../lib/logger.js";

/** A kafkajs condition that is expected while Kafka or a consumer group settles, and is retried. */
export interface TransientKafkaCondition {
  /** Matched against the entry's message and its `error` field. */
  pattern: RegExp;
  /** Why it is expected (and what kafkajs does about it). */
  why: string;
}

/**
 * The kafkajs entries logged at debug instead of error or warn. The messages are kafkajs's
 * (src/protocol/error.js, src/consumer/runner.js) and Kafka's protocol error texts
 * (https://kafka.apache.org/protocol#protocol_error_codes).
 */
export const TRANSIENT_KAFKA_CONDITIONS: readonly TransientKafkaCondition[] = [
  {
    pattern: /The coordinator is loading and hence can't process requests/i,
    why: "COORDINATOR_LOAD_IN_PROGRESS: the broker is loading the group's offsets after it started; kafkajs retries",
  },
  {
    pattern: /The (group )?coordinator is not available/i,
    why: "COORDINATOR_NOT_AVAILABLE: the group's coordinator is not elected yet (new broker or new __consumer_offsets); kafkajs retries",
  },
  {
    pattern: /This is not the correct coordinator for this group/i,
    why: "NOT_COORDINATOR: the coordinator moved; kafkajs looks it up again",
  },
  {
    pattern: /The group is rebalancing/i,
    why: "REBALANCE_IN_PROGRESS: a member joined or left; kafkajs re-joins the group",
  },
  {
    pattern: /The coordinator is not aware of this member/i,
    why: "UNKNOWN_MEMBER_ID: the member's session ended (e.g. the previous run of this process); kafkajs re-joins",
  },
  {
    pattern: /There is no leader for this topic-partition as we are in the middle of a leadership election/i,
    why: "LEADER_NOT_AVAILABLE: a topic just created has no partition leader yet; kafkajs refreshes the metadata and retries",
  },
];

/** A pino level name a kafkajs entry is logged at. */
export type MappedLevel = "error" | "warn" | "info" | "debug";

/**
 * The level a kafkajs entry is logged at (pure).
 * @param level - the kafkajs level (`logLevel.ERROR` … `logLevel.DEBUG`).
 * @param message - the entry's message.
 * @param error - the broker error text the entry carries (its `error` field), if any.
 * @returns `debug` for a {@link TRANSIENT_KAFKA_CONDITIONS} entry; otherwise kafkajs's level
 *   (ERROR → error, WARN → warn, INFO → info, DEBUG → debug).
 */
export function kafkaLogLevel(level: number, message: string, error?: unknown): MappedLevel {
  const text = typeof error === "string" ? `${message}\n${error}` : message;
  if (level <= KafkaLogLevel.WARN && TRANSIENT_KAFKA_CONDITIONS.some((c) => c.pattern.test(text))) return "debug";
  if (level <= KafkaLogLevel.ERROR) return "error";
  if (level === KafkaLogLevel.WARN) return "warn";
  return level === KafkaLogLevel.INFO ? "info" : "debug";
}

/**
 * A kafkajs `logCreator` writing into `logger` at {@link kafkaLogLevel}: message `kafka: <message>`,
 * the entry's fields (broker, clientId, groupId, error, …) and its `namespace` as fields.
 * @param logger - the process's (or a stage's) pino logger.
 * @returns the creator to pass as `new Kafka({ logCreator })`.
 */
export function kafkaLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...fields } = log;
      logger[kafkaLogLevel(level, message, fields.error)]({ ...fields, namespace }, `kafka: ${message}`);
    };
}
