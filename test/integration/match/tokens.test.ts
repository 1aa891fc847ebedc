/**
 * Integration tests of the Token first-sight tracker (pipeline/match/tokens.ts) against the real
 * Redis, under a unique key prefix deleted afterwards: one Token entity per contract across
 * instances and restarts, metadata from a pluggable source, failures retried.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ChainId } from "../../../lib/config/index.js";
import type { EventRecord } from "../../../lib/records.js";
import { createTokenTracker, type TokenMetadataSource, tokenListMetadataSource } from "../../../pipeline/match/tokens.js";
import { redisForFile, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-tokens-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));

const redis = redisForFile(REDIS_URL, PREFIX, up);

function transfer(address: string, standard = "erc20", over: Partial<EventRecord> = {}): EventRecord {
  return {
    event: "Transfer",
    signature: "Transfer(address,address,uint256)",
    standard,
    source: "standard",
    args: [],
    logIndex: { num: 4, raw: "0x4" },
    transactionIndex: { num: 1, raw: "0x1" },
    transactionHash: `0x${"ab".repeat(32)}`,
    address,
    blockHash: `0x${"cd".repeat(32)}`,
    blockNumber: { num: 17053184, raw: "0x1043600" },
    error: null,
    str: "",
    timestamp: "2023-04-15T15:07:23",
    ...over,
  };
}

describe.skipIf(!up)("token tracker (real Redis)", () => {
  it("produces one Token entity per contract, across instances", async () => {
    const calls: string[] = [];
    const source: TokenMetadataSource = {
      async fetch(address, standard, at) {
        calls.push(`${address}:${standard}:${at.blockNumber}`);
        return tokenListMetadataSource(1).fetch(address, standard, at);
      },
    };
    const a = createTokenTracker({ redis: redis(), keyPrefix: PREFIX, chain: CHAIN, metadata: source });
    const b = createTokenTracker({ redis: redis(), keyPrefix: PREFIX, chain: CHAIN, metadata: source });
    const [x, y] = await Promise.all([a.observe(transfer(USDT)), b.observe(transfer(USDT))]);
    const tokens = [x, y].filter((t) => t !== null);
    expect(tokens).toHaveLength(1);
    expect(tokens[0]).toEqual({
      entityId: `0x${"ab".repeat(32)}_token_${USDT.toLowerCase()}`,
      address: USDT,
      name: null,
      symbol: "USDT",
      decimals: 6,
      standard: "erc20",
      transactionHash: `0x${"ab".repeat(32)}`,
      logIndex: { num: 4, raw: "0x4" },
      blockHash: `0x${"cd".repeat(32)}`,
      blockNumber: { num: 17053184, raw: "0x1043600" },
      timestamp: "2023-04-15T15:07:23",
    });
    expect(calls[0]).toBe(`${USDT}:erc20:17053184`);
    // later Transfers, the same instance or a restarted one: nothing, and no metadata call
    const n = calls.length;
    expect(await a.observe(transfer(USDT.toLowerCase()))).toBeNull();
    const restarted = createTokenTracker({ redis: redis(), keyPrefix: PREFIX, chain: CHAIN, metadata: source });
    expect(await restarted.observe(transfer(USDT))).toBeNull();
    expect(calls.length).toBe(n);
  });

  it("ignores other events, failed decodes and other standards; ERC-721 gets null decimals", async () => {
    const t = createTokenTracker({
      redis: redis(),
      keyPrefix: PREFIX,
      chain: CHAIN,
      metadata: { fetch: async () => ({ name: "Kitty", symbol: "CK", decimals: 0.5 }) },
    });
    const nft = "0x06012c8CF97BEaD5deAe237070F9587f8E7A266d";
    expect(await t.observe(transfer(nft, "erc20", { event: "Approval" }))).toBeNull();
    expect(await t.observe(transfer(nft, "erc20", { error: "bad data" }))).toBeNull();
    expect(await t.observe(transfer(nft, "erc1155"))).toBeNull();
    const tok = await t.observe(transfer(nft, "erc721"));
    expect(tok).toMatchObject({ address: nft, name: "Kitty", symbol: "CK", decimals: null, standard: "erc721" });
  });

  it("a failing metadata source records nothing, so the next Transfer retries", async () => {
    let fail = true;
    const t = createTokenTracker({
      redis: redis(),
      keyPrefix: PREFIX,
      chain: CHAIN,
      metadata: {
        fetch: async () => {
          if (fail) throw new Error("node down");
          return { name: "X", symbol: "X", decimals: 18 };
        },
      },
    });
    const addr = "0x0000000000000000000000000000000000000Abc";
    await expect(t.observe(transfer(addr))).rejects.toThrow("node down");
    fail = false;
    expect(await t.observe(transfer(addr))).toMatchObject({ symbol: "X", decimals: 18 });
  });
});
