/**
 * Entities the match stage evaluates rules against, one shape per target type, and pure adapters
 * from the pipeline's records (`lib/records.ts`) and from geth callTracer output.
 *
 * Every entity carries `entityId` (stable, unique per chain), `blockHash` and `blockNumber`
 * ({@link Quantity}) for confirmation tracking. Attribute names (what a target definition's `name`
 * may be) are listed per target type in docs/alerting-match.md.
 *
 * | target type | source | entityId |
 * |---|---|---|
 * | Event | {@link EventRecord} | `<txHash>_e_<logIndex>` (the event `_id`) |
 * | Log | {@link LogRecord} | `<txHash>_l_<logIndex>` (the log `_id`) |
 * | Transaction | {@link TransactionRecord} | `<txHash>` |
 * | Method | a transaction whose input decodes against `methods.ts` | `<txHash>_m` |
 * | Contract | receipt `contractAddress`, or a CREATE/CREATE2 trace frame | `<txHash>_contract_<address lower-case>` |
 * | Token | first sight of an ERC-20/721 Transfer of a contract (`tokens.ts`) | `<txHash>_token_<address lower-case>` |
 * | Trace | one callTracer frame | `<txHash>_t` + `_<i>` per traceAddress step |
 * | Call | a callTracer frame whose input decodes against `methods.ts` | `<txHash>_c` + `_<i>` per traceAddress step |
 * @module
 */
import type { EventRecord, LogRecord, Quantity, TransactionRecord } from "../../lib/records.js";
import { eventId, logId } from "../../lib/records.js";
import type { TargetType } from "../../lib/rules/model.js";
import { checksum, MalformedRpcDataError, optionalQuantity } from "../ingest/transform.js";
import { type DecodeMethodOptions, decodeMethod, type MethodArg } from "./methods.js";

/** Fields every entity has. */
export interface EntityBase {
  /** Stable id of the entity (see the module table); with the rule id and block hash it keys a match. */
  entityId: string;
  /** Hash of the block that contains the entity, lower-case hex. */
  blockHash: string;
  /** Number of that block. */
  blockNumber: Quantity;
}

/** Event entity: the decoded event record plus `entityId`. */
export interface EventEntity extends EventRecord, EntityBase {}

/** Log entity: the log record plus `entityId` and its topics split out (`topic0`…`topic3`, null when absent). */
export interface LogEntity extends LogRecord, EntityBase {
  topic0: string | null;
  topic1: string | null;
  topic2: string | null;
  topic3: string | null;
}

/** Transaction entity: the transaction record (with receipt fields) plus `entityId` (= `hash`). */
export interface TransactionEntity extends TransactionRecord, EntityBase {}

/** A decoded function call of a transaction's input (see `methods.ts` for the ABI set). */
export interface MethodEntity extends EntityBase {
  /** Function name, e.g. `transfer`. */
  name: string;
  /** Canonical signature, e.g. `transfer(address,uint256)`. */
  signature: string;
  /** Four-byte selector, lower-case `0x` hex. */
  methodId: string;
  /** Standard or protocol of the function (`erc20`, `erc20|erc721`, `erc721`, `weth`, `uniswap-v2-router`). */
  standard: string;
  /** Decoded arguments, same element shape as event args. */
  args: MethodArg[];
  /** Caller (transaction sender), EIP-55. */
  from: string;
  /** Called contract, EIP-55. */
  to: string;
  /** Same as `to`: the contract the method was called on. */
  address: string;
  /** Wei sent with the call. */
  value: Quantity;
  /** Receipt status of the transaction: 1 success, 0 failure, null when unknown. */
  status: number | null;
  transactionHash: string;
  transactionIndex: Quantity;
  timestamp: string;
}

/** A contract creation. */
export interface ContractEntity extends EntityBase {
  /** Address of the new contract, EIP-55. */
  address: string;
  /** Creator: the transaction sender for a receipt creation, the creating contract for a trace frame; EIP-55. */
  creator: string;
  /** Sender of the transaction, EIP-55. */
  transactionFrom: string;
  /** `receipt` (top-level creation) or `trace` (a CREATE/CREATE2 frame, possibly by a factory). */
  source: "receipt" | "trace";
  /** CREATE, CREATE2, or `CREATE` for a receipt creation. */
  createType: string;
  transactionHash: string;
  transactionIndex: Quantity | null;
  timestamp: string | null;
}

