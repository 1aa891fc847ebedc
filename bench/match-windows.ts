/**
 * `npm run bench -- match --windows [--rules N] [--groups G] [--blocks B] [--per-block E] [--rounds R]`
 * (issue 33): the match stage's alerting path with windowed rules against the same number of
 * per-record rules, in entities per second, and the Redis memory of an open window.
 *
 * Both ways run the stage's real pieces against the stack's Redis (under a key prefix of their own,
 * deleted afterwards; never FLUSH): the rule index selects the records; per-record rules hand
 * their matches to the confirmation tracker (`onMatches`, then `onHead` per block, as
 * pipeline/match/stage.ts does); windowed rules hand them to the window evaluator (`addMatches`,
 * then `onHead` per block: every windowed rule's state loaded, the block's records applied, the
 * state saved), whose firings go to the same tracker. No Kafka: what is measured is the match path
 * after a record is consumed.
 *
 * Data (seeded): N tokens (N = `--rules`, default 1,000); rule i selects the Transfers of token i
 * (`address` Equals, `event` Equals Transfer) and, windowed, counts them per recipient
 * (`groupBy: "args.to"`) over 10 blocks, firing at 3 or more; each token's Transfers go to one of
 * G recipients of its own (`--groups`, default 100), so a window holds up to G groups. B blocks
 * (default 150: past the 128-block reorg depth, so windows reach their steady size) of E Transfers each (default 1,000), random tokens; one block per `onHead`, the
 * block's records added before its head (the order of a block's logs decoded before the next block).
 * The two ways alternate for R rounds (default 3), each on fresh keys; medians are reported.
 *
 * Memory: after the last windowed round, the `MEMORY USAGE` of every key of its prefix (window
 * state, record hashes, dirty set; the tracker's keys excluded by their names) over the open windows
 * (rules) and over the groups seen.
 * @module
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createClient, type RedisClientType } from "redis";
import { type ChainId, loadConfig } from "../lib/config/index.js";
import { createLogger } from "../lib/logger.js";
import { createRuleIndex } from "../lib/match/rule-index.js";
import type { Rule, TargetDefinition } from "../lib/rules/model.js";
import type { MatchedEntity, MatchInput } from "../pipeline/match/confirmations/decide.js";
import { createConfirmationTracker } from "../pipeline/match/confirmations/tracker.js";
import { createWindowEvaluator } from "../pipeline/match/windows/evaluator.js";
import { prng } from "./support/prng.js";
import { benchRule } from "./support/rules.js";

const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
/** The number of the first block of the data. */
const FIRST_BLOCK = 1000;

/** Options of {@link benchMatchWindows} (from the command line). */
interface Options {
  rules: number;
  groups: number;
  blocks: number;
  perBlock: number;
  rounds: number;
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
const tokenOf = (i: number) => `0x${"a".repeat(32)}${hex(i, 8)}`;
const walletOf = (token: number, k: number) => `0x${"b".repeat(24)}${hex(token, 8)}${hex(k, 8)}`;
const hashOf = (n: number) => `0x${hex(n, 64)}`;

function ruleOf(i: number, window: Rule["window"] | undefined): Rule {
  const targetMap: TargetDefinition[] = [
    { name: "address", operator: "Equals", value: tokenOf(i) },
    { name: "event", operator: "Equals", value: "Transfer" },
  ];
  return benchRule(`${window ? "w" : "p"}${i}`, "Event", targetMap, window ? { window } : {});
}

/** The Transfers of every block (seeded). */
function blocksOf(o: Options): MatchedEntity[][] {
  const rnd = prng(33);
  const out: MatchedEntity[][] = [];
  for (let b = 0; b < o.blocks; b++) {
    const n = FIRST_BLOCK + b;
    const list: MatchedEntity[] = [];
    for (let e = 0; e < o.perBlock; e++) {
      const token = Math.floor(rnd() * o.rules);
      const to = walletOf(token, Math.floor(rnd() * o.groups));
      list.push({
        entityId: `${hashOf(n * 100_000 + e)}_e_0`,
        blockHash: hashOf(n),
        blockNumber: { num: n, raw: `0x${n.toString(16)}` },
        event: "Transfer",
        address: tokenOf(token),
        args: [
          { name: "from", pos: 0, value: { hex: walletOf(token, 999_999), num: null, scaled: null, type: "address" } },
          { name: "to", pos: 1, value: { hex: to, num: null, scaled: null, type: "address" } },
          { name: "value", pos: 2, value: { hex: "0x3e8", num: 1000, scaled: 0.001, type: "uint256" } },
        ],
      } as unknown as MatchedEntity);
    }
    out.push(list);
  }
  return out;
}

/** Result of one round of one way. */
interface Round {
  entitiesPerSecond: number;
  alerts: number;
}

async function runRound(
  redis: RedisClientType,
  keyPrefix: string,
  windowed: boolean,
  o: Options,
  blocks: MatchedEntity[][],
): Promise<Round> {
  const tracker = createConfirmationTracker({ redis, keyPrefix, chain: CHAIN });
  let head = 0;
  let alerts = 0;
  const windows = createWindowEvaluator({
    redis,
    keyPrefix,
    chain: CHAIN,
    logger: createLogger("silent", "bench-windows"),
    fire: async (m) => {
      alerts += (await tracker.onMatches(m, head)).length;
    },
    retract: async (m) => {
      alerts += (await tracker.retract(m)).length;
    },
  });
  const index = windows.watch(createRuleIndex({ chain: CHAIN }));
  const window = {
    blocks: 10,
    aggregate: { fn: "count" },
    operator: "Greater or Equal",
    threshold: "3",
    groupBy: "args.to",
  } as Rule["window"];
  for (let i = 0; i < o.rules; i++) index.upsert(ruleOf(i, windowed ? window : undefined));
  const canonical = (n: number) => hashOf(n);
  let entities = 0;
  const start = performance.now();
  for (const [b, list] of blocks.entries()) {
    const n = FIRST_BLOCK + b;
    const matches: MatchInput[] = [];
    for (const entity of list) {
      for (const rule of index.match("Event", entity as unknown as Record<string, unknown>)) matches.push({ rule, entity });
      entities++;
    }
    const rest = await windows.addMatches(matches);
    if (rest.length > 0) alerts += (await tracker.onMatches(rest, head)).length;
    head = n;
    await windows.onHead({
      head: { number: n, hash: hashOf(n) },
      block: { number: n, hash: hashOf(n), timestamp: 1_700_000_000 + 12 * n },
      canonical,
    });
    alerts += (await tracker.onHead({ number: n, hash: hashOf(n) }, canonical)).length;
  }
  return { entitiesPerSecond: entities / ((performance.now() - start) / 1000), alerts };
}

async function keysUnder(redis: RedisClientType, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) out.push(...keys);
  return out;
}

