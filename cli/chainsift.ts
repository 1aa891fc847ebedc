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
 * Every command takes `--json` (one JSON document on stdout) and `--help`.
 * Exit codes: 0 success, 1 failure (not found, disabled, Redis unreachable, …), 2 usage error.
 *
 * Extending: append a {@link CliCommand} to {@link commands} (its `path` is the command words); a
 * command gets lazily opened resources from the {@link CliContext} (add new ones there, with a closer).
 * @module
 */
import { realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { GLOBAL_NAMESPACE, normalizeAbiAddress, validateAbiBody } from "../lib/abis/model.js";
import { type AbiStore, AbiStoreError, type ConnectedAbiStore, connectAbiStore } from "../lib/abis/store.js";
import { type AccountErrorCode, isAccountError, type TokenInfo } from "../lib/accounts/model.js";
import { type AccountStore, type ConnectedAccountStore, connectAccountStore } from "../lib/accounts/store.js";
import { type Config, ConfigError, loadConfig } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { createBus } from "../pipeline/kafka/bus.js";
import { replayAlertDeadLetters } from "../pipeline/notify/replay.js";
import { rulesTestCommand } from "./rules-test.js";
import { gatherStatus, renderStatus, type StatusThresholds } from "./status.js";

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
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A failure with a message meant for the operator as is (exit {@link EXIT_FAILURE}). */
export class CliFailure extends Error {
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
// Formatting helpers

function printJson(output: CliOutput, value: unknown): void {
  output.out(JSON.stringify(value));
}

function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")).join("\n");
}

/** The state of a token at `now`: `revoked`, `expired` or `active`. */
export function tokenStatus(info: TokenInfo, now: Date = new Date()): "active" | "revoked" | "expired" {
  if (info.revokedAt !== null) return "revoked";
  if (info.expiresAt !== null && Date.parse(info.expiresAt) <= now.getTime()) return "expired";
  return "active";
}

function requiredString(args: CommandArgs, name: string): string {
  const v = args.values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} <value> is required`);
  return v;
}

function optionalString(args: CommandArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === "string" ? v : undefined;
}

/** Largest `--expires-in-days`: 100 years. */
const MAX_EXPIRES_IN_DAYS = 36_500;

// ---------------------------------------------------------------------------------------------
// Command implementations: (store, args, output) → exit code. Each throws AccountError / UsageError.

/**
 * `accounts create --name <n> [--email <e>]`: registers an account and prints it as JSON
 * (indented; one line with `--json`).
 * @throws {UsageError} without `--name`; {@link AccountError} `CS_ACCOUNT_INVALID` for a bad name/e-mail.
 */
export async function accountsCreate(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const account = await store.createAccount({ name: requiredString(args, "name"), email: optionalString(args, "email") ?? null });
  output.out(args.json ? JSON.stringify(account) : JSON.stringify(account, null, 2));
  return EXIT_OK;
}

/** `accounts list`: all accounts, oldest first (a table; a JSON array with `--json`). */
export async function accountsList(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const accounts = await store.listAccounts();
  if (args.json) printJson(output, accounts);
  else if (accounts.length === 0) output.err("no accounts");
  else
    output.out(
      table([
        ["ID", "NAME", "EMAIL", "CREATED", "STATUS"],
        ...accounts.map((a) => [a.id, a.name, a.email ?? "-", a.createdAt, a.disabled ? "disabled" : "active"]),
      ]),
    );
  return EXIT_OK;
}

/**
 * `accounts disable <account-id>`: disables an account; its tokens stop authenticating at once.
 * @throws {AccountError} `CS_ACCOUNT_NOT_FOUND`.
 */
export async function accountsDisable(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const account = await store.disableAccount(args.positionals[0] ?? "");
  if (args.json) printJson(output, account);
  else output.out(`account ${account.id} (${account.name}) disabled: none of its tokens authenticates any more`);
  return EXIT_OK;
}

/**
 * `tokens issue --account <id> [--name <n>] [--expires-in-days <d>]`: issues a token and prints the
 * secret once (with `--json`: `{"token": "...", "info": TokenInfo}`), plus a warning on stderr that it
 * cannot be shown again. `<d>` is a positive number of days (fractions allowed, at most 36500).
 * @throws {UsageError} for a missing account or bad `--expires-in-days`; {@link AccountError}
 *   `CS_ACCOUNT_NOT_FOUND`, `CS_ACCOUNT_DISABLED`, `CS_TOKEN_INVALID`.
 */
export async function tokensIssue(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const accountId = requiredString(args, "account");
  const days = optionalString(args, "expires-in-days");
  let expiresAt: Date | null = null;
  if (days !== undefined) {
    const d = Number(days);
    if (days.trim() === "" || !Number.isFinite(d) || d <= 0 || d > MAX_EXPIRES_IN_DAYS) {
      throw new UsageError(`--expires-in-days: expected a number of days > 0 and <= ${MAX_EXPIRES_IN_DAYS}, got ${JSON.stringify(days)}`);
    }
    expiresAt = new Date(Date.now() + Math.round(d * 86_400_000));
  }
  const { token, info } = await store.issueToken(accountId, { name: optionalString(args, "name") ?? null, expiresAt });
  if (args.json) printJson(output, { token, info });
  else
    output.out(
      [
        `token:    ${token}`,
        `token id: ${info.id}`,
        `account:  ${info.accountId}`,
        `name:     ${info.name ?? "-"}`,
        `expires:  ${info.expiresAt ?? "never"}`,
      ].join("\n"),
    );
  output.err(
    "WARNING: the token is shown only this once and cannot be retrieved again (only its SHA-256 hash is stored). " +
      `Store it now; if it is lost, revoke it (tokens revoke ${info.id}) and issue a new one.`,
  );
  return EXIT_OK;
}

/**
 * `tokens list --account <id>`: an account's tokens, oldest first, with their status (never the
 * secret or its hash).
 * @throws {AccountError} `CS_ACCOUNT_NOT_FOUND`.
 */
export async function tokensList(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const tokens = await store.listTokens(requiredString(args, "account"));
  if (args.json) printJson(output, tokens);
  else if (tokens.length === 0) output.err("no tokens");
  else {
    const now = new Date();
    output.out(
      table([
        ["ID", "PREFIX", "NAME", "STATUS", "CREATED", "EXPIRES", "LAST USED"],
        ...tokens.map((t) => [
          t.id,
          `cs_${t.prefix}…`,
          t.name ?? "-",
          tokenStatus(t, now),
          t.createdAt,
          t.expiresAt ?? "never",
          t.lastUsedAt ?? "never",
        ]),
      ]),
    );
  }
  return EXIT_OK;
}

/**
 * `tokens revoke <token-id>`: revokes a token; it stops authenticating immediately. Idempotent.
 * @throws {AccountError} `CS_TOKEN_NOT_FOUND`.
 */
export async function tokensRevoke(store: AccountStore, args: CommandArgs, output: CliOutput): Promise<number> {
  const info = await store.revokeToken(args.positionals[0] ?? "");
  if (args.json) printJson(output, info);
  else output.out(`token ${info.id} (cs_${info.prefix}…) of account ${info.accountId} revoked at ${info.revokedAt}`);
  return EXIT_OK;
}

/** Adapts a `(store, args, output)` implementation to {@link CliCommand.run}. */
/**
 * The namespace of an `abis` command: `--global`, or `--account <id>` of an existing account.
 * @throws {UsageError} when neither or both are given; {@link CliFailure} for an unknown account.
 */
async function abiNamespace(ctx: CliContext, args: CommandArgs): Promise<string> {
  const account = optionalString(args, "account");
  const global = args.values.global === true;
  if ((account === undefined) === !global) throw new UsageError("give exactly one of --account <account-id> and --global");
  if (global) return GLOBAL_NAMESPACE;
  if (!(await (await ctx.accounts()).getAccount(account as string))) throw new CliFailure(`no account with id ${JSON.stringify(account)}`);
  return account as string;
}

/** The canonical address of a positional argument. @throws {UsageError} when it is neither an address nor `any`. */
function abiAddress(raw: string): string {
  const a = normalizeAbiAddress(raw);
  if (!a) throw new UsageError(`<address>: expected 0x followed by 40 hex digits, or any; got ${JSON.stringify(raw)}`);
  return a;
}

/**
 * `abis add <address|any> --file <f> (--account <id> | --global) [--name <label>]`: registers the
 * ABI in the file (a JSON ABI array, or an object with an `abi` array such as a Foundry or Hardhat
 * artifact) with the API's validation; prints the registration.
 * @throws {UsageError} for an unreadable file, invalid JSON or an invalid ABI (every problem with its path).
 */
export async function abisAdd(ctx: CliContext, args: CommandArgs): Promise<number> {
  const address = abiAddress(args.positionals[0] as string);
  const file = requiredString(args, "file");
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    throw new UsageError(`--file ${file}: ${(err as Error).message}`);
  }
  const abi = Array.isArray(parsed) ? parsed : (parsed as { abi?: unknown } | null)?.abi;
  const name = optionalString(args, "name");
  const checked = validateAbiBody({ abi, ...(name !== undefined ? { name } : {}) }, address);
  if (!checked.ok) {
    for (const e of checked.errors) ctx.output.err(`${e.path || "abi"}: ${e.message} (${e.code})`);
    throw new UsageError(`${file} is not a valid ABI (${checked.errors.length} problem${checked.errors.length === 1 ? "" : "s"})`);
  }
  const namespace = await abiNamespace(ctx, args);
  try {
    const { registration, created } = await (await ctx.abis()).put(namespace, address, checked.value);
    const summary = { ...registration, abi: undefined, created };
    if (args.json) printJson(ctx.output, summary);
    else ctx.output.out(`${created ? "registered" : "replaced"} the ABI of ${address} in ${namespace}: ${registration.events} events`);
  } catch (err) {
    if (err instanceof AbiStoreError) throw new CliFailure(`${err.message} (${err.code})`);
    throw err;
  }
  return EXIT_OK;
}

function withAccounts(fn: (store: AccountStore, args: CommandArgs, output: CliOutput) => Promise<number>): CliCommand["run"] {
  return async (ctx, args) => fn(await ctx.accounts(), args, ctx.output);
}

/** The registered commands, in help order. Append to add one. */
export const commands: CliCommand[] = [
  {
    path: ["accounts", "create"],
    summary: "register an account and print it as JSON",
    usage: "--name <name> [--email <email>]",
    options: { name: { type: "string" }, email: { type: "string" } },
    run: withAccounts(accountsCreate),
  },
  {
    path: ["accounts", "list"],
    summary: "list all accounts",
    usage: "",
    options: {},
    run: withAccounts(accountsList),
  },
  {
    path: ["accounts", "disable"],
    summary: "disable an account: its tokens stop authenticating immediately",
    usage: "<account-id>",
    options: {},
    positionals: ["account-id"],
    run: withAccounts(accountsDisable),
  },
  {
    path: ["tokens", "issue"],
    summary: "issue an API token (printed once, never again)",
    usage: "--account <account-id> [--name <label>] [--expires-in-days <days>]",
    details: "The token is a bearer credential for the search API: Authorization: Bearer cs_…\nOnly its SHA-256 hash is stored.",
    options: { account: { type: "string" }, name: { type: "string" }, "expires-in-days": { type: "string" } },
    run: withAccounts(tokensIssue),
  },
  {
    path: ["tokens", "list"],
    summary: "list an account's tokens (id, prefix, status; never the secret)",
    usage: "--account <account-id>",
    options: { account: { type: "string" } },
    run: withAccounts(tokensList),
  },
  {
    path: ["tokens", "revoke"],
    summary: "revoke a token: it stops authenticating immediately",
    usage: "<token-id>",
    options: {},
    positionals: ["token-id"],
    run: withAccounts(tokensRevoke),
  },
  {
    path: ["abis", "add"],
    summary: "register (or replace) the ABI of a contract, or event ABIs for any contract; the decode stage applies it at once",
    usage: "<address|any> --file <abi.json> (--account <account-id> | --global) [--name <label>]",
    details:
      "The file holds a JSON ABI array, or an object with an `abi` array (Foundry/Hardhat artifact).\n" +
      "Registering re-decodes the contract's past logs from the log index (docs/decoding.md).",
    options: { file: { type: "string" }, account: { type: "string" }, global: { type: "boolean" }, name: { type: "string" } },
    positionals: ["address"],
    run: abisAdd,
  },
  {
    path: ["abis", "list"],
    summary: "list the ABIs of an account (or the global ones)",
    usage: "(--account <account-id> | --global)",
    options: { account: { type: "string" }, global: { type: "boolean" } },
    run: async (ctx, args) => {
      const list = await (await ctx.abis()).list(await abiNamespace(ctx, args));
      if (args.json) printJson(ctx.output, list);
      else if (list.length === 0) ctx.output.out("no ABIs");
      else
        ctx.output.out(
          table([["ADDRESS", "NAME", "EVENTS", "UPDATED"], ...list.map((r) => [r.address, r.name ?? "", String(r.events), r.updatedAt])]),
        );
      return EXIT_OK;
    },
  },
  {
    path: ["abis", "rm"],
    summary: "remove an ABI (its logs decode no more; events already produced stay)",
    usage: "<address|any> (--account <account-id> | --global)",
    options: { account: { type: "string" }, global: { type: "boolean" } },
    positionals: ["address"],
    run: async (ctx, args) => {
      const address = abiAddress(args.positionals[0] as string);
      const namespace = await abiNamespace(ctx, args);
      if (!(await (await ctx.abis()).remove(namespace, address))) throw new CliFailure(`no ABI for ${address} in ${namespace}`);
      if (args.json) printJson(ctx.output, { removed: address, namespace });
      else ctx.output.out(`removed the ABI of ${address} from ${namespace}`);
      return EXIT_OK;
    },
  },
  {
    path: ["alerts", "replay"],
    summary: "re-send dead-lettered alerts (only their undelivered actions)",
    usage: "[--rule <rule-id>] [--idle-ms <ms>]",
    details: "Reads the dead-letter topic with its own consumer group (one per --rule), so each dead letter is replayed once per group.",
    options: { rule: { type: "string" }, "idle-ms": { type: "string" } },
    run: async (ctx, args) => {
      const idle = args.values["idle-ms"] === undefined ? undefined : Number(args.values["idle-ms"]);
      if (idle !== undefined && (!Number.isInteger(idle) || idle < 0)) throw new UsageError("--idle-ms: expected a non-negative integer");
      const bus = await createBus({ config: ctx.config, logger: createLogger("warn", "chainsift-cli") });
      const result = await replayAlertDeadLetters({ bus, ruleId: args.values.rule as string | undefined, idleMs: idle });
      if (args.values.json) printJson(ctx.output, result);
      else ctx.output.out(`read ${result.read} dead letters, replayed ${result.replayed} alerts`);
      return EXIT_OK;
    },
  },
  {
    path: ["status"],
    summary: "services' health, head vs ingested, consumer-group lag, dead letters of the last hour; exit 1 when unhealthy",
    usage: "[--max-lag <records>] [--max-head-lag <blocks>] [--max-dead-letters <n>]",
    details:
      "Unhealthy (exit 1): a service does not answer within 3 s (Kafka, Elasticsearch or red, schema registry, Redis,\n" +
      "the JSON-RPC node of CHAINSIFT_RPC_URL: none of the endpoints of CHAINSIFT_RPC_URLS answers), or a given threshold\n" +
      "is exceeded. With several endpoints each is listed (ok/DOWN, head, blocks behind). See docs/metrics.md.",
    options: { "max-lag": { type: "string" }, "max-head-lag": { type: "string" }, "max-dead-letters": { type: "string" } },
    run: async (ctx, args) => {
      const limit = (name: string) => {
        const raw = args.values[name];
        if (raw === undefined) return undefined;
        const n = Number(raw);
        if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name}: expected a non-negative integer`);
        return n;
      };
      const thresholds: StatusThresholds = {};
      for (const [name, key] of [
        ["max-lag", "maxLag"],
        ["max-head-lag", "maxHeadLag"],
        ["max-dead-letters", "maxDeadLetters"],
      ] as const) {
        const n = limit(name);
        if (n !== undefined) thresholds[key] = n;
      }
      const status = await gatherStatus(ctx.config, thresholds);
      if (args.json) printJson(ctx.output, status);
      else ctx.output.out(renderStatus(status));
      return status.healthy ? EXIT_OK : EXIT_FAILURE;
    },
  },
  rulesTestCommand,
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
