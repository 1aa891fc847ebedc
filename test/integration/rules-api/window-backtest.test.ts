/**
 * Backtest = live for windowed rules (issue 33): hand-written Transfer events over 14 blocks (some
 * without any record) are indexed in the real Elasticsearch under a unique prefix; each windowed
 * rule (count by blocks, grouped sum by seconds, distinct, absence) is replayed by
 * `POST /alerting/rules/test/` over the range and evaluated live by the match stage's window
 * evaluator (pipeline/match/windows/) on the real Redis with the real confirmation tracker, fed
 * the same records block by block (half of the blocks' records written after their block, as late
 * partitions deliver them). Both must give the same firings — window bounds, aggregate, group,
 * first record ids — and the same alert ids. Skips when Elasticsearch or Redis is down.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { startBacktest } from "../../../api/backtest/run.js";
import { indexName } from "../../../es/mappings.js";
import type { Alert } from "../../../lib/alerting/alert.js";
import { loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { backtestRule, ruleSelector } from "../../../lib/match/backtest.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { WindowFiring } from "../../../lib/match/windows.js";
import type { EventRecord } from "../../../lib/records.js";
import { RECORD_KINDS } from "../../../lib/records.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import { createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import { createWindowEvaluator, type WindowMatch } from "../../../pipeline/match/windows/evaluator.js";
import { isTransfer } from "../../support/rules.js";
import { deletePrefix } from "../accounts/redis.js";
import {
  BINANCE,
  blocks as fixtureBlocks,
  events as fixtureEvents,
  hash,
  indexFixtures,
  MAINNET,
  mainnetApiConfig,
  q,
  RECORDS,
  searchStackUp,
  USDT,
  VITALIK,
  WETH,
} from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const TOKEN = `test-${randomBytes(8).toString("hex")}`;
const PREFIX = `wb-${randomBytes(4).toString("hex")}-`;
const REDIS_PREFIX = PREFIX.replace(/-$/, ":");
const config = {
  ...mainnetApiConfig(base, { indexPrefix: PREFIX, redisKeyPrefix: REDIS_PREFIX, api: { tokens: [TOKEN], rateLimitMax: 100_000 } }),
  backtest: { maxBlocks: 1000, timeoutMs: 60_000 },
};
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** Transfers per block; zeros are blocks without any record. */
const PER_BLOCK = [2, 0, 3, 1, 0, 0, 4, 2, 0, 0, 0, 3, 1, 0];
const FROM = 18_000_000;
const TO = FROM + PER_BLOCK.length - 1;
const SENDERS = [VITALIK, BINANCE, WETH];
const template = fixtureEvents.find((e) => e.event === "Transfer" && e.address === USDT) as EventRecord;
const blocks = PER_BLOCK.map((_, i) => ({
  ...(fixtureBlocks[0] as (typeof fixtureBlocks)[number]),
  number: q(FROM + i),
  hash: hash(`wb-block-${FROM + i}`),
  parentHash: hash(`wb-block-${FROM + i - 1}`),
  timestamp: new Date(Date.UTC(2023, 8, 1, 0, 0, 12 * i)).toISOString().slice(0, 19),
  transactionCount: PER_BLOCK[i] as number,
}));
const events: EventRecord[] = blocks.flatMap((b, i) =>
  Array.from({ length: PER_BLOCK[i] as number }, (_, j) => {
    const from = SENDERS[(i + j) % SENDERS.length] as string;
    const amount = (j + 1) * 1_000_000_000; // (j+1) × 1000 USDT
    return {
      ...template,
      transactionHash: hash(`wb-tx-${b.number.num}-${j}`),
      transactionIndex: q(j),
      logIndex: q(j),
      blockHash: b.hash,
      blockNumber: b.number,
      timestamp: b.timestamp,
      args: [
        { name: "from", pos: 0, value: { hex: from.toLowerCase(), num: null, scaled: null, type: "address" } },
        { name: "to", pos: 1, value: { hex: BINANCE.toLowerCase(), num: null, scaled: null, type: "address" } },
        { name: "value", pos: 2, value: { hex: `0x${amount.toString(16)}`, num: amount, scaled: amount / 1e6, type: "uint256" } },
      ],
    };
  }),
);