/** A token contract seen for the first time (see `tokens.ts`). */
export interface TokenEntity extends EntityBase {
  /** Token contract, EIP-55. */
  address: string;
  /** `name()`, or null when unknown. */
  name: string | null;
  /** `symbol()`, or null when unknown. */
  symbol: string | null;
  /** `decimals()` (ERC-20), or null when unknown or for ERC-721. */
  decimals: number | null;
  /** `erc20` or `erc721` (from the first Transfer's layout). */
  standard: string;
  /** Transaction of the first Transfer. */
  transactionHash: string;
  /** Log index of the first Transfer. */
  logIndex: Quantity;
  timestamp: string;
}

/**
 * One frame of geth's built-in `callTracer`, as returned by `debug_traceBlock*` /
 * `debug_traceTransaction` with `{tracer: "callTracer"}`
 * (https://geth.ethereum.org/docs/developers/evm-tracing/built-in-tracers#call-tracer).
 * Quantities are hex strings; `value` is absent on STATICCALL (and DELEGATECALL on newer geth).
 */
export interface CallFrame {
  /** CALL, CALLCODE, DELEGATECALL, STATICCALL, CREATE, CREATE2 or SELFDESTRUCT. */
  type: string;
  from: string;
  /** Callee, created contract, or selfdestruct beneficiary; absent for a failed CREATE. */
  to?: string;
  value?: string;
  gas?: string;
  gasUsed?: string;
  input?: string;
  output?: string;
  /** Error message when the frame reverted or failed. */
  error?: string;
  /** Decoded revert reason, when the tracer found one. */
  revertReason?: string;
  /** Sub-calls, in execution order. */
  calls?: CallFrame[];
  [extra: string]: unknown;
}

/** The transaction context of a trace: where the frames happened. */
export interface TraceContext {
  transactionHash: string;
  blockHash: string;
  blockNumber: Quantity;
  transactionIndex?: Quantity | null;
  timestamp?: string | null;
  /** Sender of the transaction (for Contract entities created in the trace); EIP-55 or any case. */
  transactionFrom?: string | null;
}

/** One flattened callTracer frame. */
export interface TraceEntity extends EntityBase {
  /** Frame type, upper case: CALL, DELEGATECALL, STATICCALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT, … */
  type: string;
  /** Caller, EIP-55. */
  from: string;
  /** Callee / created contract / beneficiary, EIP-55; null when absent (failed CREATE). */
  to: string | null;
  /** Wei transferred; null when the tracer omits it (STATICCALL, DELEGATECALL). */
  value: Quantity | null;
  /** Call data (init code for CREATE), lower-case hex; `0x` when empty. */
  input: string;
  /** First four bytes of `input`, or null when shorter. */
  methodId: string | null;
  /** Return data, lower-case hex, or null when absent. */
  output: string | null;
  /** Gas given to the frame; null when absent. */
  gas: Quantity | null;
  gasUsed: Quantity | null;
  /** Error of the frame (e.g. `execution reverted`), or null when it succeeded. */
  error: string | null;
  revertReason: string | null;
  /** Number of ancestors: 0 for the transaction's top-level frame. */
  depth: number;
  /**
   * Position in the call tree, as Parity/OpenEthereum `trace_*` renders it: `[]` for the top-level
   * frame, `[i]` for its i-th sub-call, `[i, j]` for that one's j-th sub-call, …
   */
  traceAddress: number[];
  /** Number of direct sub-calls. */
  subtraces: number;
  transactionHash: string;
  transactionIndex: Quantity | null;
  timestamp: string | null;
}

/** A call frame whose input decodes against the built-in ABI set: the trace plus the decoded call. */
export interface CallEntity extends TraceEntity {
  name: string;
  signature: string;
  /** Four-byte selector (never null for a Call). */
  methodId: string;
  standard: string;
  args: MethodArg[];
}

/** Maps each target type to its entity shape. */
export interface EntityByTargetType {
  Event: EventEntity;
  Log: LogEntity;
  Transaction: TransactionEntity;
  Method: MethodEntity;
  Contract: ContractEntity;
  Token: TokenEntity;
  Trace: TraceEntity;
  Call: CallEntity;
}

/** Any entity. */
export type Entity = EntityByTargetType[TargetType];

/** Event entity of a decoded event record (a shallow copy plus `entityId`). */
export function eventEntity(ev: EventRecord): EventEntity {
  return { ...ev, entityId: eventId(ev) };
}

