/**
 * The built-in function ABI set used to decode transaction inputs (Method entities) and call-trace
 * inputs (Call entities), and the decoding itself (Solidity ABI spec, "Function Selector and
 * Argument Encoding": https://docs.soliditylang.org/en/latest/abi-spec.html#function-selector-and-argument-encoding).
 *
 * Selector clashes: ERC-721 `transferFrom(address,address,uint256)` and `approve(address,uint256)`
 * have the same signatures, hence the same selectors, as ERC-20's; calldata cannot tell them apart.
 * They are decoded once with the ERC-20 argument names (`value`); `standard` is `erc20` when the
 * called contract is a known ERC-20 token (token list), else `erc20|erc721`, and for ERC-721 calls
 * `value` holds the token id.
 * @module
 */
import { type FunctionFragment, hexlify, Interface, type ParamType, toUtf8Bytes } from "ethers";
import type { EventArg } from "../records.js";
import { lookupToken, type TokenInfo, type TokenLookup } from "./tokens.js";

/** One function of the built-in ABI set. */
export interface MethodSpec {
  /** Standard or protocol, e.g. `erc20`, `erc721`, `weth`, `uniswap-v2-router`. */
  standard: string;
  /** Human-readable ABI fragment with argument names (https://docs.ethers.org/v6/api/abi/abi-coder/#about-abi). */
  abi: string;
  /** Arguments that are amounts of the called contract's own token (they get `scaled` when its decimals are known). */
  scaled?: readonly string[];
  /** Where the function is specified. */
  source: string;
}

const EIP20 = "EIP-20 https://eips.ethereum.org/EIPS/eip-20";
const EIP721 = "EIP-721 https://eips.ethereum.org/EIPS/eip-721";
const WETH9 = "WETH9 https://etherscan.io/address/0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2#code";
const V2_ROUTER = "Uniswap V2 Router02 https://docs.uniswap.org/contracts/v2/reference/smart-contracts/router-02";

/** Every built-in function. Order matters only for selector clashes (the first entry wins). */
export const METHOD_SPECS: readonly MethodSpec[] = [
  { standard: "erc20", abi: "function transfer(address to, uint256 value)", scaled: ["value"], source: EIP20 },
  { standard: "erc20|erc721", abi: "function approve(address spender, uint256 value)", scaled: ["value"], source: `${EIP20}; ${EIP721}` },
  {
    standard: "erc20|erc721",
    abi: "function transferFrom(address from, address to, uint256 value)",
    scaled: ["value"],
    source: `${EIP20}; ${EIP721}`,
  },
  { standard: "erc721", abi: "function safeTransferFrom(address from, address to, uint256 tokenId)", source: EIP721 },
  { standard: "erc721", abi: "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)", source: EIP721 },
  { standard: "erc721", abi: "function setApprovalForAll(address operator, bool approved)", source: EIP721 },
  { standard: "weth", abi: "function deposit() payable", source: WETH9 },
  { standard: "weth", abi: "function withdraw(uint256 wad)", scaled: ["wad"], source: WETH9 },
  {
    standard: "uniswap-v2-router",
    abi: "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline)",
    source: V2_ROUTER,
  },
  {
    standard: "uniswap-v2-router",
    abi: "function swapExactETHForTokens(uint256 amountOutMin, address[] path, address to, uint256 deadline) payable",
    source: V2_ROUTER,
  },
  {
    standard: "uniswap-v2-router",
    abi: "function swapExactTokensForETH(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline)",
    source: V2_ROUTER,
  },
];

/**
 * One decoded function argument: the shape of a decoded event argument ({@link EventArg}), with
 * `pos` the position in the function signature and `scaled` using the called token's decimals.
 */
export type MethodArg = EventArg;

/** The result of decoding calldata against {@link METHOD_SPECS}. */
export interface DecodedMethod {
  /** Function name, e.g. `transfer`. */
  name: string;
  /** Canonical signature, e.g. `transfer(address,uint256)`. */
  signature: string;
  /** Selector: first four bytes of the input, lower-case `0x` hex. */
  methodId: string;
  /** See {@link MethodSpec.standard} and the module doc on selector clashes. */
  standard: string;
  args: MethodArg[];
}

/** Options of {@link decodeMethod}. */
export interface DecodeMethodOptions {
  /** EIP-155 chain id for token decimals lookups (the chain context's; required, never assumed). */
  chainId: number;
  /** Token lookup for `scaled`; default the bundled token list (`lib/chain/tokens.ts`). */
  tokens?: TokenLookup;
}

