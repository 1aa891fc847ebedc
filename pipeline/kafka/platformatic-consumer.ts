/**
 * The consumer of the `@platformatic/kafka` transport (pipeline/kafka/platformatic.ts): the
 * transport's partition batches with explicit offsets (pipeline/kafka/transport.ts) over the
 * library's lower-level consumer calls — `joinGroup` (the library then heartbeats on its own timer
 * and rejoins on a rebalance), `fetch`, `commit`, `listCommittedOffsets`, `listOffsets`
 * (https://github.com/platformatic/kafka/blob/main/docs/consumer.md "Advanced Methods").
 *
 * Its `MessagesStream` is not used: it hands out one message at a time, commits per message, and
 * has no per-partition pause or seek. Here one fetch round asks every partition's leader for the
 * partitions at their positions (on a connection pool of their own, so a held Fetch never delays
 * a heartbeat or a commit); each partition's records of the round are one batch; batches of
 * different partitions are handled `partitionsConsumedConcurrently` at a time; the next round
 * starts when they are done (as kafkajs does).
 *
 * Group membership uses the assignment protocol name `RoundRobinAssigner` (kafkajs's; the same
 * round-robin assignment and the standard subscription encoding), so kafkajs and this client can
 * be members of one group (a rolling switch of `CHAINSIFT_KAFKA_CLIENT`).
 * @module
 */
