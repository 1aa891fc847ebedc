/**
 * `npm run bench -- match [--seconds S] [--synthetic] [--chains N]`: throughput of the match stage's
 * pure handler (rule index lookup + targetMap evaluation, no Kafka, no Redis) with 10, 1,000 and
 * 10,000 enabled rules, in entities per second. `--chains N`: the same rules and entities spread
 * over N chains (rule i and entity j on chain i mod N and j mod N, one rule index per chain, as the
 * match stage keeps them), against one chain in the same rounds; target ≥ 0.9× of one chain.
 *
 * Entities: the real mainnet fixture blocks (../shared/data/mainnet) through ingest transform and
 * the decoder: Event, Transaction and Method entities. Without fixtures (or with `--synthetic`),
 * synthetic Transfer events and transactions.
 *
 * Rules (seeded, reproducible): 5 "global" rules at every size (an event name only, an unbucketed
 * transaction value threshold, a Transfer-with-scaled-amount rule, a method name, a multi-token
 * watch), the rest selective like real users' rules, in a fixed cycle so every size has every kind:
 * 50% Event rules on one contract address (with event name and sometimes an amount), 25%
 * "Transfer to my wallet" rules (args Inspect on `to`), 15% Transaction rules on `to`/`from`, 10%
 * Method rules on the called contract. About 5% of the selective rules use addresses that occur in
 * the data, so matches happen (more rules, more matches).
 * @module
 */
import { performance } from "node:perf_hooks";
import { eventEntity, methodEntity, transactionEntity } from "../lib/match/entities.js";
import { createRuleIndex } from "../lib/match/rule-index.js";
import type { TransactionRecord } from "../lib/records.js";
import type { Rule, TargetDefinition, TargetType } from "../lib/rules/model.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { toBlockBundle } from "../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks } from "../test/support/fixtures.js";
import { argIs, isTransfer, transferTo } from "../test/support/rules.js";
import { benchMatchWatchlist } from "./match-watchlist.js";
import { benchMatchWindows } from "./match-windows.js";
import { prng } from "./support/prng.js";
import { BENCH_CHAIN, benchRule } from "./support/rules.js";

interface Item {
  type: TargetType;
  entity: Record<string, unknown>;
}

const CHAIN = BENCH_CHAIN;

function randomAddress(rnd: () => number): string {
  let s = "0x";
  for (let i = 0; i < 40; i++) s += Math.floor(rnd() * 16).toString(16);
  return s;
}

function fixtureItems(): { items: Item[]; source: string } {
  const decoder = createDecoder({ chainId: 1 });
  const items: Item[] = [];
  const blocks = loadCompleteBlocks();
  let events = 0;
  let txs = 0;
  let methods = 0;
  for (const b of blocks) {
    const bundle = toBlockBundle(b.block, b.receipts);
    for (const log of bundle.logs) {
      const ev = decoder.decode(log);
      if (ev) {
        items.push({ type: "Event", entity: eventEntity(ev) as unknown as Record<string, unknown> });
        events++;
      }
    }
    for (const tx of bundle.transactions) {
      items.push({ type: "Transaction", entity: transactionEntity(tx) as unknown as Record<string, unknown> });
      txs++;
      const m = methodEntity(tx, { chainId: 1 });
      if (m) {
        items.push({ type: "Method", entity: m as unknown as Record<string, unknown> });
        methods++;
      }
    }
  }
  return {
    items,
    source: `${items.length} real entities (${events} events, ${txs} transactions, ${methods} methods) from ${blocks.length} mainnet fixture blocks`,
  };
}

function syntheticItems(): { items: Item[]; source: string } {
  const rnd = prng(7);
  const tokens = Array.from({ length: 200 }, () => randomAddress(rnd));
  const wallets = Array.from({ length: 5000 }, () => randomAddress(rnd));
  const items: Item[] = [];
  for (let i = 0; i < 3000; i++) {
    const amount = BigInt(Math.floor(rnd() * 1e12));
    const base = { blockHash: `0x${i.toString(16).padStart(64, "0")}`, blockNumber: { num: 1000 + (i >> 6), raw: "0x0" } };
    items.push({
      type: "Event",
      entity: {
        ...base,
        entityId: `s${i}_e_0`,
        event: "Transfer",
        address: tokens[Math.floor(rnd() * tokens.length)],
        args: [
          { name: "from", pos: 0, value: { hex: wallets[Math.floor(rnd() * wallets.length)], num: null, scaled: null, type: "address" } },
          { name: "to", pos: 1, value: { hex: wallets[Math.floor(rnd() * wallets.length)], num: null, scaled: null, type: "address" } },
          {
            name: "value",
            pos: 2,
            value: { hex: `0x${amount.toString(16)}`, num: Number(amount), scaled: Number(amount) / 1e6, type: "uint256" },
          },
        ],
      },
    });
    if (i % 3 === 0) {
      const tx: Partial<TransactionRecord> & Record<string, unknown> = {
        ...base,
        entityId: `s${i}`,
        hash: `s${i}`,
        from: wallets[Math.floor(rnd() * wallets.length)],
        to: tokens[Math.floor(rnd() * tokens.length)],
        value: { num: 0, raw: "0x0" },
        methodId: "0xa9059cbb",
      };
      items.push({ type: "Transaction", entity: tx });
    }
  }
  return { items, source: `${items.length} synthetic entities (Transfer events and transactions)` };
}

