/**
 * Decoding of `decimals()`, `symbol()` and `name()` return values (ABI-encoded as the chain returns
 * them: USDT's `string`s, MKR's `bytes32`), garbage, and how {@link readTokenMetadata} tells a
 * revert from missing state, a node without eth_call and a failing node — the latter against a
 * local JSON-RPC stub on 127.0.0.1 (this is the pure classification; test/e2e/token-decimals.test.ts
 * runs it against anvil).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AbiCoder, encodeBytes32String } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeDecimals, decodeText, readTokenMetadata, TOKEN_METADATA_SELECTORS } from "../../../../lib/chain/token-metadata.js";
import { RetryableError } from "../../../../lib/errors.js";

const abi = AbiCoder.defaultAbiCoder();
const word = (v: bigint) => abi.encode(["uint256"], [v]);

describe("return values", () => {
  it("decimals(): a uint8 word; above 255, short or empty is garbage", () => {
    expect(decodeDecimals(abi.encode(["uint8"], [6]))).toBe(6); // USDT
    expect(decodeDecimals(abi.encode(["uint8"], [18]))).toBe(18);
    expect(decodeDecimals(word(0n))).toBe(0);
    expect(decodeDecimals(word(256n))).toBeNull();
    expect(decodeDecimals(word((1n << 256n) - 1n))).toBeNull();
    expect(decodeDecimals("0x")).toBeNull(); // an account without code answers empty
    expect(decodeDecimals("0x06")).toBeNull();
    expect(decodeDecimals("0xzz")).toBeNull();
  });

  it("symbol()/name(): ABI strings (USDT) and bytes32 (MKR)", () => {
    expect(decodeText(abi.encode(["string"], ["USDT"]))).toBe("USDT");
    expect(decodeText(abi.encode(["string"], ["Tether USD"]))).toBe("Tether USD");
    // MKR (0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2) returns bytes32 for both.
    expect(encodeBytes32String("MKR")).toBe("0x4d4b520000000000000000000000000000000000000000000000000000000000");
    expect(decodeText("0x4d4b520000000000000000000000000000000000000000000000000000000000")).toBe("MKR");
    expect(decodeText(encodeBytes32String("Maker"))).toBe("Maker");
    expect(decodeText(abi.encode(["string"], ["Ünïcode ✓"]))).toBe("Ünïcode ✓");
  });

  it("garbage gives null: empty, not UTF-8, control characters, offsets or lengths out of range", () => {
    expect(decodeText("0x")).toBeNull();
    expect(decodeText(`0x${"00".repeat(32)}`)).toBeNull(); // empty bytes32
    expect(decodeText(`0x${"ff".repeat(32)}`)).toBeNull(); // not UTF-8
    expect(decodeText(abi.encode(["string"], [""]))).toBeNull();
    expect(decodeText(abi.encode(["string"], ["a\u0001b"]))).toBeNull();
    const good = abi.encode(["string"], ["USDT"]).slice(2);
    expect(decodeText(`0x${word(0x40n).slice(2)}${good.slice(64)}`)).toBeNull(); // offset past the data
    expect(decodeText(`0x${good.slice(0, 64)}${word(1000n).slice(2)}${good.slice(128)}`)).toBeNull(); // length past the data
    expect(decodeText(`0x${word(0x21n).slice(2)}${good.slice(64)}`)).toBeNull(); // offset not a multiple of 32
    expect(decodeText(`0x${"41".repeat(40)}`)).toBeNull(); // 40 bytes: neither encoding
    expect(decodeText(abi.encode(["string"], ["x".repeat(100)]))).toBe("x".repeat(64)); // cut
  });
});

/** A JSON-RPC stub whose answer per eth_call is chosen by `answer(to, data, block)`. */
function stub(answer: (to: string, data: string, block: string) => { result?: string; error?: { code: number; message: string } }) {
  let server: Server;
  const state = { url: "", batches: 0, status: 200 };
  const start = async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString();
      });
      req.on("end", () => {
        state.batches++;
        const calls = JSON.parse(body) as Array<{ id: number; params: [{ to: string; data: string }, string] }>;
        const out = calls.map((c) => ({ jsonrpc: "2.0", id: c.id, ...answer(c.params[0].to, c.params[0].data, c.params[1]) }));
        res.writeHead(state.status, { "content-type": "application/json" }).end(JSON.stringify(out));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  return { state, start, stop: () => new Promise<void>((r) => server.close(() => r())) };
}

const A = "0x00000000000000000000000000000000000000a1"; // 8 decimals, bytes32 symbol
const R = "0x00000000000000000000000000000000000000a2"; // reverts (code 3)
const M = "0x00000000000000000000000000000000000000a3"; // state missing at the block, fine at latest
const G = "0x00000000000000000000000000000000000000a4"; // revert as geth -32000 message; symbol garbage

describe("readTokenMetadata against a JSON-RPC stub", () => {
  const node = stub((to, data, block) => {
    if (to === R) return { error: { code: 3, message: "execution reverted: no decimals" } };
    if (to === M && block !== "latest") return { error: { code: -32000, message: "missing trie node abc (path )" } };
    if (to === G)
      return data === TOKEN_METADATA_SELECTORS.decimals ? { error: { code: -32000, message: "execution reverted" } } : { result: "0x" };
    if (data === TOKEN_METADATA_SELECTORS.decimals) return { result: abi.encode(["uint8"], [to === M ? 18 : 8]) };
    if (data === TOKEN_METADATA_SELECTORS.symbol) return { result: encodeBytes32String("EIGHT") };
    return { result: abi.encode(["string"], ["Eight"]) };
  });
  beforeAll(node.start);
  afterAll(node.stop);

  it("reads every contract in one batch; reverts and garbage are null; missing state is asked again at latest", async () => {
    node.state.batches = 0;
    const read = await readTokenMetadata(node.state.url, [
      { address: A, blockNumber: 100 },
      { address: R, blockNumber: 100 },
      { address: M, blockNumber: 100 },
      { address: G, blockNumber: 100 },
      { address: A.toUpperCase().replace("0X", "0x"), blockNumber: 90 }, // a duplicate, read once
    ]);
    expect(read).toEqual([
      { address: A, decimals: 8, symbol: "EIGHT", name: "Eight", unavailable: false },
      { address: R, decimals: null, symbol: null, name: null, unavailable: false },
      { address: M, decimals: 18, symbol: "EIGHT", name: "Eight", unavailable: false },
      { address: G, decimals: null, symbol: null, name: null, unavailable: false },
    ]);
    expect(node.state.batches).toBe(2); // the batch, and M again at latest
  });

  it("batches of at most maxCallsPerRequest calls", async () => {
    node.state.batches = 0;
    const many = Array.from({ length: 10 }, (_, i) => ({ address: `0x${(0xb00 + i).toString(16).padStart(40, "0")}`, blockNumber: 1 }));
    const read = await readTokenMetadata(node.state.url, many, { maxCallsPerRequest: 7 });
    expect(read.map((r) => r.decimals)).toEqual(Array(10).fill(8));
    expect(node.state.batches).toBe(Math.ceil(30 / 7));
  });

  it("a node failure (HTTP 500, connection refused) is a RetryableError", async () => {
    node.state.status = 500;
    try {
      await expect(readTokenMetadata(node.state.url, [{ address: A, blockNumber: 1 }])).rejects.toBeInstanceOf(RetryableError);
    } finally {
      node.state.status = 200;
    }
    await expect(readTokenMetadata("http://127.0.0.1:9", [{ address: A, blockNumber: 1 }])).rejects.toBeInstanceOf(RetryableError);
  });
});

describe("readTokenMetadata against nodes that cannot answer", () => {
  const noCall = stub(() => ({ error: { code: -32601, message: "the method eth_call does not exist/is not available" } }));
  const pruned = stub(() => ({ error: { code: -32000, message: "header not found" } }));
  beforeAll(async () => {
    await noCall.start();
    await pruned.start();
  });
  afterAll(async () => {
    await noCall.stop();
    await pruned.stop();
  });

  it("a node without eth_call: everything null and unavailable (nothing learned)", async () => {
    expect(await readTokenMetadata(noCall.state.url, [{ address: A, blockNumber: 1 }])).toEqual([
      { address: A, decimals: null, symbol: null, name: null, unavailable: true },
    ]);
  });

  it("state missing at the block and at latest: a RetryableError", async () => {
    await expect(readTokenMetadata(pruned.state.url, [{ address: A, blockNumber: 1 }])).rejects.toThrow(
      /failed at its block and at latest: header not found/,
    );
  });
});
