/**
 * `chainsift`: the admin CLI. Run as `npx tsx cli/chainsift.ts <command> [options]`.
 *
 * Commands (see `--help` and docs/accounts.md):
 *   accounts create --name <n> [--email <e>]     accounts list     accounts disable <account-id>
 *   tokens issue --account <id> [--name <n>] [--expires-in-days <d>]
 *   tokens list --account <id>                   tokens revoke <token-id>
 *   abis add <address|any> --file <abi.json> (--account <id> | --global) [--name <label>]
 *   abis list (--account <id> | --global)        abis rm <address|any> (--account <id> | --global)
 *   status [--max-lag <records>] [--max-head-lag <blocks>] [--max-dead-letters <n>]   (cli/status.ts)
 *   rules test <file.json> (--from <n> --to <m> | --last <n>)   (cli/rules-test.ts; docs/alerting.md)
 *   searches test <file.json> (--from <n> --to <m> | --last <n>)   (cli/rules-test.ts; docs/alerting.md)
 *   watchlists create|list|add|rm|delete --account <id> …   (cli/commands/watchlists.ts; docs/alerting.md)
 * Every command takes `--json` (one JSON document on stdout) and `--help`.
 * Exit codes: 0 success, 1 failure (not found, disabled, Redis unreachable, …), 2 usage error.
 *
 * Extending: append a {@link CliCommand} (cli/commands/core.ts; the commands live in cli/commands/) to
 * {@link commands} (its `path` is the command words); a command gets lazily opened resources from the
 * {@link CliContext} (add new ones there, with a closer).
 * @module
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { type AbiStore, type ConnectedAbiStore, connectAbiStore } from "../lib/abis/store.js";
import { type AccountErrorCode, isAccountError } from "../lib/accounts/model.js";
import { type AccountStore, type ConnectedAccountStore, connectAccountStore } from "../lib/accounts/store.js";
import { type Config, ConfigError, loadConfig } from "../lib/config/index.js";
import { connectWatchlistStore, type WatchlistStore } from "../lib/watchlists/store.js";
import { abiCommands } from "./commands/abis.js";
import { accountCommands } from "./commands/accounts.js";
import {
  type CliCommand,
  type CliContext,
  CliFailure,
  type CliOutput,
  type CommandArgs,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  processOutput,
  UsageError,
} from "./commands/core.js";
import { alertsReplayCommand, statusCommand } from "./commands/operations.js";
import { partitionsSealCommand } from "./commands/partitions.js";
import { watchlistCommands } from "./commands/watchlists.js";
import { rulesTestCommand, searchesTestCommand } from "./rules-test.js";

export { abisAdd } from "./commands/abis.js";
export {
  accountsCreate,
  accountsDisable,
  accountsList,
  tokenStatus,
  tokensIssue,
  tokensList,
  tokensRevoke,
} from "./commands/accounts.js";
export * from "./commands/core.js";

/** The registered commands, in help order. Append to add one. */
export const commands: CliCommand[] = [
  ...accountCommands,
  ...abiCommands,
  alertsReplayCommand,
  statusCommand,
  rulesTestCommand,
  searchesTestCommand,
  partitionsSealCommand,
  ...watchlistCommands,
];

// ---------------------------------------------------------------------------------------------
// Dispatcher

const GLOBAL_OPTIONS: ParseArgsOptionsConfig = {
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
};

function commandLine(c: CliCommand): string {
  return `chainsift ${c.path.join(" ")}${c.usage ? ` ${c.usage}` : ""}`;
}

