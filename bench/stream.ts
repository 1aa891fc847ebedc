/**
 * `npm run bench -- stream [--events N] [--log-level L]`: indexes N (default 200,000) event
 * documents (the decoded mainnet fixture events, copied with rewritten transaction and block
 * hashes and block numbers), starts the search API in a child process and requests all of them
 * with `size: -1` (a `blockNumber.num` range covering everything). The response is read as a
 * stream, never held in memory: hits are counted on the fly. Prints `hits.total`, hits received,
 * bytes, time to the response headers and to the first body byte, total time, and the peak RSS
 * of the API process against the target (≤ 256 MB).
 *
 * Peak RSS: `VmHWM` of `/proc/<pid>/status` (the kernel's own high-water mark), reset just before
 * the request (`/proc/<pid>/clear_refs`), plus the peak since the process started; `VmRSS` is also
 * sampled every 50 ms as a cross-check. Indices live under a unique `bench-stream-<hex>-` prefix
 * and are deleted at the end. Needs Elasticsearch and ../shared/data/mainnet.
 * @module
 */
import { request } from "node:http";
import { performance } from "node:perf_hooks";
import { Client } from "@elastic/elasticsearch";
import { loadConfig } from "../lib/config/index.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { type ApiChild, pollRss, resetPeakRss, spawnApi } from "./support/api-child.js";
import { benchPrefix, bulkLoad, deleteBenchIndices, eventCopies, fixtureEvents, numberArg, stringArg } from "./support/data.js";

/** Target: peak RSS of the API process while streaming, in bytes (256 MB). */
export const PEAK_RSS_TARGET = 256 * 2 ** 20;

/** Block numbers of copy `c` are `n + OFFSET * (c + 1)` (above every fixture block number). */
const OFFSET = 20_000_000;

/** What {@link readHitsStream} saw. */
export interface StreamReadResult {
  /** HTTP status. */
  status: number;
  /** `hits.total` from the head of the envelope (NaN when it was not found). */
  total: number;
  /** Hits counted (occurrences of the `"_id":` key). */
  hits: number;
  /** Body bytes received. */
  bytes: number;
  /** Milliseconds from sending the request to the response headers. */
  headersMs: number;
  /** Milliseconds from sending the request to the first body byte. */
  firstByteMs: number;
  /** Milliseconds from sending the request to the end of the body. */
  totalMs: number;
  /** Whether the body ended with `]}}`, the end of an envelope without aggregations (a truncated stream does not). */
  complete: boolean;
}

const ID_KEY = Buffer.from('"_id":');

/**
 * POSTs a search and reads the hits envelope incrementally: it counts the `"_id":` keys (one per
 * hit; a key can only appear unescaped as a JSON key, and the records have no `_id` field),
 * carrying the last bytes of each chunk over so that a key split across chunks counts once, and
 * reads `hits.total` from the first kilobytes. Memory stays at one chunk.
 */
