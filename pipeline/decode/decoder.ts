/**
 * Pure decoding of receipt logs ({@link LogRecord}) into named events ({@link EventRecord}); the
 * decode stage's Kafka shell calls {@link createDecoder} once and {@link Decoder.decode} per log.
 *
 * - Recognised layouts: {@link EVENT_SPECS} (ERC-20, ERC-721, ERC-1155, WETH9, Uniswap V2/V3).
 *   A map topic0 → candidate layouts is built once per process; the candidate whose topic count
 *   fits is decoded with ethers' `AbiCoder` (Solidity ABI spec:
 *   https://docs.soliditylang.org/en/latest/abi-spec.html#events).
 * - Argument rendering follows {@link EventArg}: addresses lower-case, integers minimal hex
 *   (`-0x…` for negatives) plus `num` (nearest double beyond 2^53), bools `0x1`/`0x0`, bytes as-is,
 *   arrays as a JSON array of the element renderings. See docs/decoding.md.
 * - `scaled` is set only on amounts of the emitting contract's own token (ERC-20 Transfer/Approval
 *   `value`, WETH Deposit/Withdrawal `wad`) when that token's decimals are known for the chain.
 * - A log whose topic0 is no standard layout is looked up in the bundled signature database
 *   (./signatures.ts, OpenZeppelin Contracts' event ABIs; {@link DecoderDeps.signatures}) and, when
 *   a layout fits strictly, rendered the same way with `source: "signature"`.
 * @module
 */
import { AbiCoder, type EventFragment, hexlify, Interface, ParamType, toUtf8Bytes } from "ethers";
import { lookupToken, type TokenInfo, type TokenLookup } from "../../lib/chain/tokens.js";
import type { EventArg, EventRecord, LogRecord } from "../../lib/records.js";
import { EVENT_SPECS, type EventSpec } from "./events.js";
import { matchSignature, SIGNATURE_STANDARD } from "./signatures.js";
import { decimalText, readWord, type WordPlan, wordPlan } from "./words.js";

/** Dependencies of {@link createDecoder}; every field but `chainId` is optional. */
export interface DecoderDeps {
  /**
   * EIP-155 chain id of the logs (https://eips.ethereum.org/EIPS/eip-155), e.g. 1 for Ethereum
   * mainnet, 137 for Polygon. Selects which token-list entries give decimals, so a contract on
   * another chain never gets a mainnet token's decimals. Required: the chain context's
   * (lib/chain-context.ts), never assumed.
   */
  chainId: number;
  /**
   * Token metadata lookup replacing the bundled Uniswap default token list ({@link lookupToken}).
   * Called with the emitting contract's lower-case address and {@link DecoderDeps.chainId}, only
   * for events that carry a token amount; return undefined when the token is unknown (then
   * `scaled` is null). Must be synchronous and cheap: it runs per log.
   */
  tokens?: TokenLookup;
  /**
   * Decode logs whose topic0 is no standard layout by topic0 alone, from the bundled signature
   * database (./signatures.ts: the event ABIs of `@openzeppelin/contracts`, loaded on the first
   * such log): `source: "signature"`, `standard: "openzeppelin"`, `scaled` always null. Default
   * true; the process sets it from `CHAINSIFT_DECODE_SIGNATURES` (lib/config/index.ts `decode.signatures`).
   */
  signatures?: boolean;
  /**
   * Decode layouts whose every argument is one 32-byte word (all standard layouts but ERC-1155
   * `TransferBatch`) straight from the hex (./words.ts), ethers' `AbiCoder` only for the others.
   * Default true; false decodes everything with ethers: the reference the unit tests compare the
   * fast path against, and the `ethers path` line of `npm run bench -- decode`. Same records either way.
   */
  fastPath?: boolean;
}

