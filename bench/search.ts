/**
 * `npm run bench -- search [--copies N] [--connections C] [--duration S] [--rounds R] [--warmup S] [--rate Q] [--only a,b] [--log-level L] [--api-cpu-prof DIR] [--no-floor]`:
 * the same representative queries of the API contract sent (a) straight to Elasticsearch's
 * `_search` with the body the API itself would send (built with the API's own validator and
 * request builder, so `track_total_hits: true` and the same translated query), (b) the same
 * direct request through the **pass-through floor**, a zero-logic HTTP proxy to Elasticsearch in
 * a child process (bench/support/passthrough.ts: one more HTTP hop and nothing else), and (c)
 * through the search API running in a child process; never two at once, under the same load:
 * autocannon with C connections (default 8), closed loop (or Q requests/s with `--rate`), S
 * seconds per target (default 10) split into R interleaved rounds (default 2: direct, floor, API,
 * direct, floor, API) whose latencies are pooled, after a warm-up of each target (default 3 s).
 * Prints p50 / p99 latency (ms) and requests/s side by side, the ratios, and the verdict against
 * the targets (API p50 ≤ 1.2× and p99 ≤ 1.5× the direct figures, for every query), then the
 * floor's own ratios against the same targets: the part of the API's extra latency that one
 * more HTTP hop costs on this machine whatever the code. `--no-floor` skips the floor target.
 * The API child runs with its result cache on (the default, api/search/result-cache.ts); for the
 * queries it caches (`size: 0`: the volume per day) a second API child with the cache off
 * (`CHAINSIFT_RESULT_CACHE=false`) is measured too, "API (cache off)" (columns `O …`), after the
 * API in each round; the verdict is taken on the API with its cache.
 * `--api-cpu-prof DIR` writes a V8 CPU profile of the API child into DIR when it stops (open it
 * in Chrome DevTools or speedscope).
 *
 * `--partitions P`: instead, the same documents loaded twice, into ONE backing index per kind and
 * into P block-range partitions per kind (es/partitions.ts; copy c of the fixture blocks has block
 * numbers n + 10^8 (c + 1), so N = 10^8 × ceil(copies / P) blocks per partition and copies default
 * to P), both force-merged to one segment per shard, and every query sent straight to
 * Elasticsearch against each layout, interleaved, on the indices the API would name (its partition
 * pruning, api/search/partitions.ts); prints the shards searched, p50/p99 per layout, the ratio P/1
 * (target: p50 ≤ 1.2× for the contract's typical queries, which filter by a block range or term)
 * and the load average.
 *
 * Data: every complete mainnet fixture block copied N times (hashes and numbers rewritten), with
 * its transactions, logs and decoded events, in indices under a unique `bench-search-<hex>-`
 * prefix that are deleted at the end. Needs Elasticsearch and ../shared/data/mainnet.
 * @module
 */
import { loadavg } from "node:os";
import { Client } from "@elastic/elasticsearch";
import { validateSearchBody } from "../api/dsl/validate.js";
import { searchIndices } from "../api/search/partitions.js";
import { buildSearchRequest, type SearchTarget } from "../api/search/search.js";
import { indexName } from "../es/mappings.js";
import { createPartitionRouter, uniformPartitioning } from "../es/partitions.js";
import { type ChainId, loadConfig } from "../lib/config/index.js";
import type { Partitioning } from "../lib/partitioning.js";
import type { RecordKind } from "../lib/records.js";
import { ensureIndices } from "../pipeline/index/indexer.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { type ApiChild, type ReadyChild, readProcCpuMs, spawnApi, spawnPassthrough } from "./support/api-child.js";
import { type BenchDoc, benchPrefix, bulkLoad, deleteBenchIndices, fixtureDocs, numberArg, stringArg } from "./support/data.js";
import { type LoadOptions, type LoadResult, type LoadSample, runLoad, summarize } from "./support/load.js";
import { AGG_P50_TARGET, type BenchQuery, benchQueries, OFFSET, P50_TARGET, P99_TARGET } from "./support/search-queries.js";

/** A ready-to-send HTTP request. */
interface Prepared {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The direct Elasticsearch request equivalent to an API query: the API's validator and request
 * builder produce the ES request; index and URL parameters go into the URL, the rest into the body.
 * `indices` replaces the aliases (e.g. the pruned partitions of {@link apiIndices}).
 * `esUrl` is Elasticsearch's base URL, or that of the pass-through floor in front of it (same
 * path, query string and body).
 * @throws {Error} when the API would refuse the body.
 */