/** The overall help text listing `registry`. */
export function helpText(registry: readonly CliCommand[] = commands): string {
  const width = Math.max(...registry.map((c) => c.path.join(" ").length));
  return [
    "chainsift — admin CLI",
    "",
    "Usage: chainsift <command> [options]     (npx tsx cli/chainsift.ts …)",
    "",
    "Commands:",
    ...registry.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`),
    "",
    "Options of every command:",
    "  --json      print one JSON document on stdout (messages go to stderr)",
    "  -h, --help  help of the command",
    "",
    "Exit codes: 0 success, 1 failure (not found, disabled, Redis unreachable), 2 usage error.",
    "Environment: REDIS_URL, CHAINSIFT_REDIS_PREFIX (see docs/configuration.md and docs/accounts.md).",
  ].join("\n");
}

function commandHelp(c: CliCommand): string {
  return [`Usage: ${commandLine(c)} [--json]`, "", c.summary, ...(c.details ? ["", c.details] : [])].join("\n");
}

function groupHelp(words: string[], registry: readonly CliCommand[]): string {
  const matching = registry.filter((c) => words.every((w, i) => c.path[i] === w));
  return [`Commands of chainsift ${words.join(" ")}:`, ...matching.map((c) => `  ${commandLine(c)}`)].join("\n");
}

/** Finds the command whose `path` is the longest prefix of the leading words of `argv`. */
function resolveCommand(argv: string[], registry: readonly CliCommand[]): { command: CliCommand; rest: string[] } | undefined {
  let best: CliCommand | undefined;
  for (const c of registry) {
    if (c.path.every((w, i) => argv[i] === w) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { command: best, rest: argv.slice(best.path.length) } : undefined;
}

function usageExit(output: CliOutput, message: string, hint: string): number {
  output.err(`chainsift: ${message}`);
  output.err(`Run '${hint} --help' for usage.`);
  return EXIT_USAGE;
}

const USAGE_CODES: ReadonlySet<AccountErrorCode> = new Set(["CS_ACCOUNT_INVALID", "CS_TOKEN_INVALID"]);

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "<invalid REDIS_URL>";
  }
}

/** Dependencies of {@link runCli}. */
export interface RunCliDeps {
  config: Config;
  /** Default {@link processOutput}. */
  output?: CliOutput;
  /** Opens the account store (default {@link connectAccountStore} on `config`). */
  connectAccounts?: (config: Config) => Promise<ConnectedAccountStore>;
  /** The commands (default {@link commands}). */
  registry?: readonly CliCommand[];
}

/**
 * Parses `argv` (without `node` and the script), runs the command and closes what it opened.
 * Never throws and never exits the process.
 * @returns the exit code: {@link EXIT_OK}, {@link EXIT_FAILURE} or {@link EXIT_USAGE}.
 */
export async function runCli(argv: readonly string[], deps: RunCliDeps): Promise<number> {
  const output = deps.output ?? processOutput;
  const registry = deps.registry ?? commands;
  const args = [...argv];
  let leadingJson = false;
  let leadingHelp = false;
  while (args[0] !== undefined && ["--json", "--help", "-h"].includes(args[0])) {
    const flag = args.shift();
    if (flag === "--json") leadingJson = true;
    else leadingHelp = true;
  }
  if (args.length === 0 || args[0] === "help") {
    if (leadingHelp || args[0] === "help") {
      output.out(helpText(registry));
      return EXIT_OK;
    }
    output.err(helpText(registry));
    return EXIT_USAGE;
  }

  const resolved = resolveCommand(args, registry);
  if (!resolved) {
    const words = args.filter((a) => !a.startsWith("-"));
    const group = words[0] !== undefined && registry.some((c) => c.path[0] === words[0]) ? [words[0]] : undefined;
    if (group) {
      const wantsHelp = leadingHelp || args.includes("--help") || args.includes("-h");
      if (wantsHelp && words.length === 1) {
        output.out(groupHelp(group, registry));
        return EXIT_OK;
      }
      output.err(words.length > 1 ? `chainsift: unknown command '${words.slice(0, 2).join(" ")}'` : "chainsift: missing command");
      output.err(groupHelp(group, registry));
      return EXIT_USAGE;
    }
    return usageExit(output, `unknown command '${args[0]}'`, "chainsift");
  }

  const { command, rest } = resolved;
  const hint = `chainsift ${command.path.join(" ")}`;
  let values: CommandArgs["values"];
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: { ...command.options, ...GLOBAL_OPTIONS },
      allowPositionals: true,
      strict: true,
    }) as { values: CommandArgs["values"]; positionals: string[] });
  } catch (err) {
    return usageExit(output, (err as Error).message, hint);
  }
  if (leadingHelp || values.help === true) {
    output.out(commandHelp(command));
    return EXIT_OK;
  }
  const expected = command.positionals ?? [];
  if (positionals.length !== expected.length) {
    const message =
      positionals.length < expected.length
        ? `missing argument <${expected[positionals.length]}>`
        : `unexpected argument ${JSON.stringify(positionals[expected.length])}`;
    return usageExit(output, message, hint);
  }

  const opened: Array<{ close(): Promise<unknown> }> = [];
  /** Connects a store once, on first use; {@link runCli} closes it at the end. */
  const lazily = <S>(connect: (config: Config) => Promise<{ store: S; close(): Promise<unknown> }>) => {
    let connecting: Promise<S> | undefined;
    return () => {
      connecting ??= connect(deps.config).then(
        (c) => {
          opened.push(c);
          return c.store;
        },
        (err: unknown) => {
          throw new CliFailure(`cannot connect to Redis at ${redactUrl(deps.config.redisUrl)}: ${(err as Error)?.message ?? String(err)}`, {
            cause: err,
          });
        },
      );
      return connecting;
    };
  };
  const ctx: CliContext = {
    config: deps.config,
    output,
    accounts: lazily<AccountStore>(deps.connectAccounts ?? ((config: Config) => connectAccountStore(config))),
    abis: lazily<AbiStore>((config): Promise<ConnectedAbiStore> => connectAbiStore(config)),
    watchlists: lazily<WatchlistStore>((config) => connectWatchlistStore(config)),
  };

  try {
    return (await command.run(ctx, { values, positionals, json: leadingJson || values.json === true })) ?? EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError) return usageExit(output, err.message, hint);
    if (isAccountError(err)) {
      output.err(`chainsift: ${err.message} (${err.code})`);
      return USAGE_CODES.has(err.code) ? EXIT_USAGE : EXIT_FAILURE;
    }
    if (err instanceof CliFailure) {
      output.err(`chainsift: ${err.message}`);
      return EXIT_FAILURE;
    }
    output.err(`chainsift: ${hint} failed: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_FAILURE;
  } finally {
    for (const c of opened) await c.close().catch(() => {});
  }
}

/** Entry point: loads the config once, runs the CLI on `process.argv`, sets the exit code. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`chainsift: configuration error: ${err.message}\n`);
    process.exitCode = EXIT_FAILURE;
    return;
  }
  process.exitCode = await runCli(process.argv.slice(2), { config });
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) await main();
