/**
 * geth callTracer frames (what the mainnet fixtures recorded) written the way a parity-style node
 * answers `trace_block` (https://openethereum.github.io/JSONRPC-trace-module): a flat list, one
 * trace per frame with its `traceAddress`, in depth-first order. Only for the replay server and
 * tests: it lets chainsift's parity path (lib/chain/parity-trace.ts) be tested on the real frames.
 * @module
 */
import type { RpcObject } from "./fixtures.js";

const CALL_TYPES: Record<string, string> = { CALL: "call", DELEGATECALL: "delegatecall", STATICCALL: "staticcall", CALLCODE: "callcode" };

/**
 * The `trace_block` answer for a block whose transactions have the callTracer roots `frames`.
 * @param frames - one callTracer root frame per transaction, in block order.
 * @param transactions - the block's transactions (for `transactionHash`), in block order.
 * @param blockHash - the block's hash; @param blockNumber - its number.
 * @returns the flat parity trace list.
 */
export function callFramesToParity(
  frames: readonly RpcObject[],
  transactions: readonly RpcObject[],
  blockHash: string,
  blockNumber: number,
): RpcObject[] {
  const out: RpcObject[] = [];
  const visit = (f: RpcObject, address: number[], position: number) => {
    const calls = (f.calls as RpcObject[] | undefined) ?? [];
    const type = String(f.type);
    const common = {
      subtraces: calls.length,
      traceAddress: address,
      transactionHash: transactions[position]?.hash,
      transactionPosition: position,
      blockHash,
      blockNumber,
      ...(typeof f.error === "string" ? { error: f.error } : {}),
    };
    if (type === "SELFDESTRUCT") {
      out.push({ ...common, type: "suicide", action: { address: f.from, refundAddress: f.to, balance: f.value ?? "0x0" }, result: null });
    } else if (type === "CREATE" || type === "CREATE2") {
      const result = f.error && f.output === undefined ? null : { address: f.to, code: f.output ?? "0x", gasUsed: f.gasUsed };
      const action = { from: f.from, value: f.value ?? "0x0", gas: f.gas, init: f.input, creationMethod: type.toLowerCase() };
      out.push({ ...common, type: "create", action, result });
    } else {
      const result = f.error && f.output === undefined ? null : { output: f.output ?? "0x", gasUsed: f.gasUsed };
      const action = {
        callType: CALL_TYPES[type] ?? type.toLowerCase(),
        from: f.from,
        to: f.to,
        value: f.value,
        gas: f.gas,
        input: f.input,
      };
      out.push({ ...common, type: "call", action, result });
    }
    calls.forEach((c, i) => {
      visit(c, [...address, i], position);
    });
  };
  frames.forEach((f, i) => {
    visit(f, [], i);
  });
  return out;
}
