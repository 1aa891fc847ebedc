/**
 * `npm run bench -- ingest [--copies N] [--rounds R] [--concurrency C] [--timeout-s T] [--profile [--profile-dir D]] [--floor [--batched]] [--client kafkajs|platformatic]`:
 * the honest ingest benchmark (issue 23 §1). The complete mainnet fixture blocks, copied N times
 * (default 10) with rewritten hashes and contiguous numbers, are served by the JSON-RPC replay
 * node in its own process (bench/support/replay-child.ts); each round (default 3) first bulk-loads
 * the same documents straight into Elasticsearch ("raw"), then runs the pipeline end to end with
 * every stage in its own process as operators deploy them (`cli/stage.ts`, what `npm run stage`
 * runs): `ingest --from … --to …` (a backfill; `CHAINSIFT_INGEST_CONCURRENCY` = C when given,
 * else the configured default), `decode`, `index`.
 * Arrivals are counted without refresh polling: the index stage's
 * `chainsift_index_documents_total{result="written"}` from its /metrics (every 500 ms), and one
 * refresh + count at the end as a check. Printed per round and as medians: raw and end-to-end
 * records/s and their ratio, ingest → Kafka (records ingest produced / time to its `backfill done`)
 * and Kafka → Elasticsearch (documents written / time from the first to the last written seen)
 * rates, and the CPU seconds per 1,000 records of every process (ingest, decode, index, the replay
 * node, this process, and the stack's Elasticsearch, Kafka and schema registry, whose pids
 * `bash scripts/stack.sh status` prints; all from /proc/<pid>/stat, between the stage being ready
 * and the last record written). The load average is printed next to every round: the services are
 * shared, so their CPU includes whatever else uses them. `--profile` starts the stage processes
 * with `node --cpu-prof` (profiles in D, default a new temporary directory) and prints each stage's
 * top self-time functions and modules (bench/support/cpuprofile.ts); profiling slows the stages,
 * so its figures are not the baseline. `--floor` runs, in place of the three stages, the library
 * floor (bench/support/floor-child.ts): processes that do only the libraries' part of each stage's
 * work (JSON-RPC fetch and parse, Avro, kafkajs, the Elasticsearch bulk helper) on the same topics
 * and indices, with the CPU of the chainsift code they need to know what to send (transform,
 * decoder) measured by them and left out; `--batched` makes the floor send one Kafka message per
 * block and kind (an Avro array) instead of one per record. `--client kafkajs|platformatic` sets the
 * Kafka client library of the stages or the floor (`CHAINSIFT_KAFKA_CLIENT`, docs/kafka-client.md;
 * default the environment's, else kafkajs). `--legacy` runs the method before issue 23
 * (bench/ingest-legacy.ts, which takes `--processes`).
 * Bounded: each round gives up after T seconds (default 600); only 127.0.0.1 services.
 * Needs the stack (`npm run stack -- up`) and ../shared/data/mainnet.
 * @module
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { indexName } from "../es/mappings.js";
import type { RecordKind } from "../lib/records.js";
import { ensureIndices } from "../pipeline/index/indexer.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { createHarness } from "../test/support/harness.js";
import { scrape } from "../test/support/prometheus.js";
import { configEnv, type ReadyProcess, spawnReady } from "../test/support/stage-process.js";
import { benchIngestLegacy } from "./ingest-legacy.js";
import { formatSummary, readProfiles, summariseProfiles } from "./support/cpuprofile.js";
import { type BenchDoc, blockDocs, contiguousCopies, numberArg, stringArg } from "./support/data.js";
import { cpuSeconds, parseStackPids } from "./support/proc.js";

/** The repository root (children run from there). */
const ROOT = resolve(import.meta.dirname, "..");
/** First block number of the copies (any number above the fixtures' works). */
const START = 20_000_000;
const KINDS: RecordKind[] = ["block", "tx", "log", "event"];
/** The processes whose CPU is reported, in print order. */
const PROCS = ["ingest", "decode", "index", "replay", "bench", "elasticsearch", "kafka", "registry"] as const;
type Proc = (typeof PROCS)[number];

/** Resolves when the child has exited (at once when it has already). */
function exitOf(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((done) => child.once("exit", () => done()));
}

/** The pid of a started child. */
function pidOf(p: ReadyProcess): number {
  return p.child.pid as number;
}

