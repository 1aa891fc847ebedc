/**
 * Which Kafka client library the pipeline's transport runs on (`config.kafka.client`, env
 * `CHAINSIFT_KAFKA_CLIENT`, lib/config/kafka-client.ts; docs/kafka-client.md): `@platformatic/kafka`
 * (pipeline/kafka/platformatic.ts, the default) or kafkajs (pipeline/kafka/kafkajs.ts); the
 * platformatic module is loaded only when chosen.
 * @module
 */
import type { Kafka } from "kafkajs";
import type { KafkaConfig } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import { kafkajsTransport } from "./kafkajs.js";
import type { KafkaTransport } from "./transport.js";

/**
 * A maker of transports per client id for the configured client library.
 * @param kafka - `config.kafka`: `client` (`kafkajs` or `platformatic`) and `brokers`.
 * @param newKafka - makes the kafkajs client of a client id (used for `kafkajs` only).
 * @param logger - the process's logger (the platformatic consumer reports its retries there).
 */
export async function transportMaker(
  kafka: Pick<KafkaConfig, "client" | "brokers">,
  newKafka: (clientId: string) => Kafka,
  logger: Logger,
): Promise<(clientId: string) => KafkaTransport> {
  if (kafka.client === "platformatic") {
    const { platformaticTransport } = await import("./platformatic.js");
    return (clientId) => platformaticTransport({ clientId, brokers: kafka.brokers, logger });
  }
  return (clientId) => kafkajsTransport(newKafka(clientId));
}
