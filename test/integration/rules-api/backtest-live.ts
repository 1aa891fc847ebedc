/**
 * Shared by the "backtest = live" integration tests of windowed and sequence rules
 * (window-backtest.test.ts, sequence-backtest.test.ts): an isolated API over hand-written indexed
 * records (index prefix, Redis prefix and token of its own, deleted afterwards), the backtest's
 * NDJSON lines, and the block-by-block feeding of a live evaluator, half of the blocks' matches
 * written after their block as late partitions deliver them.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, expect } from "vitest";
import { buildApi } from "../../../api/app.js";
import { indexName } from "../../../es/mappings.js";
import type { Alert } from "../../../lib/alerting/alert.js";
import { loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { RECORD_KINDS } from "../../../lib/records.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import type { MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import type { HeadView, WindowEvaluatorDeps } from "../../../pipeline/match/windows/evaluator.js";
import { deletePrefix } from "../accounts/redis.js";
import {
  blocks as fixtureBlocks,
  hash,
  indexFixtures,
  MAINNET,
  mainnetApiConfig,
  q,
  type RecordsByKind,
  searchStackUp,
} from "../api/fixtures.js";

/** The isolated API of one test file; `es`, `app` and `redis` are set by {@link BacktestLive.open}. */
export interface BacktestLive {
  /** Whether Elasticsearch and Redis are reachable (else the tests skip). */
  up: boolean;
  /** The index prefix of the file (its records' indices). */
  indexPrefix: string;
  /** The Redis key prefix of the file (live evaluators use sub-prefixes of it). */
  redisPrefix: string;
  /** The API's bearer token (one account). */
  token: string;
  es: Client;
  app: FastifyInstance;
  redis: RedisClientType;
  /** Indexes `records` under the file's prefix, builds the API and connects Redis. */
  open(records: RecordsByKind): Promise<void>;
  /** Registers the file's hooks: {@link BacktestLive.open} before all its tests, {@link BacktestLive.close} after (both only when {@link BacktestLive.up}). */
  hooks(records: RecordsByKind): void;
  /** Deletes the indices and the Redis keys, closes everything. */
  close(): Promise<void>;
  /** `POST /alerting/rules/test/` over `from … to` (with `route` `searches`: `POST /alerting/searches/test/`, `subject` a saved search): the answer's lines, checked complete. */
  backtestLines(
    subject: RuleInput | object,
    from: number,
    to: number,
    route?: "rules" | "searches",
  ): Promise<Array<Record<string, unknown>>>;
}

/**
 * Creates the isolated API of a test file.
 * @param label - a short prefix of its index and Redis names (e.g. `wb`).
 */
export async function backtestLive(label: string): Promise<BacktestLive> {
  const base = loadConfig();
  const token = `test-${randomBytes(8).toString("hex")}`;
  const prefix = `${label}-${randomBytes(4).toString("hex")}-`;
  const redisPrefix = prefix.replace(/-$/, ":");
  const config = {
    ...mainnetApiConfig(base, { indexPrefix: prefix, redisKeyPrefix: redisPrefix, api: { tokens: [token], rateLimitMax: 100_000 } }),
    backtest: { maxBlocks: 1000, timeoutMs: 60_000 },
  };
  const live = {
    up: await searchStackUp(base),
    indexPrefix: prefix,
    redisPrefix,
    token,
    async open(records: RecordsByKind) {
      live.es = new Client({ node: config.elasticsearch.url });
      await indexFixtures(live.es, MAINNET, prefix, undefined, records);
      live.app = await buildApi({ config, es: live.es, logger: false });
      live.redis = createClient({ url: config.redisUrl }) as RedisClientType;
      live.redis.on("error", () => {});
      await live.redis.connect();
    },
    hooks(records: RecordsByKind) {
      beforeAll(async () => {
        if (live.up) await live.open(records);
      });
      afterAll(async () => {
        if (live.up) await live.close();
      });
    },
    async close() {
      await live.app?.close();
      await live.es?.indices.delete({ index: RECORD_KINDS.map((k) => indexName(MAINNET, k, prefix)), ignore_unavailable: true });
      await live.es?.close();
      await deletePrefix(config.redisUrl, redisPrefix);
      await live.redis?.close();
    },
    async backtestLines(subject: RuleInput | object, from: number, to: number, route: "rules" | "searches" = "rules") {
      const res = await live.app.inject({
        method: "POST",
        url: `/alerting/${route}/test/`,
        headers: { authorization: `Bearer ${token}` },
        payload: { [route === "rules" ? "rule" : "search"]: subject, from, to },
      });
      expect(res.statusCode, res.body).toBe(200);
      const lines = res.body
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.at(-1)).toMatchObject({ type: "end", complete: true });
      return lines;
    },
  } as BacktestLive;
  return live;
}