const rule = benchRule;

/**
 * Kinds of selective rules in a cycle of 20 (10 contract, 5 wallet, 3 transaction, 2 method),
 * ordered so that even the smallest rule set has every kind.
 */
const MIX = ["c", "w", "t", "m", "c", "w", "c", "t", "c", "w", "c", "m", "c", "w", "c", "t", "c", "w", "c", "c"] as const;

/** The rule set of one size (see the module doc for the mix). */
function makeRules(count: number, items: Item[], seed: number): Rule[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const seen = (type: TargetType, f: (e: Record<string, unknown>) => unknown) => [
    ...new Set(
      items
        .filter((i) => i.type === type)
        .map((i) => f(i.entity))
        .filter((x): x is string => typeof x === "string"),
    ),
  ];
  const contracts = seen("Event", (e) => e.address);
  const recipients = seen("Event", (e) => (e.args as { name: string; value: { hex: string } }[]).find((a) => a.name === "to")?.value.hex);
  const txTo = seen("Transaction", (e) => e.to);
  const txFrom = seen("Transaction", (e) => e.from);
  const methodTo = seen("Method", (e) => e.to);
  const real = (xs: string[]) => (xs.length > 0 && rnd() < 0.05 ? pick(xs) : randomAddress(rnd));

  const rules: Rule[] = [
    rule("g-swap", "Event", [{ name: "event", operator: "Equals", value: "Swap" }]),
    rule("g-whale-eth", "Transaction", [{ name: "value", operator: "Greater", value: "100000000000000000000" }]),
    rule("g-big-transfer", "Event", [isTransfer(), argIs("value", "Greater", "1000000", { useScaledValue: true })]),
    rule("g-approve", "Method", [{ name: "name", operator: "Equals", value: "approve" }]),
    rule("g-stables", "Event", [
      {
        name: "address",
        operator: "Equals any (ignore case)",
        value: [
          "0xdac17f958d2ee523a2206206994597c13d831ec7",
          "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48",
          "0x6b175474e89094c44da98b954eedeac495271d0f",
        ],
      },
      { name: "event", operator: "Equals", value: "Transfer" },
    ]),
  ].slice(0, count);
  for (let i = rules.length; i < count; i++) {
    const kind = MIX[(i - 5) % MIX.length];
    if (kind === "c") {
      const defs: TargetDefinition[] = [
        { name: "address", operator: pick(["Equals", "Equals (ignore case)"] as const), value: real(contracts) },
        { name: "event", operator: "Equals", value: pick(["Transfer", "Transfer", "Approval", "Swap"]) },
      ];
      if (rnd() < 0.3) {
        defs.push(argIs("value", "Greater", String(Math.floor(rnd() * 10_000)), { useScaledValue: true }));
      }
      rules.push(rule(`c${i}`, "Event", defs));
    } else if (kind === "w") {
      rules.push(rule(`w${i}`, "Event", transferTo(real(recipients), "Equals")));
    } else if (kind === "t") {
      const field = rnd() < 0.5 ? "to" : "from";
      rules.push(rule(`t${i}`, "Transaction", [{ name: field, operator: "Equals", value: real(field === "to" ? txTo : txFrom) }]));
    } else {
      rules.push(
        rule(`m${i}`, "Method", [
          { name: "to", operator: "Equals (ignore case)", value: real(methodTo) },
          { name: "name", operator: "Equals any", value: ["transfer", "transferFrom"] },
        ]),
      );
    }
  }
  return rules;
}

