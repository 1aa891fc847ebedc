/**
 * `npm run bench -- export [--events N] [--page P] [--rounds R] [--log-level L] [--api-cpu-prof DIR]`: exports every event of an
 * index page by page, through chainsift's Elasticsearch-compatible routes and directly against
 * Elasticsearch, in the same run, with the official JavaScript client:
 * - scroll: `client.helpers.scrollDocuments({index, size: P, sort: ["_doc"]})` (what the helper
 *   sends: `?scroll=1m`, then `_search/scroll`, then a clear);
 * - point in time: `openPointInTime`, pages of P sorted on `_shard_doc` with `search_after`,
 *   `closePointInTime`.
 * N (default 200,000) synthetic ERC-20 Transfer events (distinct transaction hashes, 50 per
 * block) are bulk-indexed straight into Elasticsearch under a unique `bench-export-<hex>-` prefix
 * (deleted at the end). The API runs as its own process (`npm run api`'s Node flags,
 * bench/support/api-child.ts). Each way runs R rounds (default 3) of one direct export then one
 * through chainsift, so that both see the same load on a shared machine; records/s are over all
 * rounds (each round's ratio printed too). Prints records/s of each way and path, the ratio chainsift/direct
 * (target ≥ 0.8), the API process's CPU time per 1000 records of each way (`/proc/<pid>/stat`), and its
 * peak RSS (`VmHWM`, reset before the exports; target ≤ 256 MiB); under each way, the pages the API
 * read ahead by outcome (`chainsift_search_read_ahead_total` of its `/metrics`: hit, handoff, miss)
 * and the 1-minute load average before and after (the machine's other work spreads the ratio).
 * `--api-cpu-prof DIR` runs the API child under `node --cpu-prof` (profile written into DIR when it
 * stops) and prints the top functions and modules by self time during each way's export through
 * chainsift (bench/support/cpuprofile.ts).
 * @module
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { Client } from "@elastic/elasticsearch";
import { indexName } from "../es/mappings.js";
import { loadConfig } from "../lib/config/index.js";
import { type EventRecord, recordId } from "../lib/records.js";
import { PEAK_RSS_TARGET } from "./stream.js";
import { type ApiChild, pollRss, readProcCpuMs, resetPeakRss, spawnApi } from "./support/api-child.js";
import { formatSummary, type ProfileWindow, readProfiles, summariseProfiles } from "./support/cpuprofile.js";
import { type BenchDoc, benchPrefix, bulkLoad, deleteBenchIndices, numberArg, stringArg } from "./support/data.js";

/** Target: chainsift's records/s over the direct export's. */
export const RATIO_TARGET = 0.8;

const hex = (n: number, digits: number): string => `0x${n.toString(16).padStart(digits, "0")}`;
const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";

/** `count` synthetic USDT Transfer events: 50 per block from block 20,000,000, one transaction each. */
export function* syntheticEvents(count: number): Generator<BenchDoc> {
  for (let i = 0; i < count; i++) {
    const num = 20_000_000 + Math.floor(i / 50);
    const from = hex(i * 7919, 40);
    const to = hex(i * 104_729 + 1, 40);
    const value = 1_000_000 + (i % 1000) * 1_000;
    const event: EventRecord = {
      event: "Transfer",
      signature: "Transfer(address,address,uint256)",
      standard: "erc20",
      source: "standard",
      args: [
        { name: "from", pos: 0, value: { hex: from, num: null, scaled: null, type: "address" } },
        { name: "to", pos: 1, value: { hex: to, num: null, scaled: null, type: "address" } },
        { name: "value", pos: 2, value: { hex: hex(value, 1), num: value, scaled: value / 1e6, type: "uint256" } },
      ],
      logIndex: { num: i % 50, raw: hex(i % 50, 1) },
      transactionIndex: { num: i % 50, raw: hex(i % 50, 1) },
      transactionHash: hex(i + 1, 64),
      address: USDT,
      blockHash: hex(num, 64),
      blockNumber: { num, raw: hex(num, 1) },
      error: null,
      str: `Transfer(from=${from}, to=${to}, value=${value / 1e6} USDT)`,
      timestamp: new Date(Date.UTC(2024, 0, 1) + Math.floor(i / 50) * 12_000).toISOString().slice(0, 19),
    };
    yield { kind: "event", id: recordId("event", event), doc: event as unknown as Record<string, unknown> };
  }
}

/** Exports every document with `helpers.scrollDocuments`; returns the count. */
async function scrollExport(client: Client, index: string, page: number): Promise<number> {
  let n = 0;
  for await (const _ of client.helpers.scrollDocuments({ index, size: page, sort: ["_doc"] })) n++;
  return n;
}

