/**
 * `npm run bench -- match --watchlist N [--entities E] [--batch B] [--rounds R] [--no-feed] [--no-filter]` (issue 34): the match
 * stage's matching path (rule index + lib/match/watchlist-membership.ts `matchEntities`, memberships
 * prefetched from the stack's Redis per batch) with one Transaction rule `from` `In watchlist` over
 * a list of N addresses, against the same rule with a 10-address inline `Equals any` list, in
 * entities per second (target ≥ 0.8× of the inline rule), and the Redis memory of the list.
 *
 * Data (seeded): the list holds N addresses (uploaded in batches of 100,000 through the watchlist
 * store, as the CLI does); E Transaction entities (default 200,000) with random senders, 1% of them
 * from listed addresses (half of those from the 10 of the inline list), matched in batches of B (default 500, a consumer batch); the two ways
 * alternate for R rounds (default 3) after a warm-up round, and medians are reported. The list lives under a key prefix of
 * its own, deleted afterwards (never FLUSH). The watchlist way asks the list's in-process copy first, as the match
 * stage does (lib/match/watchlist-filters.ts: an exact set for an address list, built during the warm-up round, whose
 * end waits for it), with the stage's change feed (lib/watchlists/revision-feed.ts); `--no-feed` reads the list's
 * revision at every batch instead, `--no-filter` asks Redis for every value, as before the copies.
 * @module
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createClient } from "redis";
import { loadConfig } from "../lib/config/index.js";
import type { TypedEntity } from "../lib/match/entities.js";
import { createRuleIndex } from "../lib/match/rule-index.js";
import { createWatchlistFilters } from "../lib/match/watchlist-filters.js";
import { createWatchlistMembership, matchEntities } from "../lib/match/watchlist-membership.js";
import { type RevisionFeed, startRevisionFeed } from "../lib/watchlists/revision-feed.js";
import { createWatchlistStore } from "../lib/watchlists/store.js";
import { prng } from "./support/prng.js";
import { benchRule } from "./support/rules.js";

const num = (args: string[], name: string, dflt: number): number => {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : dflt;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} needs a positive integer`);
  return v;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const listed = (i: number) => `0x${"c".repeat(24)}${i.toString(16).padStart(16, "0")}`;

/**
 * Runs the benchmark and prints its figures (see the module comment).
 * @param args - the command line after `match`.
 * @throws when Redis cannot be reached.
 */
