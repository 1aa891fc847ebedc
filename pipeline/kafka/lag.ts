/**
 * Consumer-group lag from Kafka's own bookkeeping: for every partition of the topics a group has
 * committed offsets in, lag = the partition's high watermark − the group's committed offset
 * (the transport's admin `fetchCommittedOffsets` and `fetchTopicOffsets`, pipeline/kafka/transport.ts). The
 * stages' `chainsift_consumer_lag_records` gauge (pipeline/kafka/metrics.ts) and
 * `npm run chainsift -- status` both use {@link consumerGroupLag}.
 * @module
 */
import type { TransportAdmin } from "./transport.js";

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
 * @param admin - a connected admin client of the transport.
 * @param group - the consumer group id (e.g. `bus.groupId("decode")`).
 * @param topics - full topic names; default the group's committed topics.
 * @returns one row per topic-partition, sorted by topic then partition (empty for an unknown group).
 * @throws the admin client's errors (broker unreachable, unknown topic among `topics`).
 */
export async function consumerGroupLag(
  admin: Pick<TransportAdmin, "fetchCommittedOffsets" | "fetchTopicOffsets">,
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
 * @param admin - a connected admin client of the transport.
 * @param topic - full topic name, e.g. the dead-letter topic.
 * @param sinceMs - ms since the epoch.
 * @returns the number of records with a timestamp at or after `sinceMs`.
 * @throws the admin client's errors (e.g. an unknown topic).
 */
export async function recordsSince(
  admin: Pick<TransportAdmin, "fetchTopicOffsetsByTimestamp" | "fetchTopicOffsets">,
  topic: string,
  sinceMs: number,
): Promise<number> {
  const [from, ends] = await Promise.all([admin.fetchTopicOffsetsByTimestamp(topic, sinceMs), admin.fetchTopicOffsets(topic)]);
  const high = new Map(ends.map((e) => [e.partition, Number(e.high)]));
  let n = 0;
  for (const p of from) n += Math.max(0, (high.get(p.partition) ?? 0) - Number(p.offset));
  return n;
}
