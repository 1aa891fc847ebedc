/**
 * Reads blocks and receipts from any EVM JSON-RPC node through ethers 6.
 * Methods: `eth_blockNumber`, `eth_getBlockByNumber(n, true)`, `eth_getBlockReceipts(n)`
 * (https://ethereum.github.io/execution-apis/api-documentation/), falling back to one
 * `eth_getTransactionReceipt` per transaction on nodes without `eth_getBlockReceipts`.
 * Over one endpoint or several of the same chain: HTTP requests retried after 429 (`Retry-After`),
 * 5xx, resets, timeouts and unparsable bodies; block answers checked for consistency before they
 * are returned; calls failed over between endpoints by health and head (docs/reorgs.md "Faults").
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { type JsonRpcApiProviderOptions, type JsonRpcPayload, JsonRpcProvider, type JsonRpcResult, Network } from "ethers";
import type { Registry } from "prom-client";
import { parityToCallFrames } from "../../lib/chain/parity-trace.js";
import { RetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { type EndpointHealth, type IngestMetrics, ingestMetricsOf } from "./metrics.js";
import type { RawRpcObject } from "./transform.js";

/** A block as fetched: the raw block and its receipts in transaction order. */
export interface FetchedBlock {
  block: RawRpcObject;
  /** Receipts in transaction order. */
  receipts: RawRpcObject[];
}

/** A block header as far as the follower needs it (lower-case hex hashes). */
export interface BlockHeader {
  number: number;
  hash: string;
  parentHash: string;
}

/** Source of chain data. */
export interface ChainSource {
  /** The node's chain id (EIP-155). */
  chainId(): Promise<number>;
  /** Current head block number. */
  headNumber(): Promise<number>;
  /** Hash of the node's canonical block at a height, or null when it has none (reorg checks). */
  blockHash(number: number): Promise<string | null>;
  /**
   * The node's block header by height (`eth_getBlockByNumber(n, false)`) or by hash
   * (`eth_getBlockByHash(h, false)`), or null when the node has no such block. The follower uses it
   * to confirm a reorg: the new branch is walked down to a block it produced by parent hashes.
   * Optional: without it, a reorg is confirmed by reading the heights again by number.
   */
  blockHeader?(id: number | string): Promise<BlockHeader | null>;
  /**
   * Height of the node's `finalized` block (block tag of the execution API, post-merge nodes;
   * https://ethereum.github.io/execution-apis/api-documentation/), or null when the node has none
   * or does not know the tag. Optional: sources without it are treated as having no finality.
   */
  finalizedNumber?(): Promise<number | null>;
  /**
   * The block with full transactions and its receipts, or null when the node does not have the
   * block (yet).
   * @throws {RetryableError} when the node fails, or answers inconsistently ({@link InconsistentAnswerError}:
   *   the block and its receipts disagree, e.g. a reorg between calls or a load balancer mixing backends;
   *   see {@link blockInconsistency}).
   */
  fetchBlock(number: number): Promise<FetchedBlock | null>;
  /**
   * The call trace of every transaction of a block as callTracer frames, in transaction order:
   * from `debug_traceBlockByNumber` with the `callTracer`, or else from parity-style `trace_block`
   * (converted, lib/chain/parity-trace.ts); null when the node has neither (remembered: not asked
   * again).
   * @throws {RetryableError} when the node fails to trace the block (e.g. pruned state).
   */
  fetchTraces(number: number): Promise<RawRpcObject[] | null>;
  /**
   * Which trace method the node has: asks for the traces of block `number` once (when not known
   * yet) with `debug_traceBlockByNumber` (callTracer: geth, reth, Erigon, Nethermind), then
   * parity-style `trace_block` (Erigon, Nethermind, reth), and remembers the first that the node
   * knows. Optional: sources without it are treated as `none`.
   * @param number - a block the node has (e.g. the head).
   * @returns the method used from now on, or `none`.
   * @throws the transport error (e.g. a timeout, a refused connection) when no JSON-RPC answer
   *   decided it; nothing is remembered then, so asking again probes again.
   */
  probeTraces?(number: number): Promise<TraceSource>;
  /** Releases the connection. */
  destroy(): void;
}

