/**
 * Elasticsearch index names, settings and explicit mappings (`dynamic: strict`) of every record
 * kind. The search API derives its field allowlist from these mappings, so a field is searchable
 * exactly when it is mapped here.
 *
 * Design (ES docs: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/mapping-types.html):
 * - Addresses: `keyword` with the `lowercase` normalizer, so a `term` matches in any letter case;
 *   sub-field `.raw` is a plain keyword keeping the EIP-55 letter case (exact match).
 * - `event`: `text` (standard analyzer) plus `.raw` keyword (exact, case-sensitive).
 * - `args`: `nested`, so name and value conditions apply to the same argument.
 * - Quantities `{num, raw}`: `num` is `long` for small integers (block number, indexes, gas) and
 *   `double` for uint256 amounts (wei values, fees, event argument values), where values beyond
 *   2^53 are the nearest double and `raw`/`value.hex` stay exact. `unsigned_long` is not used: it
 *   still stops at 2^64 and is not in every distribution.
 * @module
 */
import type { ChainId } from "../lib/config/index.js";
import type { RecordKind } from "../lib/records.js";

type Mapping = Record<string, unknown>;

const keyword = { type: "keyword" } as const;
const hash = { type: "keyword" } as const;
const address = {
  type: "keyword",
  normalizer: "lowercase_address",
  fields: { raw: { type: "keyword" } },
} as const;
const smallQuantity = { properties: { num: { type: "long" }, raw: keyword } } as const;
const bigQuantity = { properties: { num: { type: "double" }, raw: keyword } } as const;
/** ISO 8601 without zone; ES reads it as UTC. */
const timestamp = { type: "date", format: "strict_date_optional_time" } as const;
/** Long hex blobs: kept in `_source`, not searchable. */
const blob = { type: "keyword", index: false, doc_values: false } as const;

/** A decode or execution error message: exact match, messages longer than 1024 characters not indexed. */
const errorMessage = { type: "keyword", ignore_above: 1024 } as const;
/**
 * Decoded arguments (`{name, pos, value: {hex, num, scaled, type}}[]`) of events and calls:
 * `nested`, so a name and a value condition apply to the same argument. `hex` is the mapping of
 * `value.hex` (addresses in any letter case; calls cap it, their arguments can be long).
 */
const decodedArgs = (hex: Mapping) =>
  ({
    type: "nested",
    properties: {
      name: keyword,
      pos: { type: "integer" },
      value: { properties: { hex, num: { type: "double" }, scaled: { type: "double" }, type: keyword } },
    },
  }) as const;

/** Explicit mapping per record kind. */
export const MAPPINGS: Record<RecordKind, Mapping> = {
  block: {
    dynamic: "strict",
    properties: {
      hash,
      parentHash: hash,
      number: smallQuantity,
      timestamp,
      miner: address,
      gasUsed: smallQuantity,
      gasLimit: smallQuantity,
      baseFeePerGas: bigQuantity,
      difficulty: bigQuantity,
      size: smallQuantity,
      extraData: blob,
      nonce: keyword,
      stateRoot: hash,
      transactionsRoot: hash,
      receiptsRoot: hash,
      transactionCount: { type: "integer" },
      uncles: hash,
      withdrawalsCount: { type: "integer" },
      logsBloom: blob,
      totalDifficulty: bigQuantity,
      sha3Uncles: hash,
      mixHash: hash,
      withdrawalsRoot: hash,
      withdrawals: {
        type: "nested",
        properties: { index: smallQuantity, validatorIndex: smallQuantity, address, amount: bigQuantity },
      },
      parentBeaconBlockRoot: hash,
      blobGasUsed: smallQuantity,
      excessBlobGas: smallQuantity,
      requestsHash: hash,
    },
  },
  tx: {
    dynamic: "strict",
    properties: {
      hash,
      blockHash: hash,
      blockNumber: smallQuantity,
      transactionIndex: smallQuantity,
      timestamp,
      from: address,
      to: address,
      value: bigQuantity,
      gas: smallQuantity,
      gasPrice: bigQuantity,
      maxFeePerGas: bigQuantity,
      maxPriorityFeePerGas: bigQuantity,
      nonce: smallQuantity,
      type: smallQuantity,
      input: blob,
      methodId: keyword,
      status: { type: "integer" },
      gasUsed: smallQuantity,
      cumulativeGasUsed: smallQuantity,
      effectiveGasPrice: bigQuantity,
      contractAddress: address,
      logCount: { type: "integer" },
      chainId: smallQuantity,
      v: smallQuantity,
      r: blob,
      s: blob,
      yParity: smallQuantity,
      accessList: { properties: { address, storageKeys: hash } },
      maxFeePerBlobGas: bigQuantity,
      blobVersionedHashes: hash,
      authorizationList: {
        properties: { chainId: smallQuantity, address, nonce: smallQuantity, yParity: smallQuantity, r: blob, s: blob },
      },
      root: hash,
      logsBloom: blob,
      blobGasUsed: smallQuantity,
      blobGasPrice: bigQuantity,
    },
  },
  log: {
    dynamic: "strict",
    properties: {
      address,
      topics: hash,
      data: blob,
      blockHash: hash,
      blockNumber: smallQuantity,
      transactionHash: hash,
      transactionIndex: smallQuantity,
      logIndex: smallQuantity,
      removed: { type: "boolean" },
      timestamp,
    },
  },
  event: {
    dynamic: "strict",
    properties: {
      event: { type: "text", fields: { raw: { type: "keyword" } } },
      signature: keyword,
      standard: keyword,
      source: keyword,
      args: decodedArgs({ type: "keyword", normalizer: "lowercase_address" }),
      logIndex: smallQuantity,
      transactionIndex: smallQuantity,
      transactionHash: hash,
      address,
      blockHash: hash,
      blockNumber: smallQuantity,
      error: errorMessage,
      str: { type: "text" },
      timestamp,
    },
  },
  call: {
    dynamic: "strict",
    properties: {
      type: keyword,
      from: address,
      to: address,
      value: bigQuantity,
      gas: smallQuantity,
      gasUsed: smallQuantity,
      input: blob,
      output: blob,
      methodId: keyword,
      error: errorMessage,
      depth: { type: "integer" },
      traceAddress: { type: "integer" },
      subtraces: { type: "integer" },
      name: keyword,
      signature: keyword,
      args: decodedArgs({ type: "keyword", normalizer: "lowercase_address", ignore_above: 4096 }),
      transactionHash: hash,
      transactionIndex: smallQuantity,
      blockHash: hash,
      blockNumber: smallQuantity,
      timestamp,
    },
  },
};

