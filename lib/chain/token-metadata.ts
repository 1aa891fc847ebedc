/**
 * Token metadata read from the chain: `decimals()`, `symbol()` and `name()` (EIP-20
 * https://eips.ethereum.org/EIPS/eip-20; the same optional `name()`/`symbol()` of the ERC-721
 * metadata extension https://eips.ethereum.org/EIPS/eip-721) by `eth_call` at a given block. The
 * one implementation of chainsift: the decode stage fills `scaled` with it (through the cache of
 * `token-cache.ts`) and the match stage's Token entities carry what it reads.
 *
 * - **One JSON-RPC batch** (https://www.jsonrpc.org/specification#batch, `RpcClient.batch`) for many contracts: three
 *   `eth_call`s per contract, at most {@link ReadTokenMetadataOptions.maxCallsPerRequest} calls per
 *   HTTP request.
 * - **Return values** ({@link decodeDecimals}, {@link decodeText}): `decimals()` is a `uint8` word
 *   (a value above 255 is garbage); `symbol()`/`name()` are ABI `string`s, or a `bytes32` (right-padded
 *   with zero bytes) in early tokens such as MKR (`0x9f8f72aa…`) and SAI, whose `symbol()` is
 *   `bytes32` "MKR". Anything else (empty `0x` from an account without code, bytes that are not
 *   UTF-8, control characters) is garbage: null.
 * - **Reverts** (the contract lacks the function): the field is null. A call is taken as reverted when
 *   the node answers error code 3 (geth, anvil: "execution reverted" with data) or a message naming an
 *   EVM execution failure (`execution reverted`, `invalid opcode`, `out of gas`, …).
 * - **State not available at the block** (any other per-call error, e.g. geth's "missing trie node"
 *   or "header not found" on a node without archive state): that contract is asked again at
 *   `latest`, in one more batch (decimals, symbol and name rarely change); when that fails too, the
 *   read throws a {@link RetryableError}.
 * - **A node without `eth_call`** (JSON-RPC -32601 "method not found", e.g. chainsift's fixture replay
 *   server): every field null and {@link TokenMetadataRead.unavailable} true (nothing to cache).
 * - **Node failures** (connection refused, HTTP status other than 2xx, a body that is not JSON,
 *   timeout): retried and failed over by chainsift's one JSON-RPC client (lib/rpc/client.ts: every
 *   endpoint of the chain, not only the first), then a {@link RetryableError}.
 * @module
 */
import { RetryableError } from "../errors.js";
import { type RpcClient, type RpcReply, type RpcTarget, withRpcClient } from "../rpc/client.js";
import { METHOD_NOT_FOUND } from "../rpc/transport.js";

/** Token metadata; each field null when unknown (reverted, not implemented, garbage). */
export interface TokenMetadata {
  /** `name()`, e.g. `Tether USD`; at most {@link MAX_TEXT_LENGTH} characters. */
  name: string | null;
  /** `symbol()`, e.g. `USDT`, `MKR` (bytes32); at most {@link MAX_TEXT_LENGTH} characters. */
  symbol: string | null;
  /** `decimals()`: an integer from 0 to 255, or null. */
  decimals: number | null;
}

/** One contract to read, at the block where it was first seen. */
export interface TokenMetadataRequest {
  /** Contract address, `0x` + 40 hex digits (any letter case). */
  address: string;
  /** Block number of the calls (`eth_call`'s block parameter). */
  blockNumber: number;
}

/** The metadata of one requested contract. */
export interface TokenMetadataRead extends TokenMetadata {
  /** Lower-case address of the request. */
  address: string;
  /** True when the node has no `eth_call` (-32601): nothing was learned about the contract. */
  unavailable: boolean;
}

/** Options of {@link readTokenMetadata}. */
export interface ReadTokenMetadataOptions {
  /** Timeout of one HTTP request, ms, when `rpc` is URLs (a client's own setting applies otherwise). Default 10000. */
  timeoutMs?: number;
  /** Most `eth_call`s in one HTTP request (geth's default `BatchRequestLimit` is 1000). Default 300. */
  maxCallsPerRequest?: number;
  /** Which functions to call; default all three. `decimals` is skipped for ERC-721 Token entities. */
  fields?: ReadonlyArray<keyof TokenMetadata>;
}

