/**
 * Parity-style traces (`trace_block`, served by Erigon, Nethermind and reth) converted into the
 * frame tree of geth's `callTracer` (`debug_traceBlockByNumber`), so both sources become the same
 * `call` records (lib/chain/calltrace.ts). Shapes:
 * - parity: https://openethereum.github.io/JSONRPC-trace-module — a flat list per block; each trace
 *   has `type` (`call`, `create`, `suicide`, `reward`), `action`, `result` (or `error`),
 *   `traceAddress` (its path in the call tree), `transactionHash`, `transactionPosition`;
 * - callTracer: https://geth.ethereum.org/docs/developers/evm-tracing/built-in-tracers#call-tracer —
 *   one tree per transaction, frames `{type, from, to, value, gas, gasUsed, input, output, error, calls}`.
 * Block and uncle rewards (no transaction) are dropped. Parity reports the top frame's `gas` and
 * `gasUsed` without the intrinsic gas, where callTracer reports the transaction's; a STATICCALL's
 * `value` (0x0 in parity) is left out, as callTracer does; a frame that failed without output
 * (`result: null`: out of gas, bad opcode; a revert keeps its result) has no `gasUsed`.
 * @module
 */
import { AbiCoder } from "ethers";
import { MalformedRpcDataError } from "./rpc-values.js";

type Raw = Record<string, unknown>;

/** callTracer frame `type` of a parity trace. */
function frameType(trace: Raw, action: Raw): string {
  switch (trace.type) {
    case "call":
      return String(action.callType ?? "call").toUpperCase();
    case "create":
      return action.creationMethod === "create2" ? "CREATE2" : "CREATE";
    case "suicide":
    case "selfdestruct":
      return "SELFDESTRUCT";
    default:
      throw new MalformedRpcDataError("trace.type", `unknown parity trace type ${JSON.stringify(trace.type)}`);
  }
}

/** `Error(string)` selector (Solidity docs, "Error handling: Assert, Require, Revert and Exceptions"). */
const ERROR_SELECTOR = "0x08c379a0";

/** The reason of an `Error(string)` revert output, as callTracer's `revertReason`; undefined otherwise. */
function revertReason(output: unknown): string | undefined {
  if (typeof output !== "string" || !output.toLowerCase().startsWith(ERROR_SELECTOR)) return undefined;
  try {
    return AbiCoder.defaultAbiCoder().decode(["string"], `0x${output.slice(10)}`)[0] as string;
  } catch {
    return undefined;
  }
}

/** One parity trace as a callTracer frame without `calls`. */
function toFrame(trace: Raw): Raw {
  const action = (trace.action ?? {}) as Raw;
  const result = (trace.result ?? null) as Raw | null;
  const type = frameType(trace, action);
  const frame: Raw =
    type === "SELFDESTRUCT"
      ? // geth's callTracer writes a selfdestruct with zero gas and empty input and output.
        {
          type,
          from: action.address,
          to: action.refundAddress,
          value: action.balance,
          gas: "0x0",
          gasUsed: "0x0",
          input: "0x",
          output: "0x",
        }
      : type.startsWith("CREATE")
        ? { type, from: action.from, to: result?.address, value: action.value, gas: action.gas, input: action.init, output: result?.code }
        : { type, from: action.from, to: action.to, value: action.value, gas: action.gas, input: action.input, output: result?.output };
  // A STATICCALL moves no value: callTracer omits the field, parity nodes answer 0x0.
  if (type === "STATICCALL") delete frame.value;
  if (result && result.gasUsed !== undefined && type !== "SELFDESTRUCT") frame.gasUsed = result.gasUsed;
  if (typeof trace.error === "string") {
    frame.error = trace.error;
    const reason = revertReason(frame.output);
    if (reason !== undefined) frame.revertReason = reason;
  }
  for (const k of Object.keys(frame)) if (frame[k] === undefined) delete frame[k];
  return frame;
}

/**
 * Converts a block's `trace_block` answer into one callTracer frame tree per transaction.
 * @param traces - the `trace_block` result (any order; rewards allowed).
 * @param transactionHashes - the block's transaction hashes, in block order.
 * @returns one root frame per transaction, in block order, each with `txHash`.
 * @throws {MalformedRpcDataError} when a trace has an unknown type or no parent, or a transaction has no root trace.
 */
export function parityToCallFrames(traces: readonly Raw[], transactionHashes: readonly string[]): Raw[] {
  const byTx = new Map<string, Array<{ path: number[]; frame: Raw }>>();
  for (const t of traces) {
    if (t.type === "reward" || typeof t.transactionHash !== "string") continue;
    const hash = t.transactionHash.toLowerCase();
    const path = Array.isArray(t.traceAddress) ? (t.traceAddress as number[]) : [];
    const list = byTx.get(hash) ?? [];
    byTx.set(hash, list);
    list.push({ path, frame: toFrame(t) });
  }
  return transactionHashes.map((h) => {
    const hash = h.toLowerCase();
    const list = (byTx.get(hash) ?? []).sort((a, b) => a.path.length - b.path.length);
    const byPath = new Map<string, Raw>();
    let root: Raw | undefined;
    for (const { path, frame } of list) {
      byPath.set(path.join("."), frame);
      if (path.length === 0) {
        root = frame;
        continue;
      }
      const parent = byPath.get(path.slice(0, -1).join("."));
      if (!parent) throw new MalformedRpcDataError(`traces[${hash}]`, `trace ${path.join(".")} has no parent`);
      parent.calls ??= [];
      (parent.calls as Raw[])[path.at(-1) as number] = frame;
    }
    if (!root) throw new MalformedRpcDataError(`traces[${hash}]`, "no root trace for the transaction");
    return { ...root, txHash: hash };
  });
}
