/**
 * The HTTP transport of chainsift's one JSON-RPC client (./client.ts): one ethers 6
 * `JsonRpcProvider` per endpoint (calls batched) over Node's fetch (undici), each HTTP request
 * retried in place after 429 (`Retry-After`), 5xx, resets, timeouts and bodies that are not JSON,
 * and, on a lone endpoint, a hanging request of block reads re-sent (docs/reorgs.md "The transport
 * and failover"). What to do between endpoints is the client's: the transport reports to it through
 * {@link TransportHooks}.
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  type JsonRpcApiProviderOptions,
  type JsonRpcError,
  type JsonRpcPayload,
  JsonRpcProvider,
  type JsonRpcResult,
  Network,
} from "ethers";
import { ChainsiftError, RetryableError } from "../errors.js";

/** JSON-RPC error code "method not found" (https://www.jsonrpc.org/specification#error_object). */
export const METHOD_NOT_FOUND = -32601;
/** What ethers is told the network is: a static one, so it never detects it (its detection retries for ever, every second, on a dead endpoint). */
const STATIC_NETWORK = new Network("chainsift-rpc", 0n);

/** How a request to an endpoint failed without a JSON-RPC answer. */
export type TransportErrorKind = "http_429" | "http_5xx" | "http_other" | "timeout" | "connection" | "malformed";

/** A request to a JSON-RPC endpoint that got no JSON-RPC answer (thrown by the transport, the cause of a {@link RetryableError}). */
export class RpcTransportError extends ChainsiftError {
  /** Always `CS_RPC_TRANSPORT` (what went wrong is {@link RpcTransportError.kind}). */
  readonly code = "CS_RPC_TRANSPORT";
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

/**
 * A JSON-RPC error answer (https://www.jsonrpc.org/specification#error_object): the node answered,
 * so it is not retried in place, nor failed over except for a block read (docs/reorgs.md "The
 * transport and failover"). A {@link RetryableError} (a stage retries it later: "header not found",
 * "missing trie node" pass). Message `<method>: <the node's message>`.
 */
export class RpcAnswerError extends RetryableError<number | undefined> {
  constructor(
    /** The method called, e.g. `eth_call`. */
    readonly method: string,
    /** The error's `code`, e.g. -32601 (method not found), 3 (execution reverted, geth). */
    override readonly code: number | undefined,
    /** The node's message. */
    readonly rpcMessage: string,
    /** The error's `data`, when present (e.g. revert data). */
    readonly data?: unknown,
  ) {
    super(`${method}: ${rpcMessage}`);
    this.name = "RpcAnswerError";
  }
}

/**
 * The JSON-RPC error code of an error or of any error in its `cause` chain ({@link RpcAnswerError},
 * or an ethers error carrying the node's error object), undefined when none has one.
 */
export function rpcErrorCode(err: unknown): number | undefined {
  if (err instanceof RpcAnswerError) return err.code;
  const e = err as { error?: { code?: number }; info?: { error?: { code?: number } }; cause?: unknown };
  return e?.error?.code ?? e?.info?.error?.code ?? (e?.cause !== undefined ? rpcErrorCode(e.cause) : undefined);
}

/** The {@link RpcTransportError} of an error or of its `cause` chain, undefined when none is one. */
export function transportErrorOf(err: unknown): RpcTransportError | undefined {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof RpcTransportError) return e;
  return undefined;
}