/** Options of {@link createRpcSource}. */
export interface RpcSourceOptions {
  /** JSON-RPC URL (http/https): the one-endpoint shorthand of {@link RpcSourceOptions.rpcUrls}. */
  rpcUrl?: string;
  /**
   * The chain's JSON-RPC endpoints (http/https), in order of preference; wins over `rpcUrl`. Calls
   * go to the first healthy endpoint that is not behind and fail over to the others (docs/reorgs.md
   * "The transport and failover"). One of `rpcUrl` and `rpcUrls` is required.
   */
  rpcUrls?: readonly string[];
  /** Per-HTTP-request timeout in ms (a batch is one request). Default 10000 (config `ingest.rpc.timeoutMs`). */
  timeoutMs?: number;
  /**
   * Tries of one HTTP request on one endpoint (the first included) after 429, 5xx, a connection
   * failure, a timeout or a body that is not JSON, while no other endpoint is available. Default 4.
   */
  attempts?: number;
  /** Longest time in ms one HTTP request spends on its tries, waits included. Default 30000. */
  retryBudgetMs?: number;
  /** Longest wait in ms a 429's `Retry-After` is honoured for (longer ones are cut to it). Default 30000. */
  retryAfterMaxMs?: number;
  /** How long in ms an endpoint is avoided after its first error; doubles per consecutive error up to 60000. Default 2000. */
  cooldownMs?: number;
  /** An endpoint whose head is more than this many blocks below the highest endpoint head is behind (avoided). Default 3. */
  maxLagBlocks?: number;
  /**
   * With several endpoints, a block read (`fetchBlock`, `blockHash`) that has no answer after this
   * many ms is also sent to the next available endpoint; the first answer wins. With one endpoint, an
   * HTTP request of block reads only ({@link HEDGED_METHODS}) without an answer after this many ms is
   * sent once more to the same URL (a load balancer routes it to another backend, so one hanging
   * backend costs this, not `timeoutMs`), again every such delay up to {@link HEDGED_COPIES} copies;
   * the first answer wins and the others are aborted. There the delay adapts: 4 × the 90th percentile
   * of the endpoint's recent answer times for the same kind of request, at least
   * {@link HEDGE_FLOOR_MS}, at most this ({@link hedgeDelayMs}). 0: never. Default 2000.
   */
  hedgeAfterMs?: number;
  /** Largest JSON-RPC batch. Default 50. */
  batchMaxCount?: number;
  /** How long ethers gathers calls into one batch. Default 2 ms (ethers' own default is 10 ms). */
  batchStallTimeMs?: number;
  /**
   * Registry of `chainsift_ingest_rpc_*` and `chainsift_rpc_*` metrics (pipeline/ingest/metrics.ts),
   * e.g. the process's. Default: not measured.
   */
  registry?: Registry;
  /** Receives endpoint state changes: down (warn), back up (info). Default: silent. */
  logger?: Logger;
}

/** A {@link ChainSource} over one or more JSON-RPC endpoints (the return of {@link createRpcSource}). */
export interface RpcSource extends ChainSource {
  /** Each endpoint's health now, in configured order (labels without credentials). */
  endpoints(): EndpointHealth[];
}

const METHOD_NOT_FOUND = -32601;
const COOLDOWN_MAX_MS = 60_000;
/** What ethers is told the network is: a static one, so it never detects it (its detection retries for ever, every second, on a dead endpoint). */
const STATIC_NETWORK = new Network("chainsift-rpc", 0n);

/** How a request to an endpoint failed without a JSON-RPC answer. */
export type TransportErrorKind = "http_429" | "http_5xx" | "http_other" | "timeout" | "connection" | "malformed";

/** A request to a JSON-RPC endpoint that got no JSON-RPC answer (thrown by the transport, the cause of a {@link RetryableError}). */
export class RpcTransportError extends Error {
  constructor(
    /** What went wrong. */
    readonly kind: TransportErrorKind,
    message: string,
    /** The wait a 429's `Retry-After` asked for, in ms (capped), when it had one. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "RpcTransportError";
  }
}

/** A block answer that contradicts itself ({@link blockInconsistency}): retried, never produced. */
export class InconsistentAnswerError extends RetryableError {
  constructor(
    readonly reason: InconsistencyReason,
    message: string,
  ) {
    super(message);
    this.name = "InconsistentAnswerError";
  }
}

/**
 * The wait an HTTP `Retry-After` header asks for (RFC 9110 §10.2.3: delay-seconds or an HTTP date), in ms.
 * @param value - the header's value, null when absent.
 * @param maxMs - the longest wait honoured; longer ones are cut to it.
 * @returns the wait (0 … maxMs), or undefined when the header is absent or unreadable.
 */
export function retryAfterMs(value: string | null, maxMs: number, nowMs = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  const ms = /^\d+(\.\d+)?$/.test(v) ? Number(v) * 1000 : Date.parse(v) - nowMs;
  return Number.isNaN(ms) ? undefined : Math.min(Math.max(0, ms), maxMs);
}

/**
 * A JSON-RPC URL fit for logs and metric labels: without userinfo, query string and fragment
 * (replaced by `?***`), and with every path segment that looks like a key (16 characters or more,
 * or 8 or more mixing letters and digits, as Infura's `/v3/<key>` and Alchemy's `/v2/<key>`)
 * replaced by `***`.
 */
export function redactRpcUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "<not a URL>";
  }
  const secret = (seg: string) => seg.length >= 16 || (seg.length >= 8 && /\d/.test(seg) && /[a-z]/i.test(seg));
  const path = u.pathname
    .split("/")
    .map((seg) => (secret(seg) ? "***" : seg))
    .join("/");
  return `${u.protocol}//${u.host}${path === "/" ? "" : path}${u.search || u.hash ? "?***" : ""}`;
}

/** What the transport of one endpoint reports to, and asks of, the failover logic. */
interface TransportHooks {
  /** A request was sent a second time because the first had no answer within `hedgeAfterMs` (one endpoint only). */
  hedged(): void;
  /** A re-sent copy of a request failed while another copy is still on it: counted, nothing else (one endpoint only). */
  counted(err: RpcTransportError): void;
  /** A request failed (every try counts). */
  failed(err: RpcTransportError): void;
  /** A request got an answer. */
  ok(): void;
  /** Whether to retry here rather than let the call fail over: no other endpoint is available. */
  retryHere(): boolean;
  /** Until when (ms since the epoch) a 429's `Retry-After` asks to wait. */
  notBeforeMs(): number;
}

/** The transport's retry settings (see {@link RpcSourceOptions}). */
interface TransportPolicy {
  label: string;
  timeoutMs: number;
  attempts: number;
  retryBudgetMs: number;
  retryAfterMaxMs: number;
  /** Re-send a request of block reads to the same URL after this many ms without an answer; 0: never (several endpoints hedge across endpoints instead). */
  hedgeAfterMs: number;
}

