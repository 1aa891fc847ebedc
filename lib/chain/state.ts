/**
 * The follower's durable position and the canonical chain as ingest knows it, in Redis, so that a
 * restart (or a SIGKILL) misses no block and still sees a reorg that happened while it was down.
 *
 * Why Redis and not the blocks topic: ingest must know, before it produces anything, the last block
 * it produced and the hashes of the blocks below it (to find a fork point). Rebuilding that from
 * the blocks topic means reading the topic backwards past re-produced and orphaned blocks; Redis
 * answers it with one `HGETALL`, and the index and match stages read the same canonical map to
 * recognise records of orphaned blocks that arrive late (pipeline/index/indexer.ts). Redis runs
 * with AOF (scripts/stack.sh), so the state survives a Redis restart too.
 *
 * Keys, under `<keyPrefix>ingest:<technology>/<blockchain>/<network>:`:
 *
 * | key | type | content |
 * |---|---|---|
 * | `seq` | string | the ingest sequence counter (the `chainsift-seq` header values, topics/index.ts); never below the clock in microseconds since 1970, so numbers keep growing even if this state is lost (Elasticsearch keeps them as document versions) |
 * | `canon` | hash | height → hash of the block ingest holds canonical there, written *before* that block (or a reorg announcement) is produced; `""` = no block at that height after a reorg |
 * | `produced` | hash | height → hash of the block the follower produced there (its reorg window) |
 * | `tip` | string | `<number>:<hash>` of the last block the follower produced |
 * | `status` | hash | the node's head and ingest's position for other processes (lib/chain/ingest-status.ts) |
 * | `backfill:<from>-<to>` | string | the last height of that backfill produced so far |
 * | `orphaned` | sorted set | block hash (lower case) → the first sequence number its orphaning does not void: every block a reorg announcement orphaned, kept {@link ORPHANED_RETENTION_MS} (as long as the topics can hold its records; `canon` is pruned after about 16 windows) |
 *
 * Ordering that the index stage relies on: `canon` at a height is changed before any message that
 * follows from the change is produced (see {@link ChainState.announce} and {@link ChainState.expect}).
 * @module
 */

import type { ChainId } from "../config/index.js";
import { finalizedKey, recordFinalized } from "./finality.js";
import { type ChainStateRedis, ingestKeyPrefix } from "./ingest-keys.js";

/** Re-exported: the shared key layout and Redis subset live in lib/chain/ingest-keys.ts. */
export { type ChainStateRedis, ingestKeyPrefix } from "./ingest-keys.js";

/**
 * Kafka's default `segment.ms`, 7 days (https://kafka.apache.org/documentation/#topicconfigs_segment.ms):
 * a record outlives its topic's `retention.ms` by up to this much, because Kafka deletes whole
 * segments, each only once its newest record is past retention, and rolls the active segment at the
 * latest after `segment.ms`. topics/index.ts sets no `segment.ms`.
 */
export const KAFKA_DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000;

/**
 * The longest `retention.ms` of the topics the index stage consumes (blocks, transactions, logs,
 * traces, events, reorgs in topics/index.ts): 7 days. lib/ does not import topics/; a unit test
 * (test/unit/lib/chain/orphaned-retention.test.ts) fails when a topic keeps records longer.
 */
export const RECORD_TOPICS_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * How long ingest remembers that a block was orphaned (the `orphaned` set, module doc), in
 * milliseconds: {@link RECORD_TOPICS_RETENTION_MS} plus {@link KAFKA_DEFAULT_SEGMENT_MS}, so 14 days.
 * As long as a record of an orphaned block can still be read from the topics (a rebuild with a new
 * consumer group, an Elasticsearch outage longer than the delete tombstones' 60 s
 * `index.gc_deletes`), the index stage can still tell it is void.
 */
export const ORPHANED_RETENTION_MS = RECORD_TOPICS_RETENTION_MS + KAFKA_DEFAULT_SEGMENT_MS;

/** A produced block: height and hash. */
export interface BlockRef {
  number: number;
  hash: string;
}

/** What the follower resumes from. */
export interface FollowerPosition {
  /** The last block produced by the follower, or null on a first start. */
  tip: BlockRef | null;
  /** Hashes of the blocks the follower produced, by height (its reorg window). */
  produced: Map<number, string>;
}

