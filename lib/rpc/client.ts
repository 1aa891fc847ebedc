/**
 * chainsift's one JSON-RPC client: every JSON-RPC request of the code base goes through
 * {@link createRpcClient} (ingest's chain source, token metadata, proxy slots, `chainsift status`,
 * the dev chain helpers; a unit test, test/unit/lib/rpc/one-client.test.ts, fails on a hand-written
 * one). Over one endpoint or several of the same chain (docs/reorgs.md "The transport and
 * failover"): each HTTP request retried in place by the transport (./transport.ts) while no other
 * endpoint is available; each call sent to the first available endpoint that is not behind and
 * failed over to the next on a transport error; endpoints cooled down after errors, their health in
 * the `chainsift_rpc_endpoint_*` metrics.
 * @module
 */
import type { Counter, Gauge, Histogram } from "prom-client";
import { RetryableError } from "../errors.js";
import type { Logger } from "../logger.js";
import {
  METHOD_NOT_FOUND,
  redactRpcUrl,
  rpcErrorCode,
  type TransportHooks,
  type TransportPolicy,
  transportErrorOf,
  UndiciJsonRpcProvider,
} from "./transport.js";

const COOLDOWN_MAX_MS = 60_000;

/** One JSON-RPC endpoint as the endpoint gauges show it. */
export interface EndpointHealth {
  /** The endpoint's URL without credentials (userinfo, query string and token-like path segments replaced: `redactRpcUrl`). */
  endpoint: string;
  /** Whether its last request succeeded and it is not cooling down after an error. */
  up: boolean;
  /** Its last `eth_blockNumber` answer, null before the first. */
  head: number | null;
}

/**
 * The metric families a client reports to (created by pipeline/ingest/metrics.ts `ingestMetricsOf`;
 * names in docs/metrics.md).
 */
export interface RpcMetrics {
  /** The endpoints whose health `chainsift_rpc_endpoint_up` / `chainsift_rpc_endpoint_head_block` show, by label (a destroyed client removes its own). */
  endpoints: Map<string, () => EndpointHealth>;
  /** `chainsift_rpc_endpoint_errors_total{endpoint,kind}`. */
  endpointErrors: Counter<"endpoint" | "kind">;
  /** `chainsift_rpc_failovers_total{endpoint,reason}`. */
  failovers: Counter<"endpoint" | "reason">;
  /** `chainsift_ingest_rpc_requests_total{method,outcome}` (ok, error, unsupported). */
  rpcRequests: Counter<"method" | "outcome">;
  /** `chainsift_ingest_rpc_duration_seconds{method}`. */
  rpcSeconds: Histogram<"method">;
  /** `chainsift_rpc_requests_in_flight`: HTTP requests sent and not yet answered or given up (every copy of a re-sent one). */
  inFlight?: Gauge;
  /** `chainsift_rpc_timeouts_total{kind}`: tries without an answer within the timeout, by call kind (transport.ts `callKind`). */
  timeouts?: Counter<"kind">;
  /** `chainsift_rpc_resends_total{kind}`: requests of a lone endpoint re-sent after the adaptive hedge delay, by call kind. */
  resends?: Counter<"kind">;
}