export async function benchMatchWatchlist(args: string[]): Promise<void> {
  const size = num(args, "--watchlist", 1_000_000);
  const total = num(args, "--entities", 200_000);
  const batchSize = num(args, "--batch", 500);
  const rounds = num(args, "--rounds", 3);
  const config = loadConfig();
  const prefix = `bench-wl-${randomUUID().slice(0, 8)}:`;
  const redis = createClient({ url: config.redisUrl });
  await redis.connect();
  let feed: RevisionFeed | undefined;
  try {
    const store = createWatchlistStore({ redis, keyPrefix: prefix, limits: { maxPerAccount: 1, maxMembers: size } });
    const list = await store.create("bench", { name: "bench", kind: "address" });
    let t0 = performance.now();
    for (let i = 0; i < size; i += 100_000) {
      const chunk: string[] = [];
      for (let k = i; k < Math.min(size, i + 100_000); k++) chunk.push(listed(k));
      await store.add("bench", list.id, chunk);
    }
    const uploadS = (performance.now() - t0) / 1000;
    const memory = Number(await redis.sendCommand(["MEMORY", "USAGE", store.membersKey("bench", list.id), "SAMPLES", "0"]));
    const rnd = prng(34);
    const entities: TypedEntity[] = [];
    for (let j = 0; j < total; j++) {
      const from =
        rnd() < 0.01
          ? listed(Math.floor(rnd() * (rnd() < 0.5 ? 10 : size)))
          : `0x${Math.floor(rnd() * 2 ** 52)
              .toString(16)
              .padStart(40, "d")}`;
      entities.push({ type: "Transaction", entity: { from, to: listed(0), value: "1" } } as unknown as TypedEntity);
    }
    feed = args.includes("--no-feed") ? undefined : await startRevisionFeed({ redis, channel: store.changesChannel });
    const filters = args.includes("--no-filter") ? undefined : createWatchlistFilters({ store, ...(feed ? { feed } : {}) });
    const membership = createWatchlistMembership(store, filters);
    let buildS = 0;
    const ways = {
      watchlist: benchRule("wl", "Transaction", [{ name: "from", operator: "In watchlist", value: list.id }], { accountId: "bench" }),
      inline: benchRule("inline", "Transaction", [
        { name: "from", operator: "Equals any", value: Array.from({ length: 10 }, (_, k) => listed(k)) },
      ]),
    };
    const rates: Record<keyof typeof ways, number[]> = { watchlist: [], inline: [] };
    /** CPU time of this process (user + system) per 1,000 entities, in ms: steadier than wall time on a shared machine. */
    const cpu: Record<keyof typeof ways, number[]> = { watchlist: [], inline: [] };
    const matched: Record<keyof typeof ways, number> = { watchlist: 0, inline: 0 };
    // Round 0 warms up (JIT) and is not counted.
    for (let r = 0; r <= rounds; r++) {
      for (const way of ["watchlist", "inline"] as const) {
        const index = createRuleIndex({ watchlists: membership.lookup });
        index.upsert(ways[way]);
        let hits = 0;
        t0 = performance.now();
        const c0 = process.cpuUsage();
        for (let j = 0; j < total; j += batchSize) {
          for (const rules of await matchEntities(index, membership, entities.slice(j, j + batchSize))) hits += rules.length;
        }
        if (r > 0) {
          rates[way].push(total / ((performance.now() - t0) / 1000));
          const c = process.cpuUsage(c0);
          cpu[way].push((c.user + c.system) / total);
        }
        matched[way] = hits;
        if (r === 0 && way === "watchlist" && filters) {
          await filters.settled();
          buildS = (performance.now() - t0) / 1000;
        }
      }
    }
    const wl = median(rates.watchlist);
    const inline = median(rates.inline);
    // The two ways of one round ran side by side, under about the same load.
    const roundRatios = rates.watchlist.map((w, k) => w / (rates.inline[k] as number));
    console.log(`match --watchlist: ${size.toLocaleString("en")} addresses uploaded in ${uploadS.toFixed(1)} s`);
    console.log(`  Redis MEMORY USAGE of the list: ${(memory / 2 ** 20).toFixed(1)} MiB (${(memory / size).toFixed(1)} bytes per address)`);
    if (filters) {
      const { bytes } = filters.stats();
      console.log(
        `  exact copy in the match process: ${(bytes / 2 ** 20).toFixed(2)} MiB, ready ${buildS.toFixed(1)} s after the first ask; ` +
          (feed ? "change feed on" : "no change feed (--no-feed): the revision read at every batch"),
      );
    } else console.log("  no in-process copy (--no-filter): every value asked in Redis");
    console.log(`  ${total.toLocaleString("en")} Transaction entities in batches of ${batchSize}, ${rounds} rounds, medians:`);
    console.log(
      `  In watchlist (${size.toLocaleString("en")}): ${Math.round(wl).toLocaleString("en")} entities/s (${matched.watchlist} matches)`,
    );
    console.log(`  Equals any (10 inline):    ${Math.round(inline).toLocaleString("en")} entities/s (${matched.inline} matches)`);
    console.log(`  ratio: ${(wl / inline).toFixed(2)}× of the medians (target ≥ 0.8×)`);
    console.log(`  per round: ${roundRatios.map((x) => x.toFixed(2)).join(" ")}; median ratio ${median(roundRatios).toFixed(2)}×`);
    const cw = median(cpu.watchlist);
    const ci = median(cpu.inline);
    console.log(
      `  CPU ms per 1,000 entities (medians): watchlist ${cw.toFixed(2)}, inline ${ci.toFixed(2)}; CPU ratio ${(ci / cw).toFixed(2)}×`,
    );
  } finally {
    await feed?.close();
    let cursor = "0";
    do {
      const reply = await redis.scan(cursor, { MATCH: `${prefix}*`, COUNT: 500 });
      cursor = reply.cursor;
      if (reply.keys.length > 0) await redis.del(reply.keys);
    } while (cursor !== "0");
    await redis.quit();
  }
}
