/**
 * Decimals on chain, end to end on anvil: two ERC-20s in no token list are deployed (compiled
 * offline with solc-js) — one with 8 decimals and an MKR-style `bytes32` symbol, one whose
 * `decimals()` reverts — and a transfer of each is followed through ingest → Kafka → decode (with
 * on-chain token metadata, `CHAINSIFT_DECODE_TOKEN_CALLS`) → index → the event search API. The
 * first's Transfer has `scaled` = value / 1e8 and a cache entry without TTL; the second's has
 * `scaled` null and a negative cache entry with the configured TTL.
 */
import { ContractFactory, getAddress, JsonRpcProvider, JsonRpcSigner } from "ethers";
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import type { HitsEnvelope } from "../../api/search/envelope.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { tokenCacheKeyPrefix } from "../../lib/chain/token-cache.js";
import type { EventRecord } from "../../lib/records.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { deletePrefix } from "../integration/accounts/redis.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
/// ERC-20 with 8 decimals and a bytes32 symbol (as MKR's), in no token list.
contract EightDecimals {
    string public name = "Eight Decimals";
    bytes32 public symbol = "EIGHT";
    uint8 public decimals = 8;
    mapping(address => uint256) public balanceOf;
    event Transfer(address indexed from, address indexed to, uint256 value);
    constructor() { balanceOf[msg.sender] = 1e20; }
    function transfer(address to, uint256 value) external returns (bool) {
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }
}
/// An ERC-20 Transfer emitter whose decimals() reverts.
contract RevertingDecimals {
    event Transfer(address indexed from, address indexed to, uint256 value);
    function decimals() external pure returns (uint8) { revert("no decimals here"); }
    function transfer(address to, uint256 value) external returns (bool) {
        emit Transfer(msg.sender, to, value);
        return true;
    }
}
`;

interface Compiled {
  abi: unknown[];
  bytecode: string;
}

async function compile(): Promise<Record<"EightDecimals" | "RevertingDecimals", Compiled>> {
  const { default: solc } = await import("solc");
  const input = {
    language: "Solidity",
    sources: { "Tokens.sol": { content: SOURCE } },
    settings: { evmVersion: "cancun", outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const get = (name: string): Compiled => {
    const c = out.contracts["Tokens.sol"]?.[name];
    if (!c) throw new Error(`solc produced no ${name}`);
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  };
  return { EightDecimals: get("EightDecimals"), RevertingDecimals: get("RevertingDecimals") };
}

const NEGATIVE_TTL_MS = 3_600_000;

describe.skipIf(!up.ok)("decimals read on chain for a token in no list (anvil, decode + index, event search)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let provider: JsonRpcProvider;
  let pipeline: Pipeline;
  let app: FastifyInstance;
  let stopFollowing: () => Promise<void> = async () => {};

  beforeAll(async () => {
    h = createHarness();
    h.config.chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
    h.config.decode = { ...h.config.decode, tokenCalls: true, tokenNegativeTtlMs: NEGATIVE_TTL_MS };
    anvil = await startAnvil({ blockTimeSec: 0 });
    provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 100 });
    pipeline = await startPipeline({
      // The chain context's one JSON-RPC client reads token metadata from this anvil.
      config: { ...h.config, chainId: anvil.chainId, ingest: { ...h.config.ingest, rpcUrl: anvil.rpcUrl, rpcUrls: [anvil.rpcUrl] } },
      logger: h.logger,
      es: h.es,
      decoder: createDecoder({ chainId: anvil.chainId }),
      stages: ["decode", "index"],
      refresh: true,
    });
    const controller = new AbortController();
    const ingest = await pipeline.createIngester(anvil.rpcUrl, { traces: false });
    const following = ingest.ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal });
    stopFollowing = async () => {
      controller.abort();
      await following.catch(() => {});
      await ingest.close();
    };
    app = await buildApi({ config: h.config, es: h.es, logger: false });
  }, 120_000);

  afterAll(async () => {
    await stopFollowing();
    await app?.close();
    await pipeline?.stop();
    provider?.destroy();
    await anvil?.stop();
    if (h) {
      await h.cleanup();
      await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
    }
  });

  it("Transfer of an 8-decimals token: scaled = value / 1e8, cache entry without TTL; a reverting decimals(): scaled null, negative entry", async () => {
    const contracts = await compile();
    const [account] = (await provider.send("eth_accounts", [])) as string[];
    const signer = new JsonRpcSigner(provider, getAddress(account as string));
    const deploy = async (c: Compiled) => {
      const deployed = await (await new ContractFactory(c.abi as never, c.bytecode, signer).deploy()).waitForDeployment();
      return deployed;
    };
    const eight = await deploy(contracts.EightDecimals);
    const reverting = await deploy(contracts.RevertingDecimals);
    const to = "0x00000000000000000000000000000000000000b0";
    const value = 123_456_789n; // 1.23456789 EIGHT
    await (await eight.getFunction("transfer")(to, value)).wait();
    await (await reverting.getFunction("transfer")(to, value)).wait();
    const eightAddress = getAddress(await eight.getAddress());
    const revertingAddress = getAddress(await reverting.getAddress());

    const search = async (address: string): Promise<EventRecord | undefined> => {
      const res = await app.inject({
        method: "POST",
        url: `/${h.config.chain.technology}/${h.config.chain.blockchain}/${h.config.chain.network}/es/event/search/`,
        headers: { authorization: `Bearer ${h.config.api.tokens[0]}` },
        payload: { query: { term: { "address.raw": address } } },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<HitsEnvelope>().hits.hits[0]?._source as EventRecord | undefined;
    };
    const found = await waitFor(async () => {
      const [a, b] = await Promise.all([search(eightAddress), search(revertingAddress)]);
      return a && b ? { a, b } : undefined;
    }, 60_000);

    const arg = (ev: EventRecord) => ev.args.find((x) => x.name === "value")?.value;
    expect(found.a).toMatchObject({ event: "Transfer", standard: "erc20", source: "standard", error: null });
    expect(arg(found.a)?.num).toBe(Number(value));
    expect(arg(found.a)?.scaled).toBe(Number(value) / 1e8);
    expect(arg(found.a)?.scaled).toBe(1.23456789);
    expect(found.a.str).toContain("value=123456789 [1.23456789 EIGHT]");
    expect(found.b).toMatchObject({ event: "Transfer", standard: "erc20", error: null });
    expect(arg(found.b)?.scaled).toBeNull();

    const redis = createClient({ url: h.config.redisUrl });
    await redis.connect();
    try {
      const prefix = tokenCacheKeyPrefix(h.config.redisKeyPrefix, h.config.chain);
      const eightKey = prefix + eightAddress.toLowerCase();
      const revertingKey = prefix + revertingAddress.toLowerCase();
      expect(JSON.parse((await redis.get(eightKey)) ?? "null")).toMatchObject({ decimals: 8, symbol: "EIGHT", name: "Eight Decimals" });
      expect(await redis.pTTL(eightKey)).toBe(-1); // no expiry
      expect(JSON.parse((await redis.get(revertingKey)) ?? "null")).toMatchObject({ decimals: null, symbol: null, name: null });
      const ttl = await redis.pTTL(revertingKey);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(NEGATIVE_TTL_MS);
    } finally {
      await redis.close();
    }
  }, 120_000);
});