import { Admin, type BaseOptions, ConnectionPool, Consumer, findErrorBy, IS_CONTROL, ListOffsetTimestamps } from "@platformatic/kafka";
import { ChainsiftError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import type {
  BatchControl,
  ConsumedBatch,
  ConsumedMessage,
  ConsumerEvent,
  MessageHeaders,
  TransportConsumer,
  TransportConsumerOptions,
  TransportRunOptions,
} from "./transport.js";

/** A topic-partition and an offset: a fetch position, a resolved or a committed offset. */
interface PartitionOffset {
  topic: string;
  partition: number;
  offset: bigint;
}

/** An error thrown by the batch handler (a consumer crash), as opposed to a Kafka request failing; never leaves this module. */
class HandlerCrash extends ChainsiftError {
  readonly code = "CS_KAFKA_HANDLER_CRASH";
  constructor(cause: unknown) {
    super("batch handler failed", { cause });
    this.name = "HandlerCrash";
  }
}

/** Map key of a topic-partition. */
const keyOf = (topic: string, partition: number) => `${topic}:${partition}`;

/** A record's headers as the transport's {@link MessageHeaders} (names as UTF-8 text, values as bytes; a repeated name becomes an array). */
function headersOf(raw: [Buffer | null, Buffer | null][]): MessageHeaders | undefined {
  if (raw.length === 0) return undefined;
  const out: MessageHeaders = {};
  for (const [k, v] of raw) {
    if (k === null || v === null) continue;
    const name = k.toString("utf8");
    const prev = out[name];
    out[name] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** Most bytes a fetch response may carry over all partitions (the library's default, 50 MiB). */
const MAX_FETCH_BYTES = 50 * 1024 * 1024;
/** Wait after a failed round, ms: doubles from 300 up to this (kafkajs's consumer restarts back off alike). */
const MAX_BACKOFF_MS = 10_000;

/**
 * The request timeout of a consumer's own client (group, offset and metadata requests; fetches have
 * their own pool), ms: at least `rebalanceTimeoutMs` + 5 s, because the group coordinator answers a
 * JoinGroup only once every member rejoined or left, which takes up to the rebalance timeout (a
 * member SIGKILLed without leaving is waited for until its session times out). A shorter timeout
 * gives up on a join that was about to succeed. The Java client gives JoinGroup the rebalance
 * timeout plus 5 s (https://github.com/apache/kafka/pull/5203), and so does kafkajs
 * (`src/protocol/requests/joinGroup/index.js`, `NETWORK_DELAY`).
 * @param requestTimeoutMs - the transport's request timeout, ms.
 * @param rebalanceTimeoutMs - the member's rebalance timeout, ms.
 * @returns `max(requestTimeoutMs, rebalanceTimeoutMs + 5000)`.
 */
export function groupRequestTimeoutMs(requestTimeoutMs: number, rebalanceTimeoutMs: number): number {
  return Math.max(requestTimeoutMs, rebalanceTimeoutMs + 5_000);
}

/**
 * A consumer of the transport over `@platformatic/kafka`'s `Consumer`.
 * @param base - the library's client options (client id, brokers, timeouts, retries).
 * @param opts - the transport's consumer options; defaults: session timeout 30 s, rebalance timeout
 *   60 s, fetch wait 5 s, 1 MiB per partition (kafkajs's).
 * @param logger - where failed rounds and crashed batches are reported (warn), if given.
 */
export function platformaticConsumer(base: BaseOptions, opts: TransportConsumerOptions, logger?: Logger): TransportConsumer {
  const maxWaitMs = opts.maxWaitTimeMs ?? 5_000;
  const maxBytesPerPartition = opts.maxBytesPerPartition ?? 1024 * 1024;
  const sessionTimeout = opts.sessionTimeoutMs ?? 30_000;
  const rebalanceTimeout = Math.max(sessionTimeout, opts.rebalanceTimeoutMs ?? 60_000);
  const consumer = new Consumer({
    ...base,
    requestTimeout: groupRequestTimeoutMs(base.requestTimeout ?? 30_000, rebalanceTimeout),
    groupId: opts.groupId,
    autocommit: false,
    sessionTimeout,
    rebalanceTimeout,
    heartbeatInterval: Math.min(3_000, sessionTimeout),
    maxWaitTime: maxWaitMs,
    protocols: [{ name: "RoundRobinAssigner", version: 0 }],
  });
  // Fetches on connections of their own: the broker answers a connection's requests in order, and
  // a Fetch may be held for maxWaitMs.
  const fetchPool = new ConnectionPool(base.clientId, { requestTimeout: Math.max(30_000, 2 * maxWaitMs) });
  let admin: Admin | undefined;
  const log = logger?.child({ groupId: opts.groupId, kafkaClient: "platformatic" });

  const listeners = new Map<ConsumerEvent, (() => void)[]>();
  const emit = (event: ConsumerEvent) => {
    for (const l of listeners.get(event) ?? []) l();
  };

  let topics: string[] = [];
  let fromBeginning = true;
  /** The group's assignment of this member (keys of topic-partitions). */
  let assigned = new Set<string>();
  /** Next offset to fetch per assigned partition. */
  const positions = new Map<string, PartitionOffset>();
  /** Next offset to commit per partition, as resolved by the handler or set by a seek. */
  const resolved = new Map<string, PartitionOffset>();
  /** What the last successful commit stored per partition. */
  const committed = new Map<string, bigint>();
  /** Seeks asked for before the partition's position is known. */
  const pendingSeeks = new Map<string, PartitionOffset>();
  /** Per partition, bumped by a seek: a batch fetched before it is stale. */
  const seekEpochs = new Map<string, number>();
  const paused = new Set<string>();
  /** Bumped by every rebalance and join: batches of an earlier generation are stale. */
  let generation = 0;
  let needsPositions = false;
  let rejoining = false;
  let needsJoin = false;
  let state: "idle" | "running" | "stopping" = "idle";
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let lastCommitAt = 0;
  let committing: Promise<void> | undefined;

  consumer.on("consumer:group:join", (payload) => {
    generation++;
    rejoining = false;
    assigned = new Set((payload.assignments ?? consumer.assignments ?? []).flatMap((a) => a.partitions.map((p) => keyOf(a.topic, p))));
    needsPositions = true;
    wake?.();
  });
  consumer.on("consumer:group:rebalance", () => {
    generation++;
    rejoining = true;
  });
  // The library emits `error` when a rejoin after a failed heartbeat fails: no more heartbeats, so
  // the loop joins again (an EventEmitter without an `error` listener would throw instead).
  consumer.on("error", (err: unknown) => {
    log?.warn({ err }, "kafka consumer lost its group membership; joining again");
    generation++;
    needsJoin = true;
    emit("crash");
    wake?.();
  });

  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    }).finally(() => {
      wake = undefined;
    });

  /** Commits every resolved offset of an assigned partition that differs from its last commit. */
  async function commit(): Promise<void> {
    while (committing) await committing.catch(() => {});
    lastCommitAt = Date.now();
    const offsets = [...resolved.entries()].filter(([k, o]) => assigned.has(k) && committed.get(k) !== o.offset).map(([, o]) => o);
    if (offsets.length === 0) return;
    committing = consumer.commit({ offsets: offsets.map((o) => ({ ...o, leaderEpoch: -1 })) });
    try {
      await committing;
      for (const o of offsets) committed.set(keyOf(o.topic, o.partition), o.offset);
    } finally {
      committing = undefined;
    }
  }

  /** Per topic, each partition's first or next offset (`-2`/`-1`, https://kafka.apache.org/protocol#The_Messages_ListOffsets). */
  const listEnds = (names: string[], timestamp: bigint) => consumer.listOffsets({ topics: names, timestamp });

  /** Sets the position of every assigned partition: its resolved offset, else its committed one, else the earliest or next offset; then the pending seeks. */
  async function initPositions(): Promise<void> {
    needsPositions = false;
    const byTopic = new Map<string, number[]>();
    for (const k of assigned) {
      const i = k.lastIndexOf(":");
      const t = k.slice(0, i);
      byTopic.set(t, [...(byTopic.get(t) ?? []), Number(k.slice(i + 1))]);
    }
    for (const k of [...resolved.keys()]) if (!assigned.has(k)) resolved.delete(k);
    for (const k of [...committed.keys()]) if (!assigned.has(k)) committed.delete(k);
    positions.clear();
    if (byTopic.size === 0) return;
    const groupTopics = [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
    const stored = await consumer.listCommittedOffsets({ topics: groupTopics });
    const fallback = await listEnds([...byTopic.keys()], fromBeginning ? ListOffsetTimestamps.EARLIEST : ListOffsetTimestamps.LATEST);
    for (const { topic, partitions } of groupTopics) {
      for (const partition of partitions) {
        const k = keyOf(topic, partition);
        const atCommit = stored.get(topic)?.[partition] ?? -1n;
        if (atCommit >= 0n) committed.set(k, atCommit);
        const mine = resolved.get(k)?.offset ?? -1n;
        let offset = atCommit > mine ? atCommit : mine;
        if (offset < 0n) offset = fallback.get(topic)?.[partition] ?? 0n;
        positions.set(k, { topic, partition, offset });
      }
    }
    for (const [k, seek] of pendingSeeks) {
      const p = positions.get(k);
      if (p) p.offset = seek.offset;
    }
    pendingSeeks.clear();
    await clampPositions();
  }

  /** Moves a position outside the partition's stored offsets to its earliest (fromBeginning) or next offset, as Kafka's `auto.offset.reset`. */
  async function clampPositions(): Promise<void> {
    const names = [...new Set([...positions.values()].map((p) => p.topic))];
    if (names.length === 0) return;
    const [low, high] = await Promise.all([listEnds(names, ListOffsetTimestamps.EARLIEST), listEnds(names, ListOffsetTimestamps.LATEST)]);
    for (const p of positions.values()) {
      const lo = low.get(p.topic)?.[p.partition] ?? 0n;
      const hi = high.get(p.topic)?.[p.partition] ?? 0n;
      if (p.offset < lo || p.offset > hi) p.offset = fromBeginning ? lo : hi;
    }
  }

  /** One Fetch per leader of the unpaused positions; the records of each partition as one batch. */
  async function fetchRound(): Promise<{ batch: ConsumedBatch; key: string }[]> {
    const wanted = [...positions.values()].filter((p) => !paused.has(p.topic));
    if (wanted.length === 0) return [];
    const md = await consumer.metadata({ topics: [...new Set(wanted.map((p) => p.topic))] });
    const byNode = new Map<number, Map<string, PartitionOffset[]>>();
    const names = new Map<string, string>();
    for (const p of wanted) {
      const t = md.topics.get(p.topic);
      const leader = t?.partitions[p.partition]?.leader;
      if (!t || leader === undefined || leader < 0) continue;
      names.set(t.id, p.topic);
      let node = byNode.get(leader);
      if (!node) {
        node = new Map();
        byNode.set(leader, node);
      }
      node.set(t.id, [...(node.get(t.id) ?? []), p]);
    }
    const responses = await Promise.all(
      [...byNode].map(async ([node, byTopic]) => {
        const asked = new Map<string, bigint>();
        const request = [...byTopic].map(([topicId, parts]) => ({
          topicId,
          partitions: parts.map((p) => {
            asked.set(keyOf(p.topic, p.partition), p.offset);
            return {
              partition: p.partition,
              fetchOffset: p.offset,
              partitionMaxBytes: maxBytesPerPartition,
              currentLeaderEpoch: -1,
              lastFetchedEpoch: -1,
            };
          }),
        }));
        const res = await consumer.fetch({
          node,
          topics: request,
          maxWaitTime: maxWaitMs,
          minBytes: 1,
          maxBytes: MAX_FETCH_BYTES,
          connectionPool: fetchPool,
        });
        return { res, asked };
      }),
    );
    const out: { batch: ConsumedBatch; key: string }[] = [];
    for (const { res, asked } of responses) {
      for (const t of res.responses) {
        const topic = names.get(t.topicId) ?? t.topicId;
        for (const part of t.partitions) {
          const key = keyOf(topic, part.partitionIndex);
          const pos = positions.get(key);
          const from = asked.get(key);
          // Not asked for, or moved (a seek, a new assignment) while the Fetch was out.
          if (!pos || from === undefined || pos.offset !== from || !part.records) continue;
          const messages: ConsumedMessage[] = [];
          let next = from;
          for (const rb of part.records) {
            const first = Number(rb.firstOffset);
            const last = rb.firstOffset + BigInt(rb.lastOffsetDelta);
            if (last + 1n > next) next = last + 1n;
            if (rb.attributes & IS_CONTROL) continue;
            const t0 = Number(rb.firstTimestamp);
            const min = Number(from);
            for (const r of rb.records) {
              const offset = first + r.offsetDelta;
              if (offset < min) continue;
              const m: ConsumedMessage = {
                key: r.key,
                value: r.value,
                offset: String(offset),
                timestamp: String(t0 + Number(r.timestampDelta)),
              };
              const headers = headersOf(r.headers);
              if (headers) m.headers = headers;
              messages.push(m);
            }
          }
          pos.offset = next;
          if (messages.length > 0) out.push({ key, batch: { topic, partition: part.partitionIndex, messages } });
        }
      }
    }
    return out;
  }

  /** Commits the resolved offsets when `run`'s auto-commit interval has passed since the last commit (always without an interval). */
  async function commitIfNecessary(run: TransportRunOptions): Promise<void> {
    if (run.autoCommitIntervalMs === undefined || Date.now() - lastCommitAt >= run.autoCommitIntervalMs) await commit();
  }

  /** Runs the handler on the round's batches, `concurrency` partitions at a time. */
  async function handle(batches: { batch: ConsumedBatch; key: string }[], run: TransportRunOptions): Promise<void> {
    const gen = generation;
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < batches.length && state === "running"; i = next++) {
        const { batch, key } = batches[i] as { batch: ConsumedBatch; key: string };
        const epoch = seekEpochs.get(key) ?? 0;
        const isStale = () => gen !== generation || (seekEpochs.get(key) ?? 0) !== epoch || !assigned.has(key);
        const control: BatchControl = {
          resolveOffset(offset) {
            if (isStale()) return;
            const n = BigInt(offset) + 1n;
            const cur = resolved.get(key);
            if (!cur || cur.offset < n) resolved.set(key, { topic: batch.topic, partition: batch.partition, offset: n });
          },
          commitOffsetsIfNecessary: () => commitIfNecessary(run),
          // The library heartbeats on its own timer, whatever the handler does.
          heartbeat: async () => {},
          isRunning: () => state === "running",
          isStale,
        };
        try {
          await run.eachBatch(batch, control);
        } catch (err) {
          throw new HandlerCrash(err);
        }
        await commitIfNecessary(run);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(run.partitionsConsumedConcurrently ?? 1, batches.length)) }, worker));
  }

  async function runLoop(run: TransportRunOptions): Promise<void> {
    let failures = 0;
    while (state === "running") {
      try {
        if (needsJoin) {
          // Cleared only once a join succeeded: a join that fails (a timeout, the coordinator moving)
          // is retried after the round's backoff, never given up (a member out of its group
          // consumes nothing and gets no more heartbeats to tell it so).
          await consumer.joinGroup({});
          needsJoin = false;
        }
        if (needsPositions) {
          await initPositions();
          emit("groupJoin");
        }
        if (rejoining || positions.size === 0 || [...positions.values()].every((p) => paused.has(p.topic))) {
          await idle(maxWaitMs);
          emit("fetch");
          continue;
        }
        const batches = await fetchRound();
        emit("fetch");
        await handle(batches, run);
        // As kafkajs's runner: after every fetch round, empty or not, so what the last batch resolved
        // is committed once the interval passed even when nothing more arrives.
        await commitIfNecessary(run);
        failures = 0;
      } catch (err) {
        if (state !== "running") break;
        failures++;
        if (err instanceof HandlerCrash) {
          // As kafkajs: a crashed handler restarts the consumer from the last commit (what was
          // resolved is committed first).
          log?.warn({ err: err.cause }, "kafka consumer batch handler failed; restarting from the committed offsets");
          emit("crash");
          await commit().catch(() => {});
          for (const k of positions.keys()) resolved.delete(k);
          needsPositions = true;
        } else {
          log?.warn({ err, failures }, "kafka consumer round failed; retrying");
          // OFFSET_OUT_OF_RANGE (retention removed what a position points at): moved as auto.offset.reset.
          if (findErrorBy(err as Error, "apiId", "OFFSET_OUT_OF_RANGE")) await clampPositions().catch(() => {});
        }
        await idle(Math.min(MAX_BACKOFF_MS, 300 * 2 ** Math.min(failures - 1, 6)));
        if (err instanceof HandlerCrash) emit("groupJoin");
      }
    }
  }

  async function stop(): Promise<void> {
    if (state !== "running") return;
    state = "stopping";
    wake?.();
    await loop;
    try {
      await commit();
    } catch (err) {
      log?.warn({ err }, "kafka consumer could not commit when stopping");
    }
    // Leave now (not at the session timeout), so the partitions move on at once; a failure only delays that.
    await new Promise<void>((resolve) => consumer.leaveGroup(false, () => resolve()));
    positions.clear();
    assigned = new Set();
    state = "idle";
    emit("stop");
  }

  return {
    async connect() {
      await consumer.metadata({ topics: [] });
    },
    async subscribe(names, begin) {
      topics = [...names];
      fromBeginning = begin;
    },
    async run(run) {
      if (state !== "idle") throw new Error("the consumer is already running");
      for (const t of topics) consumer.topics.track(t);
      state = "running";
      try {
        await consumer.joinGroup({});
      } catch (err) {
        state = "idle";
        throw err;
      }
      loop = runLoop(run);
    },
    pause(names) {
      for (const t of names) paused.add(t);
    },
    resume(names) {
      for (const t of names) paused.delete(t);
      wake?.();
    },
    seek(topic, partition, offset) {
      const k = keyOf(topic, partition);
      const o = { topic, partition, offset: BigInt(offset) };
      seekEpochs.set(k, (seekEpochs.get(k) ?? 0) + 1);
      const p = positions.get(k);
      if (p) p.offset = o.offset;
      else pendingSeeks.set(k, o);
      // The next commit carries the seeked offset (as kafkajs's seek with autoCommit).
      resolved.set(k, o);
      committed.delete(k);
    },
    async groupState() {
      admin ??= new Admin(base);
      const groups = await admin.describeGroups({ groups: [opts.groupId] });
      return groups.get(opts.groupId)?.state ?? "Dead";
    },
    on(event, listener) {
      listeners.set(event, [...(listeners.get(event) ?? []), listener]);
    },
    stop,
    async disconnect() {
      await stop();
      await consumer.close();
      await fetchPool.close();
      await admin?.close();
      emit("disconnect");
    },
  };
}