export function directRequest(
  esUrl: string,
  chain: ChainId,
  prefix: string,
  q: BenchQuery,
  maxSize: number,
  timeoutMs: number,
  indices?: string[],
): Prepared {
  const kinds = q.kinds.split(",") as RecordKind[];
  const target: SearchTarget = { kinds, indices: indices ?? kinds.map((k) => indexName(chain, k, prefix)) };
  const checked = validateSearchBody(q.body, { kinds, maxSize });
  if (!checked.ok) throw new Error(`${q.name}: the API refuses the body: ${JSON.stringify(checked.errors)}`);
  const { index, ignore_unavailable, allow_no_indices, pre_filter_shard_size, ...body } = buildSearchRequest(
    checked.value,
    target,
    timeoutMs,
  );
  const names = Array.isArray(index) ? index.join(",") : String(index);
  return {
    url: `${esUrl}/${names}/_search?ignore_unavailable=${ignore_unavailable}&allow_no_indices=${allow_no_indices}&pre_filter_shard_size=${pre_filter_shard_size}`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
}

/**
 * The indices the API searches for a query (api/search/partitions.ts `searchIndices`): the backing
 * indices of the partitions its block range can match, else the aliases.
 * @throws {Error} when the API would refuse the body.
 */
export async function apiIndices(es: Client, chain: ChainId, prefix: string, q: BenchQuery, maxSize: number): Promise<string[]> {
  const kinds = q.kinds.split(",") as RecordKind[];
  const checked = validateSearchBody(q.body, { kinds, maxSize });
  if (!checked.ok) throw new Error(`${q.name}: the API refuses the body: ${JSON.stringify(checked.errors)}`);
  return searchIndices(es, { kinds, indices: kinds.map((k) => indexName(chain, k, prefix)) }, checked.value.query);
}

function apiRequest(api: ApiChild, chain: ChainId, q: BenchQuery): Prepared {
  return {
    url: `${api.url}/${chain.technology}/${chain.blockchain}/${chain.network}/es/${q.kinds}/search/`,
    headers: { "content-type": "application/json", authorization: `Bearer ${api.token}` },
    body: JSON.stringify(q.body),
  };
}

/** What a probe compares: `hits.total`, the hit ids, in order, and the aggregations (as JSON; "null" without). */
interface Hits {
  total: number;
  ids: string[];
  aggs: string;
}

/** autocannon options of a prepared request: POST, `connections` in a closed loop (or `rate` requests/s), for `seconds`. */
function loadOptions(p: Prepared, seconds: number, connections: number, rate?: number): LoadOptions {
  return { url: p.url, method: "POST", headers: p.headers, body: p.body, connections, duration: seconds, ...(rate ? { rate } : {}) };
}

/** Sends one request and returns `hits.total`, the hit ids and the aggregations. @throws {Error} on a non-2xx answer. */
async function probe(p: Prepared): Promise<Hits> {
  const res = await fetch(p.url, { method: "POST", headers: p.headers, body: p.body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${p.url} answered ${res.status}: ${text.slice(0, 500)}`);
  const json = JSON.parse(text) as { hits: { total: number | { value: number }; hits: Array<{ _id: string }> }; aggregations?: unknown };
  const total = typeof json.hits.total === "number" ? json.hits.total : json.hits.total.value;
  return { total, ids: json.hits.hits.map((h) => h._id), aggs: JSON.stringify(json.aggregations ?? null) };
}

/** Names of the measured targets, in the order of the interleaved rounds. */
type TargetName = "direct" | "floor" | "API" | "API (cache off)";

/** The figures of one query (latencies in milliseconds). */
interface Row {
  q: BenchQuery;
  /** `hits.total` of the API's answer. */
  total: number;
  /** The probe warnings: targets whose hits differ from the direct ones. */
  mismatches: TargetName[];
  direct: LoadResult;
  /** Undefined with `--no-floor`. */
  floor: LoadResult | undefined;
  viaApi: LoadResult;
  /** The API with its result cache off: only for the queries it caches (`size: 0`). */
  cacheOff: LoadResult | undefined;
  /**
   * CPU time (user + system) of the floor and API child processes per answered request during
   * the measured rounds, in milliseconds (`/proc/<pid>/stat`); NaN when unknown.
   */
  cpuMs: { floor: number; API: number; "API (cache off)": number };
}

/** One table column right of the query name: header, width in characters, cell text. */
interface Column {
  head: string;
  width: number;
  cell(r: Row): string;
}

const ofDirect = (r: Row): LoadResult => r.direct;
const ofFloor = (r: Row): LoadResult => r.floor as LoadResult;
const ofApi = (r: Row): LoadResult => r.viaApi;
const ofCacheOff = (r: Row): LoadResult => r.cacheOff as LoadResult;

/** Geometric means over the rows of `num(r).p50 / den(r).p50` and of the p99 ratio, as `p50 1.23x, p99 1.45x`. */
function meanRatios(rows: readonly Row[], num: (r: Row) => LoadResult, den: (r: Row) => LoadResult): string {
  const geo = (f: (r: Row) => number): string => Math.exp(rows.reduce((sum, r) => sum + Math.log(f(r)), 0) / rows.length).toFixed(2);
  return `p50 ${geo((r) => num(r).p50 / den(r).p50)}x, p99 ${geo((r) => num(r).p99 / den(r).p99)}x`;
}

const fmtMs = (v: number): string => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const pad = (s: string, n: number): string => s.padStart(n);

/** Runs the benchmark and prints its figures (see the module notes). */
export async function benchSearch(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  if (args.includes("--partitions")) return benchPartitions(args);
  const copies = numberArg(args, "--copies", 20);
  const connections = numberArg(args, "--connections", 8);
  const duration = numberArg(args, "--duration", 10);
  const rounds = Math.round(numberArg(args, "--rounds", 2));
  const warmup = numberArg(args, "--warmup", 3);
  const rate = args.includes("--rate") ? numberArg(args, "--rate", 1) : undefined;
  const only = stringArg(args, "--only", "");
  const logLevel = stringArg(args, "--log-level", "warn");
  const cpuProfDir = stringArg(args, "--api-cpu-prof", "");
  const withFloor = !args.includes("--no-floor");

  const config = loadConfig();
  const { chain } = config;
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: 120_000 });
  const prefix = benchPrefix("search");
  let api: ApiChild | undefined;
  let floor: ReadyChild | undefined;
  let apiOff: ApiChild | undefined;
  try {
    const base = loadCompleteBlocks();
    const { docs } = fixtureDocs(base, copies, OFFSET);
    const perKind = (k: RecordKind): number => docs.filter((d) => d.kind === k).length;
    const loaded = await bulkLoad(es, chain, prefix, docs);
    console.log(
      `bench search: ${loaded.count} records (${perKind("block")} blocks, ${perKind("tx")} txs, ${perKind("log")} logs, ${perKind("event")} events;` +
        ` ${base.length} fixture blocks x ${copies} copies) loaded in ${loaded.seconds.toFixed(1)} s into ${prefix}*`,
    );
    let queries = benchQueries(docs);
    if (only) queries = queries.filter((q) => only.split(",").some((o) => q.name.includes(o)));

    api = await spawnApi({
      indexPrefix: prefix,
      token: `bench-${prefix}`,
      logLevel,
      ...(cpuProfDir ? { nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`] } : {}),
    });
    if (withFloor) floor = await spawnPassthrough(config.elasticsearch.url);
    /** Whether the API caches a query's answers (api/search/result-cache.ts: searches without hits). */
    const cached = (q: BenchQuery): boolean => (q.body as { size?: unknown }).size === 0;
    if (queries.some(cached))
      apiOff = await spawnApi({
        indexPrefix: prefix,
        token: `bench-${prefix}`,
        logLevel,
        env: { CHAINSIFT_RESULT_CACHE: "false", CHAINSIFT_REDIS_PREFIX: `${prefix.replace(/-$/, "")}-off:` },
      });
    const order = floor ? "direct, floor, API, direct, floor, API, …" : "direct, API, direct, API, …";
    console.log(
      `API child pid ${api.pid} at ${api.url} (LOG_LEVEL=${logLevel})` +
        `${floor ? `; pass-through floor pid ${floor.pid} at ${floor.url}` : ""}` +
        `${apiOff ? `; API (cache off) pid ${apiOff.pid} at ${apiOff.url}` : ""}; node ${process.version}; load: autocannon, ${connections} connections,` +
        ` ${rate ? `${rate} req/s` : "closed loop"}, ${warmup} s warm-up + ${duration} s per target in ${rounds} interleaved rounds` +
        ` (${order}; never two at once); load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(", ")}`,
    );

    const rows: Row[] = [];
    for (const q of queries) {
      // The indices the API itself names (its partition pruning), so that direct and API do the same search.
      const indices = await apiIndices(es, chain, prefix, q, config.api.maxSize);
      const request = (base: string): Prepared =>
        directRequest(base, chain, prefix, q, config.api.maxSize, config.elasticsearch.requestTimeoutMs, indices);
      const targets: Array<{ name: TargetName; req: Prepared; samples: LoadSample[]; pid?: number; cpuMs: number }> = [
        { name: "direct", req: request(config.elasticsearch.url), samples: [], cpuMs: 0 },
        ...(floor ? [{ name: "floor" as const, req: request(floor.url), samples: [], pid: floor.pid, cpuMs: 0 }] : []),
        { name: "API", req: apiRequest(api, chain, q), samples: [], pid: api.pid, cpuMs: 0 },
        ...(apiOff && cached(q)
          ? [{ name: "API (cache off)" as const, req: apiRequest(apiOff, chain, q), samples: [], pid: apiOff.pid, cpuMs: 0 }]
          : []),
      ];
      const hits = new Map<TargetName, Hits>();
      for (const t of targets) hits.set(t.name, await probe(t.req));
      const d = hits.get("direct") as Hits;
      const mismatches = [...hits]
        .filter(([, h]) => h.total !== d.total || h.ids.join() !== d.ids.join() || h.aggs !== d.aggs)
        .map(([name]) => name);
      const opts = (p: Prepared, seconds: number): LoadOptions => loadOptions(p, seconds, connections, rate);
      for (const t of targets) await runLoad(opts(t.req, warmup));
      for (let i = 0; i < rounds; i++) {
        for (const t of targets) {
          const cpu0 = t.pid === undefined ? undefined : readProcCpuMs(t.pid);
          t.samples.push(await runLoad(opts(t.req, duration / rounds)));
          const cpu1 = t.pid === undefined ? undefined : readProcCpuMs(t.pid);
          t.cpuMs += cpu0 === undefined || cpu1 === undefined ? Number.NaN : cpu1 - cpu0;
        }
      }
      const result = new Map(targets.map((t) => [t.name, summarize(t.samples)]));
      const row: Row = {
        q,
        total: (hits.get("API") as Hits).total,
        mismatches,
        direct: result.get("direct") as LoadResult,
        floor: result.get("floor"),
        viaApi: result.get("API") as LoadResult,
        cacheOff: result.get("API (cache off)"),
        cpuMs: { floor: Number.NaN, API: Number.NaN, "API (cache off)": Number.NaN },
      };
      for (const t of targets) {
        if (t.name === "direct") continue;
        const answered = t.samples.reduce((n, x) => n + x.times.length + x.non2xx, 0);
        row.cpuMs[t.name] = answered > 0 ? t.cpuMs / answered : Number.NaN;
      }
      rows.push(row);
      console.log(
        `  ${q.name}: ${[...result]
          .map(([name, r]) => `${name} p50 ${fmtMs(r.p50)} ms, p99 ${fmtMs(r.p99)} ms, ${r.rps.toFixed(0)} req/s`)
          .join(" | ")}`,
      );
    }

    // Table.
    const loadColumns = (side: string, of: (r: Row) => LoadResult): Column[] => [
      { head: `${side} p50`, width: 7, cell: (r) => fmtMs(of(r).p50) },
      { head: `${side} p99`, width: 7, cell: (r) => fmtMs(of(r).p99) },
      { head: `${side} req/s`, width: 8, cell: (r) => of(r).rps.toFixed(0) },
    ];
    const columns: Column[] = [
      { head: "total", width: 6, cell: (r) => String(r.total) },
      ...loadColumns("D", ofDirect),
      ...(floor ? loadColumns("F", ofFloor) : []),
      ...loadColumns("A", ofApi),
      { head: "p50 x", width: 6, cell: (r) => (r.viaApi.p50 / r.direct.p50).toFixed(2) },
      { head: "p99 x", width: 6, cell: (r) => (r.viaApi.p99 / r.direct.p99).toFixed(2) },
      ...(apiOff
        ? [
            { head: "O p50", width: 7, cell: (r: Row) => (r.cacheOff ? fmtMs(ofCacheOff(r).p50) : "-") },
            { head: "O p99", width: 7, cell: (r: Row) => (r.cacheOff ? fmtMs(ofCacheOff(r).p99) : "-") },
            { head: "O/D p50", width: 7, cell: (r: Row) => (r.cacheOff ? (ofCacheOff(r).p50 / r.direct.p50).toFixed(2) : "-") },
          ]
        : []),
      ...(floor ? [{ head: "F/D p50", width: 7, cell: (r: Row) => (ofFloor(r).p50 / r.direct.p50).toFixed(2) }] : []),
      ...(floor ? [{ head: "F cpu", width: 6, cell: (r: Row) => r.cpuMs.floor.toFixed(3) }] : []),
      { head: "A cpu", width: 6, cell: (r) => r.cpuMs.API.toFixed(3) },
      { head: "D KB", width: 6, cell: (r) => (r.direct.bytesPerResponse / 1024).toFixed(1) },
      { head: "A KB", width: 6, cell: (r) => (r.viaApi.bytesPerResponse / 1024).toFixed(1) },
    ];
    console.log("");
    const head = ["query".padEnd(22), ...columns.map((c) => pad(c.head, c.width)), " verdict"].join(" ");
    console.log(head);
    console.log("-".repeat(head.length));
    let pass = true;
    const problems: string[] = [];
    for (const r of rows) {
      const ok = r.viaApi.p50 / r.direct.p50 <= (r.q.p50Target ?? P50_TARGET) && r.viaApi.p99 / r.direct.p99 <= P99_TARGET;
      pass &&= ok;
      for (const side of r.mismatches)
        problems.push(`${r.q.name}: the ${side === "floor" ? "pass-through floor" : side} and ES answered different hits or aggregations`);
      for (const [side, lr] of [
        ["direct", r.direct],
        ["floor", r.floor],
        ["API", r.viaApi],
        ["API (cache off)", r.cacheOff],
      ] as const) {
        if (lr && (lr.non2xx > 0 || lr.errors > 0))
          problems.push(`${r.q.name} (${side}): ${lr.non2xx} non-2xx answers, ${lr.errors} errors`);
      }
      console.log([r.q.name.padEnd(22), ...columns.map((c) => pad(c.cell(r), c.width)), ` ${ok ? "ok" : "MISS"}`].join(" "));
    }
    console.log(
      `(D = Elasticsearch _search directly,${floor ? " F = the same request through the pass-through floor (zero-logic proxy)," : ""}` +
        " A = through the API (result cache on, the default)," +
        `${apiOff ? " O = through an API with its result cache off (CHAINSIFT_RESULT_CACHE=false; size 0 queries only)," : ""}` +
        " latencies in ms; cpu = CPU ms of the floor / API process per request; KB = mean response size)",
    );
    if (rows.length > 0) {
      console.log(`geometric mean ratio API/direct: ${meanRatios(rows, ofApi, ofDirect)}`);
      if (floor) {
        console.log(`geometric mean ratio floor/direct: ${meanRatios(rows, ofFloor, ofDirect)}`);
        console.log(`geometric mean ratio API/floor: ${meanRatios(rows, ofApi, ofFloor)}`);
      }
    }
    for (const p of problems) console.log(`WARNING: ${p}`);
    console.log(
      `load average (1, 5, 15 min) at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(", ")}`,
    );
    console.log(
      `verdict: ${pass ? "PASS" : "FAIL"} (targets: API p50 <= ${P50_TARGET}x (${AGG_P50_TARGET}x for the volume per day) and p99 <= ${P99_TARGET}x the direct figures, for every query)`,
    );
    if (floor && rows.length > 0) {
      console.log(
        `floor verdict: a zero-logic proxy reaches ${meanRatios(rows, ofFloor, ofDirect)} of direct (targets ${P50_TARGET}x / ${P99_TARGET}x)`,
      );
    }
  } finally {
    await Promise.all([api?.stop(), floor?.stop(), apiOff?.stop()]);
    await deleteBenchIndices(es, chain, prefix);
    await es.close();
  }
}

