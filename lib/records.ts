/**
 * Record shapes that flow through chainsift: what ingest writes to Kafka, what decode produces,
 * what index stores as Elasticsearch `_source`, and what the search API returns.
 *
 * The field names follow the service contract (`../shared/contract/`) and the Ethereum JSON-RPC
 * specification (https://ethereum.github.io/execution-apis/api-documentation/).
 *
 * Conventions:
 * - Hashes are lower-case `0x`-prefixed hex, as the node returns them.
 * - Addresses are EIP-55 checksummed (https://eips.ethereum.org/EIPS/eip-55): that is the
 *   "original letter case" kept by the `.raw` sub-field; the main field is case-insensitive.
 * - `timestamp` is ISO 8601 UTC without a zone suffix, e.g. `2023-04-13T08:39:11`.
 * @module
 */

/**
 * A non-negative integer quantity as the contract renders it: `num` for numeric sorting and
 * ranges, `raw` the node's hex string.
 *
 * For small quantities (block numbers, indexes, gas) `num` is exact. For uint256 quantities
 * (`value`, fees, difficulty) `num` is the nearest IEEE-754 double: exact up to 2^53, approximate
 * beyond; `raw` is always exact.
 */
export interface Quantity {
  /** Numeric value; exact up to 2^53 (Number.MAX_SAFE_INTEGER), the nearest double beyond. */
  num: number;
  /** The value as the node returned it: `0x`-prefixed hex without leading zeros. */
  raw: string;
}

/** A block header plus counts. Kafka key and Elasticsearch `_id`: the block hash. */
export interface BlockRecord {
  hash: string;
  parentHash: string;
  number: Quantity;
  /** ISO 8601 UTC without zone, from the header's `timestamp` (seconds since epoch). */
  timestamp: string;
  /** Fee recipient (coinbase), EIP-55. */
  miner: string;
  gasUsed: Quantity;
  gasLimit: Quantity;
  /** EIP-1559 base fee in wei; null before the London fork (block 12,965,000). */
  baseFeePerGas: Quantity | null;
  difficulty: Quantity;
  /** Block size in bytes; null when the node omits it. */
  size: Quantity | null;
  extraData: string;
  nonce: string | null;
  stateRoot: string;
  transactionsRoot: string;
  receiptsRoot: string;
  transactionCount: number;
  /** Uncle (ommer) block hashes. */
  uncles: string[];
  /** EIP-4895 withdrawals count; null before the Shanghai fork. */
  withdrawalsCount: number | null;
  /** The 256-byte bloom filter of the block's logs (hex). Null when the node omits it. */
  logsBloom: string | null;
  /**
   * Total difficulty of the chain up to this block. Null when the node omits it: Erigon never
   * returns it, geth dropped it after the merge (it stays 58750003716598352816469 from then on).
   */
  totalDifficulty: Quantity | null;
  /** Hash of the RLP of the uncle headers (`sha3Uncles`). */
  sha3Uncles: string | null;
  /** `mixHash`; since the merge (EIP-4399) it carries the beacon chain's `prevRandao`. */
  mixHash: string | null;
  /** EIP-4895 withdrawals trie root; null before Shanghai. */
  withdrawalsRoot: string | null;
  /** EIP-4895 withdrawals, in block order; null before Shanghai (an empty list after it). */
  withdrawals: WithdrawalRecord[] | null;
  /** EIP-4788 parent beacon block root; null before Cancun. */
  parentBeaconBlockRoot: string | null;
  /** EIP-4844 blob gas used by the block's blob transactions; null before Cancun. */
  blobGasUsed: Quantity | null;
  /** EIP-4844 excess blob gas; null before Cancun. */
  excessBlobGas: Quantity | null;
  /** EIP-7685 hash of the execution-layer requests; null before Prague. */
  requestsHash: string | null;
}

/** An EIP-4895 withdrawal from the beacon chain (https://eips.ethereum.org/EIPS/eip-4895), nested in its block. */
export interface WithdrawalRecord {
  /** Monotonic withdrawal index. */
  index: Quantity;
  validatorIndex: Quantity;
  /** Recipient, EIP-55. */
  address: string;
  /** Amount in gwei (not wei). */
  amount: Quantity;
}

