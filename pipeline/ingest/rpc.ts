/**
 * Reads blocks and receipts from any EVM JSON-RPC node through chainsift's one JSON-RPC client
 * (lib/rpc/client.ts). Methods: `eth_blockNumber`, `eth_getBlockByNumber(n, true)`,
 * `eth_getBlockReceipts(n)` (https://ethereum.github.io/execution-apis/api-documentation/), falling
 * back to one `eth_getTransactionReceipt` per transaction on nodes without `eth_getBlockReceipts`.
 * Over one endpoint or several of the same chain: HTTP requests retried after 429 (`Retry-After`),
 * 5xx, resets, timeouts and unparsable bodies (lib/rpc/transport.ts); block answers checked for
 * consistency before they are returned (here); calls failed over between endpoints by health and
 * head (lib/rpc/client.ts; docs/reorgs.md "Faults").
 * @module
 */
import type { Registry } from "prom-client";
import { parityToCallFrames } from "../../lib/chain/parity-trace.js";
import { RetryableError } from "../../lib/errors.js";
import { BadAnswerError, createRpcClient, type RpcClient, type RpcClientOptions, type RpcEndpoint } from "../../lib/rpc/client.js";
import { METHOD_NOT_FOUND, rpcErrorCode } from "../../lib/rpc/transport.js";
import { type EndpointHealth, type IngestMetrics, ingestMetricsOf } from "./metrics.js";
import type { RawRpcObject } from "./transform.js";

// The transport's and the client's exports, where they were before lib/rpc/ (their importers need not change).
export {
  HEDGE_FLOOR_MS,
  HEDGE_SAMPLES,
  HEDGED_COPIES,
  HEDGED_METHODS,
  hedgeDelayMs,
  RpcTransportError,
  redactRpcUrl,
  retryAfterMs,
  type TransportErrorKind,
} from "../../lib/rpc/transport.js";

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

/** Options of {@link createRpcSource}: the client's settings (lib/rpc/client.ts {@link RpcClientOptions}) and the endpoints. */
export interface RpcSourceOptions extends Omit<RpcClientOptions, "urls" | "metrics"> {
  /** JSON-RPC URL (http/https): the one-endpoint shorthand of {@link RpcSourceOptions.rpcUrls}. */
  rpcUrl?: string;
  /**
   * The chain's JSON-RPC endpoints (http/https), in order of preference; wins over `rpcUrl`. Calls
   * go to the first healthy endpoint that is not behind and fail over to the others (docs/reorgs.md
   * "The transport and failover"). One of `client`, `rpcUrl` and `rpcUrls` is required.
   */
  rpcUrls?: readonly string[];
  /**
   * An existing client of the chain (e.g. the chain context's, shared with token metadata and proxy
   * reads): wins over the URLs and every transport setting; not destroyed by the source's `destroy`.
   */
  client?: RpcClient;
  /**
   * Registry of `chainsift_ingest_rpc_*` and `chainsift_rpc_*` metrics (pipeline/ingest/metrics.ts),
   * e.g. the process's (only when the source makes its own client). Default: not measured.
   */
  registry?: Registry;
}

/** A {@link ChainSource} over one or more JSON-RPC endpoints (the return of {@link createRpcSource}). */
export interface RpcSource extends ChainSource {
  /** Each endpoint's health now, in configured order (labels without credentials). */
  endpoints(): EndpointHealth[];
}

