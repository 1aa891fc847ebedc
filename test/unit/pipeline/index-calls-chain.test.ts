import { describe, expect, it } from "vitest";
import { methodDecodingOf } from "../../../lib/chain/tokens.js";
import { toIndexDocs } from "../../../pipeline/index/indexer.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";

/** Base's USDC (6 decimals on the bundled token list's chain-8453 entries; not a mainnet token). */
const BASE_USDC = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const word = (hex: string) => hex.replace(/^0x/, "").padStart(64, "0");

/** A trace record whose one frame is `transfer(0x…11, 5 000 000)` on Base's USDC. */
const from = "0x1111111111111111111111111111111111111111";
const frame = { type: "CALL", from, to: BASE_USDC, input: `0xa9059cbb${word(from)}${word((5_000_000).toString(16))}`, value: "0x0" };
const trace = {
  ...{ transactionHash: "0xt", transactionIndex: { num: 0, raw: "0x0" }, transactionFrom: from },
  ...{ blockHash: "0xb", blockNumber: { num: 7, raw: "0x7" }, timestamp: "2024-01-01T00:00:00" },
  frameJson: JSON.stringify({ ...frame, gas: "0x5208", gasUsed: "0x5208" }),
};
const input = { topicKind: "traces", record: trace, message: { headers: {} } } as unknown as InputRecord;
const chain = { technology: "ethereum", blockchain: "base", network: "mainnet" };

describe("the index stage's call documents decode with the configured chain", () => {
  type CallDoc = { args: Array<{ name: string; value: { scaled: number | null } }> };
  const scaledValue = (decode: Parameters<typeof toIndexDocs>[4]) => {
    const doc = toIndexDocs([input], chain, "", [], decode)[0]?.doc as unknown as CallDoc | undefined;
    return doc?.args.find((a) => a.name === "value")?.value.scaled;
  };

  it("scales a token argument with the configured chain id's token list entry", () => {
    expect(scaledValue(methodDecodingOf({ chainId: 8453, decode: { tokenList: true } }))).toBe(5);
  });
  it("another chain id's list (or none) does not know the token: unscaled", () => {
    expect(scaledValue(methodDecodingOf({ chainId: 1, decode: { tokenList: true } }))).toBeNull();
    expect(scaledValue(methodDecodingOf({ chainId: 8453, decode: { tokenList: false } }))).toBeNull();
  });
});
