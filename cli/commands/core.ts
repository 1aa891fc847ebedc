/**
 * The admin CLI's shared parts: exit codes, output, parsed arguments, errors, the command and
 * context shapes, and the small helpers the commands use. The dispatcher is cli/chainsift.ts.
 * @module
 */
import type { ParseArgsOptionsConfig } from "node:util";
import type { AbiStore } from "../../lib/abis/store.js";
import type { AccountStore } from "../../lib/accounts/store.js";
import type { Config } from "../../lib/config/index.js";
import { ChainsiftError } from "../../lib/errors.js";
import type { WatchlistStore } from "../../lib/watchlists/store.js";

/** Exit status of a successful command. */
export const EXIT_OK = 0;
/** Exit status of a failed command: not found, disabled, Redis unreachable, unexpected errors. */
export const EXIT_FAILURE = 1;
/** Exit status of a usage error: unknown command, bad or missing option, invalid value. */
export const EXIT_USAGE = 2;

/** Where a command writes: `out` for results (stdout), `err` for messages and warnings (stderr). Each call is one line or block; a newline is appended. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

/** {@link CliOutput} on the process's stdout and stderr. */
export const processOutput: CliOutput = {
  out: (text) => {
    process.stdout.write(`${text}\n`);
  },
  err: (text) => {
    process.stderr.write(`${text}\n`);
  },
};

/** Parsed arguments of one command invocation (after the command words). */
export interface CommandArgs {
  /** Option values by long name (`string` for `type: "string"`, `boolean` for flags); absent when not given. */
  values: Record<string, string | boolean | undefined>;
  /** Positional arguments after the command words, e.g. the id of `tokens revoke <id>`. */
  positionals: string[];
  /** `--json`: print one machine-readable JSON document on stdout. */
  json: boolean;
}

/** A usage error (exit {@link EXIT_USAGE}); the message is printed with a pointer to `--help`. */
export class UsageError extends ChainsiftError {
  /** Always `CS_USAGE`. */
  readonly code = "CS_USAGE";
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A failure with a message meant for the operator as is (exit {@link EXIT_FAILURE}). */
export class CliFailure extends ChainsiftError {
  /** Always `CS_CLI_FAILURE`. */
  readonly code = "CS_CLI_FAILURE";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "CliFailure";
  }
}

/** What a command can use. Resources open on first use and are closed by {@link runCli} afterwards. */
export interface CliContext {
  /** The configuration, loaded once by the process. */
  config: Config;
  output: CliOutput;
  /** The account store (connects to Redis on first call, once). @throws {CliFailure} when Redis cannot be reached. */
  accounts(): Promise<AccountStore>;
  /** The user-ABI store (lib/abis; connects to Redis on first call, once). @throws {CliFailure} when Redis cannot be reached. */
  abis(): Promise<AbiStore>;
  /** The watchlist store (lib/watchlists, the API's limits; connects to Redis on first call, once). @throws {CliFailure} when Redis cannot be reached. */
  watchlists(): Promise<WatchlistStore>;
}

/** One CLI command. */
export interface CliCommand {
  /** The command words, e.g. `["tokens", "issue"]`. */
  path: string[];
  /** One line for the command list. */
  summary: string;
  /** Arguments after the command words, for help, e.g. `--account <id> [--name <n>]`. */
  usage: string;
  /** Longer help text (optional). */
  details?: string;
  /** Options for `node:util` parseArgs; `--json` and `--help` are added to every command. */
  options: ParseArgsOptionsConfig;
  /** Names of the required positional arguments (exactly these many are accepted), default none. */
  positionals?: string[];
  /** Runs the command. @returns the exit code (default {@link EXIT_OK}); throw {@link UsageError}/{@link CliFailure}/`AccountError` to fail. */
  run(ctx: CliContext, args: CommandArgs): Promise<number | undefined>;
}

// ---------------------------------------------------------------------------------------------
// Formatting and argument helpers

/** Prints `value` as one JSON line on `output.out`. */
export function printJson(output: CliOutput, value: unknown): void {
  output.out(JSON.stringify(value));
}

/** `rows` as a text table: columns padded to their widest cell, two spaces apart (the last column unpadded). */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")).join("\n");
}

/** The non-empty string value of option `--<name>`. @throws {UsageError} when it is missing or empty. */
export function requiredString(args: CommandArgs, name: string): string {
  const v = args.values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} <value> is required`);
  return v;
}

/** The string value of option `--<name>`, or `undefined` when not given. */
export function optionalString(args: CommandArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === "string" ? v : undefined;
}