/** Log entity of a log record (a shallow copy plus `entityId` and `topic0`…`topic3`). */
export function logEntity(log: LogRecord): LogEntity {
  const t = log.topics;
  return { ...log, entityId: logId(log), topic0: t[0] ?? null, topic1: t[1] ?? null, topic2: t[2] ?? null, topic3: t[3] ?? null };
}

/** Transaction entity of a transaction record (a shallow copy plus `entityId` = `hash`). */
export function transactionEntity(tx: TransactionRecord): TransactionEntity {
  return { ...tx, entityId: tx.hash };
}

/**
 * Method entity of a transaction: its input decoded against the built-in ABI set.
 * @returns null for a contract creation (`to` null) or when the input does not decode (unknown
 *   selector, short or malformed arguments). Failed transactions (status 0) do give an entity;
 *   rules filter on `status`.
 */
export function methodEntity(tx: TransactionRecord, options: DecodeMethodOptions = {}): MethodEntity | null {
  if (tx.to === null) return null;
  const m = decodeMethod(tx.input, tx.to, options);
  if (!m) return null;
  return {
    entityId: `${tx.hash}_m`,
    name: m.name,
    signature: m.signature,
    methodId: m.methodId,
    standard: m.standard,
    args: m.args,
    from: tx.from,
    to: tx.to,
    address: tx.to,
    value: tx.value,
    status: tx.status,
    transactionHash: tx.hash,
    transactionIndex: tx.transactionIndex,
    blockHash: tx.blockHash,
    blockNumber: tx.blockNumber,
    timestamp: tx.timestamp,
  };
}

/** entityId of a contract creation: `<txHash>_contract_<address lower-case>`, the same whatever the source. */
export function contractEntityId(transactionHash: string, address: string): string {
  return `${transactionHash}_contract_${address.toLowerCase()}`;
}

/**
 * Contract entity of a contract-creation transaction, from its receipt's `contractAddress`.
 * @returns null when the transaction created no contract or failed (status 0).
 */
export function contractEntity(tx: TransactionRecord): ContractEntity | null {
  if (tx.contractAddress === null || tx.status === 0) return null;
  return {
    entityId: contractEntityId(tx.hash, tx.contractAddress),
    address: tx.contractAddress,
    creator: tx.from,
    transactionFrom: tx.from,
    source: "receipt",
    createType: "CREATE",
    transactionHash: tx.hash,
    transactionIndex: tx.transactionIndex,
    blockHash: tx.blockHash,
    blockNumber: tx.blockNumber,
    timestamp: tx.timestamp,
  };
}

/**
 * Contract entities of the successful CREATE/CREATE2 frames of a flattened trace (contracts
 * deployed by factories included). The top-level creation of a creation transaction appears here
 * too, with the same `entityId` as {@link contractEntity} gives, so using both sources never
 * produces two matches of one rule for one contract.
 */
export function contractEntitiesFromTrace(
  frames: readonly TraceEntity[],
  ctx: Pick<TraceContext, "transactionFrom"> = {},
): ContractEntity[] {
  const out: ContractEntity[] = [];
  for (const f of frames) {
    if ((f.type !== "CREATE" && f.type !== "CREATE2") || f.error !== null || f.to === null) continue;
    out.push({
      entityId: contractEntityId(f.transactionHash, f.to),
      address: f.to,
      creator: f.from,
      transactionFrom: ctx.transactionFrom ? checksum(ctx.transactionFrom, "transactionFrom") : (frames[0]?.from ?? f.from),
      source: "trace",
      createType: f.type,
      transactionHash: f.transactionHash,
      transactionIndex: f.transactionIndex,
      blockHash: f.blockHash,
      blockNumber: f.blockNumber,
      timestamp: f.timestamp,
    });
  }
  return out;
}

/** The {@link TraceContext} of a transaction record. */
export function traceContextOf(tx: TransactionRecord): TraceContext {
  return {
    transactionHash: tx.hash,
    blockHash: tx.blockHash,
    blockNumber: tx.blockNumber,
    transactionIndex: tx.transactionIndex,
    timestamp: tx.timestamp,
    transactionFrom: tx.from,
  };
}

function hexOrNull(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string" || !v.startsWith("0x"))
    throw new MalformedRpcDataError(path, `expected 0x-prefixed hex, got ${JSON.stringify(v)}`);
  return v.toLowerCase();
}

function traceEntityId(prefix: string, transactionHash: string, traceAddress: readonly number[]): string {
  return traceAddress.length === 0 ? `${transactionHash}_${prefix}` : `${transactionHash}_${prefix}_${traceAddress.join("_")}`;
}