/** How many recent answer times per kind of request the lone-endpoint hedge delay is computed from. */
export const HEDGE_SAMPLES = 32;
/** The lone-endpoint hedge delay never goes below this many ms, however fast the endpoint answers. */
export const HEDGE_FLOOR_MS = 250;

/**
 * When to re-send a lone endpoint's request of block reads (pure): 4 × the 90th percentile of the
 * recent answer times of the same kind of request (hedging after a high percentile of the latency
 * is the "hedged requests" of Dean & Barroso, "The Tail at Scale", CACM 56(2), 2013), at least
 * {@link HEDGE_FLOOR_MS}, at most `capMs` (`hedgeAfterMs`); `capMs` until 8 answers were seen.
 * @param samples - recent answer times in ms (any order), or undefined when none.
 * @param capMs - the configured `hedgeAfterMs`.
 * @returns the delay in ms.
 */
export function hedgeDelayMs(samples: readonly number[] | undefined, capMs: number): number {
  if (!samples || samples.length < 8) return capMs;
  const sorted = [...samples].sort((a, b) => a - b);
  const p90 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] as number;
  return Math.min(capMs, Math.max(HEDGE_FLOOR_MS, Math.ceil(4 * p90)));
}

/** At most this many copies of one hedged request are in flight (the first and its re-sends, one every `hedgeAfterMs`). */
export const HEDGED_COPIES = 4;

/**
 * The JSON-RPC methods a lone endpoint's request is re-sent for when it hangs (cheap, idempotent
 * block reads; traces and `eth_call`s are legitimately slow and are not doubled).
 */
export const HEDGED_METHODS: ReadonlySet<string> = new Set([
  "eth_blockNumber",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_getBlockReceipts",
  "eth_getTransactionReceipt",
]);

/**
 * ethers' JSON-RPC provider (batching, error mapping) over Node's fetch (undici) instead of
 * ethers' own HTTP layer, whose JavaScript UTF-8 decoding of multi-megabyte block and receipt
 * responses made fetching ~8x slower (measured: 75 mainnet blocks with receipts in 1.9 s through
 * ethers' FetchRequest, 0.2 s through fetch). `_send` is the override point ethers documents for
 * custom transports; it sees every HTTP request (one call or a whole batch), so it is where HTTP
 * statuses, `Retry-After` and unparsable bodies are handled: a failed request is sent again whole
 * (no call of a batch is lost), or fails every call of it (ethers rejects each with the error).
 */
class UndiciJsonRpcProvider extends JsonRpcProvider {
  readonly #url: string;
  readonly #headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  readonly #policy: TransportPolicy;
  readonly #hooks: TransportHooks;
  /** Recent answer times (ms) of hedgeable requests by their sorted method list, newest last, at most {@link HEDGE_SAMPLES}. */
  readonly #latencies = new Map<string, number[]>();

