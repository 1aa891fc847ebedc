/**
 * The common end of the e2e tests that run a pipeline on anvil with a rule and an alerts watcher
 * (chaos-sigkill, fault-matrix): stops what they started, in order, and removes the run's topics,
 * indices and Redis keys. Every part is optional (a `beforeAll` may have failed half-way); errors
 * of the watcher, the rule store and the chain-state reset are dropped.
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { Consumer } from "kafkajs";
import type { AnvilHandle } from "../../cli/devchain/anvil.js";
import type { Pipeline } from "../../pipeline/runtime.js";
import { deletePrefix } from "../integration/accounts/redis.js";
import type { Harness } from "./harness.js";

/** What {@link stopChainTest} stops. */
export interface ChainTestParts {
  watcher?: Consumer;
  app?: FastifyInstance;
  closeRules?: () => Promise<void>;
  pipeline?: Pipeline;
  anvil?: AnvilHandle;
  h?: Harness;
}

/** Disconnects the watcher, closes the API and the rule store, stops the pipeline and anvil, resets the chain state, deletes the Redis keys, topics and indices. */
export async function stopChainTest(p: ChainTestParts): Promise<void> {
  await p.watcher?.disconnect().catch(() => {});
  await p.app?.close();
  await p.closeRules?.().catch(() => {});
  await p.pipeline?.stop();
  await p.anvil?.stop();
  await (await p.pipeline?.chainState())?.reset().catch(() => {});
  if (p.h) await deletePrefix(p.h.config.redisUrl, p.h.redisPrefix).catch(() => 0);
  await p.h?.cleanup();
}
