/**
 * The `watchlists` commands of the admin CLI (issue 34; docs/alerting.md "Watchlists"): create,
 * list and delete an account's watchlists, and add or remove members in bulk from a file — the
 * same formats as the API's upload (`POST /alerting/watchlists/:id/members/`, lib/watchlists/upload.ts):
 * CSV (`.csv`: the first column, a header line such as `address` skipped), a JSON array (`.json`),
 * or one value per line (anything else: NDJSON or plain lines). The CLI writes through the same
 * store as the API (lib/watchlists/store.ts, with the API's limits), in batches of the API's
 * per-request cap, so a file of millions of addresses needs no splitting.
 * @module
 */
import { readFile } from "node:fs/promises";
import { DEFAULT_WATCHLISTS_CONFIG } from "../../lib/config/watchlists.js";
import { WATCHLIST_KINDS, type WatchlistKind, type WatchlistStore, WatchlistStoreError } from "../../lib/watchlists/store.js";
import { parseMembers } from "../../lib/watchlists/upload.js";
import type { CliCommand, CliContext, CommandArgs } from "./core.js";
import { CliFailure, EXIT_OK, optionalString, printJson, requiredString, table, UsageError } from "./core.js";

/** Members written per store call: the API's per-request cap (100,000). */
const BATCH = DEFAULT_WATCHLISTS_CONFIG.maxMembersPerRequest;

/** The account of a command (`--account`), which must exist. @throws {CliFailure} for an unknown account. */
async function accountOf(ctx: CliContext, args: CommandArgs): Promise<string> {
  const account = requiredString(args, "account");
  if (!(await (await ctx.accounts()).getAccount(account))) throw new CliFailure(`no account with id ${JSON.stringify(account)}`);
  return account;
}

/** The watchlist of the positional id in the account. @throws {CliFailure} when the account has none of that id. */
async function watchlistOf(ctx: CliContext, args: CommandArgs) {
  const account = await accountOf(ctx, args);
  const id = args.positionals[0] as string;
  const store = await ctx.watchlists();
  const w = await store.get(account, id);
  if (!w) throw new CliFailure(`no watchlist ${JSON.stringify(id)} in account ${account} (CS_WATCHLIST_NOT_FOUND)`);
  return { account, w, store };
}

/**
 * The members of a file, normalised by the list's kind (module doc for the formats).
 * @throws {UsageError} for an unreadable file, a JSON file that is not an array, or a bad member (named by `body[i]` or `lines[n]`).
 */
export async function membersOfFile(file: string, kind: WatchlistKind): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new UsageError(`--file ${file}: ${(err as Error).message}`);
  }
  let body: unknown = text;
  if (file.toLowerCase().endsWith(".json")) {
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`--file ${file}: ${(err as Error).message}`);
    }
    if (!Array.isArray(body)) throw new UsageError(`--file ${file}: a .json file must hold an array of values`);
  }
  const parsed = parseMembers(kind, body, file.toLowerCase().endsWith(".csv"), Number.POSITIVE_INFINITY);
  if (!parsed.ok) {
    const bad = "bad" in parsed ? `${parsed.bad.path}: ${JSON.stringify(parsed.bad.value)}` : "too many members";
    throw new UsageError(`--file ${file}: ${bad} is not a valid ${kind} (CS_WATCHLIST_MEMBER_INVALID); nothing was written`);
  }
  return parsed.members;
}

/** Runs `op` over `members` in batches; answers the summed count and the list's final size. */
async function inBatches(
  members: string[],
  op: (batch: string[]) => Promise<{ n: number; count: number }>,
): Promise<{ n: number; count: number; batches: number }> {
  let n = 0;
  let count = 0;
  let batches = 0;
  for (let i = 0; i < members.length || batches === 0; i += BATCH) {
    const r = await op(members.slice(i, i + BATCH));
    n += r.n;
    count = r.count;
    batches++;
  }
  return { n, count, batches };
}

/** Turns a store refusal into a CLI failure with its stable code. */
async function storeCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof WatchlistStoreError) throw new CliFailure(`${err.message} (${err.code})`);
    throw err;
  }
}

