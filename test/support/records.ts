/**
 * The record fields that hand-made test records (test/integration/api/fixtures.ts and others) leave
 * empty: every field a node returns only in some eras (London, Shanghai, Cancun, Prague) or for
 * some transaction types, null as the ingest stage writes it when the node omits it.
 * @module
 */
import type { BlockRecord, TransactionRecord } from "../../lib/records.js";

/** Block fields of later forks, all absent (null). */
export const ABSENT_BLOCK_FIELDS = {
  logsBloom: null,
  totalDifficulty: null,
  sha3Uncles: null,
  mixHash: null,
  withdrawalsRoot: null,
  withdrawals: null,
  parentBeaconBlockRoot: null,
  blobGasUsed: null,
  excessBlobGas: null,
  requestsHash: null,
} satisfies Partial<BlockRecord>;

/** Transaction (and receipt) fields of typed transactions and signatures, all absent (null). */
export const ABSENT_TRANSACTION_FIELDS = {
  chainId: null,
  v: null,
  r: null,
  s: null,
  yParity: null,
  accessList: null,
  maxFeePerBlobGas: null,
  blobVersionedHashes: null,
  authorizationList: null,
  root: null,
  logsBloom: null,
  blobGasUsed: null,
  blobGasPrice: null,
} satisfies Partial<TransactionRecord>;
