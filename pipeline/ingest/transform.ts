/**
 * Pure conversion of raw JSON-RPC objects (eth_getBlockByNumber with full transactions,
 * eth_getBlockReceipts / eth_getTransactionReceipt) into chainsift records.
 * Field semantics: https://ethereum.github.io/execution-apis/api-documentation/
 * @module
 */
import {
  checksum,
  hexString,
  MalformedRpcDataError,
  optionalAddress,
  optionalHexString,
  optionalQuantity,
  quantity,
} from "../../lib/chain/rpc-values.js";
import type {
  AccessListEntry,
  AuthorizationRecord,
  BlockRecord,
  LogRecord,
  TraceRecord,
  TransactionRecord,
  WithdrawalRecord,
} from "../../lib/records.js";

/** A raw JSON-RPC object with hex-encoded quantities. */
export type RawRpcObject = Record<string, unknown>;

/** Renders unix seconds as ISO 8601 UTC without zone (the contract's `<timestamp>`), e.g. `2023-04-13T08:39:11`. */
export function isoTimestamp(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 19);
}

/**
 * Converts an `eth_getBlockByNumber(n, true)` result into a {@link BlockRecord}.
 * @throws {MalformedRpcDataError} on a missing or malformed field.
 */
export function toBlockRecord(block: RawRpcObject): BlockRecord {
  const txs = block.transactions;
  if (!Array.isArray(txs)) throw new MalformedRpcDataError("block.transactions", "expected an array");
  const number = quantity(block.number, "block.number");
  return {
    hash: hexString(block.hash, "block.hash"),
    parentHash: hexString(block.parentHash, "block.parentHash"),
    number,
    timestamp: isoTimestamp(quantity(block.timestamp, "block.timestamp").num),
    miner: checksum(block.miner, "block.miner"),
    gasUsed: quantity(block.gasUsed, "block.gasUsed"),
    gasLimit: quantity(block.gasLimit, "block.gasLimit"),
    baseFeePerGas: optionalQuantity(block.baseFeePerGas, "block.baseFeePerGas"),
    difficulty: quantity(block.difficulty ?? "0x0", "block.difficulty"),
    size: optionalQuantity(block.size, "block.size"),
    extraData: hexString(block.extraData ?? "0x", "block.extraData"),
    nonce: typeof block.nonce === "string" ? block.nonce : null,
    stateRoot: hexString(block.stateRoot, "block.stateRoot"),
    transactionsRoot: hexString(block.transactionsRoot, "block.transactionsRoot"),
    receiptsRoot: hexString(block.receiptsRoot, "block.receiptsRoot"),
    transactionCount: txs.length,
    uncles: Array.isArray(block.uncles) ? block.uncles.map((u, i) => hexString(u, `block.uncles[${i}]`)) : [],
    withdrawalsCount: Array.isArray(block.withdrawals) ? block.withdrawals.length : null,
    logsBloom: optionalHexString(block.logsBloom, "block.logsBloom"),
    totalDifficulty: optionalQuantity(block.totalDifficulty, "block.totalDifficulty"),
    sha3Uncles: optionalHexString(block.sha3Uncles, "block.sha3Uncles"),
    mixHash: optionalHexString(block.mixHash, "block.mixHash"),
    withdrawalsRoot: optionalHexString(block.withdrawalsRoot, "block.withdrawalsRoot"),
    withdrawals: optionalList(block.withdrawals, "block.withdrawals", toWithdrawal),
    parentBeaconBlockRoot: optionalHexString(block.parentBeaconBlockRoot, "block.parentBeaconBlockRoot"),
    blobGasUsed: optionalQuantity(block.blobGasUsed, "block.blobGasUsed"),
    excessBlobGas: optionalQuantity(block.excessBlobGas, "block.excessBlobGas"),
    requestsHash: optionalHexString(block.requestsHash, "block.requestsHash"),
  };
}

/**
 * Converts an optional JSON-RPC list with `item`, null when the node omits it.
 * @throws {MalformedRpcDataError} when present but not an array, or an item is malformed.
 */
function optionalList<T>(value: unknown, path: string, item: (raw: RawRpcObject, path: string) => T): T[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw new MalformedRpcDataError(path, "expected an array");
  return value.map((v, i) => {
    const at = `${path}[${i}]`;
    if (typeof v !== "object" || v === null) throw new MalformedRpcDataError(at, "expected an object");
    return item(v as RawRpcObject, at);
  });
}

/** One EIP-4895 withdrawal. */
function toWithdrawal(w: RawRpcObject, path: string): WithdrawalRecord {
  return {
    index: quantity(w.index, `${path}.index`),
    validatorIndex: quantity(w.validatorIndex, `${path}.validatorIndex`),
    address: checksum(w.address, `${path}.address`),
    amount: quantity(w.amount, `${path}.amount`),
  };
}