/** Longest `name`/`symbol` kept, in characters (longer texts are cut). */
export const MAX_TEXT_LENGTH = 64;

/** 4-byte selectors (keccak-256 of the signature): `decimals()`, `symbol()`, `name()`. */
export const TOKEN_METADATA_SELECTORS: Readonly<Record<keyof TokenMetadata, string>> = {
  decimals: "0x313ce567",
  symbol: "0x95d89b41",
  name: "0x06fdde03",
};

const ALL_FIELDS: ReadonlyArray<keyof TokenMetadata> = ["decimals", "symbol", "name"];
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const EXECUTION_FAILURE = /revert|invalid opcode|out of gas|stack (?:underflow|overflow|limit)|invalid jump|write protection|execution/i;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes a `decimals()` return value.
 * @param hex - the `eth_call` result, `0x`-prefixed.
 * @returns the value of the first 32-byte word when it is at most 255, else null (fewer than 32
 *   bytes, not hex, or a larger value: garbage).
 */
export function decodeDecimals(hex: string): number | null {
  if (!HEX.test(hex) || hex.length < 66) return null;
  const v = BigInt(hex.slice(0, 66));
  return v <= 255n ? Number(v) : null;
}

/** UTF-8 text of `bytes`, trailing NULs removed; null when not UTF-8, empty, or holding control characters. */
function text(bytes: Buffer): string | null {
  let s: string;
  try {
    s = utf8.decode(bytes);
  } catch {
    return null;
  }
  s = s.replace(/\0+$/, "");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (s === "" || /[\u0000-\u001f\u007f]/.test(s)) return null;
  return s.length > MAX_TEXT_LENGTH ? s.slice(0, MAX_TEXT_LENGTH) : s;
}

/**
 * Decodes a `symbol()` or `name()` return value: an ABI-encoded `string` (offset word, length
 * word, bytes), or a `bytes32` (exactly 32 bytes, text right-padded with zero bytes: MKR's "MKR").
 * @param hex - the `eth_call` result, `0x`-prefixed.
 * @returns the text (trailing NULs removed, cut to {@link MAX_TEXT_LENGTH} characters), or null for
 *   garbage: an encoding that is neither, out-of-range offsets or lengths, bytes that are not UTF-8,
 *   an empty text or one with control characters.
 */
export function decodeText(hex: string): string | null {
  if (!HEX.test(hex)) return null;
  const bytes = Buffer.from(hex.slice(2), "hex");
  if (bytes.length === 32) return text(bytes);
  if (bytes.length < 64) return null;
  const offset = BigInt(`0x${bytes.subarray(0, 32).toString("hex")}`);
  if (offset % 32n !== 0n || offset + 32n > BigInt(bytes.length)) return null;
  const at = Number(offset);
  const length = BigInt(`0x${bytes.subarray(at, at + 32).toString("hex")}`);
  if (BigInt(at) + 32n + length > BigInt(bytes.length)) return null;
  return text(bytes.subarray(at + 32, at + 32 + Number(length)));
}

/** What one call gave: a result, an execution failure (revert), missing state, or no eth_call at all. */
type CallOutcome = { result: string } | { failed: "reverted" | "state" | "unsupported"; message: string };

function outcomeOf(reply: RpcReply | undefined): CallOutcome {
  if (!reply) return { failed: "state", message: "no answer for the call in the batch" };
  if (reply.error) {
    const message = String(reply.error.message ?? "");
    if (reply.error.code === METHOD_NOT_FOUND) return { failed: "unsupported", message };
    if (reply.error.code === 3 || EXECUTION_FAILURE.test(message)) return { failed: "reverted", message };
    return { failed: "state", message };
  }
  return typeof reply.result === "string" ? { result: reply.result } : { failed: "state", message: "result is not a string" };
}

/**
 * Sends `calls` as batches of at most `max` calls, one after the other, through the client (failed
 * over between its endpoints); the outcomes in the order of `calls`.
 * @throws {RetryableError} when a batch got no answer from any endpoint.
 */
