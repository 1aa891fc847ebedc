/**
 * The settled height of the match stage (issue 33; docs/design/windows.md, "The settled height"):
 * window ends, absence deadlines and sequence steps are judged at a block only once every record
 * of that block that can feed them has been consumed — not merely once the block record arrived.
 *
 * Why: the `blocks` topic and the record topics are read independently. After a restart (or while
 * decode lags) the stage can read many block records before the `events` of those blocks, so
 * without this an absence rule fires (and may even be confirmed) for a window whose records were
 * merely late, and a count window fires late.
 *
 * How: ingest produces a block's transactions, logs and traces before its block record
 * (pipeline/ingest/core.ts, two sends). A block consumed by the stage is queued (and kept in Redis,
 * so a SIGKILL loses none). Every {@link SETTLED_POLL_MS} the shell reads, with the Kafka admin
 * client, first the committed offsets of the decode and match groups, then the end offsets of the
 * record topics. A queued block goes through three steps ({@link advanceSettled}):
 *
 * 1. **snapshot**: the end offsets of the record topics read after the block was consumed (they
 *    cover its transactions, logs and traces);
 * 2. **decoded**: decode's committed offsets on `logs` passed the snapshot's — its events are
 *    produced; the block's **target** becomes the end offsets read after that (they cover the events);
 * 3. **settled**: the match group's committed offsets on every record topic passed the target —
 *    every record of the block was matched and its window records written to Redis.
 *
 * Settled blocks are released in order to the window and sequence evaluators. Reorgs are not
 * delayed (orphaning is safe at any time); a queued block that left the chain is skipped. Without
 * window, absence or sequence rules nothing is queued or read. Confirmations of firings still count
 * from the chain head: a firing is made only once its closing block is settled, and from then its
 * depth is the head's distance as for any match.
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import type { ChainId } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import { memoPerRegistry } from "../../lib/metrics.js";
import type { RedisClient } from "../../lib/redis.js";
import type { Rule } from "../../lib/rules/model.js";
import { ruleSequence } from "../../lib/rules/schema-sequence.js";
import { ruleAbsence, ruleWindow } from "../../lib/rules/schema-window.js";
import type { TopicKind } from "../../topics/index.js";
import type { Bus } from "../kafka/bus.js";
import type { TransportAdmin } from "../kafka/transport.js";
import { chainKeyPrefix } from "./keys.js";
import { watchIndex } from "./watch-index.js";
import type { HeadView, WatchedIndex } from "./windows/evaluator.js";

/** Interval of the offset reads while blocks wait, in ms. */
export const SETTLED_POLL_MS = 500;

/** How long the oldest waiting block may wait before a warning (then once per this interval), ms. */
export const STALL_WARN_MS = 60_000;

/** The record topics the match stage consumes (their records feed windows and sequences). */
export const RECORD_TOPICS = ["transactions", "logs", "events", "traces"] as const satisfies readonly TopicKind[];

/** Per partition, an offset (the next one to read or write), as the admin client gives it (decimal string). */
export type PartitionOffsets = Readonly<Record<number, string>>;

/** Per topic kind, {@link PartitionOffsets}. */
export type TopicOffsets = Readonly<Partial<Record<TopicKind, PartitionOffsets>>>;

/** A consumed block that waits for its records. */
export interface QueuedBlock {
  number: number;
  /** Lower-case block hash. */
  hash: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** Step 1: end offsets read after the block was consumed. */
  snapshot?: TopicOffsets;
  /** Step 2: end offsets read after decode's commits on `logs` passed the snapshot. */
  target?: TopicOffsets;
}

/** One reading of Kafka: committed offsets (read first) and end offsets (read after them). */
export interface OffsetsReading {
  /** The decode group's committed offsets on `logs` (`-1`: none). */
  decodeLogs: PartitionOffsets;
  /** The match group's committed offsets on the record topics. */
  match: TopicOffsets;
  /** End offsets (high watermarks) of the record topics. */
  ends: TopicOffsets;
}

/**
 * Whether a group's committed offsets reached the required ones on every partition (a partition
 * required at 0 holds nothing; a partition without a commit has offset -1).
 */
export function passed(committed: PartitionOffsets | undefined, required: PartitionOffsets | undefined): boolean {
  for (const [p, need] of Object.entries(required ?? {})) {
    if (BigInt(need) <= 0n) continue;
    const have = committed?.[Number(p)];
    if (have === undefined || BigInt(have) < BigInt(need)) return false;
  }
  return true;
}

/**
 * One step of the settled height (pure; module doc). `fresh` is how many of the queue's first
 * blocks were consumed before `reading` started: only those may take its end offsets as their
 * snapshot. A block takes at most one step per reading, since each step needs offsets read after
 * the previous one held.
 * @returns the blocks still waiting and the settled prefix of the queue, in order.
 */
