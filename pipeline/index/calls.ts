/**
 * Turns one transaction's call trace (a `traces` topic record) into the `call` documents the
 * search API serves: every frame of the tree, flattened with its Parity-style `traceAddress`, and
 * decoded against the built-in ABI set where its input matches (pure).
 * @module
 */

import { callDocuments } from "../../lib/chain/call-records.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { CallRecord, TraceRecord } from "../../lib/records.js";

/**
 * Flattens and decodes a trace record into call records, in pre-order (top-level frame first).
 * @throws {SyntaxError} when `frameJson` is not JSON; {@link MalformedRpcDataError}-like errors from flattening for malformed frames.
 */
export function callRecords(trace: TraceRecord, decode: DecodeMethodOptions): CallRecord[] {
  // One function for the index stage and the match stage's saved searches (lib/chain/call-records.ts).
  return callDocuments(trace, decode);
}
