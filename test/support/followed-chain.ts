/**
 * The environment of the reorg tests: anvil with ERC-20 traffic, the decode and index stages, an
 * ingester following the chain from block 0, and the API (rate limit out of reach) — started and
 * stopped in one place.
 * @module
 */
import type { FastifyInstance } from "fastify";
import { buildApi } from "../../api/app.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { startTraffic, type TrafficHandle } from "../../cli/devchain/traffic.js";
import type { Partitioning } from "../../lib/partitioning.js";
import type { Decoder } from "../../pipeline/decode/decoder.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { createHarness, type Harness } from "./harness.js";

/** A running {@link startFollowedChain} environment. */
export interface FollowedChain {
  h: Harness;
  anvil: AnvilHandle;
  traffic: TrafficHandle;
  pipeline: Pipeline;
  app: FastifyInstance;
  /** The chain's head once the traffic had started, before the pipeline did. */
  setupHeight: number;
  /** Stops everything (the follower first) and removes the test's topics, indices and keys. */
  stop(): Promise<void>;
}

/**
 * Starts anvil (0.25 s blocks) with ERC-20 traffic every 200 ms, decode + index, a follower from
 * block 0 (100 ms polls) and the API.
 * @param decoder The decoder of the decode stage (its chain id must be anvil's, 31337).
 * @param options.partitioning Blocks per partition etc. of the index stage (default the config's).
 */
export async function startFollowedChain(decoder: Decoder, options: { partitioning?: Partitioning } = {}): Promise<FollowedChain> {
  const h = createHarness();
  if (options.partitioning) h.config.elasticsearch.partitioning = options.partitioning;
  h.config.api.rateLimitMax = 1_000_000;
  const controller = new AbortController();
  const anvil = await startAnvil({ blockTimeSec: 0.25 });
  const traffic = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 200, nft: false });
  const setupHeight = Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", []));
  const pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, decoder, stages: ["decode", "index"] });
  const { ingester, close: closeIngester } = await pipeline.createIngester(anvil.rpcUrl);
  const following = ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal });
  const app = await buildApi({ config: h.config, es: h.es, logger: false });
  return {
    h,
    anvil,
    traffic,
    pipeline,
    app,
    setupHeight,
    async stop() {
      controller.abort();
      await following.catch(() => {});
      await traffic.stop();
      await closeIngester();
      await app.close();
      await pipeline.stop();
      await anvil.stop();
      await (await pipeline.chainState()).reset().catch(() => {});
      await h.cleanup();
    },
  };
}
