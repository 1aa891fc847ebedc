/**
 * A chain's consumer health as Kafka's own bookkeeping shows it: each stage's consumer-group lag
 * (lib/kafka/lag.ts {@link consumerGroupLag}) and the records written to the chain's dead-letter
 * topic in the last hour ({@link recordsSince}). Read by `npm run chainsift -- status` (cli/status.ts)
 * and the API's `GET /chains/health/` (api/routes/chains.ts), so both show the same figures.
 * Also the names the pipeline's bus (pipeline/kafka/bus.ts) uses: the stages' consumer groups
 * ({@link consumerGroupId}) and the Kafka client ids ({@link kafkaClientId}).
 * @module
 */
import type { ChainId, Config } from "../config/index.js";
import { consumerGroupLag, type LagAdmin, recordsSince } from "./lag.js";

/** The consuming stages, in pipeline order (`npm start` runs them all). */
export const CONSUMING_STAGES = ["decode", "index", "match", "notify"] as const;

/** Consumer-group stage name of the index stage's `reorgs` consumer (pipeline/index/indexer.ts). */
export const INDEX_REORGS_STAGE = "index-reorgs";

/** Every consumer group of a chain, by stage name: the consuming stages, then the index stage's reorgs consumer. */
export const CONSUMER_GROUP_STAGES: readonly string[] = [...CONSUMING_STAGES, INDEX_REORGS_STAGE];

/** The dead-letter window of {@link ConsumerHealth.deadLettersLastHour}, ms. */
export const DEAD_LETTER_WINDOW_MS = 3_600_000;

/**
 * Consumer group id of a stage of a chain: `<groupPrefix>.<topicPrefix><technology>.<blockchain>.<network>.<stage>`.
 * @param kafka - `config.kafka` (`groupPrefix`, `topicPrefix`).
 */
export function consumerGroupId(kafka: Pick<Config["kafka"], "groupPrefix" | "topicPrefix">, chain: ChainId, stage: string): string {
  return `${kafka.groupPrefix}.${kafka.topicPrefix}${chain.technology}.${chain.blockchain}.${chain.network}.${stage}`;
}

/**
 * The Kafka client id of a process, or of one role in it: `<clientId>-<role>-<instanceId>`, e.g.
 * `chainsift-decode-host1-4242`; `<clientId>-<instanceId>` without a role. Kafka shows it as
 * CLIENT-ID in `kafka-consumer-groups --describe` (docs/stack.md).
 * @param kafka - `config.kafka`: the prefix `clientId` and the process's `instanceId`.
 * @param role - e.g. the stage name; none for the process-wide client.
 */
export function kafkaClientId(kafka: Pick<Config["kafka"], "clientId" | "instanceId">, role?: string): string {
  return [kafka.clientId, role, kafka.instanceId].filter((part) => part !== undefined && part !== "").join("-");
}

/** One consumer group's lag, summed over its partitions. */
export interface GroupLag {
  /** Stage name, e.g. `decode`, `index-reorgs`. */
  stage: string;
  /** Consumer group id ({@link consumerGroupId}). */
  group: string;
  /** Σ lag over the partitions it committed offsets on, in records; null when it has committed none (never ran). */
  lag: number | null;
  /** Partitions it committed offsets on. */
  partitions: number;
}

/** What {@link readConsumerHealth} found for one chain. */
export interface ConsumerHealth {
  /** One row per stage of {@link CONSUMER_GROUP_STAGES}, in that order. */
  groups: GroupLag[];
  /** Records written to the chain's dead-letter topic in the last hour; null when it could not be read (e.g. no topic yet). */
  deadLettersLastHour: number | null;
}

/** Options of {@link readConsumerHealth}. */
export interface ConsumerHealthOptions {
  /** The consumer group id of a stage ({@link consumerGroupId}, or the bus's `groupId`). */
  groupId: (stage: string) => string;
  /** Full name of the chain's dead-letter topic (topics/index.ts `topicName(chain, "dead-letter", prefix)`). */
  deadLetterTopic: string;
  /** Now, ms since the epoch. Default `Date.now()`. */
  nowMs?: number;
}

/**
 * Reads a chain's consumer-group lags and its dead letters of the last hour (a handful of small
 * admin requests per group).
 * @param admin - a connected admin client.
 * @throws the admin client's errors for the group lags (broker unreachable); a dead-letter count that
 *   cannot be read is null instead.
 */
export async function readConsumerHealth(admin: LagAdmin, opts: ConsumerHealthOptions): Promise<ConsumerHealth> {
  const groups = await Promise.all(
    CONSUMER_GROUP_STAGES.map(async (stage): Promise<GroupLag> => {
      const group = opts.groupId(stage);
      const rows = await consumerGroupLag(admin, group);
      return { stage, group, lag: rows.length === 0 ? null : rows.reduce((n, x) => n + x.lag, 0), partitions: rows.length };
    }),
  );
  const since = (opts.nowMs ?? Date.now()) - DEAD_LETTER_WINDOW_MS;
  const deadLettersLastHour = await recordsSince(admin, opts.deadLetterTopic, since).catch(() => null);
  return { groups, deadLettersLastHour };
}