export function readHitsStream(url: string, headers: Record<string, string>, body: string): Promise<StreamReadResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let headersMs = Number.NaN;
    let firstByteMs = Number.NaN;
    let bytes = 0;
    let hits = 0;
    let head = "";
    let carry = Buffer.alloc(0);
    let tail = "";
    const req = request(url, { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      headersMs = performance.now() - t0;
      res.on("data", (chunk: Buffer) => {
        if (bytes === 0) firstByteMs = performance.now() - t0;
        bytes += chunk.length;
        if (head.length < 4096) head += chunk.subarray(0, 4096).toString("utf8");
        const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
        let at = buf.indexOf(ID_KEY);
        while (at >= 0) {
          hits++;
          at = buf.indexOf(ID_KEY, at + ID_KEY.length);
        }
        // Keep the last (key length - 1) bytes: a key split across chunks is found next time and
        // a key wholly inside this chunk cannot fit into the carry, so nothing counts twice.
        carry = Buffer.from(buf.subarray(Math.max(0, buf.length - (ID_KEY.length - 1))));
        tail = (tail + chunk.subarray(Math.max(0, chunk.length - 8)).toString("utf8")).slice(-8);
      });
      res.on("end", () => {
        const m = /"hits":\{"total":(\d+)/.exec(head);
        resolve({
          status: res.statusCode ?? 0,
          total: m ? Number(m[1]) : Number.NaN,
          hits,
          bytes,
          headersMs,
          firstByteMs,
          totalMs: performance.now() - t0,
          complete: tail.endsWith("]}}"),
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** Runs the benchmark and prints its figures (see the module notes). */
export async function benchStream(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const count = numberArg(args, "--events", 200_000);
  const logLevel = stringArg(args, "--log-level", "warn");
  const config = loadConfig();
  const { chain } = config;
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: 300_000 });
  const prefix = benchPrefix("stream");
  let api: ApiChild | undefined;
  try {
    const events = fixtureEvents(loadCompleteBlocks());
    const loaded = await bulkLoad(es, chain, prefix, eventCopies(events, count, OFFSET));
    const copies = Math.ceil(count / events.length);
    const maxBlock = Math.max(...events.map((e) => e.blockNumber.num)) + OFFSET * copies;
    console.log(
      `bench stream: ${loaded.count} events (${events.length} decoded fixture events x ${copies} copies, rewritten hashes and numbers)` +
        ` indexed in ${loaded.seconds.toFixed(1)} s into ${prefix}*`,
    );

    api = await spawnApi({ indexPrefix: prefix, token: `bench-${prefix}`, logLevel });
    const idle = api.memory();
    const hwmSinceStart = idle?.peakRss ?? Number.NaN;
    const reset = resetPeakRss(api.pid);
    console.log(
      `API child pid ${api.pid} at ${api.url} (LOG_LEVEL=${logLevel}); node ${process.version}; idle RSS ${idle ? mib(idle.rss) : "n/a"}` +
        `, peak RSS since start ${idle ? mib(hwmSinceStart) : "n/a"}${reset ? "; peak reset before the request" : ""}`,
    );

    const body = JSON.stringify({ query: { range: { "blockNumber.num": { gte: 0, lte: maxBlock } } }, size: -1 });
    const url = `${api.url}/${chain.technology}/${chain.blockchain}/${chain.network}/es/event/search/`;
    const poller = pollRss(api.pid, 50);
    const r = await readHitsStream(url, { "content-type": "application/json", authorization: `Bearer ${api.token}` }, body);
    const polled = poller.stop();
    const after = api.memory();
    const peakDuring = after?.peakRss ?? Number.NaN;
    const peak = Math.max(peakDuring, reset ? hwmSinceStart : Number.NaN);

    console.log(`request         : POST ${url.replace(api.url, "")} ${body}`);
    console.log(`status          : ${r.status}${r.complete ? "" : " (body did NOT end with ]}}: truncated)"}`);
    console.log(`hits.total      : ${r.total}`);
    console.log(`hits received   : ${r.hits} (${r.hits === r.total ? "== hits.total" : `!= hits.total ${r.total}: MISMATCH`})`);
    console.log(`bytes           : ${r.bytes} (${mib(r.bytes)})`);
    console.log(`time to headers : ${r.headersMs.toFixed(0)} ms`);
    console.log(`time to 1st byte: ${r.firstByteMs.toFixed(0)} ms`);
    console.log(
      `total time      : ${(r.totalMs / 1000).toFixed(2)} s (${((r.hits / r.totalMs) * 1000).toFixed(0)} hits/s, ${mib((r.bytes / r.totalMs) * 1000)}/s)`,
    );
    console.log(
      `API peak RSS    : ${mib(peakDuring)} during the request (VmHWM), ${mib(polled.maxRss)} max of ${polled.samples} VmRSS samples every 50 ms;` +
        ` ${mib(hwmSinceStart)} before it (startup)`,
    );
    const ok = r.status === 200 && r.complete && r.hits === r.total && r.total >= count && peak <= PEAK_RSS_TARGET;
    console.log(
      `verdict         : ${ok ? "PASS" : "FAIL"} (peak RSS ${mib(peak)} vs target <= ${mib(PEAK_RSS_TARGET)};` +
        ` received ${r.hits} of ${r.total}; >= ${count} events)`,
    );
  } finally {
    await api?.stop();
    await deleteBenchIndices(es, chain, prefix);
    await es.close();
  }
}
