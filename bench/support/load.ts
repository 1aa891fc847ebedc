/**
 * Fixed-duration HTTP load with autocannon, with exact latency percentiles: autocannon's own
 * histogram has 1 ms resolution, which is too coarse for millisecond queries, so every 2xx
 * response time (sub-millisecond, from its `response` event) is recorded here instead.
 * @module
 */
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";

/** One load run. */
export interface LoadOptions {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  /** Request body (the same for every request). */
  body?: string;
  /** Concurrent connections (each with one request in flight). */
  connections: number;
  /** Seconds to run. */
  duration: number;
  /**
   * Requests per second over all connections (autocannon `overallRate`, open-loop-ish: each
   * connection waits for its answer); absent = as fast as the answers come (closed loop).
   */
  rate?: number;
}

/** Figures of one load run (latencies of 2xx responses only, in milliseconds). */
export interface LoadResult {
  /** 2xx responses. */
  ok: number;
  /** Responses with another status. */
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** Wall-clock seconds of the run. */
  seconds: number;
  /** 2xx responses per second. */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Mean response size in bytes (2xx). */
  bytesPerResponse: number;
}

/** The raw figures of one run, to pool several runs with {@link summarize}. */
export interface LoadSample {
  /** Response times of the 2xx responses, in milliseconds, ascending. */
  times: Float64Array;
  non2xx: number;
  errors: number;
  seconds: number;
  bytes: number;
}

/** Nearest-rank percentile of sorted values (`q` in 0..1); NaN when empty. */
export function percentile(sorted: Float64Array | readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

/** Pools runs (e.g. interleaved rounds) into one {@link LoadResult}. */
export function summarize(samples: readonly LoadSample[]): LoadResult {
  const ok = samples.reduce((n, x) => n + x.times.length, 0);
  const sorted = new Float64Array(ok);
  let at = 0;
  for (const x of samples) {
    sorted.set(x.times, at);
    at += x.times.length;
  }
  sorted.sort();
  const seconds = samples.reduce((n, x) => n + x.seconds, 0);
  const bytes = samples.reduce((n, x) => n + x.bytes, 0);
  return {
    ok,
    non2xx: samples.reduce((n, x) => n + x.non2xx, 0),
    errors: samples.reduce((n, x) => n + x.errors, 0),
    seconds,
    rps: seconds > 0 ? ok / seconds : 0,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: percentile(sorted, 1),
    bytesPerResponse: ok > 0 ? bytes / ok : 0,
  };
}

/** Runs autocannon for `duration` seconds and records every 2xx response time (see the module notes). */
export async function runLoad(opts: LoadOptions): Promise<LoadSample> {
  let times = new Float64Array(1 << 16);
  let ok = 0;
  let non2xx = 0;
  let bytes = 0;
  const t0 = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.url,
        method: opts.method,
        headers: opts.headers,
        ...(opts.body !== undefined ? { body: opts.body } : {}),
        ...(opts.rate !== undefined ? { overallRate: opts.rate } : {}),
        connections: opts.connections,
        pipelining: 1,
        duration: opts.duration,
        timeout: 30,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on("response", (_client, statusCode, resBytes, responseTime) => {
      if (statusCode < 200 || statusCode > 299) {
        non2xx++;
        return;
      }
      if (ok === times.length) {
        const bigger = new Float64Array(times.length * 2);
        bigger.set(times);
        times = bigger;
      }
      times[ok++] = responseTime;
      bytes += resBytes;
    });
  });
  return {
    times: times.slice(0, ok).sort(),
    non2xx,
    errors: result.errors + result.timeouts,
    seconds: (performance.now() - t0) / 1000,
    bytes,
  };
}
