/**
 * The Kafka variables of `loadConfig` (lib/config/index.ts, `config.kafka`): the brokers, the client
 * ids, the topic and group prefixes, and which Kafka client library the pipeline talks through
 * (issue 37, docs/kafka-client.md).
 * @module
 */
import { hostname } from "node:os";
import { list, oneOf, str } from "./parse.js";

/** The Kafka client libraries the pipeline's transport (pipeline/kafka/transport.ts) can run on. */
export const KAFKA_CLIENTS = ["kafkajs", "platformatic"] as const;
/** One of {@link KAFKA_CLIENTS}. */
export type KafkaClientName = (typeof KAFKA_CLIENTS)[number];

/** Settings of the process's Kafka clients. */
export interface KafkaConfig {
  /** Bootstrap brokers. Env `KAFKA_BROKERS` (comma-separated), default `127.0.0.1:9092`. */
  brokers: string[];
  /**
   * First part of every Kafka client id of the process. Each Kafka client's id is
   * `<clientId>-<role>-<instanceId>`, role being the stage (`decode`, `index`, …) for its
   * consumer, so `kafka-consumer-groups --describe` tells which process holds which partition
   * (pipeline/kafka/bus.ts). Env `KAFKA_CLIENT_ID`, default `chainsift`.
   */
  clientId: string;
  /**
   * This process's instance name, the last part of its Kafka client ids. Env
   * `CHAINSIFT_INSTANCE_ID`, default `<hostname>-<pid>` (`os.hostname()`; in a container the
   * hostname is the container's, so the default is unique per replica).
   */
  instanceId: string;
  /** Prepended to every topic name (tests isolate themselves with it). Env `CHAINSIFT_TOPIC_PREFIX`, default empty. */
  topicPrefix: string;
  /** Prepended to every consumer group id. Env `CHAINSIFT_GROUP_PREFIX`, default `chainsift`. */
  groupPrefix: string;
  /**
   * The client library behind the pipeline's Kafka transport (producers, the stages' consumers,
   * topic setup): `kafkajs` (pipeline/kafka/kafkajs.ts) or `platformatic` (`@platformatic/kafka`,
   * pipeline/kafka/platformatic.ts). Every member of a consumer group must use the same one (each
   * library names its assignment protocol differently, docs/kafka-client.md). Env
   * `CHAINSIFT_KAFKA_CLIENT`, default `platformatic` (since issue 37: about half the Kafka CPU
   * per record, the whole suite passes on it; `kafkajs` stays selectable, docs/kafka-client.md).
   */
  client: KafkaClientName;
}

/** Reads {@link KafkaConfig} from `env`. @throws {ConfigError} for a `CHAINSIFT_KAFKA_CLIENT` that is not one of {@link KAFKA_CLIENTS}. */
export function kafkaConfigOf(env: NodeJS.ProcessEnv): KafkaConfig {
  return {
    brokers: list(env, "KAFKA_BROKERS", ["127.0.0.1:9092"]),
    clientId: str(env, "KAFKA_CLIENT_ID", "chainsift"),
    instanceId: str(env, "CHAINSIFT_INSTANCE_ID", `${hostname()}-${process.pid}`),
    topicPrefix: str(env, "CHAINSIFT_TOPIC_PREFIX", ""),
    groupPrefix: str(env, "CHAINSIFT_GROUP_PREFIX", "chainsift"),
    client: oneOf(env, "CHAINSIFT_KAFKA_CLIENT", KAFKA_CLIENTS, "platformatic"),
  };
}
