import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilHandle } from "../../../cli/devchain/anvil.js";
import { rpcCall } from "../../../cli/devchain/rpc.js";
import type { TrafficHandle } from "../../../cli/devchain/traffic.js";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { compareWithChain } from "../../support/canonical.js";
import { type FollowedChain, startFollowedChain } from "../../support/followed-chain.js";
import { type Harness, probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

describe.skipIf(!up.ok)("index stage after a reorg (anvil with ERC-20 traffic, decode + index)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let traffic: TrafficHandle;
  let app: FastifyInstance;
  const decoder = createDecoder({ chainId: 31337 });

  const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
  const hashAt = async (n: number) => ((await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string }).hash;

  let env: FollowedChain;
  beforeAll(async () => {
    env = await startFollowedChain(decoder);
    ({ h, anvil, traffic, app } = env);
  });
  afterAll(async () => {
    await env?.stop();
  });

  it("removes every record of the orphaned blocks and serves exactly the node's canonical chain", async () => {
    await waitFor(async () => Number(await rpc("eth_blockNumber")) >= 30, 60_000, 100);
    const head = Number(await rpc("eth_blockNumber"));
    const depth = 5;
    // Wait until the blocks about to be orphaned are searchable, so their removal is what is tested.
    let before: Awaited<ReturnType<typeof compareWithChain>> | undefined;
    await waitFor(
      async () => {
        before = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, to: head });
        return before.ok;
      },
      30_000,
      500,
    ).catch((err) => console.error(err));
    expect(before?.problems).toEqual([]);
    // Mining paused: the hashes read are exactly the blocks the reorg replaces.
    await rpc("evm_setIntervalMining", [0]);
    const top = Number(await rpc("eth_blockNumber"));
    const orphaned = await Promise.all(Array.from({ length: depth }, (_, i) => hashAt(top - i)));
    await rpc("anvil_reorg", [depth, []]);
    await rpc("evm_setIntervalMining", [1]);
    const end = Number(await rpc("eth_blockNumber")) + 3;
    await waitFor(async () => Number(await rpc("eth_blockNumber")) >= end, 30_000, 100);
    await traffic.stop();
    let last: Awaited<ReturnType<typeof compareWithChain>> | undefined;
    await waitFor(
      async () => {
        last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, to: end, orphaned });
        return last.ok;
      },
      60_000,
      500,
    ).catch(() => {});
    expect(last?.problems).toEqual([]);
    expect(last?.stillCanonical).toEqual([]);
    expect(last?.heights).toBe(end + 1);
  }, 180_000);
});
