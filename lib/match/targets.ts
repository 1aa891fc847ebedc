/**
 * One descriptor per rule target type: what the match stage and the backtest need to know of a
 * type besides how its entities are built (`lib/match/entities.ts`). `satisfies Record<TargetType,
 * TargetDescriptor>` makes the compiler ask for every part when a type is added to
 * `lib/rules/model.ts` `TARGET_TYPES`; the tables the matching code reads
 * (`DEFAULT_PAYLOAD_FIELDS`, `BACKTEST_SOURCES`, `INDEXED_ATTRIBUTES`) are derived from here.
 * Attribute names are those of docs/alerting-match.md. Pure data.
 * @module
 */
import type { RecordKind } from "../records.js";
import type { TargetType } from "../rules/model.js";

/** What the matching code knows of one target type. */
export interface TargetDescriptor {
  /**
   * The payload sent when a rule's alert definitions name no payload items: the key attributes of
   * the entity, in this order. Missing attributes are sent as null.
   */
  readonly defaultPayload: readonly string[];
  /**
   * The indexed record kinds a backtest of this type reads, or null when the type cannot be
   * backtested (Token: first sight of a token needs the whole history).
   */
  readonly backtestSources: readonly RecordKind[] | null;
  /**
   * Attributes usable as rule-index buckets, in tie-break order (`lib/match/rule-index.ts`). `args`
   * is the composite argument bucket.
   */
  readonly indexedAttributes: readonly string[];
}

/** The descriptor of every target type. */
export const TARGETS = {
  Event: {
    defaultPayload: [
      "entityId",
      "event",
      "signature",
      "address",
      "args",
      "transactionHash",
      "logIndex",
      "blockNumber",
      "blockHash",
      "timestamp",
    ],
    backtestSources: ["event"],
    indexedAttributes: ["address", "args", "event"],
  },
  Log: {
    defaultPayload: ["entityId", "address", "topics", "data", "transactionHash", "logIndex", "blockNumber", "blockHash", "timestamp"],
    backtestSources: ["log"],
    indexedAttributes: ["address", "topic0", "topic1", "topic2", "topic3"],
  },
  Transaction: {
    defaultPayload: ["hash", "from", "to", "value", "methodId", "status", "blockNumber", "blockHash", "timestamp"],
    backtestSources: ["tx"],
    indexedAttributes: ["to", "from", "methodId", "hash"],
  },
  Method: {
    defaultPayload: [
      "entityId",
      "name",
      "signature",
      "args",
      "from",
      "to",
      "value",
      "status",
      "transactionHash",
      "blockNumber",
      "blockHash",
      "timestamp",
    ],
    backtestSources: ["tx"],
    indexedAttributes: ["to", "address", "args", "from", "methodId", "name"],
  },
  Contract: {
    defaultPayload: ["address", "creator", "transactionFrom", "transactionHash", "blockNumber", "blockHash", "timestamp"],
    backtestSources: ["tx", "call"],
    indexedAttributes: ["address", "creator", "transactionFrom"],
  },
  Token: {
    defaultPayload: ["address", "name", "symbol", "decimals", "standard", "transactionHash", "blockNumber", "blockHash", "timestamp"],
    backtestSources: null,
    indexedAttributes: ["address", "symbol", "name", "standard"],
  },
  Trace: {
    defaultPayload: [
      "entityId",
      "type",
      "from",
      "to",
      "value",
      "methodId",
      "error",
      "traceAddress",
      "transactionHash",
      "blockNumber",
      "blockHash",
    ],
    backtestSources: ["call"],
    indexedAttributes: ["to", "from", "methodId", "type"],
  },
  Call: {
    defaultPayload: [
      "entityId",
      "name",
      "signature",
      "args",
      "type",
      "from",
      "to",
      "value",
      "error",
      "traceAddress",
      "transactionHash",
      "blockNumber",
      "blockHash",
    ],
    backtestSources: ["call"],
    indexedAttributes: ["to", "args", "from", "methodId", "name"],
  },
} as const satisfies Record<TargetType, TargetDescriptor>;

/**
 * One part of every descriptor, as a table keyed by target type.
 * @param pick - reads the part from a descriptor.
 * @returns a new frozen object `{ [type]: pick(TARGETS[type]) }`.
 */
export function targetTable<V>(pick: (descriptor: TargetDescriptor) => V): Readonly<Record<TargetType, V>> {
  const out = {} as Record<TargetType, V>;
  for (const type of Object.keys(TARGETS) as TargetType[]) out[type] = pick(TARGETS[type]);
  return Object.freeze(out);
}
