import { describe, expect, it } from "vitest";
import { errorKind, stateCall } from "../../../../lib/chain/state-reads.js";

const A = "0x00000000000000000000000000000000000000aa";
const H = `0x${"12".repeat(32)}`;

describe("state reads", () => {
  it("asks every subject at the block hash (EIP-1898)", () => {
    expect(stateCall({ type: "balance", address: A }, H)).toEqual({ method: "eth_getBalance", params: [A, { blockHash: H }] });
    expect(stateCall({ type: "storage", address: A, slot: "0x1" }, H)).toEqual({
      method: "eth_getStorageAt",
      params: [A, "0x1", { blockHash: H }],
    });
    const erc20 = stateCall({ type: "erc20Balance", token: A, address: A }, H);
    expect(erc20.method).toBe("eth_call");
    expect(erc20.params).toEqual([{ to: A, data: `0x70a08231${A.slice(2).padStart(64, "0")}` }, { blockHash: H }]);
  });
  it("tells a node without the state from other errors", () => {
    expect(errorKind({ message: "missing trie node 1a2b (path ) <nil>" })).toBe("unavailable");
    expect(errorKind({ message: "header not found" })).toBe("unavailable");
    expect(errorKind({ code: -32001, message: "Resource not found" })).toBe("unavailable");
    expect(errorKind({ code: 3, message: "execution reverted" })).toBe("error");
  });
});
