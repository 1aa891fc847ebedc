/**
 * Entities the match stage evaluates rules against, one shape per target type, and pure adapters
 * from the pipeline's records (`lib/records.ts`). Used by the match stage (`pipeline/match/`) and
 * by rule backtests (`lib/match/backtest.ts`), so both turn a record into the same entities. Trace and Call entities are the flattened
 * callTracer frames of `lib/chain/calltrace.ts`; methods decode against `lib/chain/methods.ts`.
 *
 * Every entity carries `entityId` (stable, unique per chain), `blockHash` and `blockNumber`
 * ({@link Quantity}) for confirmation tracking. Attribute names (what a target definition's `name`
 * may be) are listed per target type in docs/alerting-match.md.
 *
 * | target type | source | entityId |
 * |---|---|---|
 * | Event | {@link EventRecord} | `<txHash>_e_<logIndex>` (the event `_id`) |
 * | Log | {@link LogRecord} | `<txHash>_l_<logIndex>` (the log `_id`) |
 * | Transaction | {@link TransactionRecord} | `<txHash>` |
 * | Method | a transaction whose input decodes against `lib/chain/methods.ts` | `<txHash>_m` |
 * | Contract | receipt `contractAddress`, or a CREATE/CREATE2 trace frame | `<txHash>_contract_<address lower-case>` |
 * | Token | first sight of an ERC-20/721 Transfer of a contract (`pipeline/match/tokens.ts`) | `<txHash>_token_<address lower-case>` |
 * | Trace | one callTracer frame (`lib/chain/calltrace.ts`) | `<txHash>_t` + `_<i>` per traceAddress step |
 * | Call | a callTracer frame whose input decodes (`lib/chain/calltrace.ts`) | `<txHash>_c` + `_<i>` per traceAddress step |
 * @module
 */
import { type CallEntity, type CallFrame, callEntity, flattenCallTrace, type TraceContext, type TraceEntity } from "../chain/calltrace.js";
import { type DecodeMethodOptions, decodeMethod, type MethodArg } from "../chain/methods.js";
import { checksum } from "../chain/rpc-values.js";
import type { EventRecord, LogRecord, Quantity, TraceRecord, TransactionRecord } from "../records.js";
import { eventId, logId } from "../records.js";
import type { TargetType } from "../rules/model.js";

/** Fields every entity has. */
export interface EntityBase {
  /** Stable id of the entity (see the module table); with the rule id and block hash it keys a match. */
  entityId: string;
  /** Hash of the block that contains the entity, lower-case hex. */
  blockHash: string;
  /** Number of that block. */
  blockNumber: Quantity;
}

/** Event entity: the decoded event record plus `entityId`. */
export interface EventEntity extends EventRecord, EntityBase {}

/** Log entity: the log record plus `entityId` and its topics split out (`topic0`…`topic3`, null when absent). */
export interface LogEntity extends LogRecord, EntityBase {
  topic0: string | null;
  topic1: string | null;
  topic2: string | null;
  topic3: string | null;
}

/** Transaction entity: the transaction record (with receipt fields) plus `entityId` (= `hash`). */
export interface TransactionEntity extends TransactionRecord, EntityBase {}

/** A decoded function call of a transaction's input (see `methods.ts` for the ABI set). */
export interface MethodEntity extends EntityBase {
  /** Function name, e.g. `transfer`. */
  name: string;
  /** Canonical signature, e.g. `transfer(address,uint256)`. */
  signature: string;
  /** Four-byte selector, lower-case `0x` hex. */
  methodId: string;
  /** Standard or protocol of the function (`erc20`, `erc20|erc721`, `erc721`, `weth`, `uniswap-v2-router`). */
  standard: string;
  /** Decoded arguments, same element shape as event args. */
  args: MethodArg[];
  /** Caller (transaction sender), EIP-55. */
  from: string;
  /** Called contract, EIP-55. */
  to: string;
  /** Same as `to`: the contract the method was called on. */
  address: string;
  /** Wei sent with the call. */
  value: Quantity;
  /** Receipt status of the transaction: 1 success, 0 failure, null when unknown. */
  status: number | null;
  transactionHash: string;
  transactionIndex: Quantity;
  timestamp: string;
}

