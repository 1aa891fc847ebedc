/**
 * The decoder's fast path: arguments of a layout whose every argument fills exactly one 32-byte
 * word (address, bool, intN, uintN, bytesN, or an indexed dynamic argument's keccak-256 hash) read
 * straight from the log's hex strings, without ethers' `AbiCoder` (which builds coder, `Reader` and
 * `Result` objects and copies the bytes per decode: 35 % of the decode stage's CPU in the issue 23
 * baseline profile, docs/benchmarks.md). Every standard layout but ERC-1155 `TransferBatch`
 * (dynamic arrays) has such a plan; other layouts, and user ABIs with dynamic, array or tuple
 * arguments, are decoded with ethers (pipeline/decode/decoder.ts `decodeWith`).
 *
 * The results are exactly ethers' (ethers 6 `lib.esm/abi/coders`), rendered as decoder.ts renders
 * them; the unit test test/unit/pipeline/decode/words.test.ts compares both on every fixture log
 * and on random words:
 * - `uintN`: the low N bits of the word (ethers' `NumberCoder` masks; dirty upper bits are ignored);
 * - `intN`: the low N bits, two's complement (ethers' `fromTwos`);
 * - `bool`: true when any bit is set (ethers' `BooleanCoder`: `!!value`);
 * - `bytesN`: the first N bytes (ethers' `FixedBytesCoder`; the padding is not checked);
 * - `address`: decoded as a uint256 that must be below 2^160 (decoder.ts's rule for every top-level
 *   address), else the log does not decode.
 * The caller has already checked that each topic is a 32-byte hex word and that `data` is hex of
 * exactly the layout's length (decoder.ts `decodeWith`).
 * @module
 */
import type { ParamType } from "ethers";

/** How one argument's word is read. */
export interface WordPlan {
  /** Word type: see the module doc. `hashed` is an indexed dynamic argument (its `bytes32` hash). */
  kind: "address" | "uint" | "int" | "bool" | "bytes" | "hashed";
  /** Index into the log's topics (1..3) of an indexed argument; 0 for an argument in `data`. */
  topic: number;
  /** Offset in characters into the `0x`-prefixed `data` string of a data argument's word (2 + 64 × index). */
  at: number;
  /** Bits of an integer type (8..256), bytes of a `bytesN` (1..32); 0 otherwise. */
  size: number;
}

/** One argument read from its word, rendered like pipeline/decode/decoder.ts `render`. */
export interface WordValue {
  /** `EventArg.value.hex`. */
  hex: string;
  /** `EventArg.value.num`. */
  num: number | null;
  /** The `str` rendering of the value. */
  text: string;
  /** The integer of an `int`/`uint` argument (for `scaled`); undefined for the other kinds. */
  big: bigint | undefined;
}

const INT_TYPE = /^(u?)int(\d+)$/;
const FIXED_BYTES = /^bytes(\d+)$/;
/** 24 hex zeros: the upper 12 bytes of a word holding an address. */
const ADDRESS_PAD = "0".repeat(24);
/** Hex digits that fit a double exactly (13 × 4 = 52 bits). */
const EXACT_HEX_DIGITS = 13;

/**
 * The word plan of one layout argument, or null when it does not fill exactly one word (string,
 * bytes, arrays, tuples not indexed): the layout is then decoded with ethers.
 * @param param - the argument's type.
 * @param hashed - an indexed dynamic argument (only its hash is logged).
 * @param indexed - in the topics (else in `data`).
 * @param index - its position among the topic arguments (0 = topics[1]) or the data arguments.
 */
