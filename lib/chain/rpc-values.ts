/**
 * Parsing of the values a JSON-RPC node returns (hex quantities, addresses, hex strings) into the
 * forms chainsift records carry, with one error type naming the offending field. Shared by ingest
 * (raw blocks and receipts) and the call-trace flattening of the match and index stages.
 * Field semantics: https://ethereum.github.io/execution-apis/api-documentation/
 * @module
 */
import { getAddress } from "ethers";
import { ChainsiftError } from "../errors.js";
import type { Quantity } from "../records.js";

/** Raised when a node returns an object that lacks a required field or holds a malformed value. */
export class MalformedRpcDataError extends ChainsiftError {
  /** Always `CS_MALFORMED_RPC_DATA`. */
  readonly code = "CS_MALFORMED_RPC_DATA";
  constructor(
    /** Dotted path of the offending field, e.g. `block.transactions[3].hash`. */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "MalformedRpcDataError";
  }
}

const HEX_QUANTITY = /^0x[0-9a-fA-F]+$/;

/**
 * Parses a hex quantity (`0x…`) into a {@link Quantity}; `raw` is re-rendered without leading zeros.
 * @throws {MalformedRpcDataError} when the value is not a `0x`-prefixed hex number.
 */
export function quantity(value: unknown, path: string): Quantity {
  if (typeof value !== "string" || !HEX_QUANTITY.test(value)) {
    throw new MalformedRpcDataError(path, `expected a hex quantity, got ${JSON.stringify(value)}`);
  }
  const n = BigInt(value);
  return { num: Number(n), raw: `0x${n.toString(16)}` };
}

/**
 * Like {@link quantity} but null when the field is absent or null.
 * @throws {MalformedRpcDataError} when a present value is not a hex quantity.
 */
export function optionalQuantity(value: unknown, path: string): Quantity | null {
  return value === undefined || value === null ? null : quantity(value, path);
}

const addressCache = new Map<string, string>();

/**
 * EIP-55 checksummed form of an address (https://eips.ethereum.org/EIPS/eip-55), memoised.
 * @throws {MalformedRpcDataError} when the value is not a 20-byte hex address.
 */
export function checksum(value: unknown, path: string): string {
  if (typeof value !== "string") throw new MalformedRpcDataError(path, `expected an address, got ${JSON.stringify(value)}`);
  const key = value.toLowerCase();
  let out = addressCache.get(key);
  if (out === undefined) {
    try {
      out = getAddress(key);
    } catch {
      throw new MalformedRpcDataError(path, `expected a 20-byte hex address, got ${JSON.stringify(value)}`);
    }
    if (addressCache.size > 100_000) addressCache.clear();
    addressCache.set(key, out);
  }
  return out;
}

/**
 * Like {@link checksum} but null when the field is absent or null.
 * @throws {MalformedRpcDataError} when a present value is not a 20-byte hex address.
 */
export function optionalAddress(value: unknown, path: string): string | null {
  return value === undefined || value === null ? null : checksum(value, path);
}

/**
 * A `0x`-prefixed hex string (hash, call data, …), lower-cased.
 * @throws {MalformedRpcDataError} when the value is not a string starting with `0x`.
 */
export function hexString(value: unknown, path: string): string {
  if (typeof value !== "string" || !value.startsWith("0x")) {
    throw new MalformedRpcDataError(path, `expected a 0x-prefixed hex string, got ${JSON.stringify(value)}`);
  }
  return value.toLowerCase();
}

/**
 * Like {@link hexString} but null when the field is absent or null.
 * @throws {MalformedRpcDataError} when a present value is not a `0x`-prefixed string.
 */
export function optionalHexString(value: unknown, path: string): string | null {
  return value === undefined || value === null ? null : hexString(value, path);
}
