/**
 * Small hand-made records for tests that need one real-shaped record on a topic (no fixtures).
 * @module
 */
import type { LogRecord } from "../../lib/records.js";

/** A real USDT Transfer log (mainnet block 17000000 shape), used to drive decode + index. */
export const usdtLog: LogRecord = {
  address: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  topics: [
    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
    "0x000000000000000000000000a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
    "0x0000000000000000000000001111111111111111111111111111111111111111",
  ],
  data: "0x00000000000000000000000000000000000000000000000000000000004c4b40",
  blockHash: "0x1111111111111111111111111111111111111111111111111111111111111111",
  blockNumber: { num: 17000000, raw: "0x1036640" },
  transactionHash: "0x2222222222222222222222222222222222222222222222222222222222222222",
  transactionIndex: { num: 3, raw: "0x3" },
  logIndex: { num: 7, raw: "0x7" },
  removed: false,
  timestamp: "2023-04-13T13:33:47",
};

/**
 * A log with the given topics, data and emitting contract, in a fixed block (17000000, log index
 * 42 of transaction index 3): for decoder tests on synthetic payloads.
 */
export function syntheticLog(topics: string[], data: string, address: string): LogRecord {
  return {
    address,
    topics,
    data,
    blockHash: `0x${"ab".repeat(32)}`,
    blockNumber: { num: 17_000_000, raw: "0x1036640" },
    transactionHash: `0x${"cd".repeat(32)}`,
    transactionIndex: { num: 3, raw: "0x3" },
    logIndex: { num: 42, raw: "0x2a" },
    removed: false,
    timestamp: "2023-04-13T22:44:59",
  };
}