/** CPU seconds of a set of processes at one moment (absent: gone or unknown). */
type CpuSample = Partial<Record<Proc, number>>;

function sampleCpu(pids: Partial<Record<Proc, number>>): CpuSample {
  const out: CpuSample = {};
  for (const [name, pid] of Object.entries(pids) as Array<[Proc, number]>) {
    const s = name === "bench" ? (process.cpuUsage().user + process.cpuUsage().system) / 1e6 : cpuSeconds(pid);
    if (s !== undefined) out[name] = s;
  }
  return out;
}

/** CPU seconds per 1,000 records between two samples, per process present in both. */
function cpuPer1k(before: CpuSample, after: CpuSample, records: number): CpuSample {
  const out: CpuSample = {};
  for (const name of PROCS) {
    const a = before[name];
    const b = after[name];
    if (a !== undefined && b !== undefined && records > 0) out[name] = ((b - a) / records) * 1000;
  }
  return out;
}

/** The stack's service pids (`bash scripts/stack.sh status`); empty when the script fails. */
function stackPids(): Partial<Record<Proc, number>> {
  try {
    const pids = parseStackPids(execFileSync("bash", ["scripts/stack.sh", "status"], { cwd: ROOT, encoding: "utf8" }));
    const out: Partial<Record<Proc, number>> = {};
    for (const name of ["elasticsearch", "kafka", "registry"] as const) {
      const pid = pids.get(name);
      if (pid !== undefined) out[name] = pid;
    }
    return out;
  } catch {
    return {};
  }
}

