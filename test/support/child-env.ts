/**
 * The environment of a chainsift child process (`cli/stage.ts`, `cli/api.ts`, or their builds in
 * `dist/`) that runs on a test harness's prefixes: the variables of lib/config.ts that carry the
 * harness's isolated topic, group, index and Redis key prefixes and the service URLs.
 * @module
 */
import type { Config } from "../../lib/config.js";

/**
 * This process's environment plus the variables that make a child load `config`'s chain, service
 * URLs and prefixes (docs/configuration.md), then `extra` (e.g. `CHAINSIFT_INSTANCE_ID`).
 * `LOG_LEVEL` is this process's, or `warn`.
 */
export function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CHAINSIFT_TECHNOLOGY: config.chain.technology,
    CHAINSIFT_BLOCKCHAIN: config.chain.blockchain,
    CHAINSIFT_NETWORK: config.chain.network,
    KAFKA_BROKERS: config.kafka.brokers.join(","),
    CHAINSIFT_TOPIC_PREFIX: config.kafka.topicPrefix,
    CHAINSIFT_GROUP_PREFIX: config.kafka.groupPrefix,
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    ELASTICSEARCH_URL: config.elasticsearch.url,
    CHAINSIFT_INDEX_PREFIX: config.elasticsearch.indexPrefix,
    REDIS_URL: config.redisUrl,
    CHAINSIFT_REDIS_PREFIX: config.redisKeyPrefix,
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    KAFKAJS_NO_PARTITIONER_WARNING: "1",
    ...extra,
  };
}
