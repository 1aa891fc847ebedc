/**
 * The environment of a chainsift child process (`cli/stage.ts`, `cli/api.ts`, or their builds in
 * `dist/`) that runs on a test harness's prefixes: {@link configEnv} (test/support/stage-process.ts)
 * plus quiet kafkajs partitioner warnings.
 * @module
 */
import type { Config } from "../../lib/config/index.js";
import { configEnv } from "./stage-process.js";

/**
 * This process's environment plus the variables that make a child load `config`'s chain, service
 * URLs and prefixes (docs/configuration.md), then `extra` (e.g. `CHAINSIFT_INSTANCE_ID`).
 * `LOG_LEVEL` is this process's, or `warn`.
 */
export function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return configEnv(config, { KAFKAJS_NO_PARTITIONER_WARNING: "1", ...extra });
}
