/**
 * Avro schemas of every Kafka record, registered with the Confluent-compatible schema registry
 * under the subject `<topic>-value` (TopicNameStrategy). They mirror `lib/records.ts` exactly.
 * Spec: https://avro.apache.org/docs/1.11.1/specification/
 * @module
 */

/** Avro schema object (JSON form). */
export type AvroSchema = Record<string, unknown>;

const NS = "io.chainsift.records";

/** `{num, raw}`: see `Quantity` in lib/records.ts. */
const quantity = {
  type: "record",
  name: "Quantity",
  namespace: NS,
  fields: [
    { name: "num", type: "double" },
    { name: "raw", type: "string" },
    // Added later: the exact value as a decimal string (topics/wire.ts fills it; Kafka only).
    { name: "dec", type: ["null", "string"], default: null },
  ],
};
/** The block time as Avro `timestamp-millis` (UTC), next to the ISO `timestamp` (topics/wire.ts fills it; Kafka only). */
const timestampMs = { name: "timestampMs", type: ["null", { type: "long", logicalType: "timestamp-millis" }], default: null };
const Q = `${NS}.Quantity`;
const optQ = { type: ["null", Q], default: null };
const optString = { type: ["null", "string"], default: null };
/** A nullable array of `items`, default null (fields added after the first release must have defaults: BACKWARD compatibility). */
const optArray = (items: unknown) => ({ type: ["null", { type: "array", items }], default: null });

/** Schema of topic `<chain>.blocks`. */
export const blockSchema: AvroSchema = {
  type: "record",
  name: "Block",
  namespace: NS,
  fields: [
    { name: "hash", type: "string" },
    { name: "parentHash", type: "string" },
    { name: "number", type: quantity },
    { name: "timestamp", type: "string" },
    { name: "miner", type: "string" },
    { name: "gasUsed", type: Q },
    { name: "gasLimit", type: Q },
    { name: "baseFeePerGas", ...optQ },
    { name: "difficulty", type: Q },
    { name: "size", ...optQ },
    { name: "extraData", type: "string" },
    { name: "nonce", ...optString },
    { name: "stateRoot", type: "string" },
    { name: "transactionsRoot", type: "string" },
    { name: "receiptsRoot", type: "string" },
    { name: "transactionCount", type: "int" },
    { name: "uncles", type: { type: "array", items: "string" } },
    { name: "withdrawalsCount", type: ["null", "int"], default: null },
    // Added later (chainsift 0.2): every one nullable with a default, so old messages still decode.
    { name: "logsBloom", ...optString },
    { name: "totalDifficulty", ...optQ },
    { name: "sha3Uncles", ...optString },
    { name: "mixHash", ...optString },
    { name: "withdrawalsRoot", ...optString },
    {
      name: "withdrawals",
      ...optArray({
        type: "record",
        name: "Withdrawal",
        fields: [
          { name: "index", type: Q },
          { name: "validatorIndex", type: Q },
          { name: "address", type: "string" },
          { name: "amount", type: Q },
        ],
      }),
    },
    { name: "parentBeaconBlockRoot", ...optString },
    { name: "blobGasUsed", ...optQ },
    { name: "excessBlobGas", ...optQ },
    { name: "requestsHash", ...optString },
    timestampMs,
  ],
};

/** Schema of topic `<chain>.transactions`. */
export const transactionSchema: AvroSchema = {
  type: "record",
  name: "Transaction",
  namespace: NS,
  fields: [
    { name: "hash", type: "string" },
    { name: "blockHash", type: "string" },
    { name: "blockNumber", type: quantity },
    { name: "transactionIndex", type: Q },
    { name: "timestamp", type: "string" },
    { name: "from", type: "string" },
    { name: "to", ...optString },
    { name: "value", type: Q },
    { name: "gas", type: Q },
    { name: "gasPrice", ...optQ },
    { name: "maxFeePerGas", ...optQ },
    { name: "maxPriorityFeePerGas", ...optQ },
    { name: "nonce", type: Q },
    { name: "type", type: Q },
    { name: "input", type: "string" },
    { name: "methodId", ...optString },
    { name: "status", type: ["null", "int"], default: null },
    { name: "gasUsed", ...optQ },
    { name: "cumulativeGasUsed", ...optQ },
    { name: "effectiveGasPrice", ...optQ },
    { name: "contractAddress", ...optString },
    { name: "logCount", type: "int" },
    // Added later (chainsift 0.2): every one nullable with a default, so old messages still decode.
    { name: "chainId", ...optQ },
    { name: "v", ...optQ },
    { name: "r", ...optString },
    { name: "s", ...optString },
    { name: "yParity", ...optQ },
    {
      name: "accessList",
      ...optArray({
        type: "record",
        name: "AccessListEntry",
        fields: [
          { name: "address", type: "string" },
          { name: "storageKeys", type: { type: "array", items: "string" } },
        ],
      }),
    },
    { name: "maxFeePerBlobGas", ...optQ },
    { name: "blobVersionedHashes", ...optArray("string") },
    {
      name: "authorizationList",
      ...optArray({
        type: "record",
        name: "Authorization",
        fields: [
          { name: "chainId", type: Q },
          { name: "address", type: "string" },
          { name: "nonce", type: Q },
          { name: "yParity", type: Q },
          { name: "r", type: "string" },
          { name: "s", type: "string" },
        ],
      }),
    },
    { name: "root", ...optString },
    { name: "logsBloom", ...optString },
    { name: "blobGasUsed", ...optQ },
    { name: "blobGasPrice", ...optQ },
    timestampMs,
  ],
};

