/**
 * `chainsift rules test <file.json> (--from <n> --to <m> | --last <n>)`: tests a rule on the indexed
 * history, like `POST /alerting/rules/test/` but straight against Elasticsearch (no API, no token):
 * the same request check (api/backtest/request.ts), the same scan and lines (api/backtest/run.ts).
 * The file holds a rule body as `POST /alerting/rules/` takes it. `chainsift searches test
 * <file.json> …` does the same for a saved search (`POST /alerting/searches/test/`; the file holds a
 * body as `POST /alerting/searches/` takes it). Output: a readable report (per
 * matched entity its alerts and each action's rendering), or with `--json` the answer's NDJSON lines
 * as the API streams them. Exit codes: 0 every block tested, 1 stopped early (time cap, Elasticsearch
 * failure), 2 usage (unreadable file, invalid rule or range: the code and JSON path are printed).
 * @module
 */
import { readFile } from "node:fs/promises";
import { Client } from "@elastic/elasticsearch";
import { parseBacktestRequest, parseSearchBacktestRequest } from "../api/backtest/request.js";
import { type BacktestLine, runBacktest } from "../api/backtest/run.js";
import { stateRpcClients } from "../api/backtest/state-rpc.js";
import { ApiError } from "../api/errors.js";
import { methodDecodingOf } from "../lib/chain/tokens.js";
import type { BacktestAction } from "../lib/match/backtest.js";
import { type CliCommand, type CliContext, type CommandArgs, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./commands/core.js";

/** The account shown in the alerts of a CLI backtest (there is no caller). */
export const CLI_BACKTEST_ACCOUNT = "cli";

/**
 * The backtest command of a rule (`rules test`) or saved search (`searches test`), as `POST
 * /alerting/rules/test/` or `POST /alerting/searches/test/` (registered in cli/chainsift.ts).
 */
function backtestCommand(subject: "rule" | "search"): CliCommand {
  const [noun, what, resource] = subject === "rule" ? ["rules", "a rule", "rules"] : ["searches", "a saved search", "searches"];
  return {
    path: [noun, "test"],
    summary: `test ${what} (JSON file) on the indexed history; nothing is stored or delivered`,
    usage: "<file.json> (--from <block> --to <block> | --last <blocks>)",
    details:
      `The file holds ${what} body as POST /alerting/${resource}/ takes it. Same checks, caps (CHAINSIFT_BACKTEST_MAX_BLOCKS,\n` +
      `CHAINSIFT_BACKTEST_TIMEOUT_MS) and results as POST /alerting/${resource}/test/ (docs/alerting.md).\n` +
      "--json prints the answer's NDJSON lines. Exit 1 when the test stopped before the end of the range.",
    options: { from: { type: "string" }, to: { type: "string" }, last: { type: "string" } },
    positionals: ["file.json"],
    run: (ctx, args) => backtestFile(ctx, args, subject),
  };
}

/** `chainsift rules test`: a rule backtest from a file. */
export const rulesTestCommand: CliCommand = backtestCommand("rule");

/** `chainsift searches test`: a saved-search backtest from a file. */
export const searchesTestCommand: CliCommand = backtestCommand("search");

/** A CLI option as the request's number (a non-number is left as the string: the request check names it). */
function numberOption(args: CommandArgs, name: string): number | string | undefined {
  const v = args.values[name];
  if (typeof v !== "string") return undefined;
  return /^\d+$/.test(v) ? Number(v) : v;
}

function describeAction(a: BacktestAction): string {
  if ("error" in a) return `${a.type}: not deliverable: ${a.error.code} ${a.error.message}`;
  // By the rendered shape (lib/alerting/rendered.ts), not by type: a new channel renders one of these.
  if ("recipients" in a) return `${a.type} to ${a.recipients.join(", ")}: ${a.subject}`;
  if ("topic" in a) return `${a.type}: ${a.format} record to topic ${a.topic} at ${a.brokers.join(",")}, key ${a.key}`;
  if ("chatId" in a) return `${a.type}: ${a.method} sendMessage to chat ${a.chatId} (${a.body.length} bytes)`;
  if ("path" in a) return `${a.type}: ${a.method} ${a.path} of the operator's API (${a.body.length} bytes)`;
  return `${a.type}: ${a.method} ${a.url}${a.body === undefined ? "" : ` (${a.body.length} bytes)`}`;
}

/** The readable rendering of one line (null: nothing to print for it). */
export function describeLine(line: BacktestLine): string | null {
  switch (line.type) {
    case "start":
      return `${line.rule.kind === undefined ? "rule" : `saved search over ${line.rule.kind}`} ${JSON.stringify(line.rule.name)} (${line.rule.targetType}) on blocks ${line.from}–${line.to} (newest indexed: ${line.head ?? "none"}), reading ${line.kinds.join(", ")}`;
    case "match":
      return [
        `block ${line.blockNumber} ${line.entityId}: ${line.alerts.length === 0 ? "matched, awaiting confirmations" : ""}`,
        ...line.alerts.flatMap(({ alert, actions }) => [
          `  ${alert.status} (${alert.confirmations} confirmation(s)) alert ${alert.id}`,
          ...actions.map((a) => `    ${describeAction(a)}`),
        ]),
      ].join("\n");
    case "block":
      return line.matches > 0
        ? `block ${line.blockNumber}: ${line.matches} match(es), ${line.alerts} alert(s), ${line.entities} entities`
        : null;
    case "error":
      return `error: ${line.error.code}: ${line.error.message}`;
    case "end":
      return [
        `${line.complete ? "done" : `stopped (${line.reason})`}: ${line.blocks} block(s) with records, ${line.records} records, ${line.entities} entities, ${line.matches} match(es), ${line.alerts} alert(s) in ${line.tookMs} ms`,
        ...(line.nextFrom === null ? [] : [`continue with --from ${line.nextFrom}`]),
      ].join("\n");
  }
}

/** Backtests the rule (`subject` "rule") or saved search ("search") of the file named by the first positional. */
async function backtestFile(ctx: CliContext, args: CommandArgs, subject: "rule" | "search"): Promise<number> {
  const { config, output } = ctx;
  const file = args.positionals[0] as string;
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    output.err(`chainsift: cannot read a ${subject === "rule" ? "rule" : "saved search"} from ${file}: ${(err as Error).message}`);
    return EXIT_USAGE;
  }
  const body: Record<string, unknown> = { [subject]: value };
  for (const name of ["from", "to", "last"]) {
    const v = numberOption(args, name);
    if (v !== undefined) body[name] = v;
  }
  const parse = subject === "rule" ? parseBacktestRequest : parseSearchBacktestRequest;
  const parsed = parse(body, [config.chain], config.backtest.maxBlocks);
  if (!parsed.ok) {
    for (const e of parsed.errors) output.err(`chainsift: ${e.code} at ${e.path ?? "(body)"}: ${e.message}`);
    return EXIT_USAGE;
  }
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: config.elasticsearch.requestTimeoutMs });
  const stateRpc = stateRpcClients(config);
  try {
    const deps = {
      es,
      indexPrefix: config.elasticsearch.indexPrefix,
      requestTimeoutMs: config.elasticsearch.requestTimeoutMs,
      explorers: config.notify.explorerUrls,
      timeoutMs: config.backtest.timeoutMs,
      // The configured chain's id and token list, as the match stage's.
      decode: methodDecodingOf(config),
      // A state rule is read on the configured chain's node (api/backtest/state-scan.ts).
      state: { rpc: stateRpc.of(config.chain), maxReads: config.stateReads.backtestMaxReads },
    };
    let complete = false;
    for await (const line of await runBacktest(deps, parsed.value, CLI_BACKTEST_ACCOUNT)) {
      if (line.type === "end") complete = line.complete;
      const text = args.json ? JSON.stringify(line) : describeLine(line);
      if (text !== null) output.out(text);
    }
    return complete ? EXIT_OK : EXIT_FAILURE;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    output.err(`chainsift: ${err.code} at ${err.path ?? "(body)"}: ${err.message}`);
    return err.statusCode < 500 ? EXIT_USAGE : EXIT_FAILURE;
  } finally {
    stateRpc.close();
    await es.close();
  }
}