interface Result {
  rules: number;
  buildMs: number;
  /** Best rate over the rounds. */
  perSecond: number;
  /** Median rate over the rounds. */
  medianPerSecond: number;
  candidatesPerEntity: number;
  matchesPerEntity: number;
  unbucketed: number;
  largestBucket: number;
}

interface Prepared {
  /** One rule index per chain (the match stage keeps one per served chain). */
  indexes: Array<ReturnType<typeof createRuleIndex>>;
  /** The chain (index position) of each entity, in `items` order. */
  chainOf: number[];
  result: Omit<Result, "perSecond" | "medianPerSecond">;
  rates: number[];
}

/** The chain of position `i` of `--chains N`: mainnet, then `ethereum/chain-<i>/mainnet`. */
const chainAt = (i: number) => (i === 0 ? CHAIN : { ...CHAIN, blockchain: `chain-${i}` });

/**
 * The rule indexes of one size over `chains` chains: the same rules, the i-th on chain i mod
 * `chains` (every index is offered every rule and keeps its chain's, as the match stage's rule
 * sync does); entity j belongs to chain j mod `chains`, so the records in total stay the same.
 */
function prepare(count: number, items: Item[], chains = 1): Prepared {
  const rules = makeRules(count, items, 1000 + count).map((r, i) => ({ ...r, ...chainAt(i % chains) }));
  const t0 = performance.now();
  const indexes = Array.from({ length: chains }, (_, c) => createRuleIndex({ chain: chainAt(c) }));
  for (const index of indexes) for (const r of rules) index.upsert(r);
  const buildMs = performance.now() - t0;
  const chainOf = items.map((_, j) => j % chains);
  let candidates = 0;
  let matches = 0;
  for (const [j, it] of items.entries()) {
    const index = indexes[chainOf[j] as number] as Prepared["indexes"][number];
    candidates += index.candidates(it.type, it.entity).length;
    matches += index.match(it.type, it.entity).length;
  }
  for (let p = 0; p < 3; p++) for (const [j, it] of items.entries()) indexes[chainOf[j] as number]?.match(it.type, it.entity); // warm-up
  const stats = indexes.map((i) => i.stats());
  return {
    indexes,
    chainOf,
    result: {
      rules: stats.reduce((n, s) => n + s.rules, 0),
      buildMs,
      candidatesPerEntity: candidates / items.length,
      matchesPerEntity: matches / items.length,
      unbucketed: stats.reduce((n, s) => n + s.unbucketed, 0),
      largestBucket: Math.max(...stats.map((s) => s.largestBucket)),
    },
    rates: [],
  };
}

/** One timed round: passes over all entities (each against its chain's index) until `ms` have elapsed; returns entities/s. */
function round(p: Prepared, items: Item[], ms: number): number {
  let processed = 0;
  let sink = 0;
  const { indexes, chainOf } = p;
  const start = performance.now();
  const deadline = start + ms;
  while (performance.now() < deadline) {
    for (let j = 0; j < items.length; j++) {
      const it = items[j] as Item;
      sink += (indexes[chainOf[j] as number] as Prepared["indexes"][number]).match(it.type, it.entity).length;
    }
    processed += items.length;
  }
  if (sink < 0) console.log(sink);
  return processed / ((performance.now() - start) / 1000);
}

const ROUNDS = 8;

/** Best and median of a prepared size's rounds. */
function resultOf(p: Prepared): Result {
  const sorted = [...p.rates].sort((a, b) => a - b);
  return { ...p.result, perSecond: sorted[sorted.length - 1] as number, medianPerSecond: sorted[Math.floor(sorted.length / 2)] as number };
}

const pad = (v: string | number, w: number) => String(v).padStart(w);

/**
 * Runs the benchmark and prints its figures. Options: `--seconds S` of timed work per size (default
 * 2, in 8 interleaved rounds), `--synthetic`, `--chains N` (N ≥ 2: the same rules spread over N
 * chains, one rule index per chain as the match stage keeps them, and the same entities spread
 * over the N chains; printed next to one chain, interleaved in the same rounds, with the ratio N
 * chains / one chain per size, target ≥ 0.9); `--windows`: windowed rules against per-record ones on real Redis (bench/match-windows.ts);
 * `--watchlist N`: an `In watchlist` rule over N addresses against a 10-address inline list (bench/match-watchlist.ts).
 */
