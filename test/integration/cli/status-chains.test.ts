/**
 * `chainsift status` with a chains file of two chains, on the real Kafka and Redis: one report per
 * chain (its ids, what its ingest published in Redis, its own consumer groups), a table of both on
 * the screen, and a chain whose node does not answer makes the whole status unhealthy. No node runs:
 * both chains' JSON-RPC URLs point to a closed port, and ingest's Redis state is written directly.
 */
import { afterAll, describe, expect, it } from "vitest";
import { chainConfigs, gatherStatus, renderStatus } from "../../../cli/status.js";
import { startIngestStatusWriter } from "../../../lib/chain/ingest-status.js";
import { createRedisChainState } from "../../../lib/chain/state.js";
import type { ChainId } from "../../../lib/config/index.js";
import { connectRedisClient } from "../../../lib/redis.js";
import { createHarness, probeStack } from "../../support/harness.js";
import { deletePrefix } from "../accounts/redis.js";

const up = await probeStack();
const A: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const B: ChainId = { technology: "ethereum", blockchain: "base", network: "mainnet" };
const CLOSED = "http://127.0.0.1:1/";

describe.skipIf(!up.ok)("chainsift status per chain", () => {
  const h = createHarness();
  h.config.chain = A;
  h.config.chainId = 1;
  h.config.ingest = { ...h.config.ingest, rpcUrl: CLOSED, rpcUrls: [CLOSED] };
  h.config.chainsFile = {
    path: "status-chains.test.yaml",
    chains: [
      { ...A, chainId: 1, rpcUrls: [CLOSED] },
      { ...B, chainId: 8453, rpcUrls: ["http://127.0.0.1:2/"] },
    ],
  };

  afterAll(async () => {
    await h.cleanup();
    await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
  });

  it("the chains file's chains get their own configuration: ids, endpoints, consumer groups", () => {
    const [a, b] = chainConfigs(h.config);
    expect(a).toBe(h.config);
    expect(b).toMatchObject({ chain: B, chainId: 8453, ingest: { rpcUrl: "http://127.0.0.1:2/", rpcUrls: ["http://127.0.0.1:2/"] } });
  });

  it("reports every chain: what its ingest published, its groups; a chain's node down is unhealthy", { timeout: 60_000 }, async () => {
    const redis = await connectRedisClient(h.config.redisUrl);
    try {
      await createRedisChainState(redis.client, h.config.redisKeyPrefix, B).markProduced({ number: 500, hash: `0x${"ef".repeat(32)}` });
      const position = { head: 507, activeAtMs: Date.now(), last: 500, lastTimestampMs: Date.now() };
      await startIngestStatusWriter({ redis: redis.client, keyPrefix: h.config.redisKeyPrefix, chain: B, position }).stop();
    } finally {
      await redis.close();
    }
    const s = await gatherStatus(h.config, { maxLag: 0 });
    expect(s.chain).toBe("ethereum/ethereum/mainnet");
    expect(s.chains.map((c) => [c.chain, c.chainId, c.ingested, c.ingestHead, c.head])).toEqual([
      ["ethereum/ethereum/mainnet", 1, null, null, null],
      ["ethereum/base/mainnet", 8453, 500, 507, null],
    ]);
    // Each chain's consumer groups are its own (the group ids name the chain).
    const groupsOf = (i: number) => s.chains[i]?.groups.map((g) => g.group) ?? [];
    expect(groupsOf(0).length).toBeGreaterThan(0);
    expect(groupsOf(0).every((g) => g.includes(".ethereum.ethereum.mainnet."))).toBe(true);
    expect(groupsOf(1).every((g) => g.includes(".ethereum.base.mainnet."))).toBe(true);
    // The top level is config.chain's, as before.
    expect(s.ingested).toBeNull();
    expect(s.groups).toEqual(s.chains[0]?.groups);
    // Neither node answers: rpc-node is down, naming both chains.
    const rpc = s.services.find((v) => v.name === "rpc-node");
    expect(rpc?.ok).toBe(false);
    expect(rpc?.detail).toMatch(/^ethereum\/ethereum\/mainnet: eth_blockNumber: .*; ethereum\/base\/mainnet: eth_blockNumber: /);
    expect(s.healthy).toBe(false);
    const text = renderStatus(s);
    expect(text).toContain("Chains");
    expect(text).toMatch(/ethereum\/base\/mainnet\s+8453\s+-\s+500\s+-/);
    expect(text).toContain("Chain ethereum/ethereum/mainnet");
  });
});
