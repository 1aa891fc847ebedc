/**
 * Flattening of geth `callTracer` output into one record per call frame, and decoding of each
 * frame's input against the built-in ABI set (`methods.ts`). Pure; shared by the match stage
 * (Trace and Call entities) and the index stage (`call` documents).
 *
 * | shape | entityId |
 * |---|---|
 * | {@link TraceEntity}: one callTracer frame | `<txHash>_t` + `_<i>` per traceAddress step |
 * | {@link CallEntity}: a frame whose input decodes against `methods.ts` | `<txHash>_c` + `_<i>` per traceAddress step |
 * @module
 */
import type { Quantity, TransactionRecord } from "../records.js";
import { type DecodeMethodOptions, decodeMethod, type MethodArg } from "./methods.js";
import { checksum, MalformedRpcDataError, optionalHexString, optionalQuantity } from "./rpc-values.js";

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

/**
 * One flattened callTracer frame; also the entity of the `Trace` target type (hence `entityId`).
 */
export interface TraceEntity {
  /** `<txHash>_t`, plus `_<i>` per {@link TraceEntity.traceAddress} step: unique per chain. */
  entityId: string;
  /** Hash of the block of the transaction, lower-case hex. */
  blockHash: string;
  /** Number of that block. */
  blockNumber: Quantity;
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

/**
 * A call frame whose input decodes against the built-in ABI set (`methods.ts`): the frame plus the
 * decoded call; also the entity of the `Call` target type.
 */
export interface CallEntity extends TraceEntity {
  name: string;
  signature: string;
  /** Four-byte selector (never null for a Call). */
  methodId: string;
  standard: string;
  args: MethodArg[];
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
      input = optionalHexString(c.input, "input") ?? "0x";
      entity = {
        entityId: traceEntityId("t", ctx.transactionHash, addr),
        type: c.type.toUpperCase(),
        from: checksum(c.from, "from"),
        to: c.to === undefined || c.to === null || c.to === "" ? null : checksum(c.to, "to"),
        value: optionalQuantity(c.value, "value"),
        input,
        methodId: input.length >= 10 ? input.slice(0, 10) : null,
        output: optionalHexString(c.output, "output"),
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
export function callEntity(trace: TraceEntity, options: DecodeMethodOptions): CallEntity | null {
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