/** Block number of a bench document (`number.num` of a block, `blockNumber.num` of the rest). */
const heightOf = (d: BenchDoc): number =>
  ((d.kind === "block" ? d.doc.number : d.doc.blockNumber) as { num: number } | undefined)?.num ?? Number.NaN;

/**
 * The queries of `--partitions`: {@link benchQueries} and two with a block filter where theirs have
 * none (the contract's typical shapes: the txs of a block by number, the token's Transfers from an
 * address over a block range).
 */
export function partitionQueries(docs: readonly BenchDoc[]): BenchQuery[] {
  const queries = benchQueries(docs);
  const blocks = docs.filter((d) => d.kind === "block").map((d) => d.doc as { number: { num: number }; transactionCount: number });
  const copy0 = blocks.filter((b) => b.number.num < 2 * OFFSET);
  const busiest = copy0.reduce((a, b) => (b.transactionCount > a.transactionCount ? b : a));
  const numbers = copy0.map((b) => b.number.num);
  const events = queries.find((q) => q.name === "events raw+nested");
  const filter = ((events?.body.query as { bool: { filter: unknown[] } } | undefined)?.bool.filter ?? []) as unknown[];
  const range = { range: { "blockNumber.num": { gte: Math.min(...numbers), lte: Math.max(...numbers) } } };
  return [
    ...queries,
    {
      name: "txs of a block by num",
      kinds: "tx",
      body: { query: { bool: { filter: { term: { "blockNumber.num": busiest.number.num } } } }, size: 1000 },
    },
    {
      name: "events nested + range",
      kinds: "event",
      body: { ...events?.body, query: { bool: { filter: [...filter, range] } } },
    },
  ];
}