function windowedRule(name: string, extension: Record<string, unknown>): RuleInput {
  return {
    name,
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    state: "enabled",
    ...MAINNET,
    config: {
      targetType: "Event",
      targetMap: [isTransfer()],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/w" } }],
    },
    ...extension,
  } as RuleInput;
}

const RULES: Array<[string, RuleInput]> = [
  [
    "count by blocks",
    windowedRule("count", { window: { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "4" } }),
  ],
  [
    "grouped sum of scaled values by seconds",
    windowedRule("sum", {
      window: {
        seconds: 36,
        aggregate: { fn: "sum", field: "args.value", useScaledValue: true },
        operator: "Greater",
        threshold: "2500",
        groupBy: "args.from",
      },
    }),
  ],
  [
    "distinct senders",
    windowedRule("distinct", {
      window: { blocks: 2, aggregate: { fn: "distinct", field: "args.from" }, operator: "Greater or Equal", threshold: "3" },
    }),
  ],
  ["absence by blocks", windowedRule("absence", { absence: { blocks: 3 } })],
];

/** What both sides must agree on: the firing and the alert id. */
const summary = (entityId: string, firing: WindowFiring, alertIds: string[]) => ({ entityId, firing, alertIds });

let es: Client;
let app: FastifyInstance;
let redis: RedisClientType;

beforeAll(async () => {
  if (!up) return;
  es = new Client({ node: config.elasticsearch.url });
  await indexFixtures(es, MAINNET, PREFIX, undefined, { ...RECORDS, block: blocks, tx: [], log: [], event: events, call: [] });
  app = await buildApi({ config, es, logger: false });
  redis = createClient({ url: config.redisUrl }) as RedisClientType;
  redis.on("error", () => {});
  await redis.connect();
});

afterAll(async () => {
  if (!up) return;
  await app?.close();
  await es?.indices.delete({ index: RECORD_KINDS.map((k) => indexName(MAINNET, k, PREFIX)), ignore_unavailable: true });
  await es?.close();
  await deletePrefix(config.redisUrl, REDIS_PREFIX);
  await redis?.close();
});

/** The backtest's firings over the whole range. */
async function backtest(rule: RuleInput) {
  const res = await app.inject({ method: "POST", url: "/alerting/rules/test/", headers: AUTH, payload: { rule, from: FROM, to: TO } });
  expect(res.statusCode, res.body).toBe(200);
  const lines = res.body
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.at(-1)).toMatchObject({ type: "end", complete: true });
  return lines
    .filter((l) => l.type === "match")
    .map((l) => {
      const alerts = l.alerts as Array<{ alert: { id: string } }>;
      return summary(
        l.entityId as string,
        (l.entity as { window: WindowFiring }).window,
        alerts.map((a) => a.alert.id),
      );
    });
}