/** Exports every document on a point in time, pages sorted on `_shard_doc`; returns the count. */
async function pitExport(client: Client, index: string, page: number): Promise<number> {
  const pit = await client.openPointInTime({ index, keep_alive: "1m" });
  let n = 0;
  let after: Array<string | number> | undefined;
  try {
    for (;;) {
      const res = await client.search({
        pit: { id: pit.id, keep_alive: "1m" },
        size: page,
        sort: [{ _shard_doc: "asc" }],
        track_total_hits: false,
        ...(after ? { search_after: after } : {}),
      });
      const hits = res.hits.hits;
      if (hits.length === 0) break;
      n += hits.length;
      after = hits.at(-1)?.sort as Array<string | number>;
    }
  } finally {
    await client.closePointInTime({ id: pit.id });
  }
  return n;
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** `chainsift_search_read_ahead_total` of the API at `url` (its `/metrics`), by outcome; empty when it cannot be read. */
async function readAheadOutcomes(url: string): Promise<Record<string, number>> {
  const text = await fetch(`${url}/metrics`).then(
    (r) => r.text(),
    () => "",
  );
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^chainsift_search_read_ahead_total\{outcome="(\w+)"\} (\d+)$/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}

/** Runs the benchmark and prints its figures (see the module notes). */
export async function benchExport(args: string[]): Promise<void> {
  const count = numberArg(args, "--events", 200_000);
  const page = numberArg(args, "--page", 1000);
  const logLevel = stringArg(args, "--log-level", "warn");
  const rounds = numberArg(args, "--rounds", 3);
  const cpuProfDir = stringArg(args, "--api-cpu-prof", "");
  const config = loadConfig();
  const { chain } = config;
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: 300_000 });
  const prefix = benchPrefix("export");
  const alias = indexName(chain, "event", prefix);
  let api: ApiChild | undefined;
  let client: Client | undefined;
  /** Each way's export through chainsift, on V8's profile clock (µs), for the profile summaries. */
  const windows: Array<{ way: string } & Required<Omit<ProfileWindow, "profile">>> = [];
  const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
  try {
    const loaded = await bulkLoad(es, chain, prefix, syntheticEvents(count));
    console.log(
      `bench export: ${loaded.count} synthetic events indexed in ${loaded.seconds.toFixed(1)} s into ${alias}; pages of ${page}; ${rounds} round(s) of direct then chainsift per way`,
    );
    api = await spawnApi({
      indexPrefix: prefix,
      token: `bench-${prefix}`,
      logLevel,
      ...(cpuProfDir ? { nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`] } : {}),
    });
    client = new Client({
      node: `${api.url}/${chain.technology}/${chain.blockchain}/${chain.network}/es`,
      auth: { bearer: api.token },
      requestTimeout: 300_000,
    });
    const idle = api.memory();
    const reset = resetPeakRss(api.pid);
    console.log(
      `API child pid ${api.pid} (node ${process.version}); idle RSS ${idle ? mib(idle.rss) : "n/a"}${reset ? "; peak reset" : ""}`,
    );
    const poller = pollRss(api.pid, 50);
    const rows: Array<{ way: string; direct: number; api: number }> = [];
    for (const [way, run] of [
      ["scroll (helpers.scrollDocuments)", scrollExport],
      ["point in time + search_after", pitExport],
    ] as const) {
      /** Seconds of one export. */
      const time = async (c: Client, index: string): Promise<number> => {
        const t0 = performance.now();
        const n = await run(c, index, page);
        if (n !== loaded.count) throw new Error(`${way}: exported ${n} of ${loaded.count}`);
        return (performance.now() - t0) / 1000;
      };
      const load0 = loadavg()[0] ?? Number.NaN;
      const ahead0 = await readAheadOutcomes(api.url);
      let directS = 0;
      let apiS = 0;
      let cpuMs = 0;
      const perRound: string[] = [];
      for (let r = 0; r < rounds; r++) {
        const d = await time(es, alias);
        const cpu0 = readProcCpuMs(api.pid);
        const fromUs = nowUs();
        const a = await time(client, "event");
        windows.push({ way, fromUs, toUs: nowUs() });
        const cpu1 = readProcCpuMs(api.pid);
        cpuMs += cpu0 === undefined || cpu1 === undefined ? Number.NaN : cpu1 - cpu0;
        directS += d;
        apiS += a;
        perRound.push((d / a).toFixed(2));
      }
      const records = loaded.count * rounds;
      const direct = records / directS;
      const through = records / apiS;
      const cpuPer1000 = Number.isNaN(cpuMs) ? "n/a" : `${((cpuMs * 1000) / records).toFixed(1)} ms`;
      rows.push({ way, direct, api: through });
      const ahead1 = await readAheadOutcomes(api.url);
      const pages = ["hit", "handoff", "miss"].map((o) => `${o} ${(ahead1[o] ?? 0) - (ahead0[o] ?? 0)}`).join(", ");
      console.log(
        `${way.padEnd(34)}: direct ${direct.toFixed(0)} records/s, chainsift ${through.toFixed(0)} records/s, ratio ${(through / direct).toFixed(2)} (target >= ${RATIO_TARGET}; rounds ${perRound.join(", ")}); API CPU ${cpuPer1000} per 1000 records`,
      );
      console.log(
        `${"".padEnd(34)}  pages read ahead: ${pages}; load average ${load0.toFixed(2)} -> ${(loadavg()[0] ?? Number.NaN).toFixed(2)}`,
      );
    }
    const polled = poller.stop();
    const peak = api.memory()?.peakRss ?? Number.NaN;
    console.log(
      `API peak RSS     : ${mib(peak)} (VmHWM), ${mib(polled.maxRss)} max of ${polled.samples} samples (target <= ${mib(PEAK_RSS_TARGET)})`,
    );
    const ok = rows.every((r) => r.api / r.direct >= RATIO_TARGET) && peak <= PEAK_RSS_TARGET;
    console.log(`verdict          : ${ok ? "PASS" : "FAIL"}`);
  } finally {
    await client?.close();
    await api?.stop();
    await deleteBenchIndices(es, chain, prefix);
    await es.close();
  }
  if (cpuProfDir && api) {
    const profile = readProfiles(cpuProfDir).find((p) => p.pid === api?.pid)?.profile;
    if (!profile) console.log(`no CPU profile of pid ${api.pid} in ${cpuProfDir}`);
    else
      for (const way of new Set(windows.map((w) => w.way))) {
        const parts = windows.filter((w) => w.way === way).map(({ fromUs, toUs }) => ({ profile, fromUs, toUs }));
        for (const line of formatSummary(`API during ${way}`, summariseProfiles(parts, 12), 1)) console.log(line);
      }
  }
}
