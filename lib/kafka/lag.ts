/**
 * Consumer-group lag from Kafka's own bookkeeping: for every partition of the topics a group has
 * committed offsets in, lag = the partition's high watermark − the group's committed offset
 * (an admin client's `fetchCommittedOffsets` and `fetchTopicOffsets`: the pipeline's transport,
 * pipeline/kafka/transport.ts, or {@link kafkajsLagAdmin}). The stages' `chainsift_consumer_lag_records`
 * gauge (pipeline/kafka/metrics.ts), `npm run chainsift -- status` and the API's `GET /chains/health/`
 * use {@link consumerGroupLag} (the latter two through lib/kafka/consumer-health.ts).
 * @module
 */
import type { Admin } from "kafkajs";

/**
 * The admin calls lag is read with: a structural subset of the pipeline's `TransportAdmin`
 * (pipeline/kafka/transport.ts), which {@link kafkajsLagAdmin} also gives for a plain kafkajs admin.
 */
export interface LagAdmin {
  /** Per partition of the topic, its first stored offset and its high watermark (decimal strings). */
  fetchTopicOffsets(topic: string): Promise<{ partition: number; low: string; high: string }[]>;
  /** Per partition, the first offset whose timestamp is at or after `sinceMs` (ms since the epoch), or the high watermark when none is. */
  fetchTopicOffsetsByTimestamp(topic: string, sinceMs: number): Promise<{ partition: number; offset: string }[]>;
  /** A group's committed offsets on `topics`, or on every topic it committed in when absent; `offset` `-1` where none. */
  fetchCommittedOffsets(
    groupId: string,
    topics?: readonly string[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

/**
 * The {@link LagAdmin} calls of a kafkajs admin client (https://kafka.js.org/docs/admin): `fetchTopicOffsets`,
 * `fetchTopicOffsetsByTimestamp`, `fetchOffsets`. The client is neither connected nor closed here.
 */
export function kafkajsLagAdmin(admin: Admin): LagAdmin {
  return {
    fetchTopicOffsets: async (topic) =>
      (await admin.fetchTopicOffsets(topic)).map(({ partition, low, high }) => ({ partition, low, high })),
    fetchTopicOffsetsByTimestamp: (topic, sinceMs) => admin.fetchTopicOffsetsByTimestamp(topic, sinceMs),
    async fetchCommittedOffsets(groupId, topics) {
      const rows = await admin.fetchOffsets(topics ? { groupId, topics: [...topics] } : { groupId });
      return rows.map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map(({ partition, offset }) => ({ partition, offset })),
      }));
    },
  };
}

/** The lag of one consumer group on one topic-partition. */
export interface PartitionLag {
  group: string;
  /** Full topic name. */
  topic: string;
  partition: number;
  /** The group's committed offset (the next record it will read), or null when it committed none on this partition. */
  committed: number | null;
  /** The partition's high watermark (offset of the next record to be written). */
  high: number;
  /** The partition's first offset still stored (retention may have removed earlier ones). */
  low: number;
  /**
   * Records written and not yet consumed by the group: `high − committed`, or `high − low` when the
   * group has no committed offset (the stages start from the earliest record). Never negative.
   */
  lag: number;
}

/**
 * The lag of a consumer group on every partition of `topics`, or (without `topics`) of every topic
 * the group has committed offsets in. One `fetchCommittedOffsets` for the group plus one `fetchTopicOffsets`
 * per topic: a handful of small admin requests, whatever the traffic.
 * @param admin - a connected admin client ({@link LagAdmin}).
 * @param group - the consumer group id (e.g. `bus.groupId("decode")`).
 * @param topics - full topic names; default the group's committed topics.
 * @returns one row per topic-partition, sorted by topic then partition (empty for an unknown group).
 * @throws the admin client's errors (broker unreachable, unknown topic among `topics`).
 */
export async function consumerGroupLag(
  admin: Pick<LagAdmin, "fetchCommittedOffsets" | "fetchTopicOffsets">,
  group: string,
  topics?: readonly string[],
): Promise<PartitionLag[]> {
  const committed = await admin.fetchCommittedOffsets(group, topics);
  const rows: PartitionLag[] = [];
  for (const { topic, partitions } of committed) {
    const ends = await admin.fetchTopicOffsets(topic);
    const byPartition = new Map(partitions.map((p) => [p.partition, Number(p.offset)]));
    for (const end of ends) {
      const high = Number(end.high);
      const low = Number(end.low);
      const mine = byPartition.get(end.partition);
      const at = mine === undefined || mine < 0 ? null : mine;
      rows.push({ group, topic, partition: end.partition, committed: at, high, low, lag: Math.max(0, high - (at ?? low)) });
    }
  }
  return rows.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
}

/**
 * Counts the records written to a topic since a time, from Kafka's time index (the transport's admin
 * `fetchTopicOffsetsByTimestamp`, which returns per partition the first offset whose timestamp is
 * at or after `sinceMs`, or the high watermark when there is none): Σ (high − that offset).
 * @param admin - a connected admin client ({@link LagAdmin}).
 * @param topic - full topic name, e.g. the dead-letter topic.
 * @param sinceMs - ms since the epoch.
 * @returns the number of records with a timestamp at or after `sinceMs`.
 * @throws the admin client's errors (e.g. an unknown topic).
 */
export async function recordsSince(
  admin: Pick<LagAdmin, "fetchTopicOffsetsByTimestamp" | "fetchTopicOffsets">,
  topic: string,
  sinceMs: number,
): Promise<number> {
  const [from, ends] = await Promise.all([admin.fetchTopicOffsetsByTimestamp(topic, sinceMs), admin.fetchTopicOffsets(topic)]);
  const high = new Map(ends.map((e) => [e.partition, Number(e.high)]));
  let n = 0;
  for (const p of from) n += Math.max(0, (high.get(p.partition) ?? 0) - Number(p.offset));
  return n;
}