/** Loads `docs` into the partitioned aliases under `prefix` (routing as the index stage does), then refreshes. */
async function loadPartitioned(
  es: Client,
  chain: ChainId,
  prefix: string,
  docs: readonly BenchDoc[],
  partitioning: Partitioning,
): Promise<number> {
  await ensureIndices(es, chain, prefix, partitioning);
  const router = createPartitionRouter(es, chain, prefix, partitioning);
  await router.prepare(docs.map((d) => ({ kind: d.kind, height: heightOf(d) })));
  const stats = await es.helpers.bulk<BenchDoc>({
    datasource: [...docs],
    onDocument: (d) => [{ index: { _index: router.indexOf(d.kind, heightOf(d)), _id: d.id } }, d.doc] as never,
    flushBytes: 5 * 1024 * 1024,
    concurrency: 2,
  });
  if (stats.failed > 0) throw new Error(`bulk load: ${stats.failed} documents refused`);
  await es.indices.refresh({ index: `${prefix}*` });
  return (await es.cat.indices({ index: `${prefix}*`, format: "json" })).length;
}

/** `--partitions P`: the same queries against one backing index and P partitions per kind (module notes). */
async function benchPartitions(args: string[]): Promise<void> {
  const parts = Math.max(1, Math.round(numberArg(args, "--partitions", 30)));
  const copies = numberArg(args, "--copies", parts);
  const connections = numberArg(args, "--connections", 8);
  const duration = numberArg(args, "--duration", 10);
  const rounds = Math.round(numberArg(args, "--rounds", 2));
  const warmup = numberArg(args, "--warmup", 3);
  const only = stringArg(args, "--only", "");
  const config = loadConfig();
  const { chain } = config;
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: 120_000 });
  const one = benchPrefix("search1");
  const many = benchPrefix(`search${parts}`);
  try {
    const { docs } = fixtureDocs(loadCompleteBlocks(), copies, OFFSET);
    const n1 = await loadPartitioned(es, chain, one, docs, uniformPartitioning(OFFSET * 1000));
    const nP = await loadPartitioned(es, chain, many, docs, uniformPartitioning(OFFSET * Math.ceil(copies / parts)));
    // Both layouts alike: one segment per shard (sealed partitions are force-merged, es/partitions.ts `sealPartitions`).
    await es.indices.forcemerge({ index: `${one}*,${many}*`, max_num_segments: 1 });
    console.log(
      `bench search --partitions ${parts}: ${docs.length} records (${copies} copies of the fixture blocks, ~${Math.round(docs.length / parts)} per partition) loaded twice: ${n1} backing indices under ${one}*, ${nP} under ${many}*, force-merged to 1 segment; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    let queries = partitionQueries(docs);
    if (only) queries = queries.filter((q) => only.split(",").some((o) => q.name.includes(o)));
    const rows: Array<{ name: string; shards: string; total: number; same: boolean; a: LoadResult; b: LoadResult }> = [];
    for (const q of queries) {
      // The indices the API names (pruned to the partitions a block range can match), for each layout.
      const req = async (prefix: string) =>
        directRequest(
          config.elasticsearch.url,
          chain,
          prefix,
          q,
          config.api.maxSize,
          config.elasticsearch.requestTimeoutMs,
          await apiIndices(es, chain, prefix, q, config.api.maxSize),
        );
      const [ra, rb] = [await req(one), await req(many)];
      const shardsOf = async (p: Prepared) =>
        (
          (await (await fetch(p.url, { method: "POST", headers: p.headers, body: p.body })).json()) as {
            _shards: { total: number; skipped?: number };
          }
        )._shards;
      const [ha, hb] = [await probe(ra), await probe(rb)];
      const opts = (p: Prepared, seconds: number): LoadOptions => loadOptions(p, seconds, connections);
      await runLoad(opts(ra, warmup));
      await runLoad(opts(rb, warmup));
      const sa: LoadSample[] = [];
      const sb: LoadSample[] = [];
      for (let i = 0; i < rounds; i++) {
        sa.push(await runLoad(opts(ra, duration / rounds)));
        sb.push(await runLoad(opts(rb, duration / rounds)));
      }
      const [s1, sP] = [await shardsOf(ra), await shardsOf(rb)];
      const row = {
        name: q.name,
        shards: `${s1.total}/${sP.total}${sP.skipped ? ` (${sP.skipped} skipped)` : ""}`,
        total: ha.total,
        same: ha.total === hb.total && [...ha.ids].sort().join() === [...hb.ids].sort().join(),
        a: summarize(sa),
        b: summarize(sb),
      };
      rows.push(row);
    }
    console.log("");
    const head = `${"query".padEnd(22)} ${pad("shards", 16)} ${pad("total", 6)} ${pad("1 p50", 7)} ${pad("1 p99", 7)} ${pad(`${parts} p50`, 7)} ${pad(`${parts} p99`, 7)} ${pad("p50 x", 6)} ${pad("p99 x", 6)}  verdict`;
    console.log(head);
    console.log("-".repeat(head.length));
    let pass = true;
    for (const r of rows) {
      const x50 = r.b.p50 / r.a.p50;
      const ok = x50 <= P50_TARGET && r.same;
      pass &&= ok;
      console.log(
        `${r.name.padEnd(22)} ${pad(r.shards, 16)} ${pad(String(r.total), 6)} ${pad(fmtMs(r.a.p50), 7)} ${pad(fmtMs(r.a.p99), 7)} ${pad(fmtMs(r.b.p50), 7)} ${pad(fmtMs(r.b.p99), 7)} ${pad(x50.toFixed(2), 6)} ${pad((r.b.p99 / r.a.p99).toFixed(2), 6)}  ${ok ? "ok" : r.same ? "MISS" : "DIFFERENT HITS"}`,
      );
    }
    const gm = Math.exp(rows.reduce((n, r) => n + Math.log(r.b.p50 / r.a.p50), 0) / Math.max(rows.length, 1));
    console.log(
      `(Elasticsearch _search directly; latencies in ms; ${connections} connections, closed loop, ${duration} s per layout in ${rounds} interleaved rounds)`,
    );
    console.log(
      `geometric mean p50 ratio ${parts} partitions / 1: ${gm.toFixed(2)}; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    console.log("(shards: searched by one index / by the partitions, from `_shards`; skipped ones were ruled out by the can-match phase)");
    console.log(
      `verdict: ${pass ? "PASS" : "FAIL"} (target: p50 with ${parts} partitions <= ${P50_TARGET}x one index's, same hits, for every query)`,
    );
  } finally {
    await deleteBenchIndices(es, chain, one).catch(() => {});
    await deleteBenchIndices(es, chain, many).catch(() => {});
    await es.close();
  }
}