/** A log decoder. Stateless apart from its immutable tables; safe to share. */
export interface Decoder {
  /**
   * Decodes one log.
   * @param log - the log record.
   * @param tokens - a lookup consulted for the emitting contract's decimals when the decoder's own
   *   ({@link DecoderDeps.tokens}) does not know the token: the decode stage passes the batch's
   *   on-chain metadata here (pipeline/decode/token-batch.ts). Called with the lower-case address.
   * @returns the decoded event; or, when topic0 is a known signature but the topics or data do
   *   not fit any of its layouts, an event with `error` set (a one-line reason), `args: []` and
   *   `str` describing the failure; or an event decoded from the signature database (its
   *   `source` is `signature`) when topic0 is no standard layout, {@link DecoderDeps.signatures} is
   *   on and a database layout fits strictly; or null when the log has no topics or topic0 is
   *   unknown (or known only to the database but no layout fits).
   * @throws only when the signature database cannot be loaded on first use (`@openzeppelin/contracts`
   *   missing or unreadable: a broken install); the decode stage dead-letters such a log.
   */
  decode(log: LogRecord, tokens?: TokenLookup): EventRecord | null;
}

/** Description of one supported event layout, for documentation and tests. */
export interface SupportedEvent {
  /** Record `standard`, e.g. `erc20`. */
  standard: string;
  /** Canonical signature, e.g. `Transfer(address,address,uint256)`. */
  signature: string;
  /** keccak-256 of the signature, lower-case `0x` hex: the log's topics[0]. */
  topic0: string;
  /** Number of topics a fitting log has (1 + indexed arguments). */
  topicCount: number;
  /** Byte length of `data` when every non-indexed argument is static, else null (variable). */
  dataLength: number | null;
  /** Human-readable ABI fragment with argument names. */
  abi: string;
}

/** One argument slot of a layout. */
interface Slot {
  name: string;
  param: ParamType;
  /** Index into the topic values (indexed) or data values (not indexed). */
  index: number;
  indexed: boolean;
  scaled: boolean;
  /** An `address` decoded as `uint256` (see {@link ADDRESS_AS_UINT}); range-checked when rendered. */
  addressAsUint: boolean;
  /** An indexed dynamic value (string, bytes, array, tuple): only its keccak-256 hash is logged, rendered as that word. */
  hashed: boolean;
  /** How to read it from its word without ethers (./words.ts); null when it is not one word. */
  word: WordPlan | null;
}

/** A precompiled event layout ({@link compileLayout}). */
export interface Layout {
  spec: EventSpec;
  event: string;
  signature: string;
  topic0: string;
  topicCount: number;
  topicTypes: ParamType[];
  dataTypes: ParamType[];
  dataLength: number | null;
  slots: Slot[];
  hasScaled: boolean;
  /** Every slot has a {@link Slot.word} plan: the layout decodes without ethers (./words.ts). */
  words: boolean;
  /** `<signature> [<standard>]`, the prefix of its error messages. */
  where: string;
}

const coder = AbiCoder.defaultAbiCoder();

/**
 * Top-level `address` arguments are decoded as `uint256` and range-checked (< 2^160): the ABI
 * encodes an address exactly as a left-padded uint160, and ethers' AddressCoder spends most of a
 * decode computing an EIP-55 checksum that the lower-case rendering then discards (about half of
 * the per-log time in the fixture benchmark).
 */
const ADDRESS_AS_UINT = ParamType.from("uint256");
const TOPIC_WORD = ParamType.from("bytes32");
const ADDRESS_LIMIT = 1n << 160n;
const WORD = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
const MAX_ERROR_LENGTH = 300;

/** ABI-encoded size of a static type in bytes, or null for a dynamic type. */
function staticSize(p: ParamType): number | null {
  if (p.isArray()) {
    if (p.arrayLength < 0) return null;
    const child = staticSize(p.arrayChildren);
    return child === null ? null : child * p.arrayLength;
  }
  if (p.isTuple()) {
    let sum = 0;
    for (const c of p.components) {
      const s = staticSize(c);
      if (s === null) return null;
      sum += s;
    }
    return sum;
  }
  return p.baseType === "string" || p.baseType === "bytes" ? null : 32;
}