export async function benchMatch(args: string[]): Promise<void> {
  if (args.includes("--windows")) return benchMatchWindows(args);
  if (args.includes("--watchlist")) return benchMatchWatchlist(args);
  const sIdx = args.indexOf("--seconds");
  const seconds = sIdx >= 0 ? Number(args[sIdx + 1]) : 2;
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error("--seconds needs a positive number");
  const cIdx = args.indexOf("--chains");
  const chains = cIdx >= 0 ? Number(args[cIdx + 1]) : 1;
  if (!Number.isInteger(chains) || chains < 1 || chains > 64) throw new Error("--chains needs an integer from 1 to 64");
  const synthetic = args.includes("--synthetic") || !hasMainnetFixtures();
  const { items, source } = synthetic ? syntheticItems() : fixtureItems();
  console.log(`match bench: ${source}; index lookup + evaluate per entity (no Kafka, no Redis), ${seconds}s per size`);
  if (chains > 1) return benchChains(items, seconds, chains);
  const sizes = [10, 1_000, 10_000].map((n) => prepare(n, items));
  // Rounds interleave the sizes, so load from other processes affects them alike; best and median are reported.
  for (let r = 0; r < ROUNDS; r++) for (const p of sizes) p.rates.push(round(p, items, (seconds * 1000) / ROUNDS));
  const results: Result[] = sizes.map(resultOf);
  console.log(
    `${pad("rules", 7)} ${pad("build ms", 9)} ${pad("entities/s", 11)} ${pad("median", 9)} ${pad("candidates/entity", 18)} ${pad("matches/entity", 15)} ${pad("unbucketed", 11)} ${pad("largest bucket", 15)}`,
  );
  for (const r of results) {
    console.log(
      `${pad(r.rules, 7)} ${pad(r.buildMs.toFixed(1), 9)} ${pad(Math.round(r.perSecond), 11)} ${pad(Math.round(r.medianPerSecond), 9)} ${pad(r.candidatesPerEntity.toFixed(2), 18)} ${pad(r.matchesPerEntity.toFixed(3), 15)} ${pad(r.unbucketed, 11)} ${pad(r.largestBucket, 15)}`,
    );
  }
  const first = results[0] as Result;
  const last = results[results.length - 1] as Result;
  const ratio = last.perSecond / first.perSecond;
  const medianRatio = last.medianPerSecond / first.medianPerSecond;
  console.log(
    `10k rules: ${Math.round(last.perSecond)} entities/s best, ${Math.round(last.medianPerSecond)} median (target >= 50000: ${last.medianPerSecond >= 50_000 ? "ok" : "MISSED"}); ` +
      `ratio 10k/10: ${ratio.toFixed(2)} best, ${medianRatio.toFixed(2)} median (target >= 0.5: ${medianRatio >= 0.5 ? "ok" : "MISSED"})`,
  );
}

/** `--chains N`: each size on one chain and on N chains, interleaved in the same rounds; the ratio per size. */
function benchChains(items: Item[], seconds: number, chains: number): void {
  console.log(`rules and entities spread over ${chains} chains (one rule index per chain) vs one chain; same rules, same entities`);
  const pairs = [10, 1_000, 10_000].map((n) => [prepare(n, items, 1), prepare(n, items, chains)] as const);
  const ms = (seconds * 1000) / ROUNDS;
  for (let r = 0; r < ROUNDS; r++) for (const pair of pairs) for (const p of pair) p.rates.push(round(p, items, ms));
  console.log(
    `${pad("rules", 7)} ${pad("chains", 7)} ${pad("entities/s", 11)} ${pad("median", 9)} ${pad("candidates/entity", 18)} ${pad("matches/entity", 15)} ${pad("ratio (median)", 15)}`,
  );
  let worst = Number.POSITIVE_INFINITY;
  for (const [one, many] of pairs) {
    const [a, b] = [resultOf(one), resultOf(many)];
    const ratio = b.medianPerSecond / a.medianPerSecond;
    worst = Math.min(worst, ratio);
    for (const [r, n, q] of [
      [a, 1, ""],
      [b, chains, ratio.toFixed(2)],
    ] as const) {
      console.log(
        `${pad(r.rules, 7)} ${pad(n, 7)} ${pad(Math.round(r.perSecond), 11)} ${pad(Math.round(r.medianPerSecond), 9)} ${pad(r.candidatesPerEntity.toFixed(2), 18)} ${pad(r.matchesPerEntity.toFixed(3), 15)} ${pad(q, 15)}`,
      );
    }
  }
  console.log(`${chains} chains / one chain, worst size (median): ${worst.toFixed(2)} (target >= 0.9: ${worst >= 0.9 ? "ok" : "MISSED"})`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMatch(process.argv.slice(2));