  #recordLatency(kind: string, ms: number): void {
    const xs = this.#latencies.get(kind) ?? [];
    xs.push(ms);
    if (xs.length > HEDGE_SAMPLES) xs.shift();
    this.#latencies.set(kind, xs);
  }

  constructor(url: string, policy: TransportPolicy, hooks: TransportHooks, options: JsonRpcApiProviderOptions) {
    super(url, undefined, { ...options, staticNetwork: STATIC_NETWORK });
    // fetch refuses URLs with credentials: `https://user:pass@host` becomes HTTP Basic authentication (RFC 7617).
    const u = new URL(url);
    if (u.username || u.password) {
      const credentials = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
      this.#headers.authorization = `Basic ${Buffer.from(credentials).toString("base64")}`;
      u.username = "";
      u.password = "";
    }
    this.#url = u.toString();
    this.#policy = policy;
    this.#hooks = hooks;
  }

  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const { attempts, retryBudgetMs, label } = this.#policy;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const rateLimited = this.#hooks.notBeforeMs() - Date.now();
      if (rateLimited > 0) {
        if (!this.#hooks.retryHere() || Date.now() - started + rateLimited > retryBudgetMs) {
          throw new RpcTransportError("http_429", `${label}: rate limited for ${rateLimited} ms more (Retry-After)`, rateLimited);
        }
        await sleep(rateLimited);
      }
      try {
        const out = await this.#postHedged(payload);
        this.#hooks.ok();
        return out;
      } catch (err) {
        if (!(err instanceof RpcTransportError)) throw err;
        this.#hooks.failed(err);
        if (err.kind === "http_429" && err.retryAfterMs !== undefined) {
          if (attempt >= attempts || !this.#hooks.retryHere()) throw err;
          continue; // waits for notBeforeMs above, within the budget
        }
        const delay = 250 * 2 ** (attempt - 1);
        if (err.kind === "http_other" || attempt >= attempts || Date.now() - started + delay > retryBudgetMs || !this.#hooks.retryHere()) {
          throw err;
        }
        await sleep(delay);
      }
    }
  }

  /**
   * {@link #post}, and for a request of block reads only ({@link HEDGED_METHODS}) with `hedgeAfterMs`
   * set: the same request sent once more every `hedgeAfterMs` without an answer, up to
   * {@link HEDGED_COPIES} in flight. The first answer
   * wins and the other request is aborted; a failure before the second request went out is thrown at
   * once (the retry loop above handles it), after it only when both failed.
   */
  #postHedged(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const calls = Array.isArray(payload) ? payload : [payload];
    if (this.#policy.hedgeAfterMs <= 0 || !calls.every((c) => HEDGED_METHODS.has(c.method))) return this.#post(payload);
    const kind = calls
      .map((c) => c.method)
      .sort()
      .join(",");
    const hedgeMs = hedgeDelayMs(this.#latencies.get(kind), this.#policy.hedgeAfterMs);
    return new Promise((resolve, reject) => {
      const aborts: AbortController[] = [];
      let pending = 0;
      let hedged = false;
      let done = false;
      const finish = () => {
        done = true;
        clearTimeout(timer);
        for (const a of aborts) a.abort();
      };
      const send = () => {
        const abort = new AbortController();
        aborts.push(abort);
        pending++;
        // The answering copy's own time: a hung copy's wait would push the delay up to the cap for good.
        const sentAt = performance.now();
        this.#post(payload, abort.signal).then(
          (out) => {
            if (done) return;
            finish();
            this.#recordLatency(kind, performance.now() - sentAt);
            resolve(out);
          },
          (err: unknown) => {
            pending--;
            if (abort.signal.aborted) return; // a copy given up after another answered: not the endpoint's error
            if (done || (hedged && pending > 0)) {
              // Not thrown (another copy is still on it, or answered): still one failed request of the endpoint.
              if (err instanceof RpcTransportError) this.#hooks.counted(err);
              return;
            }
            finish();
            reject(err);
          },
        );
      };
      let timer: NodeJS.Timeout | undefined;
      const arm = () => {
        timer = setTimeout(() => {
          if (done) return;
          hedged = true;
          this.#hooks.hedged();
          send();
          if (aborts.length < HEDGED_COPIES) arm();
        }, hedgeMs);
      };
      arm();
      send();
    });
  }

  async #post(payload: JsonRpcPayload | JsonRpcPayload[], abort?: AbortSignal): Promise<JsonRpcResult[]> {
    const { timeoutMs, label, retryAfterMaxMs } = this.#policy;
    let res: Response;
    let text: string;
    try {
      const timeout = AbortSignal.timeout(timeoutMs);
      res = await fetch(this.#url, {
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify(payload),
        signal: abort ? AbortSignal.any([timeout, abort]) : timeout,
      });
      text = await res.text();
    } catch (err) {
      const name = (err as Error)?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new RpcTransportError("timeout", `${label}: no answer within ${timeoutMs} ms`, undefined, { cause: err });
      }
      const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
      throw new RpcTransportError("connection", `${label}: ${cause?.code ?? cause?.message ?? (err as Error)?.message}`, undefined, {
        cause: err,
      });
    }
    if (!res.ok) {
      const kind = res.status === 429 ? "http_429" : res.status >= 500 ? "http_5xx" : "http_other";
      const wait = res.status === 429 ? retryAfterMs(res.headers.get("retry-after"), retryAfterMaxMs) : undefined;
      throw new RpcTransportError(kind, `${label}: HTTP ${res.status}: ${text.slice(0, 200)}`, wait);
    }
    let body: JsonRpcResult | JsonRpcResult[];
    try {
      body = JSON.parse(text) as JsonRpcResult | JsonRpcResult[];
    } catch (err) {
      throw new RpcTransportError("malformed", `${label}: answer is not JSON (${text.length} bytes: ${text.slice(0, 80)}…)`, undefined, {
        cause: err,
      });
    }
    return Array.isArray(body) ? body : [body];
  }
}

function rpcErrorCode(err: unknown): number | undefined {
  const e = err as { error?: { code?: number }; info?: { error?: { code?: number } }; cause?: unknown };
  // send() wraps failures in a RetryableError whose cause is the provider's error.
  return e?.error?.code ?? e?.info?.error?.code ?? (e?.cause !== undefined ? rpcErrorCode(e.cause) : undefined);
}

function transportErrorOf(err: unknown): RpcTransportError | undefined {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof RpcTransportError) return e;
  return undefined;
}

/** Why a block's answer contradicts itself (see {@link blockInconsistency}). */
export type InconsistencyReason = "receipt_block_hash" | "log_block_hash" | "receipt_count" | "receipt_order" | "gas_used";

const HEX_QUANTITY = /^0x[0-9a-f]+$/i;
const lower = (v: unknown) => (typeof v === "string" ? v.toLowerCase() : undefined);

/**
 * Whether a block and its receipts, as a node answered them, belong together (pure). A load
 * balancer whose backends are on different branches or heights can answer the block from one and
 * the receipts from another; such an answer must be asked again, never produced. Checks, in order:
 * every receipt's `blockHash` and every log's `blockHash` is the block's `hash`
 * (`receipt_block_hash`, `log_block_hash`); one receipt per transaction (`receipt_count`), the
 * i-th for the i-th transaction (`transactionHash` and `transactionIndex`: `receipt_order`); the
 * last receipt's `cumulativeGasUsed` is the block's `gasUsed` (`gas_used`; 0 for a block without
 * transactions). Receipt fields per the execution API (https://ethereum.github.io/execution-apis/api-documentation/);
 * pre-Byzantium receipts (`root` instead of `status`) carry the same fields.
 *
 * A value that is absent or not what the API defines (not a string, not a hex quantity) is not
 * compared: it is malformed rather than inconsistent, and the transform (pipeline/ingest/transform.ts)
 * dead-letters the block with its raw data.
 * @returns the first contradiction found, or null when the answer is consistent.
 */
