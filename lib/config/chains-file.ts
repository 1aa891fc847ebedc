/**
 * The chains file (`CHAINSIFT_CHAINS_FILE`, e.g. `chainsift.chains.yaml`): the chains a deployment
 * knows, each with its URL segments, its EIP-155 chain id, its JSON-RPC endpoints and its per-chain
 * settings. One TypeBox schema ({@link ChainsFileSchema}) validates the file and documents it
 * (docs/chains.md); {@link parseChainsFile} and {@link loadChainsFile} check it and report every
 * problem at its path (`chains[1].rpcUrls[0]: …`) under one stable code,
 * {@link CHAINS_FILE_INVALID}. YAML (a superset of JSON) is parsed with the npm package `yaml`
 * (YAML 1.2 core schema), so a `.json` file is read the same way.
 *
 * This module only parses and validates; lib/config/index.ts `loadConfig()` maps the served chain's entry
 * onto the configuration.
 * @module
 */
import { readFileSync } from "node:fs";
import { type Static, Type } from "typebox";
import { parseDocument } from "yaml";
import { ChainsiftError } from "../errors.js";
import { checkAgainstSchema } from "../validation/schema-check.js";

/** The stable code of every chains-file error ({@link ChainsFileError}). */
export const CHAINS_FILE_INVALID = "CS_CHAINS_FILE_INVALID";

const segment = (what: string, example: string) =>
  Type.String({
    pattern: "^[a-z0-9][a-z0-9-]*$",
    maxLength: 64,
    description: `${what}: a URL segment of the search API (lower-case letters, digits, '-'), e.g. \`${example}\`.`,
  });

/** Where a token's decimals (for the `scaled` amounts of decoded events) may come from. */
export const TOKEN_DECIMALS_SOURCES = ["tokenList", "calls"] as const;

/** One served chain of the chains file (see {@link ChainsFileSchema}). */
export const ChainEntrySchema = Type.Object(
  {
    technology: segment("The chain's technology", "ethereum"),
    blockchain: segment("The blockchain", "base"),
    network: segment("The network", "mainnet"),
    chainId: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description:
        "EIP-155 chain id (https://chainlist.org, EIP-155): selects the bundled token list's entries and is checked against the node's `eth_chainId` when ingest starts.",
    }),
    rpcUrls: Type.Array(
      Type.String({
        pattern: "^https?://[^\\s]+$",
        description: "An http(s) JSON-RPC endpoint; userinfo is sent as HTTP Basic authentication and never logged.",
      }),
      {
        minItems: 1,
        description: "The chain's JSON-RPC endpoints in order of preference (ingest fails over between them; docs/reorgs.md).",
      },
    ),
    blockTimeMs: Type.Optional(
      Type.Integer({ minimum: 1, description: "Expected time between blocks, in ms (informative in this version: not used yet)." }),
    ),
    finality: Type.Optional(
      Type.Union([Type.Literal("finalized"), Type.Integer({ minimum: 0 })], {
        description:
          "When a block is final: `finalized` (the node's `finalized` block tag) or a depth in blocks below the head (informative in this version: not used yet).",
      }),
    ),
    traces: Type.Optional(
      Type.Union([Type.Literal("auto"), Type.Literal("on"), Type.Literal("off")], {
        description:
          "Call traces for Trace and Call rules: `auto` (default: probe debug_traceBlockByNumber, then trace_block, go on without when the node has neither), `on` (the same probe, but ingest refuses to start without traces), `off` (never fetched).",
      }),
    ),
    tokenDecimals: Type.Optional(
      Type.Array(Type.Union(TOKEN_DECIMALS_SOURCES.map((s) => Type.Literal(s))), {
        uniqueItems: true,
        description:
          "Sources of token decimals for scaled amounts: `tokenList` (the bundled @uniswap/default-token-list entries of this chainId) and `calls` (decimals()/symbol()/name() by eth_call, cached in Redis). Default both; `[]` scales nothing.",
      }),
    ),
    explorerUrl: Type.Optional(
      Type.String({
        pattern: "^(https?://[^\\s]+)?$",
        description:
          'Etherscan-style block explorer base URL for alert links (`/tx/<hash>`, …); `""` turns links off. Default: CHAINSIFT_EXPLORER_URLS, then the built-in Etherscan entries.',
      }),
    ),
    confirmations: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Default confirmation count of the chain's rules (informative in this version: rules still carry their own).",
      }),
    ),
    ingestConcurrency: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "Blocks fetched concurrently during a backfill. Default CHAINSIFT_INGEST_CONCURRENCY's default, 4.",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The whole chains file: `chains`, one entry per served chain. */