/** A block answer that contradicts itself ({@link blockInconsistency}): retried, never produced. */
export class InconsistentAnswerError extends BadAnswerError {
  constructor(
    /** Which check failed. */
    readonly reason: InconsistencyReason,
    message: string,
  ) {
    super("inconsistent", message);
    this.name = "InconsistentAnswerError";
  }
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
 * The block reads of one endpoint of the client: what it learnt of the node (whether it has
 * `eth_getBlockReceipts`, its trace method) and the calls, each failure but "method not found"
 * wrapped in a {@link RetryableError} `<method> failed: …`.
 */
function endpointSource(
  endpoint: RpcEndpoint,
  metrics: IngestMetrics | undefined,
): Omit<ChainSource, "destroy" | "chainId" | "headNumber"> {
  let blockReceiptsSupported: boolean | undefined;
  /** Which trace method the node answers; undefined until the first attempt (debug first, then parity). */
  let traceSource: TraceSource | undefined;

  const send = async <T>(method: string, params: unknown[]): Promise<T> => {
    try {
      return await endpoint.send<T>(method, params);
    } catch (err) {
      if (rpcErrorCode(err) === METHOD_NOT_FOUND) throw err;
      throw new RetryableError(`${method} failed: ${(err as Error).message}`, { cause: err });
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
  };
}

/**
 * Creates a {@link ChainSource} reading from one JSON-RPC endpoint or several of the same chain,
 * over the one JSON-RPC client (lib/rpc/client.ts; docs/reorgs.md "The transport and failover"):
 * every call goes to the first available endpoint (not cooling down after an error, not behind the
 * highest head, for a block read one whose head has the block) and fails over to the next on a
 * transport error, an inconsistent block answer or a null block another endpoint's head covers. On
 * one endpoint, or when no other is available, an HTTP request is retried in place (429 after its
 * `Retry-After`, 5xx, connection failures, timeouts, bodies that are not JSON) within `attempts` and
 * `retryBudgetMs`. With several endpoints, `chainId()` asks all of them and throws (not retryable)
 * when two answer different chains.
 * @throws {Error} when none of `client`, `rpcUrl` and `rpcUrls` names an endpoint.
 */
export function createRpcSource(opts: RpcSourceOptions): RpcSource {
  const metrics = opts.registry ? ingestMetricsOf(opts.registry) : undefined;
  let client = opts.client;
  const own = client === undefined;
  if (!client) {
    const { rpcUrl, rpcUrls, registry: _, client: __, ...settings } = opts;
    const urls = rpcUrls && rpcUrls.length > 0 ? rpcUrls : rpcUrl ? [rpcUrl] : [];
    if (urls.length === 0) throw new Error("createRpcSource: no JSON-RPC endpoint (rpcUrl or rpcUrls)");
    client = createRpcClient({ ...settings, urls, metrics });
  }
  const rpc = client;
  /** Each endpoint's block reads, made on its first use. */
  const sources = new WeakMap<RpcEndpoint, ReturnType<typeof endpointSource>>();
  const on = (ep: RpcEndpoint) => {
    const known = sources.get(ep);
    if (known) return known;
    const made = endpointSource(ep, metrics);
    sources.set(ep, made);
    return made;
  };
  return {
    endpoints: () => rpc.endpoints(),
    chainId: () => rpc.chainId(),
    headNumber: () => rpc.headNumber(),
    finalizedNumber: () => rpc.route((ep) => on(ep).finalizedNumber?.() ?? Promise.resolve(null)),
    blockHash: (number) => rpc.route((ep) => on(ep).blockHash(number), { atLeast: number, hedge: true }),
    // By number: ranked and failed over like a block read. By hash: a backend that has not seen the block
    // answers null, so the other endpoints are asked too before null is believed.
    blockHeader: (id) =>
      rpc.route(async (ep) => (await on(ep).blockHeader?.(id)) ?? null, {
        atLeast: typeof id === "number" ? id : undefined,
        hedge: true,
        nullFailover: true,
      }),
    fetchBlock: (number) => rpc.route((ep) => on(ep).fetchBlock(number), { atLeast: number, hedge: true }),
    // null traces mean "no trace method", not "no block": ranked like a block read, no null failover.
    fetchTraces: (number) => rpc.route((ep) => on(ep).fetchTraces(number), { atLeast: number, nullFailover: false }),
    probeTraces: (number) => rpc.route(async (ep) => (await on(ep).probeTraces?.(number)) ?? "none"),
    destroy() {
      if (own) rpc.destroy();
    },
  };
}