export function blockInconsistency(block: RawRpcObject, receipts: RawRpcObject[]): { reason: InconsistencyReason; detail: string } | null {
  const hash = lower(block.hash);
  if (hash === undefined) return null;
  for (const r of receipts) {
    const rh = lower(r.blockHash);
    if (rh !== undefined && rh !== hash)
      return { reason: "receipt_block_hash", detail: `receipt of ${String(r.transactionHash)} is in ${rh}, not ${hash}` };
  }
  for (const r of receipts) {
    for (const l of Array.isArray(r.logs) ? (r.logs as RawRpcObject[]) : []) {
      const lh = lower(l?.blockHash);
      if (lh !== undefined && lh !== hash)
        return { reason: "log_block_hash", detail: `a log of ${String(r.transactionHash)} is in ${lh}, not ${hash}` };
    }
  }
  const txs = Array.isArray(block.transactions) ? (block.transactions as RawRpcObject[]) : undefined;
  if (txs === undefined) return null;
  if (receipts.length !== txs.length)
    return { reason: "receipt_count", detail: `${receipts.length} receipts for ${txs.length} transactions` };
  for (const [i, r] of receipts.entries()) {
    const want = lower(txs[i]?.hash);
    const got = lower(r.transactionHash);
    if (want !== undefined && got !== undefined && want !== got)
      return { reason: "receipt_order", detail: `receipt ${i} is of ${got}, transaction ${i} is ${want}` };
    const index = r.transactionIndex;
    if (typeof index === "string" && HEX_QUANTITY.test(index) && Number(index) !== i)
      return { reason: "receipt_order", detail: `receipt ${i} has transactionIndex ${index}` };
  }
  const gasUsed = block.gasUsed;
  const cumulative = receipts.length === 0 ? "0x0" : receipts[receipts.length - 1]?.cumulativeGasUsed;
  if (typeof gasUsed === "string" && HEX_QUANTITY.test(gasUsed) && typeof cumulative === "string" && HEX_QUANTITY.test(cumulative)) {
    if (BigInt(gasUsed) !== BigInt(cumulative))
      return { reason: "gas_used", detail: `last cumulativeGasUsed ${cumulative} != block gasUsed ${gasUsed}` };
  }
  return null;
}

/** Where call traces come from: the node's method, or `none` when it has neither. */
export type TraceSource = "debug_traceBlockByNumber" | "trace_block" | "none";

/**
 * The {@link ChainSource} of one endpoint: its own ethers provider (batches) and what it learnt of
 * the node (whether it has `eth_getBlockReceipts`, its trace method).
 */
function endpointSource(provider: UndiciJsonRpcProvider, metrics: IngestMetrics | undefined): ChainSource {
  let blockReceiptsSupported: boolean | undefined;
  /** Which trace method the node answers; undefined until the first attempt (debug first, then parity). */
  let traceSource: TraceSource | undefined;

  const send = async <T>(method: string, params: unknown[]): Promise<T> => {
    const endTimer = metrics?.rpcSeconds.startTimer({ method });
    let outcome = "ok";
    try {
      return (await provider.send(method, params)) as T;
    } catch (err) {
      outcome = rpcErrorCode(err) === METHOD_NOT_FOUND ? "unsupported" : "error";
      if (outcome === "unsupported") throw err;
      throw new RetryableError(`${method} failed: ${(err as Error).message}`, { cause: err });
    } finally {
      endTimer?.();
      metrics?.rpcRequests.inc({ method, outcome });
    }
  };

  /** Per-transaction receipts, for nodes without eth_getBlockReceipts. */
  const receiptsOf = async (txs: RawRpcObject[]): Promise<RawRpcObject[]> => {
    if (txs.length === 0) return [];
    const rs = await Promise.all(txs.map((t) => send<RawRpcObject | null>("eth_getTransactionReceipt", [t.hash])));
    const missing = rs.indexOf(null);
    if (missing >= 0) throw new RetryableError(`receipt of ${String(txs[missing]?.hash)} not available yet`);
    return rs as RawRpcObject[];
  };

  return {
    async chainId() {
      return Number(await send<string>("eth_chainId", []));
    },
    async headNumber() {
      return Number(await send<string>("eth_blockNumber", []));
    },
    async finalizedNumber() {
      try {
        const block = await send<RawRpcObject | null>("eth_getBlockByNumber", ["finalized", false]);
        return block ? Number(block.number) : null;
      } catch {
        return null; // pre-merge nodes and some providers refuse the tag
      }
    },
    async blockHash(number) {
      const block = await send<RawRpcObject | null>("eth_getBlockByNumber", [`0x${number.toString(16)}`, false]);
      return block ? String(block.hash).toLowerCase() : null;
    },
    async blockHeader(id) {
      const block =
        typeof id === "number"
          ? await send<RawRpcObject | null>("eth_getBlockByNumber", [`0x${id.toString(16)}`, false])
          : await send<RawRpcObject | null>("eth_getBlockByHash", [id, false]);
      if (!block) return null;
      return {
        number: Number(block.number),
        hash: String(block.hash).toLowerCase(),
        parentHash: String(block.parentHash).toLowerCase(),
      };
    },
    async fetchBlock(number) {
      const hexNumber = `0x${number.toString(16)}`;
      // Block and receipts go out together (one JSON-RPC batch); receipts are checked against the block hash.
      const blockP = send<RawRpcObject | null>("eth_getBlockByNumber", [hexNumber, true]);
      const receiptsP =
        blockReceiptsSupported === false
          ? undefined
          : send<RawRpcObject[] | null>("eth_getBlockReceipts", [hexNumber]).then(
              (rs) => {
                blockReceiptsSupported = true;
                return rs;
              },
              (err) => {
                if (rpcErrorCode(err) !== METHOD_NOT_FOUND) throw err;
                blockReceiptsSupported = false;
                return undefined;
              },
            );
      receiptsP?.catch(() => {}); // awaited below; avoid an unhandled rejection if the block call fails first
      const block = await blockP;
      if (!block) {
        await receiptsP?.catch(() => undefined);
        return null;
      }
      const txs = block.transactions as RawRpcObject[];
      let receipts = (await receiptsP) ?? null;
      if (receipts === null || (receipts.length === 0 && txs.length > 0)) receipts = await receiptsOf(txs);
      const inconsistent = blockInconsistency(block, receipts);
      if (inconsistent) {
        metrics?.rpcInconsistent.inc({ reason: inconsistent.reason });
        throw new InconsistentAnswerError(
          inconsistent.reason,
          `block ${number}: inconsistent answer (${inconsistent.reason}): ${inconsistent.detail}`,
        );
      }
      return { block, receipts };
    },
    async fetchTraces(number) {
      const tag = `0x${number.toString(16)}`;
      if (traceSource === "debug_traceBlockByNumber" || traceSource === undefined) {
        try {
          const res = await send<Array<{ txHash?: string; result?: RawRpcObject }> | null>("debug_traceBlockByNumber", [
            tag,
            { tracer: "callTracer" },
          ]);
          traceSource = "debug_traceBlockByNumber";
          // geth answers [{txHash, result}], older nodes [{result}]; both in transaction order.
          return (res ?? []).map((t) => ({ ...(t.result ?? {}), txHash: t.txHash }));
        } catch (err) {
          // A JSON-RPC error other than "method not found" (e.g. pruned state for this block) means the node
          // has the method; a transport error decides nothing.
          const code = rpcErrorCode(err);
          if (code !== METHOD_NOT_FOUND || traceSource !== undefined) {
            if (code !== undefined && code !== METHOD_NOT_FOUND) traceSource = "debug_traceBlockByNumber";
            throw err;
          }
        }
      }
      if (traceSource === "trace_block" || traceSource === undefined) {
        try {
          const res = await send<RawRpcObject[] | null>("trace_block", [tag]);
          traceSource = "trace_block";
          const traces = res ?? [];
          const order = new Map<string, number>();
          for (const t of traces) {
            if (typeof t.transactionHash === "string")
              order.set(t.transactionHash.toLowerCase(), Number(t.transactionPosition ?? order.size));
          }
          const hashes = [...order.entries()].sort((a, b) => a[1] - b[1]).map(([h]) => h);
          return parityToCallFrames(traces, hashes);
        } catch (err) {
          const code = rpcErrorCode(err);
          if (code !== METHOD_NOT_FOUND || traceSource !== undefined) {
            if (code !== undefined && code !== METHOD_NOT_FOUND) traceSource = "trace_block";
            throw err;
          }
        }
      }
      traceSource = "none";
      return null;
    },
    async probeTraces(number) {
      if (traceSource === undefined) {
        try {
          await this.fetchTraces(number);
        } catch (err) {
          // A node that has the method but cannot trace this block (pruned state) still has it (the source is
          // known now); a failure without a JSON-RPC answer (timeout, refused connection) decides nothing.
          if (traceSource === undefined) throw err;
        }
      }
      return traceSource ?? "none";
    },
    destroy() {
      provider.destroy();
    },
  };
}