async function send(rpc: RpcClient, calls: Array<{ to: string; data: string; block: string }>, max: number): Promise<CallOutcome[]> {
  const out: CallOutcome[] = [];
  for (let i = 0; i < calls.length; i += max) {
    const chunk = calls.slice(i, i + max);
    let replies: RpcReply[];
    try {
      replies = await rpc.batch(chunk.map((c) => ({ method: "eth_call", params: [{ to: c.to, data: c.data }, c.block] })));
    } catch (err) {
      throw new RetryableError(`eth_call batch of ${chunk.length} calls failed: ${(err as Error).message}`, { cause: err });
    }
    out.push(...replies.map(outcomeOf));
  }
  return out;
}

/**
 * Reads `decimals()`, `symbol()` and `name()` of many contracts in one JSON-RPC batch (see the
 * module notes for reverts, garbage, missing state and node failures).
 * @param rpc - the chain's JSON-RPC client (e.g. the chain context's), or its endpoint URLs (a
 *   client is made for the read: failed over between them in order of preference).
 * @param requests - the contracts and the block to read each at; duplicates are read once.
 * @param options - timeout, batch size, fields ({@link ReadTokenMetadataOptions}).
 * @returns one {@link TokenMetadataRead} per distinct lower-case address, in request order.
 * @throws {RetryableError} when the node cannot be reached or answers neither a result nor a revert
 *   for a call, at the block and again at `latest`.
 */
export async function readTokenMetadata(
  rpc: RpcTarget,
  requests: readonly TokenMetadataRequest[],
  options: ReadTokenMetadataOptions = {},
): Promise<TokenMetadataRead[]> {
  return withRpcClient(rpc, { timeoutMs: options.timeoutMs ?? 10_000 }, (client) => read(client, requests, options));
}

/** {@link readTokenMetadata} on a client. */
async function read(
  rpc: RpcClient,
  requests: readonly TokenMetadataRequest[],
  options: ReadTokenMetadataOptions,
): Promise<TokenMetadataRead[]> {
  const fields = options.fields ?? ALL_FIELDS;
  const max = Math.max(1, options.maxCallsPerRequest ?? 300);
  const distinct = new Map<string, number>();
  for (const r of requests) if (!distinct.has(r.address.toLowerCase())) distinct.set(r.address.toLowerCase(), r.blockNumber);
  const addresses = [...distinct.keys()];
  const callsAt = (list: string[], block: (a: string) => string) =>
    list.flatMap((to) => fields.map((f) => ({ to, data: TOKEN_METADATA_SELECTORS[f], block: block(to) })));
  const outcomes = await send(
    rpc,
    callsAt(addresses, (a) => `0x${(distinct.get(a) as number).toString(16)}`),
    max,
  );
  const byAddress = new Map(addresses.map((a, i) => [a, outcomes.slice(i * fields.length, (i + 1) * fields.length)]));
  // State missing at the block: the same contracts once more at `latest`.
  const again = addresses.filter((a) => byAddress.get(a)?.some((o) => "failed" in o && o.failed === "state"));
  if (again.length > 0) {
    const retried = await send(
      rpc,
      callsAt(again, () => "latest"),
      max,
    );
    again.forEach((a, i) => {
      const list = retried.slice(i * fields.length, (i + 1) * fields.length);
      const still = list.find((o): o is { failed: "state"; message: string } => "failed" in o && o.failed === "state");
      if (still) throw new RetryableError(`eth_call to ${a} failed at its block and at latest: ${still.message}`);
      byAddress.set(a, list);
    });
  }
  return addresses.map((address) => {
    const list = byAddress.get(address) as CallOutcome[];
    const value = (f: keyof TokenMetadata): string | null => {
      const o = list[fields.indexOf(f)];
      return o && "result" in o ? o.result : null;
    };
    const d = value("decimals");
    const s = value("symbol");
    const n = value("name");
    return {
      address,
      decimals: d === null ? null : decodeDecimals(d),
      symbol: s === null ? null : decodeText(s),
      name: n === null ? null : decodeText(n),
      unavailable: list.some((o) => "failed" in o && o.failed === "unsupported"),
    };
  });
}
