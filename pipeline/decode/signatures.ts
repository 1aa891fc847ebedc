/**
 * The bundled event-signature database: the event ABIs of OpenZeppelin Contracts (npm package
 * `@openzeppelin/contracts`, its Hardhat artifacts `build/contracts/*.json`), by topic0, for logs
 * whose topic0 is no standard layout ({@link EVENT_SPECS}) and whose contract has no user ABI.
 * The decoder (./decoder.ts, `DecoderDeps.signatures`) renders a {@link SignatureMatch} into an
 * event with `source: "signature"` and `standard` {@link SIGNATURE_STANDARD}. See docs/decoding.md,
 * "Unknown events by signature".
 *
 * Strict rule ({@link matchSignature}): a candidate applies only when its indexed arguments are
 * exactly the log's topics after topic0 (count equal) and both the topics and `data` re-encode
 * byte for byte from the decoded values (no trailing bytes, no dirty padding, canonical offsets);
 * several fit → the first in {@link SignatureDatabase.byTopic} order; none fits → no event.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { AbiCoder, EventFragment, Interface, ParamType } from "ethers";
import type { LogRecord } from "../../lib/records.js";
import { EVENT_SPECS } from "./events.js";

/** The record `standard` of events decoded from the signature database: the database's name. */
export const SIGNATURE_STANDARD = "openzeppelin";

/** The npm package the layouts come from. */
export const SIGNATURE_PACKAGE = "@openzeppelin/contracts";

/** One event layout of the database. */
export interface SignatureLayout {
  /** Event name, e.g. `OwnershipTransferred`. */
  event: string;
  /** Canonical signature, e.g. `OwnershipTransferred(address,address)`. */
  signature: string;
  /** keccak-256 of the signature, lower-case `0x` hex: the log's topics[0]. */
  topic0: string;
  /** The layout with names and `indexed` markers, e.g. `event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)`. */
  abi: string;
  /** The artifact it was first found in (file name without `.json`), e.g. `Ownable`. */
  origin: string;
  /** Number of topics a fitting log has: 1 + indexed arguments. */
  topicCount: number;
  /** Per argument in declaration order: its name (`arg<pos>` when the ABI has none) and declared type. */
  inputs: readonly { name: string; type: string; indexed: boolean }[];
  /** Types decoded from topics[1..] (an indexed dynamic argument is its `bytes32` hash). */
  topicTypes: readonly ParamType[];
  /** Types decoded from `data`. */
  dataTypes: readonly ParamType[];
  /** Per argument: the type its value is rendered with (`bytes32` for an indexed dynamic argument). */
  renderTypes: readonly ParamType[];
}

/** The loaded database. */
export interface SignatureDatabase {
  /** npm package name, {@link SIGNATURE_PACKAGE}. */
  package: string;
  /** Installed version of the package, from its package.json, e.g. `5.7.0`. */
  version: string;
  /** Artifacts read (files `build/contracts/*.json`). */
  artifacts: number;
  /** Distinct layouts kept (identical layouts deduplicated, standard topic0s dropped). */
  layouts: number;
  /** Wall time the load took, in ms (read and parse the artifacts, build the table). */
  loadMs: number;
  /**
   * topic0 (lower-case) → candidate layouts in the database order: artifacts by file name (code
   * unit order), events in each artifact's ABI order; only the first of identical layouts is kept.
   */
  byTopic: ReadonlyMap<string, readonly SignatureLayout[]>;
}

/** One argument of a fitting log. */
export interface SignatureArg {
  /** The ABI's name, or `arg<pos>` when it is empty. */
  name: string;
  /** Declared Solidity type, e.g. `address`, `bytes` (also for an indexed dynamic argument, whose value is its hash). */
  type: string;
  /** The type to render {@link SignatureArg.value} with: the declared one, `bytes32` for an indexed dynamic argument. */
  renderType: ParamType;
  /** ethers' decoded value (bigint, checksummed address string, hex string, boolean, array, …). */
  value: unknown;
}

/** A log that fits a database layout. */
export interface SignatureMatch {
  layout: SignatureLayout;
  /** The arguments in declaration order. */
  args: SignatureArg[];
}

const coder = AbiCoder.defaultAbiCoder();
const TOPIC_WORD = ParamType.from("bytes32");
const WORD = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;

/** Whether the ABI logs only the keccak-256 of an indexed argument of this type (Solidity ABI spec, "Events"). */
function hashedWhenIndexed(p: ParamType): boolean {
  return p.isArray() || p.isTuple() || p.baseType === "string" || p.baseType === "bytes";
}

function compile(fragment: EventFragment, origin: string): SignatureLayout {
  const topicTypes: ParamType[] = [];
  const dataTypes: ParamType[] = [];
  const renderTypes: ParamType[] = [];
  const inputs = fragment.inputs.map((p, pos) => {
    const indexed = p.indexed === true;
    const renderType = indexed && hashedWhenIndexed(p) ? TOPIC_WORD : p;
    (indexed ? topicTypes : dataTypes).push(renderType);
    renderTypes.push(renderType);
    return { name: p.name || `arg${pos}`, type: p.type, indexed };
  });
  return {
    event: fragment.name,
    signature: fragment.format("sighash"),
    topic0: fragment.topicHash.toLowerCase(),
    abi: fragment.format("full"),
    origin,
    topicCount: 1 + topicTypes.length,
    inputs,
    topicTypes,
    dataTypes,
    renderTypes,
  };
}