/** A live evaluator as the stage drives it (the window and the sequence evaluators). */
export interface LiveEvaluator {
  addMatches(matches: readonly MatchInput[]): Promise<MatchInput[]>;
  onHead(view: HeadView): Promise<void>;
}

/**
 * Feeds a live evaluator the blocks in order, each with its matches: the even blocks' matches are
 * written before their block, the odd ones' after it (then the head is evaluated again, without a
 * block), as late partitions deliver them. Every match must belong to the evaluator's rules.
 * @param setHead - told each block's number before it is evaluated (the tracker's head).
 */
export async function feedLive(
  evaluator: LiveEvaluator,
  blocks: ReadonlyArray<{ number: { num: number }; hash: string; timestamp: string }>,
  matchesOf: (blockNumber: number) => MatchInput[],
  setHead: (n: number) => void,
): Promise<void> {
  const canonical = (n: number) => blocks.find((b) => b.number.num === n)?.hash;
  for (const [i, b] of blocks.entries()) {
    const n = b.number.num;
    const matches = matchesOf(n);
    const late = i % 2 === 1;
    if (!late) expect(await evaluator.addMatches(matches)).toEqual([]);
    setHead(n);
    const block = { number: n, hash: b.hash, timestamp: Math.floor(Date.parse(`${b.timestamp}Z`) / 1000) };
    await evaluator.onHead({ head: { number: n, hash: b.hash }, block, canonical });
    if (late) {
      expect(await evaluator.addMatches(matches)).toEqual([]);
      await evaluator.onHead({ head: { number: n, hash: b.hash }, canonical });
    }
  }
}

/** A firing of a backtest (a `match` line) or of a live evaluator: its entity and its alerts' ids. */
export interface Firing {
  entityId: string;
  entity: Record<string, unknown>;
  alertIds: string[];
}

/** The firings of a backtest's lines (its `match` lines), in line order. */
export function backtestFirings(lines: ReadonlyArray<Record<string, unknown>>): Firing[] {
  return lines
    .filter((l) => l.type === "match")
    .map((l) => ({
      entityId: l.entityId as string,
      entity: l.entity as Record<string, unknown>,
      alertIds: (l.alerts as Array<{ alert: { id: string } }>).map((a) => a.alert.id),
    }));
}

/**
 * The dependencies of a live evaluator on the file's Redis under `<redisPrefix><space>:`, with the
 * real confirmation tracker behind `fire` and `retract`; `firings()` are the net ones (fired, not
 * retracted), `setHead` tells the tracker's head (give it to {@link feedLive}).
 */
export function trackedLive(stack: BacktestLive, space: string) {
  const keyPrefix = `${stack.redisPrefix}${space}:`;
  const tracker = createConfirmationTracker({ redis: stack.redis, keyPrefix, chain: MAINNET });
  const fired = new Map<string, Firing>();
  let head = 0;
  const key = (m: MatchInput) => `${m.entity.entityId}|${m.entity.blockHash}`;
  const deps: WindowEvaluatorDeps = {
    redis: stack.redis,
    keyPrefix,
    chain: MAINNET,
    logger: createLogger("silent", `test-backtest-live-${space}`),
    fire: async (ms) => {
      const alerts: Alert[] = await tracker.onMatches(ms, head);
      for (const m of ms)
        fired.set(key(m), {
          entityId: m.entity.entityId,
          entity: m.entity as unknown as Record<string, unknown>,
          alertIds: alerts.filter((a) => a.entityId === m.entity.entityId).map((a) => a.id),
        });
    },
    retract: async (ms) => {
      await tracker.retract(ms);
      for (const m of ms) fired.delete(key(m));
    },
  };
  return {
    deps,
    firings: (): Firing[] => [...fired.values()],
    setHead: (n: number) => {
      head = n;
    },
  };
}

/**
 * Blocks `from, from + 1, …` (one per count, `transactionCount` = the count; hashes from `label`),
 * 12 s apart from `startMs` (UTC ms).
 */
export function rangeBlocks(label: string, from: number, counts: readonly number[], startMs: number) {
  return counts.map((count, i) => ({
    ...(fixtureBlocks[0] as (typeof fixtureBlocks)[number]),
    number: q(from + i),
    hash: hash(`${label}-block-${from + i}`),
    parentHash: hash(`${label}-block-${from + i - 1}`),
    timestamp: new Date(startMs + 12_000 * i).toISOString().slice(0, 19),
    transactionCount: count,
  }));
}

/** Where the `j`-th record of a block of {@link rangeBlocks} sits: its own transaction (index `j`), log index `j`. */
export function placedIn(label: string, b: ReturnType<typeof rangeBlocks>[number], j: number) {
  return {
    transactionHash: hash(`${label}-tx-${b.number.num}-${j}`),
    transactionIndex: q(j),
    logIndex: q(j),
    blockHash: b.hash,
    blockNumber: b.number,
    timestamp: b.timestamp,
  };
}