/** An EIP-2930 access list entry (https://eips.ethereum.org/EIPS/eip-2930). */
export interface AccessListEntry {
  /** EIP-55. */
  address: string;
  /** 32-byte storage slots (hex). */
  storageKeys: string[];
}

/** An EIP-7702 authorization (https://eips.ethereum.org/EIPS/eip-7702) of a set-code (type 4) transaction. */
export interface AuthorizationRecord {
  chainId: Quantity;
  /** The code the authority delegates to, EIP-55. */
  address: string;
  nonce: Quantity;
  yParity: Quantity;
  /** Signature `r` (hex, as the node returns it). */
  r: string;
  /** Signature `s` (hex). */
  s: string;
}

/**
 * A transaction merged with its receipt. Kafka key and `_id`: the transaction hash;
 * `_routing`/`_parent`: the block hash.
 */
export interface TransactionRecord {
  hash: string;
  blockHash: string;
  blockNumber: Quantity;
  transactionIndex: Quantity;
  timestamp: string;
  /** Sender, EIP-55. */
  from: string;
  /** Receiver, EIP-55; null for a contract creation. */
  to: string | null;
  /** Transferred wei. */
  value: Quantity;
  gas: Quantity;
  gasPrice: Quantity | null;
  maxFeePerGas: Quantity | null;
  maxPriorityFeePerGas: Quantity | null;
  nonce: Quantity;
  /** EIP-2718 transaction type (0 legacy, 1 access list, 2 EIP-1559, 3 blob, 4 set-code). */
  type: Quantity;
  input: string;
  /** First four bytes of `input` (the function selector), or null when input is shorter. */
  methodId: string | null;
  /** Receipt status: 1 success, 0 failure, null before Byzantium (EIP-658). */
  status: number | null;
  gasUsed: Quantity | null;
  cumulativeGasUsed: Quantity | null;
  effectiveGasPrice: Quantity | null;
  /** Address of the created contract, EIP-55, or null. */
  contractAddress: string | null;
  /** Number of logs in the receipt. */
  logCount: number;
  /** EIP-155 chain id; null for legacy transactions signed without it (and when the node omits it). */
  chainId: Quantity | null;
  /** Signature `v` (legacy: 27/28 or EIP-155 `chainId * 2 + 35/36`; typed: the y parity). */
  v: Quantity | null;
  /** Signature `r` (hex, as the node returns it: an opaque 32-byte value, so no `{num, raw}`). */
  r: string | null;
  /** Signature `s` (hex). */
  s: string | null;
  /** Signature y parity of typed transactions (EIP-2930 and later); null for legacy ones. */
  yParity: Quantity | null;
  /** EIP-2930 access list (types 1 to 4); null for legacy transactions. */
  accessList: AccessListEntry[] | null;
  /** EIP-4844 maximum fee per blob gas, in wei (type 3); null otherwise. */
  maxFeePerBlobGas: Quantity | null;
  /** EIP-4844 blob versioned hashes (type 3); null otherwise. */
  blobVersionedHashes: string[] | null;
  /** EIP-7702 authorization list (type 4); null otherwise. */
  authorizationList: AuthorizationRecord[] | null;
  /** Receipt: post-transaction state root, before Byzantium (EIP-658 replaced it with `status`); null after. */
  root: string | null;
  /** Receipt: the 256-byte bloom filter of the transaction's logs (hex); null without a receipt. */
  logsBloom: string | null;
  /** Receipt: EIP-4844 blob gas used (type 3); null otherwise. */
  blobGasUsed: Quantity | null;
  /** Receipt: EIP-4844 blob gas price, in wei (type 3); null otherwise. */
  blobGasPrice: Quantity | null;
}

/**
 * A receipt log. Kafka key and `_id`: `<transactionHash>_l_<logIndex>`; `_routing`/`_parent`:
 * the transaction hash.
 */
export interface LogRecord {
  /** Emitting contract, EIP-55. */
  address: string;
  topics: string[];
  data: string;
  blockHash: string;
  blockNumber: Quantity;
  transactionHash: string;
  transactionIndex: Quantity;
  /** Position of the log in the block. */
  logIndex: Quantity;
  removed: boolean;
  timestamp: string;
}