export function advanceSettled(
  queue: readonly QueuedBlock[],
  fresh: number,
  reading: OffsetsReading,
): { queue: QueuedBlock[]; settled: QueuedBlock[] } {
  const next = queue.map((b, i): QueuedBlock => {
    if (b.target !== undefined) return b;
    if (b.snapshot !== undefined) return passed(reading.decodeLogs, b.snapshot.logs) ? { ...b, target: reading.ends } : b;
    return i < fresh ? { ...b, snapshot: reading.ends } : b;
  });
  let n = 0;
  // Settled by the committed offsets read before `ends`: only targets from earlier readings count.
  while (n < queue.length) {
    const target = queue[n]?.target;
    if (target === undefined || !RECORD_TOPICS.every((t) => passed(reading.match[t], target[t]))) break;
    n++;
  }
  return { queue: next.slice(n), settled: next.slice(0, n) };
}

/** Whether a rule is evaluated over time (window, absence or sequence). */
export const isOverTime = (rule: Rule): boolean => ruleWindow(rule) !== null || ruleAbsence(rule) !== null || ruleSequence(rule) !== null;

/** Dependencies of {@link createSettledHeight}. */
export interface SettledHeightDeps {
  bus: Bus;
  redis: Pick<RedisClient, "hGetAll" | "hSet" | "hDel">;
  /** config `redisKeyPrefix`. */
  keyPrefix: string;
  chain: ChainId;
  logger: Logger;
  /** The stage's registry, for `chainsift_match_settled_lag_blocks`. */
  registry: Registry;
  /** The chain view's head now (a queued block above it left the chain). */
  head(): { number: number; hash: string } | undefined;
  /** The chain view's canonical hash at a height, or undefined when unknown (a queued block replaced by a reorg is skipped). */
  canonical(n: number): string | undefined;
  /** Evaluates the windows and sequences at a head (the evaluators' `onHead`, in order). */
  evaluate(view: HeadView): Promise<void>;
  /** Interval of the offset reads, ms; default {@link SETTLED_POLL_MS}. */
  pollMs?: number;
}

/** See the module doc. */
export interface SettledHeight {
  /** Wraps the rule index (or the saved-search index): its upserts and removals keep the set of rules evaluated over time. */
  watch<T extends WatchedIndex>(index: T): T;
  /** A head from the `blocks` or `reorgs` topic: a block is queued (or evaluated at once without over-time rules), a reorg evaluated at once. */
  onHead(view: HeadView): Promise<void>;
  /** Blocks consumed and not yet settled. */
  waiting(): number;
  stop(): Promise<void>;
}

const lagGauge = memoPerRegistry(
  (registry: Registry) =>
    new Gauge({
      name: "chainsift_match_settled_lag_blocks",
      help: "Blocks the match stage consumed whose window, absence and sequence evaluation waits for their records (decode's and the stage's own commits)",
      registers: [registry],
    }),
);

