/**
 * The `abis` commands of the admin CLI: user ABIs per account or global (lib/abis, docs/decoding.md).
 * @module
 */
import { readFile } from "node:fs/promises";
import { GLOBAL_NAMESPACE, normalizeAbiAddress, validateAbiBody } from "../../lib/abis/model.js";
import { AbiStoreError } from "../../lib/abis/store.js";
import type { CliCommand, CliContext, CommandArgs } from "./core.js";
import { CliFailure, EXIT_OK, optionalString, printJson, requiredString, table, UsageError } from "./core.js";

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

/** The `abis` commands, in help order. */
export const abiCommands: CliCommand[] = [
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
];