/** One decoded event argument, as the contract's `args[]` element. */
export interface EventArg {
  name: string;
  /** Zero-based position in the event signature. */
  pos: number;
  value: {
    /**
     * Hex rendering: addresses lower-case 20-byte hex, integers minimal `0x` hex (two's
     * complement for negative ints is not used; negatives are `-0x…`), bytes as-is, bools `0x0`/`0x1`.
     */
    hex: string;
    /** Numeric value for integer and bool arguments (see {@link Quantity.num} for precision); else null. */
    num: number | null;
    /** `num` divided by 10^decimals of the emitting token, when the decimals are known; else null. */
    scaled: number | null;
    /** Solidity type name, e.g. `address`, `uint256`. */
    type: string;
  };
}

/**
 * Which source of event layouts decoded a log into an {@link EventRecord} (docs/decoding.md):
 * - `standard`: the bundled standard layouts (`EVENT_SPECS`: ERC-20/721/1155, WETH9, Uniswap V2/V3);
 * - `abi`: an ABI a user registered for the emitting contract (or for the event, any address);
 * - `signature`: the bundled event-signature database, by topic0 alone (argument names may be
 *   positional, `arg0`, `arg1`, …).
 * Events written to Kafka before the field existed read as `standard` (its Avro default): the
 * standard layouts were the only source then.
 */
export type EventSource = "standard" | "abi" | "signature";

/**
 * A log decoded into a named event. Kafka key and `_id`: `<transactionHash>_e_<logIndex>`;
 * `_routing`/`_parent`: the transaction hash.
 */
export interface EventRecord {
  /** Event name, e.g. `Transfer`. */
  event: string;
  /** Canonical signature, e.g. `Transfer(address,address,uint256)`. */
  signature: string;
  /**
   * Token standard or protocol the decoder recognised, e.g. `erc20`, `erc721`, `weth`, `uniswap-v2`;
   * `openzeppelin` for an event decoded from the signature database (`source: "signature"`).
   */
  standard: string;
  /** Which source of event layouts decoded the log (see {@link EventSource}). */
  source: EventSource;
  args: EventArg[];
  logIndex: Quantity;
  transactionIndex: Quantity;
  transactionHash: string;
  /** Emitting contract, EIP-55. */
  address: string;
  blockHash: string;
  blockNumber: Quantity;
  /** Why decoding failed (the topic matched but the data did not), else null. */
  error: string | null;
  /** Textual rendering, e.g. `Transfer(from=0x…, to=0x…, value=1.5 USDT)`. */
  str: string;
  timestamp: string;
}

/**
 * The call trace of one transaction, as geth's `callTracer` returns it
 * (https://geth.ethereum.org/docs/developers/evm-tracing/built-in-tracers#call-tracer), with the
 * transaction's place in the chain. Kafka key: `<transactionHash>_t`. The nested frame tree is kept
 * as JSON text (`frameJson`); the match stage flattens it into Trace and Call entities.
 */
export interface TraceRecord {
  transactionHash: string;
  transactionIndex: Quantity;
  /** Sender of the transaction, EIP-55. */
  transactionFrom: string;
  blockHash: string;
  blockNumber: Quantity;
  timestamp: string;
  /** The top-level callTracer frame as JSON: `{type, from, to, value, gas, gasUsed, input, output, error, calls: [...]}`. */
  frameJson: string;
}

/**
 * One frame of a transaction's call trace (internal call), as indexed for search: the flattened
 * callTracer frame plus, when its input decodes against the built-in ABI set
 * (lib/chain/methods.ts), the decoded call. `_id`: `<transactionHash>_c_<traceAddress joined by _>`
 * (`…_c_` alone for the top-level frame); `_routing`/`_parent`: the transaction hash.
 */
export interface CallRecord {
  /** CALL, DELEGATECALL, STATICCALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT. */
  type: string;
  /** Caller, EIP-55. */
  from: string;
  /** Callee / created contract, EIP-55; null for a failed CREATE. */
  to: string | null;
  value: Quantity | null;
  gas: Quantity | null;
  gasUsed: Quantity | null;
  input: string;
  output: string | null;
  /** First four bytes of `input`, or null. */
  methodId: string | null;
  error: string | null;
  /** 0 for the transaction's top-level frame. */
  depth: number;
  /** Position in the call tree (Parity `traceAddress`): `[]` top level, `[i]` its i-th sub-call, … */
  traceAddress: number[];
  subtraces: number;
  /** Decoded function name, e.g. `transfer`, or null when the input does not decode. */
  name: string | null;
  signature: string | null;
  args: EventArg[];
  transactionHash: string;
  transactionIndex: Quantity | null;
  blockHash: string;
  blockNumber: Quantity;
  timestamp: string | null;
}