/** Creates the stage's {@link SettledHeight}: the pure {@link advanceSettled} over admin reads, with the queue kept in Redis. */
export function createSettledHeight(deps: SettledHeightDeps): SettledHeight {
  const { bus, redis } = deps;
  const pendingKey = `${chainKeyPrefix(deps.keyPrefix, deps.chain)}settle:pending`;
  const overTime = new Set<string>();
  const gauge = lagGauge(deps.registry);
  let queue: QueuedBlock[] = [];
  let restored = false;
  let admin: { client: TransportAdmin; connected: Promise<void> } | undefined;
  /** The evaluations, one at a time (the consumer's block handler and the poller both evaluate). */
  let serial: Promise<void> = Promise.resolve();
  const inOrder = (run: () => Promise<void>): Promise<void> => {
    const done = serial.then(run);
    serial = done.catch(() => {});
    return done;
  };

  const committed = async (client: TransportAdmin, stage: string, kinds: readonly TopicKind[]): Promise<TopicOffsets> => {
    const rows = await client.fetchCommittedOffsets(
      bus.groupId(stage),
      kinds.map((k) => bus.topic(k)),
    );
    const out: Partial<Record<TopicKind, PartitionOffsets>> = {};
    for (const k of kinds) {
      const row = rows.find((r) => r.topic === bus.topic(k));
      out[k] = Object.fromEntries((row?.partitions ?? []).map((p) => [p.partition, p.offset]));
    }
    return out;
  };
  const read = async (): Promise<OffsetsReading> => {
    if (!admin) {
      const client = bus.transport.admin();
      admin = { client, connected: client.connect() };
    }
    const { client, connected } = admin;
    await connected.catch((err: unknown) => {
      admin = undefined;
      throw err;
    });
    const decodeLogs = (await committed(client, "decode", ["logs"])).logs ?? {};
    const match = await committed(client, "match", RECORD_TOPICS);
    const ends: Partial<Record<TopicKind, PartitionOffsets>> = {};
    for (const k of RECORD_TOPICS) {
      // Every topic of the chain exists (bus.ts ensureTopics); a failed read fails the reading, which is retried.
      const parts = await client.fetchTopicOffsets(bus.topic(k));
      ends[k] = Object.fromEntries(parts.map((p) => [p.partition, p.high]));
    }
    return { decodeLogs, match, ends };
  };

  /** Evaluates a settled block unless it left the chain meanwhile, then forgets it in Redis. */
  const release = async (b: QueuedBlock): Promise<void> => {
    await inOrder(async () => {
      const head = deps.head();
      const hash = deps.canonical(b.number)?.toLowerCase();
      if (head === undefined || b.number > head.number || (hash !== undefined && hash !== b.hash)) return;
      await deps.evaluate({ head, block: { number: b.number, hash: b.hash, timestamp: b.timestamp }, canonical: deps.canonical });
    });
    await redis.hDel(pendingKey, `${b.number}:${b.hash}`);
  };
  /** Releases blocks in order; those not released (an evaluation failed) go back to the front of the queue. */
  const releaseAll = async (blocks: readonly QueuedBlock[]): Promise<void> => {
    for (const [i, b] of blocks.entries()) {
      try {
        await release(b);
      } catch (err) {
        queue = [...blocks.slice(i), ...queue];
        throw err;
      }
    }
  };

  /** The oldest waiting block and since when (ms) it has been the oldest, for {@link STALL_WARN_MS}. */
  let oldest: { hash: string; sinceMs: number; warnedMs: number } | undefined;
  const warnIfStalled = () => {
    const first = queue[0];
    if (first === undefined) {
      oldest = undefined;
      return;
    }
    if (oldest?.hash !== first.hash) oldest = { hash: first.hash, sinceMs: Date.now(), warnedMs: 0 };
    const now = Date.now();
    if (now - oldest.sinceMs < STALL_WARN_MS || now - oldest.warnedMs < STALL_WARN_MS) return;
    oldest.warnedMs = now;
    const waitingFor = first.target !== undefined ? "the match group's commits on the record topics" : "the decode group's commits on logs";
    deps.logger.warn(
      { block: first.number, waiting: queue.length, waitingForMs: now - oldest.sinceMs },
      `window, absence and sequence evaluation waits for ${waitingFor} (is decode running?)`,
    );
  };
  /** Failed readings since the last good one, and when a warning about them was last logged (ms). */
  const failing = { count: 0, warnedMs: 0 };
  let ticking = false;
  const tick = async (): Promise<void> => {
    if (ticking || queue.length === 0) return;
    ticking = true;
    try {
      if (overTime.size === 0) {
        // No rule waits for records: release everything.
        const all = queue;
        queue = [];
        await releaseAll(all);
        return;
      }
      const fresh = queue.length;
      const reading = await read();
      if (failing.count > 0) {
        deps.logger.info({ failures: failing.count }, "settled height: Kafka offsets read again");
        failing.count = 0;
      }
      const step = advanceSettled(queue.slice(0, fresh), fresh, reading);
      queue = [...step.queue, ...queue.slice(fresh)];
      await releaseAll(step.settled);
      warnIfStalled();
    } catch (err) {
      // At the first failure, then at most once per STALL_WARN_MS while they go on (a read is retried every pollMs).
      failing.count++;
      const now = Date.now();
      if (failing.count === 1 || now - failing.warnedMs >= STALL_WARN_MS) {
        failing.warnedMs = now;
        deps.logger.warn(
          { err, failures: failing.count },
          "settled height not advanced; retried (logged again after a minute of failures)",
        );
      }
    } finally {
      gauge.set(queue.length);
      ticking = false;
    }
  };
  const timer = setInterval(() => void tick(), deps.pollMs ?? SETTLED_POLL_MS);
  timer.unref();

  return {
    watch: <T extends WatchedIndex>(index: T): T =>
      watchIndex(index, (rule, id) => {
        if (rule !== undefined && isOverTime(rule)) overTime.add(id);
        else overTime.delete(id);
      }),
    async onHead(view) {
      const block = view.block;
      if (block !== undefined && !restored) {
        // At the first block record this member reads: the blocks a previous owner queued and did
        // not evaluate (their offsets are committed). Evaluating one twice is a no-op of the arithmetic.
        const saved = Object.values(await redis.hGetAll(pendingKey)).map((json) => JSON.parse(json) as QueuedBlock);
        queue = [...saved.sort((a, b) => a.number - b.number), ...queue];
        restored = true;
      }
      if (block === undefined || (overTime.size === 0 && queue.length === 0)) return inOrder(() => deps.evaluate(view));
      if (queue.some((b) => b.hash === block.hash)) return; // read again (a replay after a restart)
      const queued: QueuedBlock = { number: block.number, hash: block.hash, timestamp: block.timestamp };
      await redis.hSet(pendingKey, `${block.number}:${block.hash}`, JSON.stringify(queued));
      queue.push(queued);
      gauge.set(queue.length);
    },
    waiting: () => queue.length,
    async stop() {
      clearInterval(timer);
      while (ticking) await new Promise((r) => setTimeout(r, 20));
      await serial;
      await admin?.connected.then(() => admin?.client.disconnect()).catch(() => {});
    },
  };
}