/** One EIP-2930 access list entry. */
function toAccessListEntry(e: RawRpcObject, path: string): AccessListEntry {
  const keys = e.storageKeys;
  if (!Array.isArray(keys)) throw new MalformedRpcDataError(`${path}.storageKeys`, "expected an array");
  return { address: checksum(e.address, `${path}.address`), storageKeys: keys.map((k, i) => hexString(k, `${path}.storageKeys[${i}]`)) };
}

/** One EIP-7702 authorization. */
function toAuthorization(a: RawRpcObject, path: string): AuthorizationRecord {
  return {
    chainId: quantity(a.chainId, `${path}.chainId`),
    address: checksum(a.address, `${path}.address`),
    nonce: quantity(a.nonce, `${path}.nonce`),
    yParity: quantity(a.yParity, `${path}.yParity`),
    r: hexString(a.r, `${path}.r`),
    s: hexString(a.s, `${path}.s`),
  };
}

/**
 * Converts one transaction of a full block plus its receipt into a {@link TransactionRecord}.
 * @param receipt the transaction's receipt, or undefined when the node has none (receipt fields become null).
 * @throws {MalformedRpcDataError} on a missing or malformed field, or a receipt of another transaction.
 */
export function toTransactionRecord(
  tx: RawRpcObject,
  receipt: RawRpcObject | undefined,
  block: BlockRecord,
  path: string,
): TransactionRecord {
  const hash = hexString(tx.hash, `${path}.hash`);
  if (receipt && String(receipt.transactionHash).toLowerCase() !== hash) {
    throw new MalformedRpcDataError(`${path}.receipt`, `receipt is for ${String(receipt.transactionHash)}, not ${hash}`);
  }
  const input = hexString(tx.input ?? tx.data ?? "0x", `${path}.input`);
  const status = receipt ? optionalQuantity(receipt.status, `${path}.receipt.status`) : null;
  return {
    hash,
    blockHash: block.hash,
    blockNumber: block.number,
    transactionIndex: quantity(tx.transactionIndex, `${path}.transactionIndex`),
    timestamp: block.timestamp,
    from: checksum(tx.from, `${path}.from`),
    to: optionalAddress(tx.to, `${path}.to`),
    value: quantity(tx.value, `${path}.value`),
    gas: quantity(tx.gas, `${path}.gas`),
    gasPrice: optionalQuantity(tx.gasPrice, `${path}.gasPrice`),
    maxFeePerGas: optionalQuantity(tx.maxFeePerGas, `${path}.maxFeePerGas`),
    maxPriorityFeePerGas: optionalQuantity(tx.maxPriorityFeePerGas, `${path}.maxPriorityFeePerGas`),
    nonce: quantity(tx.nonce, `${path}.nonce`),
    type: quantity(tx.type ?? "0x0", `${path}.type`),
    input,
    methodId: input.length >= 10 ? input.slice(0, 10) : null,
    status: status ? status.num : null,
    gasUsed: receipt ? optionalQuantity(receipt.gasUsed, `${path}.receipt.gasUsed`) : null,
    cumulativeGasUsed: receipt ? optionalQuantity(receipt.cumulativeGasUsed, `${path}.receipt.cumulativeGasUsed`) : null,
    effectiveGasPrice: receipt ? optionalQuantity(receipt.effectiveGasPrice, `${path}.receipt.effectiveGasPrice`) : null,
    contractAddress: receipt ? optionalAddress(receipt.contractAddress, `${path}.receipt.contractAddress`) : null,
    logCount: receipt && Array.isArray(receipt.logs) ? receipt.logs.length : 0,
    chainId: optionalQuantity(tx.chainId, `${path}.chainId`),
    v: optionalQuantity(tx.v, `${path}.v`),
    r: optionalHexString(tx.r, `${path}.r`),
    s: optionalHexString(tx.s, `${path}.s`),
    yParity: optionalQuantity(tx.yParity, `${path}.yParity`),
    accessList: optionalList(tx.accessList, `${path}.accessList`, toAccessListEntry),
    maxFeePerBlobGas: optionalQuantity(tx.maxFeePerBlobGas, `${path}.maxFeePerBlobGas`),
    blobVersionedHashes: optionalList(tx.blobVersionedHashes, `${path}.blobVersionedHashes`, (h, at) => hexString(h, at)),
    authorizationList: optionalList(tx.authorizationList, `${path}.authorizationList`, toAuthorization),
    root: receipt ? optionalHexString(receipt.root, `${path}.receipt.root`) : null,
    logsBloom: receipt ? optionalHexString(receipt.logsBloom, `${path}.receipt.logsBloom`) : null,
    blobGasUsed: receipt ? optionalQuantity(receipt.blobGasUsed, `${path}.receipt.blobGasUsed`) : null,
    blobGasPrice: receipt ? optionalQuantity(receipt.blobGasPrice, `${path}.receipt.blobGasPrice`) : null,
  };
}

/**
 * Converts one receipt log into a {@link LogRecord}; block fields come from the block record,
 * so nodes that omit them on logs (or add `blockTimestamp`) give the same result.
 * @throws {MalformedRpcDataError} on a missing or malformed field.
 */