/** Identity of a layout for deduplication: the canonical signature plus which arguments are indexed (names do not count). */
function layoutKey(fragment: EventFragment): string {
  return `${fragment.format("sighash")}/${fragment.inputs.map((p) => (p.indexed ? 1 : 0)).join("")}`;
}

/** The topic0s {@link EVENT_SPECS} decodes: the standard decoder owns them, whatever the log's shape. */
function standardTopics(): Set<string> {
  return new Set(EVENT_SPECS.map((s) => (new Interface([s.abi]).fragments[0] as EventFragment).topicHash.toLowerCase()));
}

/**
 * Reads the artifacts of the installed package and builds the table.
 * @throws when the package is not installed or an artifact is not JSON (a broken install).
 */
function load(): SignatureDatabase {
  const started = performance.now();
  const pkgFile = createRequire(import.meta.url).resolve(`${SIGNATURE_PACKAGE}/package.json`);
  const version = String((JSON.parse(readFileSync(pkgFile, "utf8")) as { version?: unknown }).version);
  const dir = join(dirname(pkgFile), "build", "contracts");
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const standard = standardTopics();
  const seen = new Set<string>();
  const byTopic = new Map<string, SignatureLayout[]>();
  let layouts = 0;
  for (const file of files) {
    const artifact = JSON.parse(readFileSync(join(dir, file), "utf8")) as { abi?: unknown };
    const abi = Array.isArray(artifact.abi) ? artifact.abi : [];
    for (const item of abi) {
      if ((item as { type?: unknown }).type !== "event" || (item as { anonymous?: unknown }).anonymous === true) continue;
      const fragment = EventFragment.from(item);
      const key = layoutKey(fragment);
      if (seen.has(key)) continue;
      seen.add(key);
      const layout = compile(fragment, file.slice(0, -".json".length));
      if (standard.has(layout.topic0)) continue;
      const list = byTopic.get(layout.topic0);
      if (list) list.push(layout);
      else byTopic.set(layout.topic0, [layout]);
      layouts++;
    }
  }
  return { package: SIGNATURE_PACKAGE, version, artifacts: files.length, layouts, loadMs: performance.now() - started, byTopic };
}

let database: SignatureDatabase | undefined;

/**
 * The database, loaded on first use (once per process; about 0.2–0.5 s, see `loadMs`).
 * @throws when `@openzeppelin/contracts` is not installed or an artifact is unreadable.
 */
export function signatureDatabase(): SignatureDatabase {
  database ??= load();
  return database;
}

/** The decoded values of `types` from `hex`, or null unless they re-encode to exactly `hex` (lower-case). */
function strictDecode(types: readonly ParamType[], hex: string): ArrayLike<unknown> | null {
  if (types.length === 0) return hex === "0x" ? [] : null;
  try {
    const values = coder.decode(types, hex);
    return coder.encode(types, values) === hex ? values : null;
  } catch {
    return null;
  }
}

/** Fits one layout to the log's topic words (after topic0) and data, both lower-case. */
function fitLayout(layout: SignatureLayout, topicWords: string, data: string): SignatureArg[] | null {
  const topicValues = strictDecode(layout.topicTypes, topicWords);
  if (!topicValues) return null;
  const dataValues = strictDecode(layout.dataTypes, data);
  if (!dataValues) return null;
  let t = 0;
  let d = 0;
  return layout.inputs.map((input, pos) => ({
    name: input.name,
    type: input.type,
    renderType: layout.renderTypes[pos] as ParamType,
    value: input.indexed ? topicValues[t++] : dataValues[d++],
  }));
}

/**
 * Finds the database layout that decodes a log, by the strict rule (module notes). Loads the
 * database on first call ({@link signatureDatabase}).
 * @param log - a log whose topic0 is no standard layout (a standard topic0 never matches: those
 *   layouts are not in the database).
 * @returns the first fitting candidate with the decoded arguments; null when topic0 is not in the
 *   database, no candidate has the log's topic count, the topics or data are not hex words/bytes,
 *   or no candidate re-encodes to the log exactly. Never throws once the database is loaded.
 * @throws only the load error of {@link signatureDatabase}.
 */
export function matchSignature(log: LogRecord): SignatureMatch | null {
  const topics = Array.isArray(log.topics) ? log.topics : [];
  const t0 = topics[0];
  if (typeof t0 !== "string") return null;
  const candidates = signatureDatabase().byTopic.get(t0.toLowerCase());
  if (!candidates) return null;
  let topicWords = "0x";
  for (let i = 1; i < topics.length; i++) {
    const w = topics[i];
    if (typeof w !== "string" || !WORD.test(w)) return null;
    topicWords += w.slice(2).toLowerCase();
  }
  const data = typeof log.data === "string" ? log.data.toLowerCase() : "";
  if (!HEX_BYTES.test(data)) return null;
  for (const layout of candidates) {
    if (layout.topicCount !== topics.length) continue;
    const args = fitLayout(layout, topicWords, data);
    if (args) return { layout, args };
  }
  return null;
}