/** A contract creation. */
export interface ContractEntity extends EntityBase {
  /** Address of the new contract, EIP-55. */
  address: string;
  /** Creator: the transaction sender for a receipt creation, the creating contract for a trace frame; EIP-55. */
  creator: string;
  /** Sender of the transaction, EIP-55. */
  transactionFrom: string;
  /** `receipt` (top-level creation) or `trace` (a CREATE/CREATE2 frame, possibly by a factory). */
  source: "receipt" | "trace";
  /** CREATE, CREATE2, or `CREATE` for a receipt creation. */
  createType: string;
  transactionHash: string;
  transactionIndex: Quantity | null;
  timestamp: string | null;
}

/** A token contract seen for the first time (see `tokens.ts`). */
export interface TokenEntity extends EntityBase {
  /** Token contract, EIP-55. */
  address: string;
  /** `name()`, or null when unknown. */
  name: string | null;
  /** `symbol()`, or null when unknown. */
  symbol: string | null;
  /** `decimals()` (ERC-20), or null when unknown or for ERC-721. */
  decimals: number | null;
  /** `erc20` or `erc721` (from the first Transfer's layout). */
  standard: string;
  /** Transaction of the first Transfer. */
  transactionHash: string;
  /** Log index of the first Transfer. */
  logIndex: Quantity;
  timestamp: string;
}

/** Maps each target type to its entity shape. */
export interface EntityByTargetType {
  Event: EventEntity;
  Log: LogEntity;
  Transaction: TransactionEntity;
  Method: MethodEntity;
  Contract: ContractEntity;
  Token: TokenEntity;
  Trace: TraceEntity;
  Call: CallEntity;
}

/** Any entity. */
export type Entity = EntityByTargetType[TargetType];

/** Event entity of a decoded event record (a shallow copy plus `entityId`). */
export function eventEntity(ev: EventRecord): EventEntity {
  return { ...ev, entityId: eventId(ev) };
}

/** Log entity of a log record (a shallow copy plus `entityId` and `topic0`…`topic3`). */
export function logEntity(log: LogRecord): LogEntity {
  const t = log.topics;
  return { ...log, entityId: logId(log), topic0: t[0] ?? null, topic1: t[1] ?? null, topic2: t[2] ?? null, topic3: t[3] ?? null };
}

/** Transaction entity of a transaction record (a shallow copy plus `entityId` = `hash`). */
export function transactionEntity(tx: TransactionRecord): TransactionEntity {
  return { ...tx, entityId: tx.hash };
}

/**
 * Method entity of a transaction: its input decoded against the built-in ABI set.
 * @returns null for a contract creation (`to` null) or when the input does not decode (unknown
 *   selector, short or malformed arguments). Failed transactions (status 0) do give an entity;
 *   rules filter on `status`.
 */
export function methodEntity(tx: TransactionRecord, options: DecodeMethodOptions): MethodEntity | null {
  if (tx.to === null) return null;
  const m = decodeMethod(tx.input, tx.to, options);
  if (!m) return null;
  return {
    entityId: `${tx.hash}_m`,
    name: m.name,
    signature: m.signature,
    methodId: m.methodId,
    standard: m.standard,
    args: m.args,
    from: tx.from,
    to: tx.to,
    address: tx.to,
    value: tx.value,
    status: tx.status,
    transactionHash: tx.hash,
    transactionIndex: tx.transactionIndex,
    blockHash: tx.blockHash,
    blockNumber: tx.blockNumber,
    timestamp: tx.timestamp,
  };
}

/** entityId of a contract creation: `<txHash>_contract_<address lower-case>`, the same whatever the source. */
export function contractEntityId(transactionHash: string, address: string): string {
  return `${transactionHash}_contract_${address.toLowerCase()}`;
}

/**
 * Contract entity of a contract-creation transaction, from its receipt's `contractAddress`.
 * @returns null when the transaction created no contract or failed (status 0).
 */