/** One endpoint of a {@link createRpcSource} source and what is known of its health. */
interface Endpoint {
  /** Position in the configured list (the preference among equals). */
  index: number;
  /** {@link redactRpcUrl} of its URL, unique within the source. */
  label: string;
  source: ChainSource;
  /** Its last `eth_blockNumber` answer. */
  head: number | null;
  /** Whether its last request succeeded. */
  up: boolean;
  /** Consecutive failed requests. */
  errors: number;
  /** Avoided until then (ms since the epoch) after an error. */
  coolUntilMs: number;
  /** Not asked before then (ms since the epoch): a 429's `Retry-After`. */
  retryAfterUntilMs: number;
  /** The `eth_blockNumber` in flight, so a hanging endpoint is not asked again meanwhile. */
  headPending?: Promise<number>;
}

/**
 * Creates a {@link ChainSource} reading from one JSON-RPC endpoint or several of the same chain
 * (docs/reorgs.md "The transport and failover"): every call goes to the first available endpoint
 * (not cooling down after an error, not behind the highest head, for a block read one whose head
 * has the block) and fails over to the next on a transport error, an inconsistent block answer or
 * a null block another endpoint's head covers. On one endpoint, or when no other is available, an
 * HTTP request is retried in place (429 after its `Retry-After`, 5xx, connection failures,
 * timeouts, bodies that are not JSON) within `attempts` and `retryBudgetMs`. With several
 * endpoints, `chainId()` asks all of them and throws (not retryable) when two answer different chains.
 * @throws {Error} when neither `rpcUrl` nor `rpcUrls` names an endpoint.
 */