/**
 * Reads the canonical chain as ingest knows it (the index and match stages use it).
 */
export interface CanonicalReader {
  /**
   * The canonical hash at each height: a hash, `""` when ingest knows there is no block at that
   * height any more (a reorg to a shorter chain), or undefined when ingest never recorded it
   * (older than its window, or produced by a backfill).
   * @throws Redis errors (transient: callers retry).
   */
  hashesAt(heights: readonly number[]): Promise<Map<number, string | undefined>>;
  /**
   * Which of these block hashes a reorg announcement orphaned during the last
   * {@link ORPHANED_RETENTION_MS}, each with the first sequence number (`chainsift-seq`) that
   * orphaning does not void: a record of that block with a smaller sequence number is void; one with
   * a larger number was produced after it (the block became canonical again) and is not. Hashes
   * compare case-insensitively; absent hashes are not in the map. Unlike `canon`, never pruned by height.
   * @throws Redis errors (transient: callers retry).
   */
  orphanedSince(hashes: readonly string[]): Promise<Map<string, number>>;
}

/** The durable state of ingest for one chain (module doc). */
export interface ChainState extends CanonicalReader {
  /**
   * Reserves `count` consecutive ingest sequence numbers and returns the first. Numbers grow
   * strictly; the Redis state never hands out one below `Date.now() * 1000` (microseconds), so a
   * lost or reset state does not hand out numbers below the versions already in Elasticsearch.
   * @param expect - blocks to record as canonical first, as {@link ChainState.expect} does, in the
   *   same Redis round trip (one script: `canon` written, then the numbers reserved, atomically).
   *   The follower's catch-up needs both before every block it produces. Default: none.
   */
  reserveSeq(count: number, expect?: readonly BlockRef[]): Promise<number>;
  /** The follower's position. */
  loadFollower(): Promise<FollowerPosition>;
  /** Records that the block `ref` is about to be produced as canonical at its height (`canon`). */
  expect(refs: readonly BlockRef[]): Promise<void>;
  /**
   * Records that the follower produced `ref`: `produced[ref.number]` and the tip, both at once
   * (Redis: one script, one round trip; a crash never leaves one without the other).
   */
  markProduced(ref: BlockRef): Promise<void>;
  /**
   * Records a reorg before its announcements are produced: each orphaned `hash` joins the `orphaned`
   * set (with the sequence number after the last one reserved so far, see
   * {@link CanonicalReader.orphanedSince}), then `canon` at each orphaned height becomes the
   * replacement (or `""`).
   */
  announce(replacements: ReadonlyArray<{ number: number; hash: string; replacedBy: string | null }>): Promise<void>;
  /**
   * Records that the follower unwound to `ancestor` (its last block still canonical; hash `""` when
   * unknown, below the window): the tip moves there and `produced` at the orphaned heights is dropped.
   */
  unwind(ancestor: BlockRef, orphanedHeights: readonly number[]): Promise<void>;
  /** Forgets `produced` and `canon` entries below `height` (blocks final or out of the window). */
  prune(producedBelow: number, canonBelow: number): Promise<void>;
  /** Last height produced by the backfill `from..to`, or null when it never produced anything. */
  backfillProgress(from: number, to: number): Promise<number | null>;
  /** Records that the backfill `from..to` produced everything up to `last`. */
  setBackfillProgress(from: number, to: number, last: number): Promise<void>;
  /**
   * Publishes the node's finalized block number for the match stage (lib/chain/finality.ts); null
   * (no answer) writes nothing. Optional: the in-memory state has nobody to tell.
   */
  recordFinalized?(finalized: number | null): Promise<void>;
  /** Deletes every key of this chain's ingest state (`npm start` on the embedded chain, tests). */
  reset(): Promise<void>;
}

/** `seq` = max(seq, floor) + count, atomically; returns the new value (the last reserved number). */
const RESERVE = `local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[2])
if cur < floor then cur = floor end
cur = cur + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', cur))
return string.format('%d', cur)`;

/**
 * {@link RESERVE} after `HSET canon` (KEYS[2]) of the field/value pairs ARGV[3..] (height, hash),
 * when there are any: the blocks recorded as canonical and their sequence numbers in one round trip.
 */