/**
 * Index settings shared by every kind: one shard, no replicas (a single node goes green), and
 * the `lowercase_address` normalizer (custom normalizer with the `lowercase` filter). Backing
 * indices take their kind's primaries and replicas instead (es/partitions.ts `partitionSettings`).
 */
export const INDEX_SETTINGS = {
  number_of_shards: 1,
  number_of_replicas: 0,
  analysis: { normalizer: { lowercase_address: { type: "custom", filter: ["lowercase"] } } },
} as const;

/** Index name of a kind: `<prefix><technology>-<blockchain>-<network>-<kind>` (lower-case, as ES requires). */
export function indexName(chain: ChainId, kind: RecordKind, prefix = ""): string {
  return `${prefix}${chain.technology}-${chain.blockchain}-${chain.network}-${kind}`.toLowerCase();
}

/**
 * Kind of an index name produced by {@link indexName} (an alias), or of one of its backing
 * indices (`<alias>-p<partition>`, es/partitions.ts), or undefined.
 */
export function kindOfIndex(index: string): RecordKind | undefined {
  const m = /-(block|tx|log|event|call)(?:-p\d+)?$/.exec(index);
  return m?.[1] as RecordKind | undefined;
}

/** One leaf field of a mapping with its ES type. */
export interface MappedField {
  /** Dotted path, e.g. `args.value.hex` or `address.raw`. */
  path: string;
  /** ES field type, e.g. `keyword`, `long`, `text`, `nested`. */
  type: string;
  /** Path of the enclosing nested object, e.g. `args`, if any. */
  nestedPath?: string;
  /** Whether the field is searchable (`index: false` fields are not). */
  searchable: boolean;
}

/** Flattens a kind's mapping into its leaf fields (including multi-fields such as `address.raw`). */
export function mappedFields(kind: RecordKind): MappedField[] {
  const out: MappedField[] = [];
  const walk = (props: Record<string, Mapping>, prefix: string, nestedPath?: string): void => {
    for (const [name, def] of Object.entries(props)) {
      const path = prefix + name;
      const type = (def.type as string | undefined) ?? "object";
      if (type === "nested") {
        out.push({ path, type, nestedPath, searchable: true });
        walk(def.properties as Record<string, Mapping>, `${path}.`, path);
        continue;
      }
      if (def.properties) {
        walk(def.properties as Record<string, Mapping>, `${path}.`, nestedPath);
        continue;
      }
      out.push({ path, type, nestedPath, searchable: def.index !== false });
      const fields = def.fields as Record<string, Mapping> | undefined;
      for (const [sub, subDef] of Object.entries(fields ?? {})) {
        out.push({ path: `${path}.${sub}`, type: subDef.type as string, nestedPath, searchable: true });
      }
    }
  };
  walk((MAPPINGS[kind] as { properties: Record<string, Mapping> }).properties, "");
  return out;
}
