/**
 * Runs the admin CLI in-process (`runCli`) with a test's config and collects what it prints.
 * @module
 */
import { type CliOutput, runCli } from "../../../cli/chainsift.js";
import type { Config } from "../../../lib/config/index.js";

/** What one CLI run printed and returned. */
export interface CliRun {
  code: number;
  /** stdout lines joined with `\n`. */
  out: string;
  /** stderr lines joined with `\n`. */
  err: string;
}

/** A function running `chainsift <argv…>` against `config`. */
export function cliRunner(config: Config): (...argv: string[]) => Promise<CliRun> {
  return async (...argv) => {
    const out: string[] = [];
    const err: string[] = [];
    const output: CliOutput = { out: (t) => out.push(t), err: (t) => err.push(t) };
    const code = await runCli(argv, { config, output });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };
}
