/**
 * The producers' partitioner: kafkajs's `DefaultPartitioner` (Java-compatible murmur2 of the
 * message key modulo the partition count; https://kafka.js.org/docs/producing#default-partitioners)
 * with the same results but a murmur2 in 32-bit integer arithmetic (`Math.imul`) instead of
 * kafkajs's 64-bit `Long` emulation, and no per-message array copies. The ingest profile showed
 * kafkajs's murmur2 and its `Long.multiply` at ~7 % of the stage's CPU (docs/benchmarks.md).
 * Keyless messages and explicit partitions go to kafkajs's own partitioner unchanged.
 * @module
 */
import { type ICustomPartitioner, Partitioners } from "kafkajs";

/** murmur2's mixing constant (Kafka's `Utils.murmur2`). */
const M = 0x5bd1e995;
/** murmur2's seed (Kafka's `Utils.murmur2`). */
const SEED = 0x9747b28c;

/** Reused for string keys: their UTF-8 bytes are written here instead of a new Buffer per key. */
let scratch = Buffer.allocUnsafe(256);

/** The bytes of a key and their count: a string's UTF-8 bytes (in {@link scratch}), or the Buffer itself. */
function keyBytes(key: Buffer | string): [Buffer, number] {
  if (typeof key !== "string") return [key, key.length];
  if (key.length * 3 > scratch.length) scratch = Buffer.allocUnsafe(key.length * 3);
  return [scratch, scratch.write(key, 0, "utf8")];
}

/**
 * Kafka's murmur2 of a message key (signed 32-bit), equal to kafkajs's
 * `producer/partitioners/default/murmur2.js` for every key (a unit test compares them).
 * @param key - a string (hashed as UTF-8) or bytes.
 */
export function murmur2(key: Buffer | string): number {
  const [data, length] = keyBytes(key);
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4] as number) | ((data[i4 + 1] as number) << 8) | ((data[i4 + 2] as number) << 16) | ((data[i4 + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  // The tail bytes, highest first (Kafka's switch falling through cases 3, 2, 1).
  const rest = length & 3;
  if (rest >= 3) h ^= (data[tail + 2] as number) << 16;
  if (rest >= 2) h ^= (data[tail + 1] as number) << 8;
  if (rest >= 1) {
    h ^= data[tail] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * A kafkajs partitioner (`createPartitioner` of `kafka.producer()`) that places a keyed message
 * exactly where kafkajs's `Partitioners.DefaultPartitioner` does: `(murmur2(key) & 0x7fffffff) %
 * partitions`. Messages with an explicit partition or without a key go to a DefaultPartitioner.
 */
export const keyHashPartitioner: ICustomPartitioner = () => {
  const fallback = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key === null || message.key === undefined) return fallback(args);
    return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
  };
};
