/**
 * The settled height's Kafka and Redis shell (pipeline/match/settled.ts) against the stack: a
 * block is evaluated only once the decode group committed past the logs produced before it was
 * read and the match group committed past every record topic's end read after that; a restarted
 * stage evaluates the blocks its predecessor queued; without over-time rules nothing waits. The
 * groups' commits are made with `skipExistingRecords` (no members run), as a caught-up decode or
 * match stage would leave them.
 */
import { Registry } from "prom-client";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../lib/logger.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { Rule } from "../../../lib/rules/model.js";
import { type Bus, createBus, createRecordProducer, type RecordProducer, skipExistingRecords } from "../../../pipeline/kafka/bus.js";
import { createSettledHeight, type SettledHeight } from "../../../pipeline/match/settled.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { absenceTransferRule } from "../../support/rules.js";
import { usdtLog } from "../../support/sample-records.js";

const up = await probeStack();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const block = (n: number) => ({ number: n, hash: `0x${n.toString(16).padStart(64, "0")}`, timestamp: 1_700_000_000 + 12 * n });

describe.skipIf(!up.ok)("settled height (Kafka admin reads, Redis queue)", () => {
  let h: Harness;
  let bus: Bus;
  let producer: RecordProducer;
  let redis: RedisClientType;
  const running: SettledHeight[] = [];
  const absence = (): Rule =>
    ({
      ...absenceTransferRule({
        chain: h.config.chain,
        token: usdtLog.address,
        url: "http://127.0.0.1:9/x",
        to: usdtLog.address,
        blocks: 3,
      }),
      id: "r-absence",
      accountId: "acct-1",
      version: 1,
      description: null,
      createdAt: "2024-01-01T00:00:00.000Z",
      updatedAt: "2024-01-01T00:00:00.000Z",
    }) as Rule;
  /** A settled height whose evaluations are recorded (block numbers, in order); `overTime` holds the absence rule. */
  const start = (evaluated: number[], overTime = true) => {
    const s = createSettledHeight({
      bus,
      redis,
      keyPrefix: h.config.redisKeyPrefix,
      chain: h.config.chain,
      logger: h.logger,
      registry: new Registry(),
      head: () => block(100),
      canonical: () => undefined,
      evaluate: async (view) => {
        if (view.block) evaluated.push(view.block.number);
      },
      pollMs: 50,
    });
    if (overTime) s.watch(createRuleIndex({ chain: h.config.chain })).upsert(absence());
    running.push(s);
    return s;
  };
  const headOf = (n: number) => ({ head: block(100), block: block(n), canonical: () => undefined });
  const pendingKey = () =>
    `${h.config.redisKeyPrefix}match:${h.config.chain.technology}/${h.config.chain.blockchain}/${h.config.chain.network}:settle:pending`;

  beforeAll(async () => {
    h = createHarness();
    bus = await createBus({ config: h.config, logger: h.logger });
    producer = await createRecordProducer(bus);
    redis = createClient({ url: h.config.redisUrl }) as RedisClientType;
    await redis.connect();
  }, 60_000);

  afterAll(async () => {
    for (const s of running) await s.stop();
    await producer?.disconnect();
    await redis?.del(pendingKey());
    await redis?.close();
    await h?.cleanup();
  });

  it("evaluates a block once decode, then the match stage, committed past its records", async () => {
    const evaluated: number[] = [];
    await producer.send([{ kind: "logs", key: "l1", record: usdtLog }]);
    const s = start(evaluated);
    await s.onHead(headOf(1));
    await sleep(500);
    expect(evaluated).toEqual([]);
    expect(await redis.hLen(pendingKey())).toBe(1);

    await skipExistingRecords(bus, ["decode"]); // decode consumed the log (and produced nothing)
    await sleep(500);
    expect(evaluated).toEqual([]); // the match stage has not consumed the log

    await skipExistingRecords(bus, ["match"]);
    await waitFor(async () => evaluated.length > 0, 10_000, 20);
    expect(evaluated).toEqual([1]);
    expect(s.waiting()).toBe(0);
    expect(await redis.hLen(pendingKey())).toBe(0);
    await s.stop();
  }, 60_000);

  it("a restarted stage evaluates the blocks its predecessor queued, in order", async () => {
    const before: number[] = [];
    await producer.send([{ kind: "logs", key: "l2", record: usdtLog }]);
    const first = start(before);
    await first.onHead(headOf(2));
    await first.stop(); // as a SIGKILL: block 2's offset is committed, its evaluation not done

    const after: number[] = [];
    const second = start(after);
    await second.onHead(headOf(3));
    expect(second.waiting()).toBe(2);
    await skipExistingRecords(bus, ["decode", "match"]);
    await waitFor(async () => after.length >= 2, 10_000, 20);
    expect(before).toEqual([]);
    expect(after).toEqual([2, 3]);
    await second.stop();
  }, 60_000);

  it("failing offset reads are warned about once, not at every poll, and their end is logged", async () => {
    const lines: { level: number; msg: string; failures?: number }[] = [];
    const logger = createLogger("info", "settled-test", {
      format: "json",
      output: { write: (line) => lines.push(JSON.parse(line)), redirect: () => {} },
    });
    let down = true;
    const flakyBus = Object.assign(Object.create(bus) as Bus, {
      transport: {
        ...bus.transport,
        admin: () =>
          down
            ? ({ connect: () => Promise.reject(new Error("admin down")) } as unknown as ReturnType<Bus["transport"]["admin"]>)
            : bus.transport.admin(),
      },
    });
    const s = createSettledHeight({
      bus: flakyBus,
      redis,
      keyPrefix: h.config.redisKeyPrefix,
      chain: h.config.chain,
      logger,
      registry: new Registry(),
      head: () => block(100),
      canonical: () => undefined,
      evaluate: async () => {},
      pollMs: 20,
    });
    running.push(s);
    s.watch(createRuleIndex({ chain: h.config.chain })).upsert(absence());
    await s.onHead(headOf(5));
    await sleep(600);
    const warned = () => lines.filter((l) => l.msg.startsWith("settled height not advanced"));
    expect(warned()).toHaveLength(1);
    down = false;
    await waitFor(async () => lines.some((l) => l.msg.startsWith("settled height: Kafka offsets read again")), 10_000, 20);
    const back = lines.find((l) => l.msg.startsWith("settled height: Kafka offsets read again"));
    expect(back?.failures).toBeGreaterThan(5);
    expect(warned()).toHaveLength(1);
    await s.stop();
    await redis.del(pendingKey()); // block 5 waits for commits no one makes here
  }, 30_000);

  it("without window, absence or sequence rules a block is evaluated at once", async () => {
    const evaluated: number[] = [];
    await producer.send([{ kind: "logs", key: "l3", record: usdtLog }]);
    const s = start(evaluated, false);
    await s.onHead(headOf(4));
    expect(evaluated).toEqual([4]);
    expect(s.waiting()).toBe(0);
    await s.stop();
  }, 30_000);
});