/** `watchlists add|rm <id> --account <a> --file <f>`. */
function membersCommand(verb: "add" | "rm"): CliCommand["run"] {
  return async (ctx, args) => {
    const { account, w, store } = await watchlistOf(ctx, args);
    const members = await membersOfFile(requiredString(args, "file"), w.kind);
    let done = 0;
    // A batch refused (the list is full): the batches before it stay written, and the message says how many.
    const r = await storeCall(() =>
      inBatches(members, async (batch) => {
        const res =
          verb === "add"
            ? await store.add(account, w.id, batch).then((x) => ({ n: x.added, count: x.count }))
            : await store.remove(account, w.id, batch).then((x) => ({ n: x.removed, count: x.count }));
        done += batch.length;
        return res;
      }),
    ).catch((err: unknown) => {
      if (err instanceof CliFailure && done > 0) throw new CliFailure(`${err.message}; the first ${done} members of the file were written`);
      throw err;
    });
    const summary = { id: w.id, [verb === "add" ? "added" : "removed"]: r.n, count: r.count, read: members.length, batches: r.batches };
    if (args.json) printJson(ctx.output, summary);
    else
      ctx.output.out(
        `${verb === "add" ? "added" : "removed"} ${r.n} of ${members.length} members read (${r.batches} batch${r.batches === 1 ? "" : "es"}); ${w.name} now holds ${r.count}`,
      );
    return EXIT_OK;
  };
}

async function listRows(store: WatchlistStore, account: string) {
  const lists = await store.list(account);
  return Promise.all(lists.map(async (w) => ({ ...w, count: await store.count(account, w.id) })));
}

/** The `watchlists` commands, in help order. */
export const watchlistCommands: CliCommand[] = [
  {
    path: ["watchlists", "create"],
    summary: "create a watchlist of an account (rules and searches name it by its id)",
    usage: "--account <account-id> --name <name> [--kind address|string]",
    options: { account: { type: "string" }, name: { type: "string" }, kind: { type: "string" } },
    run: async (ctx, args) => {
      const account = await accountOf(ctx, args);
      const name = requiredString(args, "name");
      const kind = (optionalString(args, "kind") ?? "address") as WatchlistKind;
      if (!WATCHLIST_KINDS.includes(kind)) throw new UsageError(`--kind: one of ${WATCHLIST_KINDS.join(", ")}`);
      if (name.trim() === "" || name.length > 200) throw new UsageError("--name: 1–200 characters");
      const w = await storeCall(async () => (await ctx.watchlists()).create(account, { name, kind }));
      if (args.json) printJson(ctx.output, w);
      else ctx.output.out(`created watchlist ${w.id} (${w.kind}) "${w.name}" in account ${account}`);
      return EXIT_OK;
    },
  },
  {
    path: ["watchlists", "list"],
    summary: "list the watchlists of an account with their member counts",
    usage: "--account <account-id>",
    options: { account: { type: "string" } },
    run: async (ctx, args) => {
      const rows = await listRows(await ctx.watchlists(), await accountOf(ctx, args));
      if (args.json) printJson(ctx.output, rows);
      else if (rows.length === 0) ctx.output.out("no watchlists");
      else
        ctx.output.out(
          table([["ID", "NAME", "KIND", "MEMBERS", "CREATED"], ...rows.map((w) => [w.id, w.name, w.kind, String(w.count), w.createdAt])]),
        );
      return EXIT_OK;
    },
  },
  {
    path: ["watchlists", "add"],
    summary: "add the members in a file (CSV, JSON array, or one per line) to a watchlist",
    usage: "<watchlist-id> --account <account-id> --file <members.csv|.json|.ndjson|.txt>",
    details:
      "Every member is checked first (a bad one is named by its line and nothing is written), then written in batches of\n" +
      `${BATCH}; members already present count as not added. Past the list's limit the failing batch is refused (CS_WATCHLIST_FULL).`,
    options: { account: { type: "string" }, file: { type: "string" } },
    positionals: ["watchlist-id"],
    run: membersCommand("add"),
  },
  {
    path: ["watchlists", "rm"],
    summary: "remove the members in a file from a watchlist",
    usage: "<watchlist-id> --account <account-id> --file <members.csv|.json|.ndjson|.txt>",
    options: { account: { type: "string" }, file: { type: "string" } },
    positionals: ["watchlist-id"],
    run: membersCommand("rm"),
  },
  {
    path: ["watchlists", "delete"],
    summary: "delete a watchlist and its members",
    usage: "<watchlist-id> --account <account-id>",
    options: { account: { type: "string" } },
    positionals: ["watchlist-id"],
    run: async (ctx, args) => {
      const { account, w, store } = await watchlistOf(ctx, args);
      await store.delete(account, w.id);
      if (args.json) printJson(ctx.output, { deleted: w.id });
      else ctx.output.out(`deleted watchlist ${w.id} "${w.name}"`);
      return EXIT_OK;
    },
  },
];