const EXPECT_RESERVE = `for i = 3, #ARGV - 1, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
${RESERVE}`;

/** `HSET produced` (KEYS[1]) ARGV[1] = height → ARGV[2] = hash, and `SET tip` (KEYS[2]) to ARGV[3], atomically. */
const MARK_PRODUCED = `redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
return 1`;

/**
 * Adds block hashes to the `orphaned` set (KEYS[1]) with score max(seq (KEYS[2]), ARGV[1] = now in µs) + 1:
 * every number reserved so far is below it, every later one at or above. Drops members older than
 * ARGV[2] (µs) and lets the whole set expire ARGV[3] ms after the last orphaning. Returns the score.
 */
const ORPHAN = `local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local now = tonumber(ARGV[1])
if cur < now then cur = now end
local score = string.format('%d', cur + 1)
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], score, ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return score`;

/** ZMSCORE of KEYS[1] for the members ARGV (Redis ≥ 6.2): scores as strings, false when absent. */
const ORPHAN_SCORES = "return redis.call('ZMSCORE', KEYS[1], unpack(ARGV))";

/** Parses a `tip` value (`<number>:<hash>`); null when absent or malformed. */
export function parseTip(raw: string | null): BlockRef | null {
  if (!raw) return null;
  const i = raw.indexOf(":");
  const number = Number(raw.slice(0, i));
  return Number.isSafeInteger(number) && i > 0 ? { number, hash: raw.slice(i + 1) } : null;
}

/**
 * The ingest state in Redis (module doc).
 * @param redis a connected client; not closed here.
 * @param keyPrefix config `redisKeyPrefix` (tests use a unique one).
 */
export function createRedisChainState(redis: ChainStateRedis, keyPrefix: string, chain: ChainId): ChainState {
  const p = ingestKeyPrefix(keyPrefix, chain);
  const k = { seq: `${p}seq`, canon: `${p}canon`, produced: `${p}produced`, tip: `${p}tip`, orphaned: `${p}orphaned` };
  const backfillKey = (from: number, to: number) => `${p}backfill:${from}-${to}`;
  const below = async (key: string, height: number) => (await redis.hKeys(key)).filter((f) => Number(f) < height);
  return {
    recordFinalized: (finalized) => recordFinalized(redis, finalizedKey(keyPrefix, chain), finalized),
    async reserveSeq(count, expect = []) {
      const args = [String(count), String(Date.now() * 1000)];
      for (const r of expect) args.push(String(r.number), r.hash);
      const last = Number(await redis.eval(EXPECT_RESERVE, { keys: [k.seq, k.canon], arguments: args }));
      return last - count + 1;
    },
    async loadFollower() {
      const [tipRaw, produced] = await Promise.all([redis.get(k.tip), redis.hGetAll(k.produced)]);
      const tip = parseTip(tipRaw);
      const window = new Map<number, string>();
      for (const [h, hash] of Object.entries(produced)) {
        const n = Number(h);
        // Entries above the tip belong to a unwind that did not finish; the tip is what was produced.
        if (hash && (!tip || n <= tip.number)) window.set(n, hash);
      }
      return { tip, produced: window };
    },
    async expect(refs) {
      if (refs.length === 0) return;
      await redis.hSet(k.canon, Object.fromEntries(refs.map((r) => [String(r.number), r.hash])));
    },
    async markProduced(ref) {
      await redis.eval(MARK_PRODUCED, {
        keys: [k.produced, k.tip],
        arguments: [String(ref.number), ref.hash, `${ref.number}:${ref.hash}`],
      });
    },
    async announce(replacements) {
      if (replacements.length === 0) return;
      const now = Date.now();
      const hashes = [...new Set(replacements.map((r) => r.hash.toLowerCase()))];
      const args = [String(now * 1000), String((now - ORPHANED_RETENTION_MS) * 1000), String(ORPHANED_RETENTION_MS), ...hashes];
      await redis.eval(ORPHAN, { keys: [k.orphaned, k.seq], arguments: args });
      await redis.hSet(k.canon, Object.fromEntries(replacements.map((r) => [String(r.number), r.replacedBy ?? ""])));
    },
    async unwind(ancestor, orphanedHeights) {
      // Tip first: a crash in between leaves produced entries above the tip, which loadFollower ignores.
      await redis.set(k.tip, `${ancestor.number}:${ancestor.hash}`);
      if (orphanedHeights.length > 0) await redis.hDel(k.produced, orphanedHeights.map(String));
    },
    async prune(producedBelow, canonBelow) {
      const [a, b] = await Promise.all([below(k.produced, producedBelow), below(k.canon, canonBelow)]);
      if (a.length > 0) await redis.hDel(k.produced, a);
      if (b.length > 0) await redis.hDel(k.canon, b);
    },
    async hashesAt(heights) {
      const unique = [...new Set(heights)];
      const out = new Map<number, string | undefined>();
      if (unique.length === 0) return out;
      const values = await redis.hmGet(k.canon, unique.map(String));
      for (const [i, h] of unique.entries()) out.set(h, values[i] ?? undefined);
      return out;
    },
    async orphanedSince(hashes) {
      const unique = [...new Set(hashes.map((h) => h.toLowerCase()))];
      const out = new Map<string, number>();
      for (let i = 0; i < unique.length; i += 1000) {
        const chunk = unique.slice(i, i + 1000);
        const scores = (await redis.eval(ORPHAN_SCORES, { keys: [k.orphaned], arguments: chunk })) as Array<string | null>;
        for (const [j, h] of chunk.entries()) if (scores[j] != null) out.set(h, Number(scores[j]));
      }
      return out;
    },
    async backfillProgress(from, to) {
      const raw = await redis.get(backfillKey(from, to));
      return raw === null ? null : Number(raw);
    },
    async setBackfillProgress(from, to, last) {
      await redis.set(backfillKey(from, to), String(last));
    },
    async reset() {
      const keys = await redis.keys(`${p}*`);
      if (keys.length > 0) await redis.del(keys);
    },
  };
}

