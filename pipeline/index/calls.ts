/**
 * Turns one transaction's call trace (a `traces` topic record) into the `call` documents the
 * search API serves: every frame of the tree, flattened with its Parity-style `traceAddress`, and
 * decoded against the built-in ABI set where its input matches (pure).
 * @module
 */

import { type CallFrame, callEntity, flattenCallTrace } from "../../lib/chain/calltrace.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { CallRecord, TraceRecord } from "../../lib/records.js";

/**
 * Flattens and decodes a trace record into call records, in pre-order (top-level frame first).
 * @throws {SyntaxError} when `frameJson` is not JSON; {@link MalformedRpcDataError}-like errors from flattening for malformed frames.
 */
export function callRecords(trace: TraceRecord, decode: DecodeMethodOptions): CallRecord[] {
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