export function contractEntity(tx: TransactionRecord): ContractEntity | null {
  if (tx.contractAddress === null || tx.status === 0) return null;
  return {
    entityId: contractEntityId(tx.hash, tx.contractAddress),
    address: tx.contractAddress,
    creator: tx.from,
    transactionFrom: tx.from,
    source: "receipt",
    createType: "CREATE",
    transactionHash: tx.hash,
    transactionIndex: tx.transactionIndex,
    blockHash: tx.blockHash,
    blockNumber: tx.blockNumber,
    timestamp: tx.timestamp,
  };
}

/**
 * Contract entities of the successful CREATE/CREATE2 frames of a flattened trace (contracts
 * deployed by factories included). The top-level creation of a creation transaction appears here
 * too, with the same `entityId` as {@link contractEntity} gives, so using both sources never
 * produces two matches of one rule for one contract.
 */
export function contractEntitiesFromTrace(
  frames: readonly TraceEntity[],
  ctx: Pick<TraceContext, "transactionFrom"> = {},
): ContractEntity[] {
  const out: ContractEntity[] = [];
  for (const f of frames) {
    if ((f.type !== "CREATE" && f.type !== "CREATE2") || f.error !== null || f.to === null) continue;
    out.push({
      entityId: contractEntityId(f.transactionHash, f.to),
      address: f.to,
      creator: f.from,
      transactionFrom: ctx.transactionFrom ? checksum(ctx.transactionFrom, "transactionFrom") : (frames[0]?.from ?? f.from),
      source: "trace",
      createType: f.type,
      transactionHash: f.transactionHash,
      transactionIndex: f.transactionIndex,
      blockHash: f.blockHash,
      blockNumber: f.blockNumber,
      timestamp: f.timestamp,
    });
  }
  return out;
}

/** An entity with its target type. */
export type TypedEntity = { [K in TargetType]: { type: K; entity: EntityByTargetType[K] } }[TargetType];

/**
 * A record and where it came from: the Kafka topic kind it is consumed from (`topics/index.ts`
 * `TopicKind`, as the match stage's Kafka shell hands it over), or the topic kind the record would
 * have been consumed from (a backtest reading the indexed record back). Only `transactions`,
 * `logs`, `events` and `traces` give entities.
 */
export interface SourceRecord {
  topicKind: string;
  record: unknown;
}

/**
 * The entities of one consumed record, in the order the match stage evaluates them (pure):
 *
 * | topic | entities |
 * |---|---|
 * | transactions | Transaction, then Method and Contract when the transaction has them |
 * | logs | Log |
 * | events | Event (the Token entity of a first Transfer needs Redis: `tokens.ts`) |
 * | traces | per frame a Trace, then its Call when the input decodes; then the Contracts created |
 * | other topics | none |
 *
 * @param decode - chain id and token lookup for decoded Method/Call arguments.
 * @throws {SyntaxError} when a trace record's `frameJson` is not JSON; {@link MalformedRpcDataError}
 *   (lib/chain/rpc-values.ts) when a frame in it is malformed.
 */
export function entitiesOf(source: SourceRecord, decode: DecodeMethodOptions): TypedEntity[] {
  const out: TypedEntity[] = [];
  switch (source.topicKind) {
    case "transactions": {
      const tx = source.record as TransactionRecord;
      out.push({ type: "Transaction", entity: transactionEntity(tx) });
      const method = methodEntity(tx, decode);
      if (method) out.push({ type: "Method", entity: method });
      const contract = contractEntity(tx);
      if (contract) out.push({ type: "Contract", entity: contract });
      break;
    }
    case "logs":
      out.push({ type: "Log", entity: logEntity(source.record as LogRecord) });
      break;
    case "events":
      out.push({ type: "Event", entity: eventEntity(source.record as EventRecord) });
      break;
    case "traces": {
      const t = source.record as TraceRecord;
      const frames = flattenCallTrace(JSON.parse(t.frameJson) as CallFrame, t);
      for (const f of frames) {
        out.push({ type: "Trace", entity: f });
        const call = callEntity(f, decode);
        if (call) out.push({ type: "Call", entity: call });
      }
      for (const c of contractEntitiesFromTrace(frames, { transactionFrom: t.transactionFrom })) out.push({ type: "Contract", entity: c });
      break;
    }
  }
  return out;
}
