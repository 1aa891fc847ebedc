/**
 * One transaction's call trace (a `traces` topic record) as the `call` documents the search API
 * serves: every frame of the tree, flattened with its Parity-style `traceAddress`, and decoded
 * against the built-in ABI set where its input matches (pure). The index stage indexes these
 * documents; the match stage evaluates saved searches over `call` on the same documents, so both
 * must come from this one function.
 * @module
 */

import type { CallRecord, TraceRecord } from "../records.js";
import { type CallFrame, callEntity, flattenCallTrace } from "./calltrace.js";
import type { DecodeMethodOptions } from "./methods.js";

/**
 * Flattens and decodes a trace record into call records, in pre-order (top-level frame first).
 * @throws {SyntaxError} when `frameJson` is not JSON; errors of `flattenCallTrace` for malformed frames.
 */
export function callDocuments(trace: TraceRecord, decode: DecodeMethodOptions): CallRecord[] {
  const frame = JSON.parse(trace.frameJson) as CallFrame;
  return flattenCallTrace(frame, trace).map((f): CallRecord => {
    const call = callEntity(f, decode);
    return {
      type: f.type,
      from: f.from,
      to: f.to,
      value: f.value,
      gas: f.gas,
      gasUsed: f.gasUsed,
      input: f.input,
      output: f.output,
      methodId: f.methodId,
      error: f.error,
      depth: f.depth,
      traceAddress: f.traceAddress,
      subtraces: f.subtraces,
      name: call?.name ?? null,
      signature: call?.signature ?? null,
      args: call?.args ?? [],
      transactionHash: f.transactionHash,
      transactionIndex: f.transactionIndex,
      blockHash: f.blockHash,
      blockNumber: f.blockNumber,
      timestamp: f.timestamp,
    };
  });
}
