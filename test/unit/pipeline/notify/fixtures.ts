/**
 * Shared fixtures of the notify tests (unit and integration): a realistic confirmed ERC-20
 * Transfer alert, with its id derived the documented way.
 * @module
 */
import { createHash } from "node:crypto";
import type { Alert as NotifyAlert } from "../../../../lib/alerting/alert.js";

export const RULE_ID = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f";
export const ACCOUNT_ID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3";
export const TX_HASH = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060";
export const BLOCK_HASH = "0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6";
export const FROM = "0x28c6c06298d514db089934071355e5743bf21d60";
export const TO = "0xdfd5293d8e347dfe59e90efd55b2956a1343963d";
export const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";

/** A confirmed USDT Transfer alert; `over` replaces top-level fields. */
export function sampleAlert(over: Partial<NotifyAlert> = {}): NotifyAlert {
  const entityId = `${TX_HASH}_e_3`;
  const status = over.status ?? "confirmed";
  const ruleId = over.ruleId ?? RULE_ID;
  return {
    id: createHash("sha256").update(`${ruleId}|${entityId}|${BLOCK_HASH}|${status}`).digest("hex"),
    ruleId,
    ruleVersion: 2,
    accountId: ACCOUNT_ID,
    sequence: 42,
    status,
    confirmations: 12,
    maxConfirmationCount: 12,
    chain: { technology: "ethereum", blockchain: "ethereum", network: "mainnet" },
    targetType: "Event",
    entityId,
    blockHash: BLOCK_HASH,
    blockNumber: 123,
    payload: { transactionHash: TX_HASH, address: USDT, args: { from: FROM, to: TO, value: "250000000000" } },
    entity: {
      event: "Transfer",
      address: USDT,
      transactionHash: TX_HASH,
      blockHash: BLOCK_HASH,
      blockNumber: { num: 123, raw: "0x7b" },
      logIndex: { num: 3, raw: "0x3" },
      args: [
        { name: "from", pos: 0, value: { hex: FROM, num: null, scaled: null, type: "address" } },
        { name: "to", pos: 1, value: { hex: TO, num: null, scaled: null, type: "address" } },
        { name: "value", pos: 2, value: { hex: "0x3a35294400", num: 250000000000, scaled: 250000, type: "uint256" } },
      ],
      memo: "a b&c/d?e#f",
      nothing: null,
      timestamp: "2026-01-02T03:04:00",
    },
    actions: [],
    emittedAt: "2026-01-02T03:04:05.000Z",
    ...over,
  };
}
