/**
 * The state-condition read settings (issue 34 part 1; docs/rules.md, "State conditions"):
 * the per-chain budget of JSON-RPC reads per block (lib/chain/state-reads.ts), and how often the
 * match stage's state evaluator (pipeline/match/state/evaluator.ts) retries a failed read. `loadConfig`'s
 * `config.stateReads` (lib/config/index.ts).
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
  /**
   * Tries of one block's reads (the batch, then each failed subject again) before the block is handed back to
   * the consumer as a retryable failure (re-consumed later, never skipped). Env `CHAINSIFT_STATE_READ_ATTEMPTS`,
   * default 4.
   */
  readAttempts: number;
  /** Wait in ms before the first retry of a failed read, doubled per retry. Env `CHAINSIFT_STATE_READ_RETRY_MS`, default 200. */
  readRetryMs: number;
  /**
   * Most readings one state-rule backtest takes (`POST /alerting/rules/test/` of a rule with `stateCondition`,
   * api/backtest/state-scan.ts): one per due block of the range (every `every.blocks`-th); a longer range is refused
   * with `CS_BACKTEST_RANGE_TOO_LARGE`. Env `CHAINSIFT_STATE_BACKTEST_MAX_READS`, default 10000.
   */
  backtestMaxReads: number;
}

/** Reads {@link StateReadsConfig} from `env`. @throws {ConfigError} for a value that is not an integer ≥ 1. */
export function stateReadsOf(env: NodeJS.ProcessEnv): StateReadsConfig {
  return {
    maxReadsPerBlock: int(env, "CHAINSIFT_STATE_MAX_READS_PER_BLOCK", 1000, 1),
    readAttempts: int(env, "CHAINSIFT_STATE_READ_ATTEMPTS", 4, 1),
    readRetryMs: int(env, "CHAINSIFT_STATE_READ_RETRY_MS", 200, 0),
    backtestMaxReads: int(env, "CHAINSIFT_STATE_BACKTEST_MAX_READS", 10_000, 1),
  };
}