export function createRpcSource(opts: RpcSourceOptions): RpcSource {
  const urls = opts.rpcUrls && opts.rpcUrls.length > 0 ? opts.rpcUrls : opts.rpcUrl ? [opts.rpcUrl] : [];
  if (urls.length === 0) throw new Error("createRpcSource: no JSON-RPC endpoint (rpcUrl or rpcUrls)");
  const metrics = opts.registry ? ingestMetricsOf(opts.registry) : undefined;
  const log = opts.logger;
  const cooldownMs = opts.cooldownMs ?? 2000;
  const maxLag = opts.maxLagBlocks ?? 3;
  const hedgeAfterMs = opts.hedgeAfterMs ?? 2000;
  const now = () => Date.now();
  const available = (ep: Endpoint) => ep.coolUntilMs <= now();

  const failed = (ep: Endpoint, kind: string, retryAfter?: number) => {
    metrics?.endpointErrors.inc({ endpoint: ep.label, kind });
    ep.errors++;
    const cool = Math.max(retryAfter ?? 0, Math.min(cooldownMs * 2 ** (ep.errors - 1), COOLDOWN_MAX_MS));
    // One endpoint is asked whatever its state: cooling it down would only hide it from the up gauge.
    if (urls.length > 1) ep.coolUntilMs = Math.max(ep.coolUntilMs, now() + cool);
    if (retryAfter !== undefined) ep.retryAfterUntilMs = Math.max(ep.retryAfterUntilMs, now() + retryAfter);
    if (ep.up && urls.length > 1)
      log?.warn({ endpoint: ep.label, kind, cooldownMs: cool }, "JSON-RPC endpoint failing: avoided while it cools down");
    ep.up = false;
  };
  const ok = (ep: Endpoint) => {
    if (!ep.up && urls.length > 1) log?.info({ endpoint: ep.label }, "JSON-RPC endpoint answers again");
    ep.up = true;
    ep.errors = 0;
  };

  const labels = new Set<string>();
  const endpoints: Endpoint[] = urls.map((url, index) => {
    let label = redactRpcUrl(url);
    if (labels.has(label)) label = `${label}#${index + 1}`;
    labels.add(label);
    const ep: Endpoint = { index, label, head: null, up: true, errors: 0, coolUntilMs: 0, retryAfterUntilMs: 0 } as Endpoint;
    const hooks: TransportHooks = {
      failed: (err) => failed(ep, err.kind, err.retryAfterMs),
      ok: () => ok(ep),
      retryHere: () => endpoints.every((o) => o === ep || !available(o)),
      notBeforeMs: () => ep.retryAfterUntilMs,
      hedged: () => metrics?.failovers.inc({ endpoint: label, reason: "slow" }),
      counted: (err) => metrics?.endpointErrors.inc({ endpoint: label, kind: err.kind }),
    };
    const policy: TransportPolicy = {
      label,
      timeoutMs: opts.timeoutMs ?? 10_000,
      attempts: opts.attempts ?? 4,
      retryBudgetMs: opts.retryBudgetMs ?? 30_000,
      retryAfterMaxMs: opts.retryAfterMaxMs ?? 30_000,
      // Several endpoints hedge across endpoints (onEndpoints); a lone one re-sends to itself.
      hedgeAfterMs: urls.length === 1 ? hedgeAfterMs : 0,
    };
    const provider = new UndiciJsonRpcProvider(url, policy, hooks, {
      batchMaxCount: opts.batchMaxCount ?? 50,
      batchStallTime: opts.batchStallTimeMs ?? 2,
    });
    ep.source = endpointSource(provider, metrics);
    return ep;
  });
  const health = endpoints.map((ep) => () => ({ endpoint: ep.label, up: ep.up && available(ep), head: ep.head }));
  for (const [i, ep] of endpoints.entries()) metrics?.endpoints.set(ep.label, health[i] as () => EndpointHealth);

  /** The highest head of the available endpoints (of all when none is). */
  const topHead = (): number | null => {
    const heads = endpoints.filter((e) => e.head !== null && available(e)).map((e) => e.head as number);
    const all = heads.length > 0 ? heads : endpoints.filter((e) => e.head !== null).map((e) => e.head as number);
    return all.length > 0 ? Math.max(...all) : null;
  };
  /**
   * The endpoints not in `tried`, best first: available before cooling down (those by the end of
   * their cooldown); for a read of block `atLeast`, those whose head has it before those of unknown
   * head before those below it; not behind (head ≥ top − maxLag) before behind; then configured order.
   */
  const ranked = (tried: Set<Endpoint>, atLeast?: number): Endpoint[] => {
    const top = topHead();
    const key = (e: Endpoint): number[] => {
      const cooling = available(e) ? 0 : 1;
      const has = atLeast === undefined ? 0 : e.head === null ? 1 : e.head >= atLeast ? 0 : 2;
      const behind = e.head !== null && top !== null && e.head < top - maxLag ? 1 : 0;
      return [cooling, has, behind, cooling ? e.coolUntilMs : e.index];
    };
    const keys = new Map(endpoints.map((e) => [e, key(e)]));
    const cmp = (a: Endpoint, b: Endpoint) => {
      const ka = keys.get(a) as number[];
      const kb = keys.get(b) as number[];
      for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return (ka[i] as number) - (kb[i] as number);
      return 0;
    };
    return endpoints.filter((e) => !tried.has(e)).sort(cmp);
  };

  /** Why a failed call moves to another endpoint; undefined: it does not (the node answered; e.g. method not found). */
  const failoverReason = (err: unknown, blockRead: boolean): string | undefined => {
    const transport = transportErrorOf(err);
    if (transport) return transport.kind;
    if (err instanceof InconsistentAnswerError) return "inconsistent";
    // A block read answered with a JSON-RPC error (e.g. "header not found" from a lagging backend).
    if (blockRead && err instanceof RetryableError && rpcErrorCode(err) !== METHOD_NOT_FOUND) return "rpc_error";
    return undefined;
  };

  /** One endpoint's outcome of a call. */
  type Outcome<T> = { ep: Endpoint; ok: true; value: T } | { ep: Endpoint; ok: false; err: unknown };

  /**
   * Runs `op` on the best endpoint and fails over along {@link ranked}; each endpoint is tried once
   * per call. With `atLeast` (a read of that block), endpoints whose head has it come first, and
   * (unless `nullFailover` is false) a null answer is asked again of an available endpoint whose
   * head has the block. With `hedge`, an endpoint that has not answered within `hedgeAfterMs` is
   * joined by the next available one (a hanging backend costs that, not the timeout); the first
   * answer wins, the slower one is ignored.
   * @throws the last endpoint's error when every endpoint failed, or the first error that is no reason to fail over.
   */
  async function onEndpoints<T>(
    op: (source: ChainSource) => Promise<T>,
    atLeast?: number,
    o: { nullFailover?: boolean; hedge?: boolean } = {},
  ): Promise<T> {
    const nullFailover = o.nullFailover ?? atLeast !== undefined;
    const hedgeMs = o.hedge ? hedgeAfterMs : 0;
    const tried = new Set<Endpoint>();
    const inflight = new Map<Endpoint, Promise<Outcome<T>>>();
    const start = (ep: Endpoint) => {
      tried.add(ep);
      inflight.set(
        ep,
        op(ep.source).then(
          (value): Outcome<T> => ({ ep, ok: true, value }),
          (err: unknown): Outcome<T> => ({ ep, ok: false, err }),
        ),
      );
    };
    const first = ranked(tried, atLeast)[0];
    if (first) start(first);
    let last: unknown;
    let nullAnswer: { value: T } | undefined;
    while (inflight.size > 0) {
      const spare = hedgeMs > 0 ? ranked(tried, atLeast).find(available) : undefined;
      let timer: NodeJS.Timeout | undefined;
      const racers: Array<Promise<Outcome<T> | "hedge">> = [...inflight.values()];
      if (spare) racers.push(new Promise((resolve) => (timer = setTimeout(() => resolve("hedge"), hedgeMs))));
      const r = await Promise.race(racers);
      clearTimeout(timer);
      if (r === "hedge") {
        metrics?.failovers.inc({ endpoint: [...inflight.keys()].at(-1)?.label ?? "", reason: "slow" });
        start(spare as Endpoint);
        continue;
      }
      inflight.delete(r.ep);
      if (r.ok) {
        if (r.value !== null || !nullFailover) return r.value;
        nullAnswer = { value: r.value };
        if (inflight.size > 0) continue; // another endpoint is still on it
        // By height: only an endpoint whose head covers it may know better. Without one (a read by hash):
        // any other available endpoint.
        const next = ranked(tried, atLeast).find((e) => available(e) && (atLeast === undefined || (e.head !== null && e.head >= atLeast)));
        if (!next) return r.value;
        metrics?.failovers.inc({ endpoint: r.ep.label, reason: "null_block" });
        start(next);
        continue;
      }
      const why = failoverReason(r.err, atLeast !== undefined);
      if (why === undefined) throw r.err;
      if (why === "inconsistent" || why === "rpc_error") failed(r.ep, why);
      last = r.err;
      if (inflight.size > 0) continue;
      const next = ranked(tried, atLeast)[0];
      if (!next) break;
      metrics?.failovers.inc({ endpoint: r.ep.label, reason: why });
      start(next);
    }
    if (nullAnswer) return nullAnswer.value;
    throw last;
  }

  return {
    endpoints: () => health.map((h) => h()),
    async chainId() {
      if (endpoints.length === 1) return onEndpoints((s) => s.chainId());
      // Every endpoint that answers must be on the same chain: one of another chain would feed its blocks.
      const answers = await Promise.allSettled(endpoints.map((ep) => ep.source.chainId()));
      const ids = answers.flatMap((a, i) => (a.status === "fulfilled" ? [{ label: endpoints[i]?.label, id: a.value }] : []));
      if (ids.length === 0) throw (answers[0] as PromiseRejectedResult).reason;
      if (ids.some((x) => x.id !== ids[0]?.id)) {
        throw new Error(`JSON-RPC endpoints of different chains: ${ids.map((x) => `${x.label} chain ${x.id}`).join(", ")}`);
      }
      return ids[0]?.id as number;
    },
    async headNumber() {
      // Every available endpoint (every endpoint when none is: that is the probe after a cooldown)
      // is asked; the first answer is enough, the others update their heads when they come.
      let asked = endpoints.filter(available);
      if (asked.length === 0) asked = endpoints;
      const answers = asked.map((ep) => {
        ep.headPending ??= ep.source
          .headNumber()
          .then((h) => {
            ep.head = h;
            return h;
          })
          .finally(() => {
            ep.headPending = undefined;
          });
        ep.headPending.catch(() => {});
        return ep.headPending;
      });
      try {
        await Promise.any(answers);
      } catch (err) {
        throw (err as AggregateError).errors[0];
      }
      return topHead() as number;
    },
    finalizedNumber: () => onEndpoints(async (s) => (await s.finalizedNumber?.()) ?? null),
    blockHash: (number) => onEndpoints((s) => s.blockHash(number), number, { hedge: true }),
    // By number: ranked and failed over like a block read. By hash: a backend that has not seen the block
    // answers null, so the other endpoints are asked too before null is believed.
    blockHeader: (id) =>
      onEndpoints(async (s) => (await s.blockHeader?.(id)) ?? null, typeof id === "number" ? id : undefined, {
        hedge: true,
        nullFailover: true,
      }),
    fetchBlock: (number) => onEndpoints((s) => s.fetchBlock(number), number, { hedge: true }),
    // null traces mean "no trace method", not "no block": ranked like a block read, no null failover.
    fetchTraces: (number) => onEndpoints((s) => s.fetchTraces(number), number, { nullFailover: false }),
    probeTraces: (number) => onEndpoints(async (s) => (await s.probeTraces?.(number)) ?? "none"),
    destroy() {
      for (const [i, ep] of endpoints.entries()) {
        ep.source.destroy();
        if (metrics?.endpoints.get(ep.label) === health[i]) metrics?.endpoints.delete(ep.label);
      }
    },
  };
}