/**
 * One orphaned block, as ingest announces it on the `reorgs` topic when it finds that the node's
 * canonical chain no longer contains a block it produced. Ingest publishes one record per orphaned
 * height, before any record of the new branch; every record produced earlier whose `blockHash` is
 * `orphanedHash` (block, transactions, logs, events, traces) is no longer part of the chain.
 * Kafka key: `orphanedHash`. Not indexed (docs/reorgs.md explains the model).
 */
export interface ReorgRecord {
  /** Height of the orphaned block. */
  number: number;
  /** Hash of the block that left the canonical chain. */
  orphanedHash: string;
  /**
   * Hash of the node's canonical block at that height when the reorg was found (the new branch's
   * block ingest produces next), or null when the node had no block at that height yet.
   */
  replacedBy: string | null;
  /** Height of the last block both branches share (the common ancestor). */
  ancestorNumber: number;
  /** Hash of the common ancestor, or null when it lies below the follower's window (a reorg deeper than the window). */
  ancestorHash: string | null;
  /** Depth of the reorg: how many produced blocks it orphaned (the same in every record of one reorg). */
  depth: number;
  /** When ingest found the reorg, ISO 8601 UTC with milliseconds and `Z`. */
  detectedAt: string;
}

/** The record kinds stored and searchable. `tx` is a transaction, `call` an internal call. */
export type RecordKind = "block" | "tx" | "log" | "event" | "call";

/** Every record kind, in pipeline order. */
export const RECORD_KINDS: readonly RecordKind[] = ["block", "tx", "log", "event", "call"];

/** Maps each kind to its record type. */
export interface RecordByKind {
  block: BlockRecord;
  tx: TransactionRecord;
  log: LogRecord;
  event: EventRecord;
  call: CallRecord;
}

/** `_id` of a call frame: `<transactionHash>_c_<traceAddress joined by _>`. */
export function callId(c: Pick<CallRecord, "transactionHash" | "traceAddress">): string {
  return `${c.transactionHash}_c_${c.traceAddress.join("_")}`;
}

/** `_id` (and Kafka key) of a log: `<transactionHash>_l_<logIndex>`. */
export function logId(log: Pick<LogRecord, "transactionHash" | "logIndex">): string {
  return `${log.transactionHash}_l_${log.logIndex.num}`;
}

/** `_id` (and Kafka key) of an event, the contract's `<transaction_hash>_e_<integer>` (the log index). */
export function eventId(ev: Pick<EventRecord, "transactionHash" | "logIndex">): string {
  return `${ev.transactionHash}_e_${ev.logIndex.num}`;
}

/** The deterministic `_id` of any record; replays overwrite instead of duplicating. */
export function recordId<K extends RecordKind>(kind: K, record: RecordByKind[K]): string {
  switch (kind) {
    case "block":
      return (record as BlockRecord).hash;
    case "tx":
      return (record as TransactionRecord).hash;
    case "log":
      return logId(record as LogRecord);
    case "call":
      return callId(record as CallRecord);
    default:
      return eventId(record as EventRecord);
  }
}

/**
 * The field of a record holding its parent hash ({@link parentOf}): `blockHash` for a
 * transaction, `transactionHash` for a log, event or call, none for a block.
 */
export const PARENT_FIELD: Readonly<Record<RecordKind, "blockHash" | "transactionHash" | undefined>> = {
  block: undefined,
  tx: "blockHash",
  log: "transactionHash",
  event: "transactionHash",
  call: "transactionHash",
};

/**
 * The hash of the containing entity, used as `_routing` and `_parent` of a hit: the block hash for
 * a transaction, the transaction hash for a log or event, none for a block.
 */
export function parentOf<K extends RecordKind>(kind: K, record: RecordByKind[K]): string | undefined {
  switch (kind) {
    case "block":
      return undefined;
    case "tx":
      return (record as TransactionRecord).blockHash;
    default:
      return (record as LogRecord | EventRecord | CallRecord).transactionHash;
  }
}