export const ChainsFileSchema = Type.Object(
  {
    chains: Type.Array(ChainEntrySchema, {
      minItems: 1,
      description: "The chains, at least one; no two with the same technology/blockchain/network or the same chainId.",
    }),
  },
  { additionalProperties: false },
);

/** One chain of the chains file, as written (optional fields absent). */
export type ChainEntry = Static<typeof ChainEntrySchema>;
/** The chains file, as written. */
export type ChainsFile = Static<typeof ChainsFileSchema>;

/** One problem of a chains file. */
export interface ChainsFileProblem {
  /** JSON path in the file, e.g. `chains[1].rpcUrls[0]`; `""` for the whole document. */
  path: string;
  /** What is wrong, without the path, e.g. `unknown property`. */
  message: string;
}

/**
 * A chains file that cannot be used: unreadable, not YAML, or against {@link ChainsFileSchema}
 * (unknown keys, bad types, an empty list) or duplicate chains. `message` is
 * `<file>: CS_CHAINS_FILE_INVALID: <path>: <problem>; <path>: <problem>…`.
 */
export class ChainsFileError extends ChainsiftError {
  /** Always {@link CHAINS_FILE_INVALID}. */
  readonly code = CHAINS_FILE_INVALID;
  constructor(
    /** The file's path as given (or `<inline>`). */
    readonly file: string,
    /** Every problem found, in document order. */
    readonly problems: ChainsFileProblem[],
  ) {
    super(`${file}: ${CHAINS_FILE_INVALID}: ${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join("; ")}`);
    this.name = "ChainsFileError";
  }
}

/** `technology/blockchain/network` of a chain: the key chains are told apart by (and `CHAINSIFT_CHAIN`'s value). */
export function chainKey(c: { technology: string; blockchain: string; network: string }): string {
  return `${c.technology}/${c.blockchain}/${c.network}`;
}

/**
 * Parses and validates a chains file's text.
 * @param text - YAML or JSON.
 * @param file - the file's name, for messages; default `<inline>`.
 * @returns the file, as written (defaults are applied by lib/config/index.ts).
 * @throws {ChainsFileError} for text that is not YAML (path `""`, the parser's message), for every
 *   schema problem (`chains[0].foo: unknown property`, `chains: must have at least 1 item`, …) and
 *   for duplicates (`chains[2]: duplicate chain ethereum/base/mainnet (also chains[0])`,
 *   `chains[2].chainId: duplicate chain id 8453 (also chains[0])`).
 */
export function parseChainsFile(text: string, file = "<inline>"): ChainsFile {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ChainsFileError(
      file,
      doc.errors.map((e) => ({ path: "", message: `not YAML: ${e.message.split("\n")[0]}` })),
    );
  }
  const value: unknown = doc.toJS();
  const issues = checkAgainstSchema(value, ChainsFileSchema);
  if (issues.length > 0) {
    throw new ChainsFileError(
      file,
      issues.map((i) => ({ path: i.path, message: i.keyword === "additionalProperties" ? "unknown property" : i.message })),
    );
  }
  const parsed = value as ChainsFile;
  const problems: ChainsFileProblem[] = [];
  const byKey = new Map<string, number>();
  const byId = new Map<number, number>();
  parsed.chains.forEach((c, i) => {
    const key = chainKey(c);
    const k = byKey.get(key);
    if (k !== undefined) problems.push({ path: `chains[${i}]`, message: `duplicate chain ${key} (also chains[${k}])` });
    else byKey.set(key, i);
    const d = byId.get(c.chainId);
    if (d !== undefined) problems.push({ path: `chains[${i}].chainId`, message: `duplicate chain id ${c.chainId} (also chains[${d}])` });
    else byId.set(c.chainId, i);
  });
  if (problems.length > 0) throw new ChainsFileError(file, problems);
  return parsed;
}

/**
 * Reads and validates a chains file.
 * @param path - the file (YAML or JSON).
 * @throws {ChainsFileError} when it cannot be read (`cannot read: <reason>`) or is invalid ({@link parseChainsFile}).
 */
export function loadChainsFile(path: string): ChainsFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ChainsFileError(path, [{ path: "", message: `cannot read: ${(err as Error).message}` }]);
  }
  return parseChainsFile(text, path);
}