/**
 * The ingest state in memory: for unit tests and for ingesters whose position need not survive the
 * process (nothing is durable; sequence numbers start at `firstSeq`, default 1).
 */
export function createMemoryChainState(firstSeq = 1): ChainState {
  let seq = firstSeq - 1;
  const canon = new Map<number, string>();
  const produced = new Map<number, string>();
  let tip: BlockRef | null = null;
  const backfills = new Map<string, number>();
  const orphaned = new Map<string, number>();
  return {
    async reserveSeq(count, expect = []) {
      for (const r of expect) canon.set(r.number, r.hash);
      seq += count;
      return seq - count + 1;
    },
    async loadFollower() {
      return { tip: tip && { ...tip }, produced: new Map([...produced].filter(([n]) => !tip || n <= tip.number)) };
    },
    async expect(refs) {
      for (const r of refs) canon.set(r.number, r.hash);
    },
    async markProduced(ref) {
      produced.set(ref.number, ref.hash);
      tip = { ...ref };
    },
    async announce(replacements) {
      for (const r of replacements) orphaned.set(r.hash.toLowerCase(), seq + 1);
      for (const r of replacements) canon.set(r.number, r.replacedBy ?? "");
    },
    async unwind(ancestor, orphanedHeights) {
      tip = { ...ancestor };
      for (const h of orphanedHeights) produced.delete(h);
    },
    async prune(producedBelow, canonBelow) {
      for (const h of [...produced.keys()]) if (h < producedBelow) produced.delete(h);
      for (const h of [...canon.keys()]) if (h < canonBelow) canon.delete(h);
    },
    async hashesAt(heights) {
      return new Map(heights.map((h) => [h, canon.get(h)]));
    },
    async orphanedSince(hashes) {
      const out = new Map<string, number>();
      for (const h of hashes) {
        const since = orphaned.get(h.toLowerCase());
        if (since !== undefined) out.set(h.toLowerCase(), since);
      }
      return out;
    },
    async backfillProgress(from, to) {
      return backfills.get(`${from}-${to}`) ?? null;
    },
    async setBackfillProgress(from, to, last) {
      backfills.set(`${from}-${to}`, last);
    },
    async reset() {
      seq = firstSeq - 1;
      canon.clear();
      produced.clear();
      tip = null;
      backfills.clear();
      orphaned.clear();
    },
  };
}