/** What the transport of one endpoint reports to, and asks of, the failover logic (./client.ts). */
export interface TransportHooks {
  /** A request of call kind `kind` ({@link callKind}) was sent again because the first had no answer within the hedge delay (one endpoint only). */
  hedged(kind: CallKind): void;
  /** A try of a request of call kind `kind` had no answer within `timeoutMs`. Optional. */
  timedOut?(kind: CallKind): void;
  /** HTTP requests of this endpoint in flight changed by `delta` (+1 sent, -1 answered or given up). Optional. */
  inFlight?(delta: number): void;
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

/** The transport's retry settings (the same fields of `RpcClientOptions`, ./client.ts, say what they mean). */
export interface TransportPolicy {
  /** The endpoint's label in messages (`redactRpcUrl`). */
  label: string;
  /** Per-HTTP-request timeout, ms. */
  timeoutMs: number;
  /** Tries of one HTTP request, the first included. */
  attempts: number;
  /** Longest time one HTTP request spends on its tries, waits included, ms. */
  retryBudgetMs: number;
  /** Longest `Retry-After` wait honoured, ms. */
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
 * block reads): up to {@link HEDGED_COPIES} copies.
 */
export const HEDGED_METHODS: ReadonlySet<string> = new Set([
  "eth_blockNumber",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_getBlockReceipts",
  "eth_getTransactionReceipt",
]);

/**
 * The JSON-RPC methods that get fewer re-sends (read-only but costlier for the node: call traces and
 * `eth_call`s): a lone endpoint's request containing one is re-sent after the adaptive delay of its
 * kind, and once more after another delay without an answer ({@link SECOND_CHANCE_COPIES} copies in
 * flight at most), instead of waiting out `timeoutMs`. A request mixing them with
 * {@link HEDGED_METHODS} (ingest batches a block's traces with its block and receipts) is one of them.
 */
export const SECOND_CHANCE_METHODS: ReadonlySet<string> = new Set(["debug_traceBlockByNumber", "trace_block", "eth_call"]);

/**
 * Copies in flight at most of a request with a {@link SECOND_CHANCE_METHODS} call: the first and two
 * re-sends, one per hedge delay. With one re-send only, a 1 s chain behind one endpoint with 20 %
 * mixed faults lost ~10 s (12 blocks, its p99 lag) whenever the first copy and its re-send both hung
 * (`npm run bench -- follow --faults mixed:0.2`, docs/benchmarks.md#follow); the third copy goes out
 * only after two delays without an answer, so a healthy node never sees it.
 */
export const SECOND_CHANCE_COPIES = 3;

/** The call kinds the per-kind metrics are labelled with (`chainsift_rpc_resends_total{kind}`, `chainsift_rpc_timeouts_total{kind}`). */
export type CallKind = "head" | "block" | "traces" | "call" | "other";

/**
 * The call kind of one HTTP request (pure), from its methods: `traces` when it has a trace call,
 * else `call` with an `eth_call`, else `block` with a block, header or receipt read, else `head`
 * when it is `eth_blockNumber` only, else `other` (e.g. `eth_chainId`).
 */
export function callKind(methods: readonly string[]): CallKind {
  if (methods.some((m) => m === "debug_traceBlockByNumber" || m === "trace_block")) return "traces";
  if (methods.includes("eth_call")) return "call";
  if (methods.some((m) => HEDGED_METHODS.has(m) && m !== "eth_blockNumber")) return "block";
  if (methods.length > 0 && methods.every((m) => m === "eth_blockNumber")) return "head";
  return "other";
}

/**
 * How many copies of a lone endpoint's request may be in flight (pure): {@link HEDGED_COPIES} for
 * block reads only, {@link SECOND_CHANCE_COPIES} when a trace or `eth_call` is among them, 1 (never
 * re-sent) when any other method is.
 */
export function hedgeCopies(methods: readonly string[]): number {
  if (methods.length === 0 || !methods.every((m) => HEDGED_METHODS.has(m) || SECOND_CHANCE_METHODS.has(m))) return 1;
  return methods.some((m) => SECOND_CHANCE_METHODS.has(m)) ? SECOND_CHANCE_COPIES : HEDGED_COPIES;
}

/**
 * ethers' JSON-RPC provider (batching, error mapping) over Node's fetch (undici) instead of
 * ethers' own HTTP layer, whose JavaScript UTF-8 decoding of multi-megabyte block and receipt
 * responses made fetching ~8x slower (measured: 75 mainnet blocks with receipts in 1.9 s through
 * ethers' FetchRequest, 0.2 s through fetch). `_send` is the override point ethers documents for
 * custom transports; it sees every HTTP request (one call or a whole batch), so it is where HTTP
 * statuses, `Retry-After` and unparsable bodies are handled: a failed request is sent again whole
 * (no call of a batch is lost), or fails every call of it (ethers rejects each with the error).
 */
export class UndiciJsonRpcProvider extends JsonRpcProvider {
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

  /**
   * @param url - the endpoint (http/https; userinfo becomes HTTP Basic authentication).
   * @param policy - retry settings.
   * @param hooks - the failover logic's side.
   * @param options - ethers' batching options (`batchMaxCount`, `batchStallTime`).
   * @throws {TypeError} when `url` is not a URL.
   */
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

  /** Every JSON-RPC error answer as an {@link RpcAnswerError} (code, message, data as the node sent them) instead of ethers' mapping. */
  override getRpcError(payload: JsonRpcPayload, error: JsonRpcError): Error {
    const e = error.error ?? {};
    return new RpcAnswerError(
      payload.method,
      typeof e.code === "number" ? e.code : undefined,
      String(e.message ?? JSON.stringify(e)),
      e.data,
    );
  }

  /**
   * Sends one HTTP request (one call or a batch) with the retries of the policy (see the class notes).
   * @returns the answers as the node sent them (any order; a lone object as a one-element array).
   * @throws {RpcTransportError} when no try got a JSON answer.
   */
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
   * {@link #post}, and for a request of block reads, traces and `eth_call`s ({@link hedgeCopies}) with `hedgeAfterMs`
   * set: the same request sent once more every hedge delay without an answer, up to
   * {@link HEDGED_COPIES} ({@link SECOND_CHANCE_COPIES} with a trace or `eth_call`) in flight; a copy
   * that fails while another is still on it is replaced after the next delay (at most twice that
   * many copies in all), so a hanging copy and a failed one do not leave the request to the timeout. The first answer
   * wins and the other request is aborted; a failure before the second request went out is thrown at
   * once (the retry loop above handles it), after it only when both failed.
   */
  #postHedged(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const calls = Array.isArray(payload) ? payload : [payload];
    const methods = calls.map((c) => c.method);
    const callKindOf = callKind(methods);
    const copies = hedgeCopies(methods);
    if (this.#policy.hedgeAfterMs <= 0 || copies <= 1) return this.#post(payload, undefined, callKindOf);
    const kind = [...methods].sort().join(",");
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
        this.#post(payload, abort.signal, callKindOf).then(
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
              // The copies still on it may hang: another copy after the hedge delay, as if this one had never been sent.
              if (!done && timer === undefined && aborts.length < 2 * copies) arm();
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
          timer = undefined;
          if (done) return;
          hedged = true;
          this.#hooks.hedged(callKindOf);
          send();
          if (pending < copies && aborts.length < 2 * copies) arm();
        }, hedgeMs);
      };
      arm();
      send();
    });
  }

  async #post(payload: JsonRpcPayload | JsonRpcPayload[], abort?: AbortSignal, kind?: CallKind): Promise<JsonRpcResult[]> {
    this.#hooks.inFlight?.(1);
    try {
      return await this.#postOnce(payload, abort, kind);
    } finally {
      this.#hooks.inFlight?.(-1);
    }
  }

  async #postOnce(payload: JsonRpcPayload | JsonRpcPayload[], abort?: AbortSignal, kind?: CallKind): Promise<JsonRpcResult[]> {
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
        if (!abort?.aborted) this.#hooks.timedOut?.(kind ?? callKind((Array.isArray(payload) ? payload : [payload]).map((c) => c.method)));
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