interface Compiled {
  spec: MethodSpec;
  fragment: FunctionFragment;
  signature: string;
}

let table: { iface: Interface; bySelector: Map<string, Compiled> } | undefined;

function compiledTable(): { iface: Interface; bySelector: Map<string, Compiled> } {
  if (table) return table;
  const iface = new Interface(METHOD_SPECS.map((s) => s.abi));
  const bySelector = new Map<string, Compiled>();
  for (const spec of METHOD_SPECS) {
    const fragment = new Interface([spec.abi]).fragments[0] as FunctionFragment;
    const selector = fragment.selector.toLowerCase();
    if (!bySelector.has(selector)) bySelector.set(selector, { spec, fragment, signature: fragment.format("sighash") });
  }
  table = { iface, bySelector };
  return table;
}

/** The selectors of the built-in set (lower-case `0x` hex) with their canonical signatures. */
export function supportedMethods(): { methodId: string; signature: string; standard: string }[] {
  return [...compiledTable().bySelector].map(([methodId, c]) => ({ methodId, signature: c.signature, standard: c.spec.standard }));
}

function intHex(v: bigint): string {
  return v < 0n ? `-0x${(-v).toString(16)}` : `0x${v.toString(16)}`;
}

function render(p: ParamType, v: unknown): { hex: string; num: number | null } {
  switch (p.baseType) {
    case "address":
      return { hex: String(v).toLowerCase(), num: null };
    case "bool":
      return v ? { hex: "0x1", num: 1 } : { hex: "0x0", num: 0 };
    case "string":
      return { hex: hexlify(toUtf8Bytes(String(v))), num: null };
    case "array":
    case "tuple": {
      const children = p.isTuple() ? p.components : null;
      const items = Array.from(v as ArrayLike<unknown>, (x, i) => render((children ? children[i] : p.arrayChildren) as ParamType, x).hex);
      return { hex: JSON.stringify(items), num: null };
    }
    default:
      if (typeof v === "bigint") return { hex: intHex(v), num: Number(v) };
      return { hex: String(v).toLowerCase(), num: null };
  }
}

function scaledAmount(v: bigint, token: TokenInfo): number {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  const base = 10n ** BigInt(token.decimals);
  const whole = abs / base;
  const frac = (abs % base).toString().padStart(token.decimals, "0").replace(/0+$/, "");
  const n = Number(frac ? `${whole}.${frac}` : `${whole}`);
  return neg ? -n : n;
}

const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * Decodes calldata (a transaction's `input` or a call frame's `input`) against {@link METHOD_SPECS}.
 * @param input `0x` hex calldata: 4-byte selector + ABI-encoded arguments.
 * @param contract address of the called contract (any case), for the token lookup behind `scaled`
 *   and `standard`; null or undefined when unknown (then `scaled` is null).
 * @returns the decoded call, or null when the input is shorter than 4 bytes, not hex, has an
 *   unknown selector, or its arguments do not decode. Never throws.
 */
export function decodeMethod(input: string, contract: string | null | undefined, options: DecodeMethodOptions): DecodedMethod | null {
  if (typeof input !== "string" || input.length < 10 || !HEX_BYTES.test(input)) return null;
  const methodId = input.slice(0, 10).toLowerCase();
  const { iface, bySelector } = compiledTable();
  const c = bySelector.get(methodId);
  if (!c) return null;
  let values: ArrayLike<unknown>;
  try {
    values = iface.decodeFunctionData(c.fragment, input);
  } catch {
    return null;
  }
  let token: TokenInfo | undefined;
  if (contract) {
    const t = (options.tokens ?? lookupToken)(contract.toLowerCase(), options.chainId);
    if (t && Number.isInteger(t.decimals) && t.decimals >= 0 && t.decimals <= 255) token = t;
  }
  const args: MethodArg[] = c.fragment.inputs.map((p, pos) => {
    const v = values[pos];
    const r = render(p, v);
    const scaled = token && typeof v === "bigint" && c.spec.scaled?.includes(p.name) ? scaledAmount(v, token) : null;
    return { name: p.name, pos, value: { hex: r.hex, num: r.num, scaled, type: p.type } };
  });
  const standard = c.spec.standard === "erc20|erc721" && token ? "erc20" : c.spec.standard;
  return { name: c.fragment.name, signature: c.signature, methodId, standard, args };
}