/**
 * Precompiles one event layout (also used for user ABIs, pipeline/decode/abi-decoder.ts).
 * An indexed dynamic argument (string, bytes, array or tuple: the ABI spec logs only the
 * keccak-256 of its encoding) is read as the `bytes32` topic word.
 * @param spec - the layout's `standard`, human-readable `abi` and the arguments to scale.
 * @param fragment - the parsed event.
 */
export function compileLayout(spec: EventSpec, fragment: EventFragment): Layout {
  const topicTypes: ParamType[] = [];
  const dataTypes: ParamType[] = [];
  const slots: Slot[] = fragment.inputs.map((param) => {
    const hashed = param.indexed === true && (staticSize(param) === null || param.isTuple() || param.isArray());
    const list = param.indexed ? topicTypes : dataTypes;
    const addressAsUint = param.baseType === "address";
    list.push(hashed ? TOPIC_WORD : addressAsUint ? ADDRESS_AS_UINT : param);
    const indexed = param.indexed === true;
    const scaled = spec.scaled?.includes(param.name) ?? false;
    const word = wordPlan(param, hashed, indexed, list.length - 1);
    return {
      name: param.name,
      param,
      index: list.length - 1,
      indexed,
      scaled,
      addressAsUint: addressAsUint && !hashed,
      hashed,
      // `scaled` applies to integers only: an amount of another type keeps the ethers path's rendering.
      word: word && (!scaled || word.kind === "uint" || word.kind === "int") ? word : null,
    };
  });
  let dataLength: number | null = 0;
  for (const t of dataTypes) {
    const s = staticSize(t);
    dataLength = s === null || dataLength === null ? null : dataLength + s;
  }
  const signature = fragment.format("sighash");
  return {
    spec,
    event: fragment.name,
    signature,
    topic0: fragment.topicHash.toLowerCase(),
    topicCount: 1 + topicTypes.length,
    topicTypes,
    dataTypes,
    dataLength,
    slots,
    hasScaled: slots.some((s) => s.scaled),
    words: slots.every((s) => s.word !== null),
    where: `${signature} [${spec.standard}]`,
  };
}

let layoutsByTopic: Map<string, Layout[]> | undefined;

/** topic0 → candidate layouts in {@link EVENT_SPECS} order; built once per process. */
function layouts(): Map<string, Layout[]> {
  if (layoutsByTopic) return layoutsByTopic;
  const out = new Map<string, Layout[]>();
  for (const spec of EVENT_SPECS) {
    const fragment = new Interface([spec.abi]).fragments[0] as EventFragment;
    const layout = compileLayout(spec, fragment);
    const list = out.get(layout.topic0);
    if (list) list.push(layout);
    else out.set(layout.topic0, [layout]);
  }
  layoutsByTopic = out;
  return out;
}

/**
 * Every supported event layout (see {@link EVENT_SPECS}), with its topic0 and expected shape.
 * Several layouts share a topic0 and are told apart by {@link SupportedEvent.topicCount}.
 */
export function supportedEvents(): SupportedEvent[] {
  return [...layouts().values()].flat().map((l) => ({
    standard: l.spec.standard,
    signature: l.signature,
    topic0: l.topic0,
    topicCount: l.topicCount,
    dataLength: l.dataLength,
    abi: l.spec.abi,
  }));
}

/** Renders an integer: minimal hex, `-0x…` for negatives. */
function intHex(v: bigint): string {
  return v < 0n ? `-0x${(-v).toString(16)}` : `0x${v.toString(16)}`;
}

interface Rendered {
  hex: string;
  num: number | null;
  text: string;
}

