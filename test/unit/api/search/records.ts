/**
 * Records as chainsift writes them (key order of lib/records.ts) for the unit tests of the search
 * answer shaping (api/search/envelope.ts, api/search/raw.ts): one mainnet block and one of its
 * transactions.
 * @module
 */

/** Hash of {@link block}. */
export const BLOCK_HASH = "0x5ee0e2a4b0d4e2b1c1f0f1b0b5c0e1a7a5e4c6d1a3f2b6c8d9e0f1a2b3c4d5e6";
/** Parent of {@link block}. */
export const OTHER_BLOCK = "0x8d4b0e0c6b1f7e2a3c5d9f1e0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b";
/** Hash of {@link tx}. */
export const TX_HASH = "0x9fc76417374aa880d4449a1f7f31ec597f00b1f6f3dd2d66f4c9c6c445836d8b";

/** A tx as chainsift writes it (key order of lib/records.ts). */
export const tx = {
  hash: TX_HASH,
  blockHash: BLOCK_HASH,
  blockNumber: { num: 17000000, raw: "0x1036640" },
  transactionIndex: { num: 3, raw: "0x3" },
  timestamp: "2023-04-13T08:39:11",
  from: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
  to: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  value: { num: 1.5e18, raw: "0x14d1120d7b160000" },
  methodId: "0xa9059cbb",
  status: 1,
  contractAddress: null,
};
/** A block as chainsift writes it. */
export const block = {
  hash: BLOCK_HASH,
  parentHash: OTHER_BLOCK,
  number: { num: 17000000, raw: "0x1036640" },
  timestamp: "2023-04-13T08:39:11",
  miner: "0x95222290DD7278Aa3Ddd389Cc1E1d165CC4BAfe5",
  uncles: [],
  withdrawalsCount: null,
};