export function wordPlan(param: ParamType, hashed: boolean, indexed: boolean, index: number): WordPlan | null {
  const topic = indexed ? index + 1 : 0;
  const at = indexed ? 0 : 2 + 64 * index;
  if (hashed) return { kind: "hashed", topic, at, size: 0 };
  const type = param.type;
  if (type === "address") return { kind: "address", topic, at, size: 0 };
  if (type === "bool") return { kind: "bool", topic, at, size: 0 };
  const int = INT_TYPE.exec(type);
  if (int) return { kind: int[1] === "u" ? "uint" : "int", topic, at, size: Number(int[2]) };
  const bytes = FIXED_BYTES.exec(type);
  if (bytes) return { kind: "bytes", topic, at, size: Number(bytes[1]) };
  return null;
}

/** `hex` without its leading zeros ("" when all are zeros). */
function stripZeros(hex: string): string {
  let i = 0;
  while (i < hex.length && hex.charCodeAt(i) === 48) i++;
  return i === 0 ? hex : hex.slice(i);
}

/** Whether a hex string has a non-zero digit. */
function nonZero(hex: string): boolean {
  for (let i = 0; i < hex.length; i++) if (hex.charCodeAt(i) !== 48) return true;
  return false;
}

/**
 * Reads and renders one argument.
 * @param plan - its {@link WordPlan}.
 * @param topics - the log's topics (each already checked to be a 32-byte hex word).
 * @param data - the log's data (already checked to be hex of the layout's length).
 * @returns the value, or null for an `address` whose upper 12 bytes are not zero.
 */
export function readWord(plan: WordPlan, topics: readonly string[], data: string): WordValue | null {
  const word = plan.topic > 0 ? (topics[plan.topic] as string).slice(2) : data.slice(plan.at, plan.at + 64);
  switch (plan.kind) {
    case "address": {
      if (!word.startsWith(ADDRESS_PAD)) return null;
      const a = `0x${word.slice(24).toLowerCase()}`;
      return { hex: a, num: null, text: a, big: undefined };
    }
    case "uint": {
      const digits = stripZeros(plan.size === 256 ? word : word.slice(64 - plan.size / 4)).toLowerCase();
      if (digits.length <= EXACT_HEX_DIGITS) {
        const num = digits === "" ? 0 : Number.parseInt(digits, 16);
        return { hex: `0x${digits || "0"}`, num, text: String(num), big: BigInt(num) };
      }
      const big = BigInt(`0x${digits}`);
      return { hex: `0x${digits}`, num: Number(big), text: big.toString(), big };
    }
    case "int": {
      const bits = BigInt(plan.size);
      let big = BigInt(`0x${word.slice(64 - plan.size / 4)}`);
      if (big >> (bits - 1n) !== 0n) big -= 1n << bits;
      return { hex: big < 0n ? `-0x${(-big).toString(16)}` : `0x${big.toString(16)}`, num: Number(big), text: big.toString(), big };
    }
    case "bool":
      return nonZero(word) ? { hex: "0x1", num: 1, text: "true", big: undefined } : { hex: "0x0", num: 0, text: "false", big: undefined };
    case "bytes": {
      const h = `0x${word.slice(0, 2 * plan.size).toLowerCase()}`;
      return { hex: h, num: null, text: h, big: undefined };
    }
    default: {
      const h = `0x${word.toLowerCase()}`;
      return { hex: h, num: null, text: h, big: undefined };
    }
  }
}

/**
 * `v / 10^decimals` in decimal without a bare `.0` suffix (`1.5`, `2`, `0.000001`): ethers 6
 * `formatUnits(v, decimals)` (its FixedNumber `toString`) with a trailing `.0` removed, without
 * building a FixedNumber.
 * @param decimals - an integer 0..255.
 */
export function decimalText(v: bigint, decimals: number): string {
  const negative = v < 0n;
  let s = (negative ? -v : v).toString();
  if (decimals > 0) {
    if (s.length <= decimals) s = "0".repeat(decimals - s.length + 1) + s;
    const point = s.length - decimals;
    let end = s.length;
    while (end > point && s.charCodeAt(end - 1) === 48) end--;
    s = end === point ? s.slice(0, point) : `${s.slice(0, point)}.${s.slice(point, end)}`;
  }
  return negative ? `-${s}` : s;
}