/** Renders one decoded ABI value (ethers' decoded JS value for `p`). */
function render(p: ParamType, v: unknown): Rendered {
  switch (p.baseType) {
    case "address": {
      const a = String(v).toLowerCase();
      return { hex: a, num: null, text: a };
    }
    case "bool":
      return v ? { hex: "0x1", num: 1, text: "true" } : { hex: "0x0", num: 0, text: "false" };
    case "string": {
      const s = String(v);
      return { hex: hexlify(toUtf8Bytes(s)), num: null, text: JSON.stringify(s) };
    }
    case "array":
    case "tuple": {
      const children = p.isTuple() ? p.components : null;
      const items = Array.from(v as ArrayLike<unknown>, (x, i) => render((children ? children[i] : p.arrayChildren) as ParamType, x));
      const text = items.map((i) => i.text).join(", ");
      return { hex: JSON.stringify(items.map((i) => i.hex)), num: null, text: children ? `(${text})` : `[${text}]` };
    }
    default: {
      if (typeof v === "bigint") return { hex: intHex(v), num: Number(v), text: v.toString() };
      const h = String(v).toLowerCase(); // bytes, bytesN
      return { hex: h, num: null, text: h };
    }
  }
}

function usableToken(t: TokenInfo | undefined): TokenInfo | undefined {
  return t && Number.isInteger(t.decimals) && t.decimals >= 0 && t.decimals <= 255 ? t : undefined;
}