export function toLogRecord(log: RawRpcObject, block: BlockRecord, path: string): LogRecord {
  const topics = log.topics;
  if (!Array.isArray(topics)) throw new MalformedRpcDataError(`${path}.topics`, "expected an array");
  return {
    address: checksum(log.address, `${path}.address`),
    topics: topics.map((t, i) => hexString(t, `${path}.topics[${i}]`)),
    data: hexString(log.data ?? "0x", `${path}.data`),
    blockHash: block.hash,
    blockNumber: block.number,
    transactionHash: hexString(log.transactionHash, `${path}.transactionHash`),
    transactionIndex: quantity(log.transactionIndex, `${path}.transactionIndex`),
    logIndex: quantity(log.logIndex, `${path}.logIndex`),
    removed: log.removed === true,
    timestamp: block.timestamp,
  };
}

/** Every record of one block, ready to produce. */
export interface BlockBundle {
  block: BlockRecord;
  transactions: TransactionRecord[];
  logs: LogRecord[];
  /** Call traces, one per transaction, when the node answered debug_traceBlockByNumber; else empty. */
  traces: TraceRecord[];
}

/**
 * Why a block's call traces, fetched apart from the block, do not belong to its transactions, or
 * null when they do (pure). Traces come from a second JSON-RPC call, which a load balancer may send
 * to a backend on another branch: the number of frames must equal the number of transactions and
 * every frame that names its transaction (`txHash`, geth's callTracer and the parity conversion do)
 * must name the block's transaction at the same position.
 * @param frames - callTracer frames in transaction order (from `ChainSource.fetchTraces`).
 * @param transactions - the raw block's `transactions` (full objects with `hash`).
 * @returns a reason for the logs, e.g. `"call trace 3 is of transaction 0xab…, the block's is 0xcd…"`.
 */
export function tracesMismatch(frames: RawRpcObject[], transactions: unknown): string | null {
  const txs = Array.isArray(transactions) ? (transactions as RawRpcObject[]) : [];
  if (frames.length !== txs.length) return `${frames.length} call traces for ${txs.length} transactions`;
  for (const [i, frame] of frames.entries()) {
    const named = frame.txHash;
    const mine = String(txs[i]?.hash ?? "").toLowerCase();
    if (typeof named === "string" && named.toLowerCase() !== mine)
      return `call trace ${i} is of transaction ${named}, the block's is ${mine}`;
  }
  return null;
}

/**
 * Pairs the callTracer frames of a block with its transactions (by `txHash` when the node gives
 * it, else by position) into {@link TraceRecord}s.
 * @throws {MalformedRpcDataError} when the number of frames differs from the number of transactions.
 */
export function toTraceRecords(frames: RawRpcObject[], transactions: TransactionRecord[]): TraceRecord[] {
  if (frames.length !== transactions.length) {
    throw new MalformedRpcDataError("traces", `expected ${transactions.length} call traces, got ${frames.length}`);
  }
  const byHash = new Map(transactions.map((t) => [t.hash, t]));
  return frames.map((frame, i) => {
    const { txHash, ...rest } = frame;
    const tx = (typeof txHash === "string" ? byHash.get(txHash.toLowerCase()) : undefined) ?? (transactions[i] as TransactionRecord);
    return {
      transactionHash: tx.hash,
      transactionIndex: tx.transactionIndex,
      transactionFrom: tx.from,
      blockHash: tx.blockHash,
      blockNumber: tx.blockNumber,
      timestamp: tx.timestamp,
      frameJson: JSON.stringify(rest),
    };
  });
}

/**
 * Converts a full block, its receipts (in transaction order, or null when unavailable) and
 * optionally its call traces into the block, transaction, log and trace records.
 * @throws {MalformedRpcDataError} when the data is malformed or receipts do not match the transactions.
 */
export function toBlockBundle(rawBlock: RawRpcObject, receipts: RawRpcObject[] | null, traces?: RawRpcObject[] | null): BlockBundle {
  const block = toBlockRecord(rawBlock);
  const txs = rawBlock.transactions as unknown[];
  if (receipts && receipts.length !== txs.length) {
    throw new MalformedRpcDataError("receipts", `expected ${txs.length} receipts for block ${block.number.num}, got ${receipts.length}`);
  }
  const transactions: TransactionRecord[] = [];
  const logs: LogRecord[] = [];
  txs.forEach((tx, i) => {
    if (tx === null || typeof tx !== "object") {
      throw new MalformedRpcDataError(
        `block.transactions[${i}]`,
        "expected a full transaction object (call eth_getBlockByNumber with true)",
      );
    }
    const receipt = receipts?.[i];
    transactions.push(toTransactionRecord(tx as RawRpcObject, receipt, block, `block.transactions[${i}]`));
    const rawLogs = receipt?.logs;
    if (Array.isArray(rawLogs)) {
      rawLogs.forEach((l, j) => {
        logs.push(toLogRecord(l as RawRpcObject, block, `receipts[${i}].logs[${j}]`));
      });
    }
  });
  return { block, transactions, logs, traces: traces ? toTraceRecords(traces, transactions) : [] };
}