/** The live evaluator's net firings (fired and not retracted), fed the same records block by block. */
async function live(input: RuleInput, space: string) {
  const rule = backtestRule({ rule: input, accountId: "acct" }, () => new Date());
  const keyPrefix = `${REDIS_PREFIX}${space}:`;
  const tracker = createConfirmationTracker({ redis, keyPrefix, chain: MAINNET });
  const fired = new Map<string, { match: WindowMatch; alerts: Alert[] }>();
  let head = 0;
  const key = (m: WindowMatch) => `${m.entity.entityId}|${m.entity.blockHash}`;
  const windows = createWindowEvaluator({
    redis,
    keyPrefix,
    chain: MAINNET,
    logger: createLogger("silent", "test-window-backtest"),
    fire: async (ms) => {
      const alerts = await tracker.onMatches(ms, head);
      for (const m of ms as WindowMatch[]) fired.set(key(m), { match: m, alerts: alerts.filter((a) => a.entityId === m.entity.entityId) });
    },
    retract: async (ms) => {
      await tracker.retract(ms);
      for (const m of ms as WindowMatch[]) fired.delete(key(m));
    },
  });
  windows.watch(createRuleIndex({ chain: MAINNET })).upsert(rule);
  const select = ruleSelector(rule, MAINNET, { chainId: 1 });
  const canonical = (n: number) => blocks[n - FROM]?.hash;
  for (const [i, b] of blocks.entries()) {
    const n = b.number.num;
    const matches = select(
      events.filter((e) => e.blockNumber.num === n).map((record) => ({ kind: "event" as const, record: record as never })),
    ).selected.map(({ entity }) => ({ rule, entity }));
    const late = i % 2 === 1;
    if (!late) expect(await windows.addMatches(matches)).toEqual([]);
    head = n;
    const block = { number: n, hash: b.hash, timestamp: Math.floor(Date.parse(`${b.timestamp}Z`) / 1000) };
    await windows.onHead({ head: { number: n, hash: b.hash }, block, canonical });
    if (late) {
      expect(await windows.addMatches(matches)).toEqual([]);
      await windows.onHead({ head: { number: n, hash: b.hash }, canonical });
    }
  }
  return [...fired.values()]
    .sort((a, b) => a.match.firing.end.number - b.match.firing.end.number || a.match.entity.entityId.localeCompare(b.match.entity.entityId))
    .map(({ match, alerts }) =>
      summary(
        match.entity.entityId,
        (match.entity as unknown as { window: WindowFiring }).window, // with the search body, as the backtest's
        alerts.map((a) => a.id),
      ),
    );
}

describe.skipIf(!up)("windowed rule backtests = the live evaluator on the same blocks", () => {
  it.each(RULES)("%s", async (name, rule) => {
    const replayed = await backtest(rule);
    expect(replayed.length, `${name}: the fixture is built so that the window fires`).toBeGreaterThan(0);
    const sorted = [...replayed].sort((a, b) => a.firing.end.number - b.firing.end.number || a.entityId.localeCompare(b.entityId));
    expect(await live(rule, name.replace(/\W+/g, "-"))).toEqual(sorted);
  });

  it("the block lines count the selected entities; the absence's firings come at blocks without records", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/alerting/rules/test/",
      headers: AUTH,
      payload: { rule: RULES[3]?.[1], from: FROM, to: TO },
    });
    const lines = res.body
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const blockLines = lines.filter((l) => l.type === "block");
    expect(blockLines.reduce((s, l) => s + (l.selected as number), 0)).toBe(events.length);
    const firings = lines.filter((l) => l.type === "match");
    for (const f of firings) expect(PER_BLOCK[(f.blockNumber as number) - FROM]).toBe(0);
    expect(firings.map((f) => f.entityId)).toEqual([`absence:${FROM + 10}`]);
  });

  it("the time cap stops between whole blocks, records or not, and nextFrom is the first block not applied", async () => {
    const stops = new Set<number>();
    for (let timeoutMs = 2_100; timeoutMs < 30_000; timeoutMs += 700) {
      let t = 0;
      const deps = { es, indexPrefix: PREFIX, requestTimeoutMs: 10_000, timeoutMs, clock: () => (t += 1_000), decode: { chainId: 1 } };
      const rule = RULES[3]?.[1] as RuleInput;
      const lines: Array<Record<string, unknown>> = [];
      for await (const l of await startBacktest(deps, MAINNET, { rule, accountId: "a", from: FROM, to: TO, head: TO }))
        lines.push(l as unknown as Record<string, unknown>);
      const end = lines.at(-1) as { complete: boolean; reason: string | null; nextFrom: number | null };
      if (end.complete) continue;
      expect(end.reason).toBe("CS_BACKTEST_TIME_CAP");
      const nextFrom = end.nextFrom as number;
      expect(nextFrom).toBeGreaterThanOrEqual(FROM);
      expect(nextFrom).toBeLessThanOrEqual(TO);
      for (const l of lines.filter((x) => x.type === "block" || x.type === "match")) expect(l.blockNumber as number).toBeLessThan(nextFrom);
      stops.add(nextFrom);
    }
    // The cap was hit at several places, some of them between blocks without records.
    expect(stops.size).toBeGreaterThan(1);
    expect([...stops].some((n) => PER_BLOCK[n - FROM] === 0)).toBe(true);
  });
});