/** Schema of topic `<chain>.logs`. */
export const logSchema: AvroSchema = {
  type: "record",
  name: "Log",
  namespace: NS,
  fields: [
    { name: "address", type: "string" },
    { name: "topics", type: { type: "array", items: "string" } },
    { name: "data", type: "string" },
    { name: "blockHash", type: "string" },
    { name: "blockNumber", type: quantity },
    { name: "transactionHash", type: "string" },
    { name: "transactionIndex", type: Q },
    { name: "logIndex", type: Q },
    { name: "removed", type: "boolean" },
    { name: "timestamp", type: "string" },
    timestampMs,
  ],
};

/** Schema of topic `<chain>.events`. */
export const eventSchema: AvroSchema = {
  type: "record",
  name: "Event",
  namespace: NS,
  fields: [
    { name: "event", type: "string" },
    { name: "signature", type: "string" },
    { name: "standard", type: "string" },
    {
      name: "args",
      type: {
        type: "array",
        items: {
          type: "record",
          name: "EventArg",
          fields: [
            { name: "name", type: "string" },
            { name: "pos", type: "int" },
            {
              name: "value",
              type: {
                type: "record",
                name: "EventArgValue",
                fields: [
                  { name: "hex", type: "string" },
                  { name: "num", type: ["null", "double"], default: null },
                  { name: "scaled", type: ["null", "double"], default: null },
                  { name: "type", type: "string" },
                  // Added later: the exact integer value of an int/uint argument, decimal (topics/wire.ts).
                  { name: "dec", type: ["null", "string"], default: null },
                ],
              },
            },
          ],
        },
      },
    },
    { name: "logIndex", type: quantity },
    { name: "transactionIndex", type: Q },
    { name: "transactionHash", type: "string" },
    { name: "address", type: "string" },
    { name: "blockHash", type: "string" },
    { name: "blockNumber", type: Q },
    { name: "error", ...optString },
    { name: "str", type: "string" },
    { name: "timestamp", type: "string" },
    timestampMs,
    // Added later: which source decoded the log (lib/records.ts EventSource). Not nullable: events
    // written before it existed were all decoded from the standard layouts, so they read as "standard".
    { name: "source", type: "string", default: "standard" },
  ],
};

/**
 * Schema of the dead-letter topic: the original message bytes plus why it was refused.
 * A dead letter is never lost: `chainsift` operators inspect and replay them.
 */
export const deadLetterSchema: AvroSchema = {
  type: "record",
  name: "DeadLetter",
  namespace: NS,
  fields: [
    { name: "sourceTopic", type: "string" },
    { name: "partition", type: "int" },
    { name: "offset", type: "string" },
    { name: "key", type: ["null", "bytes"], default: null },
    { name: "value", type: ["null", "bytes"], default: null },
    { name: "stage", type: "string" },
    { name: "errorCode", type: "string" },
    { name: "errorMessage", type: "string" },
    { name: "failedAt", type: "string" },
  ],
};

/**
 * Schema of topic `<chain>.alerts` (match → notify). Structured parts of the alert (`payload`,
 * `entity`, `actions`) are JSON strings: their shape depends on the rule and the target type.
 */
export const alertSchema: AvroSchema = {
  type: "record",
  name: "Alert",
  namespace: NS,
  fields: [
    { name: "id", type: "string" },
    { name: "ruleId", type: "string" },
    { name: "ruleVersion", type: "int" },
    { name: "ruleName", type: ["null", "string"], default: null },
    { name: "accountId", type: "string" },
    { name: "sequence", type: "long" },
    { name: "status", type: { type: "enum", name: "AlertStatus", symbols: ["pending", "confirmed", "removed"] } },
    { name: "confirmations", type: "int" },
    { name: "maxConfirmationCount", type: "int" },
    {
      name: "chain",
      type: {
        type: "record",
        name: "Chain",
        fields: [
          { name: "technology", type: "string" },
          { name: "blockchain", type: "string" },
          { name: "network", type: "string" },
        ],
      },
    },
    { name: "targetType", type: "string" },
    { name: "entityId", type: "string" },
    { name: "blockHash", type: "string" },
    { name: "blockNumber", type: "long" },
    { name: "payloadJson", type: "string" },
    { name: "entityJson", type: "string" },
    { name: "actionsJson", type: "string" },
    { name: "emittedAt", type: "string" },
    // Added later with a default (backward compatible): only `removed` alerts carry it (lib/alerting/alert.ts ReplacingBlock).
    {
      name: "replacedBy",
      type: [
        "null",
        {
          type: "record",
          name: "ReplacingBlock",
          fields: [
            { name: "number", type: "long" },
            { name: "hash", type: ["null", "string"], default: null },
          ],
        },
      ],
      default: null,
    },
  ],
};

/** Schema of topic `<chain>.traces`: one transaction's call trace (see `TraceRecord`). */
export const traceSchema: AvroSchema = {
  type: "record",
  name: "Trace",
  namespace: NS,
  fields: [
    { name: "transactionHash", type: "string" },
    { name: "transactionIndex", type: quantity },
    { name: "transactionFrom", type: "string" },
    { name: "blockHash", type: "string" },
    { name: "blockNumber", type: Q },
    { name: "timestamp", type: "string" },
    { name: "frameJson", type: "string" },
    timestampMs,
  ],
};

/** Schema of topic `<chain>.reorgs`: one orphaned block (see `ReorgRecord` in lib/records.ts). */
export const reorgSchema: AvroSchema = {
  type: "record",
  name: "Reorg",
  namespace: NS,
  fields: [
    { name: "number", type: "long" },
    { name: "orphanedHash", type: "string" },
    { name: "replacedBy", ...optString },
    { name: "ancestorNumber", type: "long" },
    { name: "ancestorHash", ...optString },
    { name: "depth", type: "int" },
    { name: "detectedAt", type: "string" },
  ],
};