/** `load average 1/5/15 min` of this machine (os.loadavg), for the report. */
function load(): string {
  return `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function formatCpu(c: CpuSample): string {
  return PROCS.filter((p) => c[p] !== undefined)
    .map((p) => `${p} ${(c[p] as number).toFixed(3)}`)
    .join(", ");
}

/** Now, microseconds on the monotonic clock V8 stamps CPU profiles with (bench/support/cpuprofile.ts). */
function monoUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Per stage process (by pid): the part of its profile that is measured (ready to last record). */
const profileWindows = new Map<number, { fromUs: number; toUs: number }>();

/** Figures of one raw round. */
interface RawRound {
  records: number;
  seconds: number;
  cpu: CpuSample;
}

/** Bulk-loads `docs` into fresh indices (the bulk helper, 5 MiB requests, as before issue 23); times the bulk only. */
async function rawRound(docs: BenchDoc[], java: Partial<Record<Proc, number>>): Promise<RawRound> {
  const h = createHarness();
  try {
    const prefix = h.config.elasticsearch.indexPrefix;
    await ensureIndices(h.es, h.config.chain, prefix);
    const pids = { ...java, bench: process.pid };
    const before = sampleCpu(pids);
    const t0 = performance.now();
    const stats = await h.es.helpers.bulk<BenchDoc>({
      datasource: docs,
      onDocument: (d) => [{ index: { _index: indexName(h.config.chain, d.kind, prefix), _id: d.id } }, d.doc] as never,
      flushBytes: 5 * 1024 * 1024,
    });
    const seconds = (performance.now() - t0) / 1000;
    const after = sampleCpu(pids);
    const indices = KINDS.map((k) => indexName(h.config.chain, k, prefix)).join(",");
    await h.es.indices.refresh({ index: indices });
    const { count } = await h.es.count({ index: indices });
    if (count !== docs.length || stats.failed > 0)
      console.log(`WARNING raw: ${count} of ${docs.length} documents counted, ${stats.failed} failed`);
    return { records: stats.successful, seconds, cpu: cpuPer1k(before, after, stats.successful) };
  } finally {
    await h.cleanup();
  }
}

/** Figures of one end-to-end round. */
interface E2eRound {
  /** Documents the index stage reported written. */
  written: number;
  /** Documents counted after one refresh at the end. */
  counted: number;
  /** From ingest's ready line to the last document written, seconds. */
  seconds: number;
  /** From ingest's ready line to its `backfill done` line, seconds. */
  ingestSeconds: number;
  /** Records ingest produced (blocks, transactions, logs). */
  ingestRecords: number;
  /** From the first scrape that saw a document written to the last document written, seconds. */
  indexSeconds: number;
  cpu: CpuSample;
}

/** One end-to-end round: decode and index started and ready, then the ingest backfill; waits for every document. */
async function e2eRound(opts: {
  replay: { url: string; from: number; to: number; pid: number };
  total: number;
  ingestRecords: number;
  java: Partial<Record<Proc, number>>;
  concurrency?: number;
  profileDir?: string;
  timeoutMs: number;
  /** Run the library floor (bench/support/floor-child.ts, same fixture copies) instead of chainsift's stages. */
  floor?: { copies: number; batched: boolean };
  /** The Kafka client of the stages or the floor (`CHAINSIFT_KAFKA_CLIENT` of the children); default the environment's. */
  client?: string;
}): Promise<E2eRound> {
  const h = createHarness();
  const children: ReadyProcess[] = [];
  try {
    const env = configEnv(h.config, {
      CHAINSIFT_RPC_URL: opts.replay.url,
      CHAINSIFT_METRICS_HOST: "127.0.0.1",
      CHAINSIFT_METRICS_PORT: "0",
      KAFKAJS_NO_PARTITIONER_WARNING: "1",
      LOG_LEVEL: "warn",
      ...(opts.concurrency ? { CHAINSIFT_INGEST_CONCURRENCY: String(opts.concurrency) } : {}),
      ...(opts.client ? { CHAINSIFT_KAFKA_CLIENT: opts.client } : {}),
    });
    const nodeArgs = (stage: string) => {
      if (!opts.profileDir) return [];
      const dir = join(opts.profileDir, stage);
      mkdirSync(dir, { recursive: true });
      return ["--cpu-prof", "--cpu-prof-dir", dir];
    };
    const stage = (name: string, args: string[] = [], extra: NodeJS.ProcessEnv = {}, onLine?: (l: string) => void) =>
      spawnReady({
        label: `${opts.floor ? "floor" : "stage"} ${name}`,
        nodeArgs: nodeArgs(name),
        script: opts.floor ? "bench/support/floor-child.ts" : "cli/stage.ts",
        args: opts.floor
          ? [name, "--copies", String(opts.floor.copies), "--start", String(START), ...(opts.floor.batched ? ["--batched"] : []), ...args]
          : [name, ...args],
        env: { ...env, ...extra },
        isReady: (l) => l.includes('"ready":true'),
        onLine,
        timeoutMs: 180_000,
      });
    // One after the other: two processes registering the same new subjects at once can race in the registry.
    // The floor's children report the CPU of chainsift's own code they ran (bench/support/floor-child.ts), left out below.
    const excludedS = { ingest: 0, decode: 0 };
    const readExcluded = (who: "ingest" | "decode") => (l: string) => {
      if (!l.includes('"excludedCpuS"')) return;
      const v = (JSON.parse(l) as { excludedCpuS?: unknown }).excludedCpuS;
      if (typeof v === "number") excludedS[who] = v;
    };
    const decode = await stage("decode", [], {}, opts.floor ? readExcluded("decode") : undefined);
    children.push(decode);
    const index = await stage("index");
    children.push(index);
    const metricsUrl = String(index.ready.metrics);
    const pids: Partial<Record<Proc, number>> = {
      ...opts.java,
      decode: pidOf(decode),
      index: pidOf(index),
      replay: opts.replay.pid,
      bench: process.pid,
    };
    const before = sampleCpu(pids);
    const fromUs = monoUs();

    let ingestDoneAt: number | undefined;
    let ingestCpuEnd: number | undefined;
    let ingestPid = 0;
    let ingestDoneUs: number | undefined;
    // LOG_LEVEL info: ingest logs `backfill done` (pipeline/ingest/ingest.ts) when the last block is produced.
    const ingest = await stage(
      "ingest",
      ["--from", String(opts.replay.from), "--to", String(opts.replay.to)],
      { LOG_LEVEL: "info" },
      (l) => {
        if (opts.floor) readExcluded("ingest")(l);
        if (ingestDoneAt === undefined && l.includes('"backfill done"')) {
          ingestDoneAt = performance.now();
          ingestDoneUs = monoUs();
          ingestCpuEnd = cpuSeconds(ingestPid);
        }
      },
    );
    const t0 = performance.now();
    const ingestFromUs = monoUs();
    ingestPid = pidOf(ingest);
    children.push(ingest);
    const ingestCpuStart = cpuSeconds(ingestPid);
    let ingestCpuLast = ingestCpuStart;

    let written = 0;
    let firstWrittenAt: number | undefined;
    let lastWrittenAt = t0;
    let last = before;
    const deadline = t0 + opts.timeoutMs;
    while (written < opts.total && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      const now = (await scrape(metricsUrl)).sum("chainsift_index_documents_total", { result: "written" });
      const at = performance.now();
      if (now > 0 && firstWrittenAt === undefined) firstWrittenAt = at;
      if (now > written) lastWrittenAt = at;
      written = now;
      last = sampleCpu(pids);
      if (ingestDoneAt === undefined) ingestCpuLast = cpuSeconds(ingestPid) ?? ingestCpuLast;
    }
    const after = last;
    const toUs = monoUs();
    profileWindows.set(pidOf(decode), { fromUs, toUs });
    profileWindows.set(pidOf(index), { fromUs, toUs });
    profileWindows.set(ingestPid, { fromUs: ingestFromUs, toUs: ingestDoneUs ?? toUs });
    const indices = KINDS.map((k) => indexName(h.config.chain, k, h.config.elasticsearch.indexPrefix)).join(",");
    await h.es.indices.refresh({ index: indices });
    const { count } = await h.es.count({ index: indices });
    await exitOf(ingest.child);
    if (written < opts.total) console.log(`WARNING e2e: ${written} of ${opts.total} documents written within ${opts.timeoutMs / 1000} s`);

    const cpu = cpuPer1k(before, after, written);
    // Ingest: from its ready line to its `backfill done` (the last poll's sample if it exited before it was read).
    const ingestEnd = ingestCpuEnd ?? ingestCpuLast;
    if (ingestCpuStart !== undefined && ingestEnd !== undefined && written > 0)
      cpu.ingest = ((ingestEnd - ingestCpuStart - excludedS.ingest) / written) * 1000;
    if (opts.floor && cpu.decode !== undefined && written > 0) cpu.decode -= (excludedS.decode / written) * 1000;
    if (opts.floor && written > 0)
      console.log(
        `  floor       : left out chainsift's own code the floor ran: ingest ${((excludedS.ingest / written) * 1000).toFixed(3)}, decode ${((excludedS.decode / written) * 1000).toFixed(3)} CPU-s/1k`,
      );
    return {
      written,
      counted: count,
      seconds: (lastWrittenAt - t0) / 1000,
      ingestSeconds: ((ingestDoneAt ?? performance.now()) - t0) / 1000,
      ingestRecords: opts.ingestRecords,
      indexSeconds: firstWrittenAt === undefined ? Number.NaN : (lastWrittenAt - firstWrittenAt) / 1000,
      cpu,
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await h.cleanup();
  }
}

