/**
 * The `accounts` and `tokens` commands of the admin CLI (docs/accounts.md).
 * @module
 */
import type { TokenInfo } from "../../lib/accounts/model.js";
import type { AccountStore } from "../../lib/accounts/store.js";
import {
  type CliCommand,
  type CliOutput,
  type CommandArgs,
  EXIT_OK,
  optionalString,
  printJson,
  requiredString,
  table,
  UsageError,
} from "./core.js";

/** The state of a token at `now`: `revoked`, `expired` or `active`. */
export function tokenStatus(info: TokenInfo, now: Date = new Date()): "active" | "revoked" | "expired" {
  if (info.revokedAt !== null) return "revoked";
  if (info.expiresAt !== null && Date.parse(info.expiresAt) <= now.getTime()) return "expired";
  return "active";
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
function withAccounts(fn: (store: AccountStore, args: CommandArgs, output: CliOutput) => Promise<number>): CliCommand["run"] {
  return async (ctx, args) => fn(await ctx.accounts(), args, ctx.output);
}

/** The `accounts` and `tokens` commands, in help order. */
export const accountCommands: CliCommand[] = [
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
];
