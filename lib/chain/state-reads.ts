/**
 * Reads of state-condition subjects (issue 34 part 1; docs/rules.md, "State conditions")
 * at one block, through the chain's one JSON-RPC client ({@link RpcClient.batch}): one JSON-RPC
 * batch per block, every call at the block *hash* (EIP-1898 `{"blockHash": …}`,
 * https://eips.ethereum.org/EIPS/eip-1898), so a reading belongs to exactly one branch and a reorg
 * re-reads on the new one. The match stage's state evaluator (pipeline/match/state/evaluator.ts) calls it.
 */
import { Interface, type InterfaceAbi } from "ethers";
import type { RpcCall, RpcClient, RpcReply } from "../rpc/client.js";

/** A watched subject (the `stateCondition.subject` of a rule; lib/rules/schema-state.ts validates it). */
export type StateSubject =
  | { type: "balance"; address: string }
  | { type: "erc20Balance"; token: string; address: string }
  | { type: "call"; to: string; function: string; args?: unknown[]; abi: InterfaceAbi }
  | { type: "storage"; address: string; slot: string };

/** One subject's reading: the value as an integer, the node lacking the block's state, or another error. */
export type StateReading = { ok: true; value: bigint } | { ok: false; kind: "unavailable" | "error" | "over_budget"; message: string };

/**
 * Node messages meaning "this node does not hold the state of that block" (a pruned, non-archive
 * node: geth `missing trie node`, `header not found`; erigon/nethermind/anvil wordings for an
 * unknown or pruned block). Such a reading is reported, never guessed.
 */
const UNAVAILABLE = /missing trie node|header not found|historical state|not available|pruned|unknown block|block not found/i;

/** EIP-1898's recommended error code for a block hash the node does not know ("Resource not found"; anvil sends it). */
const RESOURCE_NOT_FOUND = -32001;

/** The kind of a reading the node answered with an error: `unavailable` when it lacks the block or its state. */
export function errorKind(error: { code?: number; message: string }): "unavailable" | "error" {
  return error.code === RESOURCE_NOT_FOUND || UNAVAILABLE.test(error.message) ? "unavailable" : "error";
}

const ERC20 = new Interface(["function balanceOf(address) view returns (uint256)"]);

/** The JSON-RPC call reading `s` at `blockHash`. @throws Error when a `call` subject's function is not in its ABI. */
export function stateCall(s: StateSubject, blockHash: string): RpcCall {
  const at = { blockHash };
  switch (s.type) {
    case "balance":
      return { method: "eth_getBalance", params: [s.address, at] };
    case "storage":
      return { method: "eth_getStorageAt", params: [s.address, s.slot, at] };
    case "erc20Balance":
      return { method: "eth_call", params: [{ to: s.token, data: ERC20.encodeFunctionData("balanceOf", [s.address]) }, at] };
    case "call":
      return { method: "eth_call", params: [{ to: s.to, data: new Interface(s.abi).encodeFunctionData(s.function, s.args ?? []) }, at] };
  }
}

/** The integer a call's hex result holds (an `eth_call` result decoded by its ABI's first output). */
function integerOf(s: StateSubject, result: unknown): bigint {
  if (typeof result !== "string") throw new Error(`expected a hex string, got ${JSON.stringify(result)}`);
  if (s.type === "call") {
    const out = new Interface(s.abi).decodeFunctionResult(s.function, result)[0] as unknown;
    if (typeof out === "bigint") return out;
    if (typeof out === "boolean") return out ? 1n : 0n;
    throw new Error(`${s.function}: the first output is not an integer or bool`);
  }
  if (s.type === "erc20Balance") return ERC20.decodeFunctionResult("balanceOf", result)[0] as bigint;
  return result === "0x" ? 0n : BigInt(result);
}

/** The reading of `s` a node's reply to its {@link stateCall} holds (undefined: the batch had no reply for it). */
export function readingOf(s: StateSubject, r: RpcReply | undefined): StateReading {
  if (r === undefined) return { ok: false, kind: "error", message: "no reply" };
  if (r.error !== undefined) return { ok: false, kind: errorKind(r.error), message: r.error.message };
  try {
    return { ok: true, value: integerOf(s, r.result) };
  } catch (err) {
    return { ok: false, kind: "error", message: (err as Error).message };
  }
}

/**
 * Reads every subject at `blockHash` in one JSON-RPC batch. Subjects past `budget` are not read
 * (`over_budget`), so one block never costs more than `budget` calls.
 * @param budget the most calls for this block (the chain's read budget, lib/config/state.ts).
 * @returns one reading per subject, in order.
 * @throws {RetryableError} when no endpoint answered the batch (per-call errors are readings).
 */
export async function readStates(
  client: RpcClient,
  blockHash: string,
  subjects: readonly StateSubject[],
  budget: number,
): Promise<StateReading[]> {
  const within = subjects.slice(0, Math.max(0, budget));
  const calls = within.map((s) => stateCall(s, blockHash));
  const replies = calls.length === 0 ? [] : await client.batch(calls);
  const out: StateReading[] = within.map((s, i) => readingOf(s, replies[i]));
  for (let i = within.length; i < subjects.length; i++)
    out.push({ ok: false, kind: "over_budget", message: `read budget of ${budget} calls per block spent` });
  return out;
}
