/**
 * A chain context for a test's `startPipeline({ chain })` (pipeline/runtime.ts `PipelineDeps.chain`):
 * built from the test's configuration as startPipeline builds its default one, but with the test's
 * own registry for the stages' and the ingesters' metrics, so the test reads them.
 * @module
 */
import type { Registry } from "prom-client";
import type { Config } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import { createChainContext, type PipelineChainContext } from "../../pipeline/chain-context.js";

/** A test's chain context and its teardown. */
export interface ChainFixture {
  context: PipelineChainContext;
  /** Destroys the context's JSON-RPC client (a pipeline does not destroy a context it was given): call after `pipeline.stop()`. */
  close(): void;
}

/**
 * The chain context of `config` (its first served chain) with `metrics` as its registry.
 * @param config - the test's configuration (a harness's `config`, as finally set up).
 */
export function chainFixture(config: Config, logger: Logger, metrics: Registry): ChainFixture {
  const context = createChainContext(config, undefined, { metrics, logger });
  return {
    context,
    close() {
      context.rpc.destroy();
      context.client.destroy();
    },
  };
}