/** Options of {@link createRpcClient}. */
export interface RpcClientOptions {
  /**
   * The chain's JSON-RPC endpoints (http/https; userinfo is sent as HTTP Basic authentication), in
   * order of preference; at least one.
   */
  urls: readonly string[];
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
   * With several endpoints, a call routed with `hedge` (ingest's block reads) that has no answer
   * after this many ms is also sent to the next available endpoint; the first answer wins. With one
   * endpoint, an HTTP request of block reads only (transport.ts `HEDGED_METHODS`) without an answer
   * after this many ms is sent once more to the same URL (a load balancer routes it to another
   * backend, so one hanging backend costs this, not `timeoutMs`), again every such delay up to
   * `HEDGED_COPIES` copies (a request with a trace or an `eth_call`, transport.ts
   * `SECOND_CHANCE_METHODS`: `SECOND_CHANCE_COPIES`, 3); the first answer wins and the others are aborted. There the delay
   * adapts: 4 × the 90th percentile of the endpoint's recent answer times for the same kind of
   * request, at least `HEDGE_FLOOR_MS`, at most this (`hedgeDelayMs`). 0: never. Default 2000.
   */
  hedgeAfterMs?: number;
  /** Largest JSON-RPC batch ethers gathers {@link RpcClient.request}s into. Default 50. */
  batchMaxCount?: number;
  /** How long ethers gathers calls into one batch, ms. Default 2 (ethers' own default is 10). */
  batchStallTimeMs?: number;
  /** Where requests, errors, failovers and endpoint health are counted. Default: not measured. */
  metrics?: RpcMetrics;
  /** Receives endpoint state changes: down (warn), back up (info). Default: silent. */
  logger?: Logger;
}

/** One call of a {@link RpcClient.batch}. */
export interface RpcCall {
  method: string;
  params: unknown[];
}

/** A JSON-RPC error object as the node sent it (https://www.jsonrpc.org/specification#error_object). */
export interface RpcErrorObject {
  /** e.g. -32601 (method not found), 3 (execution reverted, geth); absent when the batch had no answer for the call. */
  code?: number;
  message: string;
  data?: unknown;
}

/** One call's answer in a {@link RpcClient.batch}: its result, or its error. */
export type RpcReply = { result: unknown; error?: undefined } | { error: RpcErrorObject };

/** One endpoint of a client, as {@link RpcClient.route}'s operations see it. */
export interface RpcEndpoint {
  /** Position in the configured list. */
  readonly index: number;
  /** {@link redactRpcUrl} of its URL, unique within the client (`#2`… appended to repeats). */
  readonly label: string;
  /**
   * One call on this endpoint (gathered with concurrent ones into one batch), counted in
   * `rpcRequests`/`rpcSeconds`.
   * @throws {RpcAnswerError} for a JSON-RPC error answer; the transport's `RpcTransportError` when no try got an answer.
   */
  send<T>(method: string, params: unknown[]): Promise<T>;
  /**
   * The calls as one HTTP request (one JSON-RPC batch) on this endpoint.
   * @returns one reply per call, in call order.
   * @throws the transport's `RpcTransportError` when no try got a JSON answer.
   */
  post(calls: readonly RpcCall[]): Promise<RpcReply[]>;
}

/** How {@link RpcClient.route} picks and changes endpoints for one operation. */
export interface RouteOptions {
  /**
   * The operation reads block `atLeast`: endpoints whose head has it come first, a JSON-RPC error
   * answer (but "method not found") fails over (`rpc_error`), and a null answer is asked again of an
   * available endpoint whose head has it (unless `nullFailover` is false).
   */
  atLeast?: number;
  /** Whether a null answer is asked again of another endpoint. Default: when `atLeast` is set. */
  nullFailover?: boolean;
  /** Whether an endpoint without an answer after `hedgeAfterMs` is joined by the next available one. Default false. */
  hedge?: boolean;
}

/** A JSON-RPC client over one or more endpoints of one chain (see the module notes). */
export interface RpcClient {
  /**
   * One call with failover.
   * @returns its `result`.
   * @throws {RpcAnswerError} (a `RetryableError`) for a JSON-RPC error answer;
   *   {@link RetryableError} `<method> failed: …` when every endpoint failed without an answer.
   */
  request<T = unknown>(method: string, params?: unknown[], opts?: RouteOptions): Promise<T>;
  /**
   * The calls as one HTTP request (one JSON-RPC batch) with failover of the whole request: a
   * per-call error is a reply, not a failure.
   * @returns one reply per call, in call order (a call the node did not answer: an error without code).
   * @throws {RetryableError} when every endpoint failed without an answer.
   */
  batch(calls: readonly RpcCall[], opts?: RouteOptions): Promise<RpcReply[]>;
  /**
   * Runs an operation of several calls on the best endpoint and fails it over along the ranking
   * (each endpoint at most once): on a transport error, a {@link BadAnswerError}, and per
   * {@link RouteOptions}. Each move counts in `chainsift_rpc_failovers_total` on the endpoint left.
   * @throws the last endpoint's error when every endpoint failed, or the first error that is no reason to fail over.
   */
  route<T>(op: (endpoint: RpcEndpoint) => Promise<T>, opts?: RouteOptions): Promise<T>;
  /**
   * The chain's head: `eth_blockNumber` of every available endpoint at once (of all when none is:
   * the probe after a cooldown); the first answer ends the wait, later ones update their endpoint.
   * @returns the highest head of the available endpoints.
   * @throws {RetryableError} when none answered.
   */
  headNumber(): Promise<number>;
  /**
   * `eth_chainId` (EIP-155); with several endpoints every one is asked.
   * @throws {Error} (not retryable) when two endpoints answer different chains; the first error when none answered.
   */
  chainId(): Promise<number>;
  /** Each endpoint's health now, in configured order. */
  endpoints(): EndpointHealth[];
  /** Releases the connections and removes the endpoints from the health gauges. */
  destroy(): void;
}

/**
 * An endpoint's answer not to be believed (e.g. ingest's inconsistent block answer): the
 * operation fails over and the endpoint counts an error of kind {@link BadAnswerError.kind}.
 */
export class BadAnswerError extends RetryableError {
  constructor(
    /** The `kind` label of `chainsift_rpc_endpoint_errors_total`, e.g. `inconsistent`. */
    readonly kind: string,
    message: string,
  ) {
    super(message);
    this.name = "BadAnswerError";
  }
}

/** What the client knows of one endpoint. */
interface Endpoint extends RpcEndpoint {
  provider: UndiciJsonRpcProvider;
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

/** A transport failure as a {@link RetryableError} naming the method (JSON-RPC answers and other errors as they are). */
function retryable(method: string, err: unknown): unknown {
  if (err instanceof RetryableError || !transportErrorOf(err)) return err;
  return new RetryableError(`${method} failed: ${(err as Error).message}`, { cause: err });
}

/**
 * Creates the JSON-RPC client of one chain (see the module notes and docs/reorgs.md "The transport
 * and failover").
 * @throws {Error} when `urls` is empty; {@link TypeError} when a URL is not one.
 */
export function createRpcClient(opts: RpcClientOptions): RpcClient {
  const urls = opts.urls;
  if (urls.length === 0) throw new Error("createRpcClient: no JSON-RPC endpoint");
  const metrics = opts.metrics;
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
    const ep = { index, label, head: null, up: true, errors: 0, coolUntilMs: 0, retryAfterUntilMs: 0 } as unknown as Endpoint;
    const hooks: TransportHooks = {
      failed: (err) => failed(ep, err.kind, err.retryAfterMs),
      ok: () => ok(ep),
      retryHere: () => endpoints.every((o) => o === ep || !available(o)),
      notBeforeMs: () => ep.retryAfterUntilMs,
      hedged: (kind) => {
        metrics?.failovers.inc({ endpoint: label, reason: "slow" });
        metrics?.resends?.inc({ kind });
      },
      timedOut: (kind) => metrics?.timeouts?.inc({ kind }),
      inFlight: (delta) => metrics?.inFlight?.inc(delta),
      counted: (err) => metrics?.endpointErrors.inc({ endpoint: label, kind: err.kind }),
    };
    const policy: TransportPolicy = {
      label,
      timeoutMs: opts.timeoutMs ?? 10_000,
      attempts: opts.attempts ?? 4,
      retryBudgetMs: opts.retryBudgetMs ?? 30_000,
      retryAfterMaxMs: opts.retryAfterMaxMs ?? 30_000,
      // Several endpoints hedge across endpoints (route); a lone one re-sends to itself.
      hedgeAfterMs: urls.length === 1 ? hedgeAfterMs : 0,
    };
    const provider = new UndiciJsonRpcProvider(url, policy, hooks, {
      batchMaxCount: opts.batchMaxCount ?? 50,
      batchStallTime: opts.batchStallTimeMs ?? 2,
    });
    ep.provider = provider;
    ep.send = async <T>(method: string, params: unknown[]): Promise<T> => {
      const endTimer = metrics?.rpcSeconds.startTimer({ method });
      let outcome = "ok";
      try {
        return (await provider.send(method, params)) as T;
      } catch (err) {
        outcome = rpcErrorCode(err) === METHOD_NOT_FOUND ? "unsupported" : "error";
        throw err;
      } finally {
        endTimer?.();
        metrics?.rpcRequests.inc({ method, outcome });
      }
    };
    ep.post = (calls) => postBatch(provider, calls, metrics);
    return ep;
  });
  const health = endpoints.map((ep) => () => ({ endpoint: ep.label, up: ep.up && available(ep), head: ep.head }));
  for (const [i, ep] of endpoints.entries()) metrics?.endpoints.set(ep.label, health[i] as () => EndpointHealth);