function message(err: unknown): string {
  const e = err as { shortMessage?: unknown; message?: unknown };
  const m = typeof e?.shortMessage === "string" ? e.shortMessage : typeof e?.message === "string" ? e.message : String(err);
  return m.length > MAX_ERROR_LENGTH ? `${m.slice(0, MAX_ERROR_LENGTH)}…` : m;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function base(log: LogRecord, event: string, signature: string, standard: string): EventRecord {
  return {
    event,
    signature,
    standard,
    source: "standard",
    args: [],
    logIndex: log.logIndex,
    transactionIndex: log.transactionIndex,
    transactionHash: log.transactionHash,
    address: log.address,
    blockHash: log.blockHash,
    blockNumber: log.blockNumber,
    error: null,
    str: "",
    timestamp: log.timestamp,
  };
}

/**
 * The record of a log whose topic0 matched `candidates` but that none of them decodes: `args: []`,
 * `error` set, `str` = `Name(undecodable: <error>)`.
 * @param layout - the candidate that was tried (its `standard`), or undefined when none fits the topic count (all candidates' standards joined by `|`).
 */
export function failedEvent(log: LogRecord, candidates: Layout[], layout: Layout | undefined, error: string): EventRecord {
  const first = (layout ?? candidates[0]) as Layout;
  const standard = layout ? layout.spec.standard : [...new Set(candidates.map((c) => c.spec.standard))].join("|");
  const rec = base(log, first.event, first.signature, standard);
  rec.error = error;
  rec.str = `${first.event}(undecodable: ${error})`;
  return rec;
}

/**
 * Checks the log's shape against one layout and decodes it: from the hex words directly
 * (./words.ts) when every argument of the layout is one word and `fast` is on, else with ethers'
 * `AbiCoder`; both give the same record or the same reason.
 * @param token - decimals and symbol for the layout's scaled arguments, if known.
 * @param fast - take the fast path when the layout has one ({@link DecoderDeps.fastPath}); default true.
 * @returns the event, or the one-line reason it does not decode (never throws).
 */
export function decodeWith(layout: Layout, log: LogRecord, token: TokenInfo | undefined, fast = true): EventRecord | string {
  const where = layout.where;
  const topics = log.topics;
  for (let i = 1; i < topics.length; i++) {
    if (!WORD.test(topics[i] as string)) return `${where}: topic ${i} is not a 32-byte hex word`;
  }
  const data = typeof log.data === "string" ? log.data : "";
  if (!HEX_BYTES.test(data)) return `${where}: data is not 0x-prefixed hex bytes`;
  const dataBytes = (data.length - 2) / 2;
  if (layout.dataLength !== null && dataBytes !== layout.dataLength) {
    return `${where}: data is ${plural(dataBytes, "byte")}, expected ${layout.dataLength}`;
  }
  return fast && layout.words ? decodeWords(layout, log, data, token) : decodeEthers(layout, log, data, token);
}

/** The record of a decoded log: `args` and the `str` parts built by {@link decodeWords} or {@link decodeEthers}. */
function decodedEvent(layout: Layout, log: LogRecord, args: EventArg[], parts: string[]): EventRecord {
  const rec = base(log, layout.event, layout.signature, layout.spec.standard);
  rec.args = args;
  rec.str = `${layout.event}(${parts.join(", ")})`;
  return rec;
}

/** Appends one rendered argument to `args` and `parts`, with `scaled` when `big` is an amount of a known token. */
function pushArg(args: EventArg[], parts: string[], slot: Slot, r: Rendered, big: bigint | undefined, token: TokenInfo | undefined): void {
  let scaled: number | null = null;
  let text = r.text;
  if (slot.scaled && token && big !== undefined) {
    const dec = decimalText(big, token.decimals);
    scaled = Number(dec);
    text = token.symbol ? `${r.text} [${dec} ${token.symbol}]` : `${r.text} [${dec}]`;
  }
  args.push({ name: slot.name, pos: args.length, value: { hex: r.hex, num: r.num, scaled, type: slot.param.type } });
  parts.push(`${slot.name}=${text}`);
}

/** The fast path: every argument read from its word (./words.ts); the layout's shape is checked. */
function decodeWords(layout: Layout, log: LogRecord, data: string, token: TokenInfo | undefined): EventRecord | string {
  const args: EventArg[] = [];
  const parts: string[] = [];
  for (const slot of layout.slots) {
    const v = readWord(slot.word as WordPlan, log.topics, data);
    if (v === null) return `${layout.where}: argument ${slot.name} is not an address (non-zero upper 12 bytes)`;
    pushArg(args, parts, slot, v, v.big, token);
  }
  return decodedEvent(layout, log, args, parts);
}

/** The general path: ethers' `AbiCoder` (dynamic, array and tuple arguments); the layout's shape is checked. */
function decodeEthers(layout: Layout, log: LogRecord, data: string, token: TokenInfo | undefined): EventRecord | string {
  const where = layout.where;
  const topics = log.topics;
  let topicValues: ArrayLike<unknown> = [];
  let dataValues: ArrayLike<unknown> = [];
  try {
    if (layout.topicTypes.length > 0) {
      let words = "0x";
      for (let i = 1; i < topics.length; i++) words += (topics[i] as string).slice(2);
      topicValues = coder.decode(layout.topicTypes, words);
    }
    if (layout.dataTypes.length > 0) dataValues = coder.decode(layout.dataTypes, data);
  } catch (err) {
    return `${where}: cannot decode: ${message(err)}`;
  }
  const args: EventArg[] = [];
  const parts: string[] = [];
  for (const slot of layout.slots) {
    const v = (slot.indexed ? topicValues : dataValues)[slot.index];
    let r: Rendered;
    if (slot.hashed) {
      const h = String(v).toLowerCase();
      r = { hex: h, num: null, text: h };
    } else if (slot.addressAsUint) {
      if (typeof v !== "bigint" || v >= ADDRESS_LIMIT) return `${where}: argument ${slot.name} is not an address (non-zero upper 12 bytes)`;
      const a = `0x${v.toString(16).padStart(40, "0")}`;
      r = { hex: a, num: null, text: a };
    } else {
      r = render(slot.param, v);
    }
    pushArg(args, parts, slot, r, typeof v === "bigint" ? v : undefined, token);
  }
  return decodedEvent(layout, log, args, parts);
}

/**
 * The event of a log that a signature-database layout fits (./signatures.ts `matchSignature`),
 * arguments rendered like a standard layout's; null when none fits.
 */
function signatureEvent(log: LogRecord): EventRecord | null {
  const hit = matchSignature(log);
  if (!hit) return null;
  const args: EventArg[] = [];
  const parts: string[] = [];
  for (let pos = 0; pos < hit.args.length; pos++) {
    const a = hit.args[pos] as (typeof hit.args)[number];
    const r = render(a.renderType, a.value);
    args.push({ name: a.name, pos, value: { hex: r.hex, num: r.num, scaled: null, type: a.type } });
    parts.push(`${a.name}=${r.text}`);
  }
  const rec = base(log, hit.layout.event, hit.layout.signature, SIGNATURE_STANDARD);
  rec.source = "signature";
  rec.args = args;
  rec.str = `${hit.layout.event}(${parts.join(", ")})`;
  return rec;
}

/**
 * Creates a {@link Decoder}.
 *
 * Decoding rules (details in docs/decoding.md):
 * - A log is matched by topics[0] (case-insensitive) against {@link supportedEvents}; missing
 *   topic0 gives null; any other topic0 goes to the signature database (when
 *   {@link DecoderDeps.signatures}, default on), which gives an event or null.
 * - Among layouts sharing the topic0, the first whose topic count equals the log's is used
 *   (ERC-20 Transfer 3 topics, ERC-721 Transfer 4 topics or 1 topic, …). For static layouts the
 *   data must be exactly the ABI-encoded length; dirty padding of an address topic is an error.
 * - `str` is `Name(arg=value, …)` with addresses in full lower-case hex, integers in decimal,
 *   bools as true/false, arrays as `[a, b]`; a scaled amount is followed by
 *   `[<decimal amount> <symbol>]` (`[<decimal amount>]` for a token without a symbol), e.g. `Transfer(from=0x…, to=0x…, value=1500000 [1.5 USDT])`.
 *   A failed decode renders as `Name(undecodable: <error>)`.
 * - Record fields logIndex, transactionIndex, transactionHash, address, blockHash, blockNumber
 *   and timestamp are the log's (same objects, not copies).
 * @param deps the chain id (required), token lookup (default: bundled token list) and
 *   signature-database switch (default on).
 */
export function createDecoder(deps: DecoderDeps): Decoder {
  const { chainId } = deps;
  const tokens = deps.tokens ?? lookupToken;
  const signatures = deps.signatures ?? true;
  const fast = deps.fastPath ?? true;
  const table = layouts();
  return {
    decode(log: LogRecord, fallback?: TokenLookup): EventRecord | null {
      const topics = Array.isArray(log.topics) ? log.topics : [];
      const t0 = topics[0];
      if (typeof t0 !== "string") return null;
      const candidates = table.get(t0.toLowerCase());
      if (!candidates) return signatures ? signatureEvent(log) : null;
      let layout: Layout | undefined;
      try {
        layout = candidates.find((c) => c.topicCount === topics.length);
        if (!layout) {
          const fits = candidates.map((c) => `${plural(c.topicCount, "topic")} [${c.spec.standard}]`).join(" or ");
          const error = `${candidates[0]?.signature} with ${plural(topics.length, "topic")} fits no known layout (expected ${fits})`;
          return failedEvent(log, candidates, undefined, error);
        }
        let token: TokenInfo | undefined;
        if (layout.hasScaled && typeof log.address === "string") {
          const address = log.address.toLowerCase();
          token = usableToken(tokens(address, chainId) ?? fallback?.(address, chainId));
        }
        const out = decodeWith(layout, log, token, fast);
        return typeof out === "string" ? failedEvent(log, candidates, layout, out) : out;
      } catch (err) {
        return failedEvent(log, candidates, layout, `internal decoder error: ${message(err)}`);
      }
    },
  };
}
