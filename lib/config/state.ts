/**
 * The state-condition read settings (issue 34 part 1; docs/rules.md, "Planned: state conditions"):
 * the per-chain budget of JSON-RPC reads per block (lib/chain/state-reads.ts). Not yet part of
 * `loadConfig`'s result (lib/config/index.ts): the match stage does not evaluate state conditions yet.
 * @module
 */
import { int } from "./parse.js";

/** Settings of the reads of state conditions, per chain. */
export interface StateReadsConfig {
  /**
   * Most JSON-RPC calls (`eth_getBalance`, `eth_call`, `eth_getStorageAt`) read for one block, in one batch;
   * subjects past it are reported `over_budget`, not read. Env `CHAINSIFT_STATE_MAX_READS_PER_BLOCK`, default 1000.
   */
  maxReadsPerBlock: number;
}

/** Reads {@link StateReadsConfig} from `env`. @throws {ConfigError} for a value that is not an integer ≥ 1. */
export function stateReadsOf(env: NodeJS.ProcessEnv): StateReadsConfig {
  return { maxReadsPerBlock: int(env, "CHAINSIFT_STATE_MAX_READS_PER_BLOCK", 1000, 1) };
}