async function deleteUnder(redis: RedisClientType, prefix: string): Promise<void> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(keys.slice(i, i + 500));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const num = (args: string[], name: string, fallback: number): number => {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} needs a positive integer`);
  return v;
};

/**
 * Runs the benchmark (module doc) and prints its figures: entities/s per round and the medians of
 * both ways, their ratio (target ≥ 0.5), and bytes per open window and per group.
 * @throws when Redis (`REDIS_URL`, the stack's) cannot be reached.
 */
export async function benchMatchWindows(args: string[]): Promise<void> {
  const o: Options = {
    rules: num(args, "--rules", 1000),
    groups: num(args, "--groups", 100),
    blocks: num(args, "--blocks", 150),
    perBlock: num(args, "--per-block", 1000),
    rounds: num(args, "--rounds", 3),
  };
  const config = loadConfig();
  const redis = createClient({ url: config.redisUrl }) as RedisClientType;
  redis.on("error", () => {});
  await redis.connect();
  const base = `cs-bench-win-${randomUUID().slice(0, 8)}:`;
  const blocks = blocksOf(o);
  console.log(
    `match --windows: ${o.rules} rules (one token each), ${o.blocks} blocks of ${o.perBlock} Transfers, ${o.groups} recipients per token; ` +
      `windowed: count per args.to over 10 blocks >= 3; real Redis ${config.redisUrl}, ${o.rounds} rounds alternating`,
  );
  const rates = { plain: [] as number[], windowed: [] as number[] };
  let memory = { bytes: 0, keys: 0, groups: 0 };
  try {
    for (let r = 0; r < o.rounds; r++) {
      for (const windowed of [false, true]) {
        const prefix = `${base}${r}${windowed ? "w" : "p"}:`;
        const res = await runRound(redis, prefix, windowed, o, blocks);
        (windowed ? rates.windowed : rates.plain).push(res.entitiesPerSecond);
        console.log(
          `round ${r + 1} ${windowed ? "windowed  " : "per-record"}: ${Math.round(res.entitiesPerSecond)} entities/s, ${res.alerts} alerts`,
        );
        if (windowed && r === o.rounds - 1) {
          const keys = (await keysUnder(redis, prefix)).filter((k) => k.includes(":win"));
          let bytes = 0;
          for (const k of keys) bytes += (await redis.memoryUsage(k)) ?? 0;
          const groups = new Set(
            blocks
              .flat()
              .slice(-10 * o.perBlock)
              .map((e) => JSON.stringify((e as unknown as { args: unknown[] }).args[1])),
          );
          memory = { bytes, keys: keys.length, groups: groups.size };
        }
        await deleteUnder(redis, prefix);
      }
    }
  } finally {
    await deleteUnder(redis, base);
    await redis.close();
  }
  const plain = median(rates.plain);
  const windowed = median(rates.windowed);
  const ratio = windowed / plain;
  console.log(
    `median: per-record ${Math.round(plain)} entities/s, windowed ${Math.round(windowed)} entities/s, ratio ${ratio.toFixed(2)} (target >= 0.5: ${ratio >= 0.5 ? "ok" : "MISSED"})`,
  );
  console.log(
    `Redis memory of the windows: ${memory.bytes} bytes in ${memory.keys} keys = ${Math.round(memory.bytes / o.rules)} bytes per open window ` +
      `(${o.rules} windows), ${Math.round(memory.bytes / Math.max(1, memory.groups))} bytes per group seen in the last 10 blocks (${memory.groups})`,
  );
}
