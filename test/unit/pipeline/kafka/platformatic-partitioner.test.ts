/**
 * Issue 37's key→partition parity check for `@platformatic/kafka` (docs/kafka-client.md): with its
 * `compatibilityPartitioner` (`murmur2(key) & 0x7fffffff`; its producer then takes the result
 * modulo the partition count), every key goes to the partition today's partitioner
 * (`keyHashPartitioner`, pipeline/kafka/partitioner.ts: Kafka's Java partitioner, as kafkajs's
 * DefaultPartitioner) gives it, over 100,000 keys of the shapes chainsift produces and several
 * partition counts. Its default partitioner (`murmur2(key) >>> 0`) does not: it moves the keys
 * whose hash is negative, so an adapter must set the compatibility one. The adapter
 * (pipeline/kafka/platformatic.ts) sets `javaPartitioner`, which returns what `compatibilityPartitioner`
 * returns for every key (its murmur2 in 32-bit integers, the library's in BigInt).
 */
import { createHash } from "node:crypto";
import { compatibilityPartitioner, defaultPartitioner } from "@platformatic/kafka";
import type { PartitionerArgs } from "kafkajs";
import { describe, expect, it } from "vitest";
import { keyHashPartitioner } from "../../../../pipeline/kafka/partitioner.js";
import { javaPartitioner } from "../../../../pipeline/kafka/platformatic.js";

const KEYS = 100_000;
const PARTITION_COUNTS = [1, 2, 3, 6, 10, 12, 16, 30, 64, 100];

/** Deterministic keys: block and transaction hashes, `<tx hash>_l_<log index>` (logs, events), and UTF-8 strings of every length 0..63. */
function keys(): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < KEYS; i++) {
    const hash = `0x${createHash("sha256").update(`key ${i}`).digest("hex")}`;
    out.push(hash, `${hash}_l_${i % 500}`, `${"é日a".repeat(22).slice(0, i % 64)}${i}`);
  }
  return out.slice(0, KEYS);
}

/** Today's partitioner for `partitions` partitions: key → partition. */
function todays(partitions: number): (key: string) => number {
  const partition = keyHashPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, p) => ({ partitionId: p, leader: 0 }));
  return (key) => partition({ topic: "t", partitionMetadata, message: { key, value: null } } as PartitionerArgs);
}

/**
 * What `partitioner` of `@platformatic/kafka` returns for each key (a Buffer, as its producer
 * passes the serialized key); its producer then takes it modulo the partition count
 * (`message.partition %= partitionsCount`).
 */
const platformatic = (partitioner: (message: never, key: Buffer) => number, keys: readonly string[]) =>
  keys.map((key) => partitioner({ topic: "t", key } as never, Buffer.from(key)));

describe("@platformatic/kafka key→partition parity with today's partitioner", () => {
  const all = keys();

  it(`compatibilityPartitioner: the same partition for ${KEYS} keys at ${PARTITION_COUNTS.join(", ")} partitions`, () => {
    const raw = platformatic(compatibilityPartitioner, all);
    for (const n of PARTITION_COUNTS) {
      const today = todays(n);
      const differing = all.filter((key, i) => (raw[i] as number) % n !== today(key));
      expect(differing, `${n} partitions`).toEqual([]);
    }
  });

  it(`the adapter's javaPartitioner returns compatibilityPartitioner's number for each of ${KEYS} keys`, () => {
    const ours = platformatic(javaPartitioner(), all);
    const theirs = platformatic(compatibilityPartitioner, all);
    expect(ours.filter((v, i) => v !== theirs[i])).toEqual([]);
    // Keyless messages go round-robin, not all to one partition.
    const keyless = javaPartitioner();
    expect([0, 1, 2].map(() => keyless({ topic: "t" } as never, undefined))).toEqual([0, 1, 2]);
  });

  it("defaultPartitioner (murmur2 >>> 0): other partitions for keys with a negative hash", () => {
    const raw = platformatic(defaultPartitioner, all);
    const moved = (n: number) => {
      const today = todays(n);
      return all.filter((key, i) => (raw[i] as number) % n !== today(key));
    };
    expect(moved(3).length).toBeGreaterThan(0);
    // A power-of-two count keeps the low bits: unsigned and masked hashes agree there.
    expect(moved(16)).toEqual([]);
  });
});