/**
 * Flattens one transaction's nested callTracer frame into its frames in execution order (pre-order:
 * a frame, then its sub-calls depth-first), each with its `traceAddress`, `depth` and `subtraces`.
 * Iterative, so call depth (at most 1024 in the EVM) cannot overflow the JS stack. Pure.
 *
 * Source format: geth built-in `callTracer`
 * (https://geth.ethereum.org/docs/developers/evm-tracing/built-in-tracers#call-tracer); one
 * element of a `debug_traceBlock*` result (`{txHash, result}` wrappers are unwrapped too).
 * Addresses become EIP-55, hex strings lower case, quantities {@link Quantity}.
 * @throws {MalformedRpcDataError} when a frame is not an object, lacks `type` or `from`, or holds a
 *   malformed address, quantity or hex string.
 */
export function flattenCallTrace(frame: CallFrame | { result: CallFrame }, ctx: TraceContext): TraceEntity[] {
  let root: unknown = frame;
  if (root !== null && typeof root === "object" && !("type" in root) && "result" in root) root = (root as { result: unknown }).result;
  const out: TraceEntity[] = [];
  const stack: { f: unknown; addr: number[] }[] = [{ f: root, addr: [] }];
  const transactionIndex = ctx.transactionIndex ?? null;
  const timestamp = ctx.timestamp ?? null;
  while (stack.length > 0) {
    const { f, addr } = stack.pop() as { f: unknown; addr: number[] };
    // The field path is only built when a frame is malformed (it grows with the depth).
    const at = (field?: string) => `trace${addr.map((i) => `.calls[${i}]`).join("")}${field ? `.${field}` : ""}`;
    if (f === null || typeof f !== "object" || Array.isArray(f)) throw new MalformedRpcDataError(at(), "expected a call frame object");
    const c = f as CallFrame;
    if (typeof c.type !== "string" || c.type === "") throw new MalformedRpcDataError(at("type"), "expected a frame type");
    const calls = c.calls === undefined || c.calls === null ? [] : c.calls;
    if (!Array.isArray(calls)) throw new MalformedRpcDataError(at("calls"), "expected an array");
    let input: string;
    let entity: TraceEntity;
    try {
      input = hexOrNull(c.input, "input") ?? "0x";
      entity = {
        entityId: traceEntityId("t", ctx.transactionHash, addr),
        type: c.type.toUpperCase(),
        from: checksum(c.from, "from"),
        to: c.to === undefined || c.to === null || c.to === "" ? null : checksum(c.to, "to"),
        value: optionalQuantity(c.value, "value"),
        input,
        methodId: input.length >= 10 ? input.slice(0, 10) : null,
        output: hexOrNull(c.output, "output"),
        gas: optionalQuantity(c.gas, "gas"),
        gasUsed: optionalQuantity(c.gasUsed, "gasUsed"),
        error: typeof c.error === "string" ? c.error : null,
        revertReason: typeof c.revertReason === "string" ? c.revertReason : null,
        depth: addr.length,
        traceAddress: addr,
        subtraces: calls.length,
        transactionHash: ctx.transactionHash,
        transactionIndex,
        blockHash: ctx.blockHash,
        blockNumber: ctx.blockNumber,
        timestamp,
      };
    } catch (err) {
      if (err instanceof MalformedRpcDataError) {
        throw new MalformedRpcDataError(at(err.path), err.message.slice(err.path.length + 2));
      }
      throw err;
    }
    out.push(entity);
    for (let i = calls.length - 1; i >= 0; i--) stack.push({ f: calls[i], addr: [...addr, i] });
  }
  return out;
}

/**
 * Call entity of a flattened frame: the frame plus its input decoded against the built-in ABI set.
 * @returns null for CREATE/CREATE2/SELFDESTRUCT frames and inputs that do not decode.
 */
export function callEntity(trace: TraceEntity, options: DecodeMethodOptions = {}): CallEntity | null {
  if (trace.type.startsWith("CREATE") || trace.type === "SELFDESTRUCT") return null;
  // DELEGATECALL runs the callee's code on the caller's storage: the token is the caller.
  const contract = trace.type === "DELEGATECALL" || trace.type === "CALLCODE" ? trace.from : trace.to;
  const m = decodeMethod(trace.input, contract, options);
  if (!m) return null;
  return {
    ...trace,
    entityId: traceEntityId("c", trace.transactionHash, trace.traceAddress),
    name: m.name,
    signature: m.signature,
    methodId: m.methodId,
    standard: m.standard,
    args: m.args,
  };
}
