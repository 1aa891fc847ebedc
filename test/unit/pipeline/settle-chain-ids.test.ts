/**
 * `npm start` settles its chains' ids before it builds their contexts (pipeline/wiring.ts
 * `settleChainIds`): each node is asked `eth_chainId` once, an unset id becomes the node's, a
 * configured one must be the node's. Against scripted JSON-RPC servers on 127.0.0.1
 * (test/support/scripted-rpc.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { type ChainSettings, loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { ChainIdMismatchError } from "../../../pipeline/runtime.js";
import { settleChainIds } from "../../../pipeline/wiring.js";
import { type ScriptedRpc, startScriptedRpc } from "../../support/scripted-rpc.js";

const logger = createLogger("silent");
const servers: ScriptedRpc[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A node answering `eth_chainId` with `chainId`. */
async function node(chainId: number): Promise<ScriptedRpc> {
  const s = await startScriptedRpc({ answer: (call) => (call.method === "eth_chainId" ? `0x${chainId.toString(16)}` : undefined) });
  servers.push(s);
  return s;
}

/** The default configuration serving `served`. */
function configServing(served: ChainSettings[]) {
  const config = loadConfig({});
  config.served = served;
  return config;
}

describe("settleChainIds", () => {
  it("takes each node's chain id where none is configured, keeps a configured one the node agrees with, asking each node once", async () => {
    const [a, b] = await Promise.all([node(31337), node(8453)]);
    const base = loadConfig({}).served[0] as ChainSettings;
    const unset: ChainSettings = { ...base, chainId: 1, chainIdFrom: "default", rpcUrls: [a.url] };
    const configured: ChainSettings = {
      ...base,
      chain: { ...base.chain, blockchain: "base" },
      chainId: 8453,
      chainIdFrom: "env",
      rpcUrls: [b.url],
    };
    const config = configServing([unset, configured]);
    const settled = await settleChainIds(config, logger);
    expect(settled.map((s) => [s.chain.blockchain, s.chainId, s.chainIdFrom])).toEqual([
      ["ethereum", 31337, "default"],
      ["base", 8453, "env"],
    ]);
    // The configuration is not changed: the contexts are built from what is returned.
    expect(config.served[0]?.chainId).toBe(1);
    for (const s of [a, b]) expect(s.requests.flat().filter((c) => c.method === "eth_chainId")).toHaveLength(1);
  });

  it("refuses a node whose chain id is not the configured one (CS_CHAIN_ID_MISMATCH)", async () => {
    const a = await node(31337);
    const base = loadConfig({}).served[0] as ChainSettings;
    const config = configServing([{ ...base, chainId: 1, chainIdFrom: "env", rpcUrls: [a.url] }]);
    const err = await settleChainIds(config, logger).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainIdMismatchError);
    expect((err as Error).message).toMatch(/^CS_CHAIN_ID_MISMATCH: .* configured as chain id 1 .* answers eth_chainId 31337/);
  });
});