/** Runs the benchmark and prints its figures. */
export async function benchIngest(args: string[]): Promise<void> {
  if (args.includes("--legacy")) return benchIngestLegacy(args);
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const copies = numberArg(args, "--copies", 10);
  const rounds = numberArg(args, "--rounds", 3);
  const concurrency = args.includes("--concurrency") ? numberArg(args, "--concurrency", 4) : undefined;
  const timeoutMs = numberArg(args, "--timeout-s", 600) * 1000;
  const floor = args.includes("--floor") ? { copies, batched: args.includes("--batched") } : undefined;
  const client = args.includes("--client") ? stringArg(args, "--client", "kafkajs") : undefined;
  const profileDir = args.includes("--profile")
    ? stringArg(args, "--profile-dir", mkdtempSync(join(tmpdir(), "chainsift-prof-")))
    : undefined;

  const base = loadCompleteBlocks();
  const blocks = contiguousCopies(base, copies, START);
  const docs = blockDocs(blocks);
  const ingestRecords = docs.filter((d) => d.kind !== "event").length;
  const java = stackPids();
  console.log(
    `bench ingest (honest method, issue 23): ${blocks.length} blocks (${base.length} fixture blocks x ${copies} copies), ${docs.length} records (${ingestRecords} from ingest, ${docs.length - ingestRecords} decoded events); ${rounds} rounds, raw then end to end`,
  );
  console.log(
    `${floor ? "library floor" : "stages"} as processes: ingest (backfill ${START}..${START + blocks.length - 1}, concurrency ${concurrency ?? "default"}), decode, index; Kafka client ${client ?? "of the environment (CHAINSIFT_KAFKA_CLIENT, default platformatic)"}; replay node in its own process; services pids ${JSON.stringify(java)}`,
  );
  if (profileDir) console.log(`profiling the stages (node --cpu-prof) into ${profileDir}: figures are slowed by the profiler`);
  console.log("CPU figures: CPU seconds per 1,000 records (utime+stime from /proc/<pid>/stat)");

  const replayProc = await spawnReady({
    label: "replay node",
    script: "bench/support/replay-child.ts",
    args: ["--copies", String(copies), "--start", String(START)],
    env: { ...process.env },
    isReady: (l) => l.startsWith("{") && l.includes('"url"'),
    timeoutMs: 180_000,
  });
  const replay = {
    url: String(replayProc.ready.url),
    from: Number(replayProc.ready.from),
    to: Number(replayProc.ready.to),
    pid: pidOf(replayProc),
  };
  const raws: RawRound[] = [];
  const e2es: E2eRound[] = [];
  try {
    for (let r = 1; r <= rounds; r++) {
      console.log(`round ${r} raw: ${load()}`);
      const raw = await rawRound(docs, java);
      raws.push(raw);
      console.log(
        `  raw ES bulk : ${raw.records} records in ${raw.seconds.toFixed(2)} s = ${(raw.records / raw.seconds).toFixed(0)} records/s`,
      );
      console.log(`  raw CPU/1k  : ${formatCpu(raw.cpu)}`);
      console.log(`round ${r} end to end: ${load()}`);
      const e = await e2eRound({ replay, total: docs.length, ingestRecords, java, concurrency, profileDir, timeoutMs, floor, client });
      e2es.push(e);
      console.log(
        `  end to end  : ${e.written} records written in ${e.seconds.toFixed(2)} s = ${(e.written / e.seconds).toFixed(0)} records/s (${e.counted} counted after one refresh)`,
      );
      console.log(
        `  halves      : ingest → Kafka ${e.ingestRecords} records in ${e.ingestSeconds.toFixed(2)} s = ${(e.ingestRecords / e.ingestSeconds).toFixed(0)} records/s; Kafka → ES ${e.written} in ${e.indexSeconds.toFixed(2)} s = ${(e.written / e.indexSeconds).toFixed(0)} records/s`,
      );
      console.log(`  e2e CPU/1k  : ${formatCpu(e.cpu)}`);
      console.log(`  after round ${r}: ${load()}`);
    }
  } finally {
    await replayProc.stop();
  }

  const rawRate = median(raws.map((r) => r.records / r.seconds));
  const e2eRate = median(e2es.map((e) => e.written / e.seconds));
  const medianCpu = (rows: CpuSample[]): CpuSample => {
    const out: CpuSample = {};
    for (const p of PROCS) {
      const xs = rows.map((c) => c[p]).filter((x): x is number => x !== undefined);
      if (xs.length > 0) out[p] = median(xs);
    }
    return out;
  };
  const e2eCpu = medianCpu(e2es.map((e) => e.cpu));
  const own = (["ingest", "decode", "index"] as const).reduce((s, p) => s + (e2eCpu[p] ?? 0), 0);
  console.log(`medians of ${rounds} rounds (${load()}):`);
  console.log(`  raw ES bulk     : ${rawRate.toFixed(0)} records/s`);
  console.log(`  end to end      : ${e2eRate.toFixed(0)} records/s`);
  console.log(`  ratio e2e / raw : ${(e2eRate / rawRate).toFixed(2)} (target >= 0.5)`);
  console.log(`  ingest → Kafka  : ${median(e2es.map((e) => e.ingestRecords / e.ingestSeconds)).toFixed(0)} records/s`);
  console.log(`  Kafka → ES      : ${median(e2es.map((e) => e.written / e.indexSeconds)).toFixed(0)} records/s`);
  console.log(`  raw CPU/1k      : ${formatCpu(medianCpu(raws.map((r) => r.cpu)))}`);
  console.log(`  e2e CPU/1k      : ${formatCpu(e2eCpu)}`);
  console.log(`  chainsift CPU/1k (ingest + decode + index): ${own.toFixed(3)} s`);

  if (profileDir) {
    for (const stage of ["ingest", "decode", "index"]) {
      // Startup and shutdown left out: each process from its measured start to the last record.
      const profiles = readProfiles(join(profileDir, stage)).map(({ pid, profile }) => ({
        profile,
        ...(pid === undefined ? {} : profileWindows.get(pid)),
      }));
      for (const line of formatSummary(stage, summariseProfiles(profiles, 12), profiles.length)) console.log(line);
    }
  }
}