  const topHead = () => topHeadOf(endpoints, available);
  const ranked = (tried: Set<Endpoint>, atLeast?: number) => rankEndpoints(endpoints, { tried, atLeast, available, maxLag });

  /** Why a failed operation moves to another endpoint; undefined: it does not (the node answered; e.g. method not found). */
  const failoverReason = (err: unknown, blockRead: boolean): string | undefined => {
    const transport = transportErrorOf(err);
    if (transport) return transport.kind;
    if (err instanceof BadAnswerError) return err.kind;
    // A block read answered with a JSON-RPC error (e.g. "header not found" from a lagging backend).
    if (blockRead && err instanceof RetryableError && rpcErrorCode(err) !== METHOD_NOT_FOUND) return "rpc_error";
    return undefined;
  };

  /** One endpoint's outcome of an operation. */
  type Outcome<T> = { ep: Endpoint; ok: true; value: T } | { ep: Endpoint; ok: false; err: unknown };

  async function route<T>(op: (endpoint: RpcEndpoint) => Promise<T>, o: RouteOptions = {}): Promise<T> {
    const atLeast = o.atLeast;
    const nullFailover = o.nullFailover ?? atLeast !== undefined;
    const hedgeMs = o.hedge ? hedgeAfterMs : 0;
    const tried = new Set<Endpoint>();
    const inflight = new Map<Endpoint, Promise<Outcome<T>>>();
    const start = (ep: Endpoint) => {
      tried.add(ep);
      inflight.set(
        ep,
        op(ep).then(
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
      if (!transportErrorOf(r.err)) failed(r.ep, why); // transport errors were counted by the transport
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

  async function headNumber(): Promise<number> {
    let asked = endpoints.filter(available);
    if (asked.length === 0) asked = endpoints;
    const answers = asked.map((ep) => {
      ep.headPending ??= ep
        .send<string>("eth_blockNumber", [])
        .then((h) => {
          ep.head = Number(h);
          return ep.head;
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
      throw retryable("eth_blockNumber", (err as AggregateError).errors[0]);
    }
    return topHead() as number;
  }

  return {
    request: <T>(method: string, params: unknown[] = [], o?: RouteOptions) =>
      route((ep) => ep.send<T>(method, params), o).catch((err: unknown) => {
        throw retryable(method, err);
      }),
    batch: (calls, o) =>
      route((ep) => ep.post(calls), o).catch((err: unknown) => {
        throw retryable(`batch of ${calls.length} calls (${calls[0]?.method ?? "none"}…)`, err);
      }),
    route,
    headNumber,
    async chainId() {
      const ask = (ep: RpcEndpoint) => ep.send<string>("eth_chainId", []).then(Number);
      if (endpoints.length === 1) return route(ask).catch((err: unknown) => Promise.reject(retryable("eth_chainId", err)));
      // Every endpoint that answers must be on the same chain: one of another chain would feed its blocks.
      const answers = await Promise.allSettled(endpoints.map(ask));
      const ids = answers.flatMap((a, i) => (a.status === "fulfilled" ? [{ label: endpoints[i]?.label, id: a.value }] : []));
      if (ids.length === 0) throw retryable("eth_chainId", (answers[0] as PromiseRejectedResult).reason);
      if (ids.some((x) => x.id !== ids[0]?.id)) {
        throw new Error(`JSON-RPC endpoints of different chains: ${ids.map((x) => `${x.label} chain ${x.id}`).join(", ")}`);
      }
      return ids[0]?.id as number;
    },
    endpoints: () => health.map((h) => h()),
    destroy() {
      for (const [i, ep] of endpoints.entries()) {
        ep.provider.destroy();
        if (metrics?.endpoints.get(ep.label) === health[i]) metrics?.endpoints.delete(ep.label);
      }
    },
  };
}

/**
 * The highest known head of the available endpoints (of all when none is available).
 * @returns a block number, or null while no endpoint's head is known.
 */
function topHeadOf(endpoints: readonly Endpoint[], available: (ep: Endpoint) => boolean): number | null {
  const heads = endpoints.filter((e) => e.head !== null && available(e)).map((e) => e.head as number);
  const all = heads.length > 0 ? heads : endpoints.filter((e) => e.head !== null).map((e) => e.head as number);
  return all.length > 0 ? Math.max(...all) : null;
}

/**
 * The endpoints not in `tried`, best first: available before cooling down (those by the end of
 * their cooldown); for a read of block `atLeast`, those whose head has it before those of unknown
 * head before those below it; not behind (head ≥ top − `maxLag`, {@link topHeadOf}) before behind;
 * then configured order.
 * @param endpoints - every endpoint of the client, in configured order.
 * @param o - `tried` (left out), `atLeast` (the block a read needs, if any), `available` (not
 *   cooling down), `maxLag` (blocks an endpoint may trail the top head and not count as behind).
 */
function rankEndpoints(
  endpoints: readonly Endpoint[],
  o: { tried: ReadonlySet<Endpoint>; atLeast: number | undefined; available: (ep: Endpoint) => boolean; maxLag: number },
): Endpoint[] {
  const { atLeast, available, maxLag } = o;
  const top = topHeadOf(endpoints, available);
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
  return endpoints.filter((e) => !o.tried.has(e)).sort(cmp);
}

/**
 * One endpoint's JSON-RPC batch (an endpoint's {@link RpcEndpoint.post}): the calls in one POST, each
 * answer matched to its call by id, and each call counted in `metrics` (`rpcSeconds` with the whole
 * batch's duration, `rpcRequests` with outcome `ok`, `unsupported` for method-not-found, or `error`).
 * @param provider - the endpoint's transport.
 * @param calls - the calls, in order; their index is their JSON-RPC id.
 * @param metrics - where the calls are counted; none when absent.
 * @returns one reply per call, in order: its result, or its error (the whole request's error object
 *   when the node refused the batch as a whole, or "no answer for the call in the batch").
 * @throws what the transport throws (every call counted as `error`).
 */
async function postBatch(provider: UndiciJsonRpcProvider, calls: readonly RpcCall[], metrics: RpcMetrics | undefined): Promise<RpcReply[]> {
  const started = performance.now();
  const payload = calls.map((c, id) => ({ jsonrpc: "2.0" as const, id, method: c.method, params: c.params }));
  const count = (outcome: (i: number) => string) => {
    const seconds = (performance.now() - started) / 1000;
    calls.forEach((c, i) => {
      metrics?.rpcSeconds.observe({ method: c.method }, seconds);
      metrics?.rpcRequests.inc({ method: c.method, outcome: outcome(i) });
    });
  };
  let answers: Array<{ id?: unknown; result?: unknown; error?: RpcErrorObject }>;
  try {
    answers = (await provider._send(payload)) as typeof answers;
  } catch (err) {
    count(() => "error");
    throw err;
  }
  const byId = new Map(answers.map((a) => [a?.id, a]));
  // A node that refuses the whole request (e.g. batches) answers one error object without the calls' ids.
  const whole = answers.find((a) => a?.error && (a.id === null || a.id === undefined))?.error;
  const replies = calls.map((_, id): RpcReply => {
    const a = byId.get(id);
    if (a?.error) return { error: a.error };
    if (a && "result" in a) return { result: a.result };
    return { error: whole ?? { message: "no answer for the call in the batch" } };
  });
  count((i) => {
    const e = replies[i]?.error;
    return e === undefined ? "ok" : e.code === METHOD_NOT_FOUND ? "unsupported" : "error";
  });
  return replies;
}

/**
 * Where a reader sends its calls: a client (e.g. the chain context's: its failover and endpoint
 * health shared), or the chain's endpoint URLs (one or several, in order of preference) for a client
 * made for the reader.
 */
export type RpcTarget = RpcClient | string | readonly string[];

/** Whether a target is a client rather than URLs. */
function isClient(target: RpcTarget): target is RpcClient {
  return typeof target === "object" && !Array.isArray(target) && typeof (target as RpcClient).request === "function";
}

/**
 * The client of a target: the client itself, or a new one over the URLs with `settings`.
 * @returns the client and whether the caller owns it (must destroy it).
 * @throws {Error} when the URLs are empty.
 */
export function rpcClientOf(target: RpcTarget, settings: Omit<RpcClientOptions, "urls"> = {}): { client: RpcClient; owned: boolean } {
  if (isClient(target)) return { client: target, owned: false };
  return { client: createRpcClient({ ...settings, urls: typeof target === "string" ? [target] : target }), owned: true };
}

/**
 * Runs `fn` with the client of a target ({@link rpcClientOf}); a client made for it is destroyed after.
 * @returns what `fn` returns; its errors as they are.
 */
export async function withRpcClient<T>(
  target: RpcTarget,
  settings: Omit<RpcClientOptions, "urls">,
  fn: (client: RpcClient) => Promise<T>,
): Promise<T> {
  const { client, owned } = rpcClientOf(target, settings);
  try {
    return await fn(client);
  } finally {
    if (owned) client.destroy();
  }
}
