/**
 * Runs a rule or saved-search backtest against Elasticsearch: reads the indexed records of the range with a
 * point-in-time `search_after` scan (one PIT over the kinds the target type needs, sorted by block
 * number; https://www.elastic.co/guide/en/elasticsearch/reference/8.19/paginate-search-results.html#search-after),
 * hands them block by block to the pure backtester (lib/match/backtest.ts) and yields the answer's
 * lines. Memory stays bounded by one page plus one block, whatever the range.
 *
 * Lines (one JSON object each, NDJSON; docs/alerting.md "Test a rule on history"):
 *
 * | `type` | when | fields |
 * |---|---|---|
 * | `start` | first | `from`, `to`, `head` (newest indexed block or null), `kinds`, `rule` (name, targetType, maxConfirmationCount, sendPendingAlerts), `limits` |
 * | `match` | per matched entity, in block order (a windowed rule: per window that fired, entity `window:<end>[:<group>]` / `absence:<end>` with `entity.window`; a sequence rule: per sequence that fired, entity `sequence:<first id>:<followedBy id>` with `entity.sequenceMatch`; a state rule: per crossing, entity `state:<block>` with `entity.state`, and `previous`, api/backtest/state-scan.ts) | {@link BacktestMatch}: `blockNumber`, `blockHash`, `targetType`, `entityId`, `entity`, `alerts` (each `{alert, actions}`) |
 * | `block` | after each block that has records of the scanned kinds (a windowed rule: or a firing; a state rule: each block read, with `reading` or `unread`) | `blockNumber`, `blockHash`, `records`, `entities`, `matches`, `alerts` (counts); windowed rules also `selected` (entities that entered the window; sequence rules: first-step plus followedBy selections) |
 * | `error` | the scan failed midway (then `end`) | `error: {code, message}` |
 * | `end` | last | `complete`, `reason` (null, `CS_BACKTEST_TIME_CAP` or the error's code), `nextFrom` (first block not tested, or null), totals, `tookMs` |
 *
 * Time cap: checked before every page and every block; once `timeoutMs` has passed the scan stops at
 * a block boundary (a block is reported whole or not at all), so `nextFrom` is where to continue.
 * @module
 */
import { type Client, errors as esErrors, type estypes } from "@elastic/elasticsearch";
import { indexName, kindOfIndex } from "../../es/mappings.js";
import type { ExplorerUrls } from "../../lib/alerting/template.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { ChainId } from "../../lib/config/index.js";
import { ChainsiftError } from "../../lib/errors.js";
import { type BacktestBlock, type Backtester, type BacktestMatch, createBacktester, type IndexedRecord } from "../../lib/match/backtest.js";
import { backtestKinds, createSequenceBacktester, isSequenceRule } from "../../lib/match/sequence-backtest.js";
import { createWindowBacktester, isWindowedRule } from "../../lib/match/window-backtest.js";
import type { RecordKind } from "../../lib/records.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { ruleStateCondition } from "../../lib/rules/schema-state.js";
import { apiError } from "../errors.js";
import { endLineOf } from "./end-line.js";
import type { BacktestRequest, SearchBacktestRequest } from "./request.js";
import { createSearchSequenceBacktester, isSequenceSearch, searchBacktestKinds } from "./search-sequence.js";
import {
  createSearchBacktester,
  createSearchWindowBacktester,
  type SearchBacktestInput,
  searchBacktestWatchlists,
} from "./search-tester.js";
import { type StateScanDeps, startStateBacktest } from "./state-scan.js";
import { type BacktestWatchlists, backtestWatchlists } from "./watchlists.js";
import { windowFeeder } from "./window-scan.js";

/** The end-line `reason` of a backtest stopped by its time cap. */
export const CS_BACKTEST_TIME_CAP = "CS_BACKTEST_TIME_CAP";

/** A page of the scan timed out or had failed shards. */
class PartialPageError extends ChainsiftError {
  override name = "PartialPageError";
  readonly code = "CS_PARTIAL_PAGE";
}

/** Where and how a backtest reads. */
export interface BacktestScanDeps {
  es: Client;
  /** Prepended to index names (config `elasticsearch.indexPrefix`). */
  indexPrefix: string;
  /** Client-side timeout of each ES request, in ms (config `elasticsearch.requestTimeoutMs`). */
  requestTimeoutMs: number;
  /** The time cap, in ms (config `backtest.timeoutMs`). */
  timeoutMs: number;
  /** Records per page; default 500. */
  pageSize?: number;
  /** Monotonic clock in ms for the time cap and `tookMs`; default `performance.now`. Tests step it. */
  clock?: () => number;
  /** Clock of the alerts' `emittedAt`; default `() => new Date()`. */
  now?: () => Date;
  /** Decoding of Method/Call arguments, as the match stage's (the chain's; required, never assumed). */
  decode: DecodeMethodOptions;
  /** Block-explorer base URLs of the rendered messages (config `notify.explorerUrls`); default lib/alerting/template.ts's. */
  explorers?: ExplorerUrls;
  /** Receives scan failures (the answer then ends with an `error` line). */
  log?: { warn(obj: object, msg?: string): void };
  /** The caller's watchlists, for `In watchlist` conditions (api/backtest/watchlists.ts); absent: such rules are refused. */
  watchlists?: BacktestWatchlists;
  /** Reads of state rules (a rule with `stateCondition`, api/backtest/state-scan.ts); absent: they are refused. */
  state?: StateScanDeps;
}

/** What a backtest tests: a checked rule, or a checked saved search (`POST /alerting/searches/test/`). */
export type BacktestSubject = { rule: RuleInput } | { search: SearchBacktestInput };

/** One resolved backtest: the checked rule or saved search, and the block range. */
export type BacktestRun = BacktestSubject & {
  /** Owner shown in the alerts. */
  accountId: string;
  from: number;
  to: number;
  /** Newest indexed block of the chain, or null when none is (then `to` stands for it). */
  head: number | null;
};

/** The `start` line. */
export interface BacktestStartLine {
  type: "start";
  from: number;
  to: number;
  head: number | null;
  kinds: string[];
  /** The rule's (or saved search's) settings; `kind` only for a saved search (its targetType is the alerts'). */
  rule: { name: string; targetType: string; maxConfirmationCount: number; sendPendingAlerts: boolean; kind?: string };
  limits: { timeoutMs: number };
}

/** The `block` line: counts of one block. */
export interface BacktestBlockLine {
  type: "block";
  blockNumber: number;
  blockHash: string;
  records: number;
  entities: number;
  matches: number;
  alerts: number;
  /** Windowed rules only: entities the per-record conditions selected (they entered the window). */
  selected?: number;
  /** State rules only: the subject's reading at this block (raw units, decimal string), or why it is `unread`. */
  reading?: string;
  unread?: string;
}

/** The `end` line. */
export interface BacktestEndLine {
  type: "end";
  /** Whether every block of the range was tested. */
  complete: boolean;
  /** Why not: {@link CS_BACKTEST_TIME_CAP} or the error line's code; null when complete. */
  reason: string | null;
  /** The first block not tested (continue from it), or null when complete. */
  nextFrom: number | null;
  /** Blocks with records of the scanned kinds. */
  blocks: number;
  records: number;
  entities: number;
  matches: number;
  alerts: number;
  tookMs: number;
}

/** One line of the answer. */
export type BacktestLine =
  | BacktestStartLine
  | ({ type: "match" } & BacktestMatch & { previous?: string | null })
  | BacktestBlockLine
  | { type: "error"; error: { code: string; message: string } }
  | BacktestEndLine;

/** One block of a record backtester; a rule's with its `In watchlist` memberships read (lib/match/backtest.ts `blockWithLists`). */
const testBlock = (t: Backtester, n: number, hash: string, records: IndexedRecord[]) =>
  t.blockWithLists ? t.blockWithLists(n, hash, records) : t.block(n, hash, records);

/**
 * The newest block number in the chain's block index.
 * @returns null when the index is missing or empty.
 * @throws the ES client's errors (unreachable, timeout).
 */
export async function indexedHead(
  deps: Pick<BacktestScanDeps, "es" | "indexPrefix" | "requestTimeoutMs">,
  chain: ChainId,
): Promise<number | null> {
  const res = await deps.es.search(
    {
      index: indexName(chain, "block", deps.indexPrefix),
      size: 1,
      sort: [{ "number.num": "desc" }],
      _source: ["number"],
      ignore_unavailable: true,
      track_total_hits: false,
    },
    { requestTimeout: deps.requestTimeoutMs },
  );
  const n = (res.hits.hits[0]?._source as { number?: { num?: unknown } } | undefined)?.number?.num;
  return typeof n === "number" ? n : null;
}

/**
 * Runs the backtest (see the module notes). The PIT is opened before the first line, so a failure
 * to reach Elasticsearch is thrown (an error answer), not streamed; later failures become an
 * `error` line. Stopping the iteration early (a client that went away) closes the PIT.
 * @param chain - the rule's chain (its indices are read).
 * @throws the ES client's errors when the PIT cannot be opened.
 */
export async function startBacktest(deps: BacktestScanDeps, chain: ChainId, run: BacktestRun): Promise<AsyncGenerator<BacktestLine>> {
  const clock = deps.clock ?? (() => performance.now());
  const started = clock();
  const options = {
    accountId: run.accountId,
    chain,
    head: run.head ?? run.to,
    decode: deps.decode,
    ...(deps.explorers ? { explorers: deps.explorers } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  };
  const subject = "rule" in run ? run.rule : run.search;
  // A rule's `In watchlist` conditions (its own and a sequence's followedBy ones), a search's watchlist lookups, read the caller's lists.
  const lists = "rule" in run ? backtestWatchlists(deps.watchlists, run.rule) : searchBacktestWatchlists(deps.watchlists, run.search);
  const windowed = isWindowedRule(subject)
    ? "rule" in run
      ? createWindowBacktester({ ...options, ...lists, rule: run.rule })
      : createSearchWindowBacktester({ ...options, ...lists, search: run.search })
    : "rule" in run && isSequenceRule(run.rule)
      ? createSequenceBacktester({ ...options, ...lists, rule: run.rule })
      : "search" in run && isSequenceSearch(run.search)
        ? createSearchSequenceBacktester({ ...options, ...lists, search: run.search })
        : null;
  // A windowed or sequence rule (or saved search) sees every block of the range (api/backtest/window-scan.ts), records or not.
  const feeder = windowed && windowFeeder(deps, chain, run, windowed, () => clock() - started > deps.timeoutMs);
  const tester =
    windowed ??
    ("search" in run
      ? createSearchBacktester({ ...options, ...lists, search: run.search })
      : createBacktester({ ...options, ...lists, rule: run.rule }));
  const kinds: RecordKind[] = "search" in run ? searchBacktestKinds(run.search) : backtestKinds(run.rule);
  // Blocks carry their own number and hash; every other kind its block's.
  const blockOf = (kind: RecordKind): { number: string; hash: string } =>
    kind === "block" ? { number: "number", hash: "hash" } : { number: "blockNumber", hash: "blockHash" };
  const numberField = `${blockOf(kinds[0] ?? "tx").number}.num`;
  const reqOpts = { requestTimeout: deps.requestTimeoutMs };
  const pit = await deps.es.openPointInTime(
    { index: kinds.map((k) => indexName(chain, k, deps.indexPrefix)), keep_alive: "1m", ignore_unavailable: true },
    reqOpts,
  );
  const pageSize = deps.pageSize ?? 500;

  async function* lines(): AsyncGenerator<BacktestLine> {
    let pitId = pit.id;
    const totals = { blocks: 0, records: 0, entities: 0, matches: 0, alerts: 0 };
    const end = endLineOf(totals, () => clock() - started);
    const overTime = () => clock() - started > deps.timeoutMs;
    let pending: { number: number; hash: string; records: IndexedRecord[] } | null = null;
    let lastDone: number | null = null;
    /** The first block not reported yet. */
    const nextFrom = (): number => pending?.number ?? (lastDone === null ? run.from : lastDone + 1);
    function* report(r: BacktestBlock & { selected?: number }): Generator<BacktestLine> {
      for (const m of r.matches) yield { type: "match", ...m };
      totals.blocks++;
      totals.records += r.records;
      totals.entities += r.entities;
      totals.matches += r.matches.length;
      totals.alerts += r.alerts;
      const { blockNumber, blockHash, records, entities, alerts } = r;
      yield {
        type: "block",
        blockNumber,
        blockHash,
        records,
        entities,
        matches: r.matches.length,
        alerts,
        ...(r.selected !== undefined ? { selected: r.selected } : {}),
      };
    }
    /** Reports the pending block; false when a windowed rule's feeder stopped at the time cap first (then `nextFrom` is its first block not applied). */
    async function* flush(): AsyncGenerator<BacktestLine, boolean> {
      if (!pending) return true;
      const { number, hash, records } = pending;
      const results = feeder
        ? await feeder.block(number, hash, records)
        : [await testBlock(tester as Exclude<typeof tester, typeof windowed>, number, hash, records)];
      lastDone = feeder?.stopped() ? feeder.nextFrom() - 1 : number;
      pending = null;
      for (const r of results) yield* report(r);
      return !feeder?.stopped();
    }
    const timeCap = () => end(CS_BACKTEST_TIME_CAP, nextFrom());
    try {
      yield {
        type: "start",
        from: run.from,
        to: run.to,
        head: run.head,
        kinds,
        rule: {
          name: tester.rule.name,
          targetType: tester.rule.config.targetType,
          maxConfirmationCount: tester.rule.maxConfirmationCount,
          sendPendingAlerts: tester.rule.sendPendingAlerts,
          ...("search" in run ? { kind: run.search.config.kind } : {}),
        },
        limits: { timeoutMs: deps.timeoutMs },
      };
      let searchAfter: estypes.SortResults | undefined;
      for (;;) {
        if (overTime()) {
          yield timeCap();
          return;
        }
        const req: estypes.SearchRequest = {
          pit: { id: pitId, keep_alive: "1m" },
          size: pageSize,
          query: { range: { [numberField]: { gte: run.from, lte: run.to } } },
          sort: [{ [numberField]: "asc" }, { _shard_doc: "asc" }],
          track_total_hits: false,
          timeout: `${deps.requestTimeoutMs}ms`,
        };
        if (searchAfter) req.search_after = searchAfter;
        const res = await deps.es.search(req, reqOpts);
        if (res.pit_id) pitId = res.pit_id;
        if (res.timed_out || (res._shards?.failed ?? 0) > 0)
          throw new PartialPageError("a page of the scan timed out or had failed shards");
        for (const hit of res.hits.hits) {
          const record = hit._source as Record<string, unknown>;
          const kind = kindOfIndex(hit._index);
          const fields = blockOf(kind ?? "tx");
          const number = (record[fields.number] as { num?: unknown } | undefined)?.num;
          if (!kind || typeof number !== "number") continue;
          if (pending && pending.number !== number) {
            if (overTime()) {
              yield timeCap();
              return;
            }
            if (!(yield* flush())) {
              yield timeCap();
              return;
            }
          }
          pending ??= { number, hash: String(record[fields.hash]), records: [] };
          pending.records.push({ kind, record });
        }
        const last = res.hits.hits.at(-1);
        if (!last || res.hits.hits.length < pageSize) break;
        searchAfter = last.sort;
      }
      const flushed = yield* flush();
      if (feeder && flushed) for (const r of await feeder.rest()) yield* report(r);
      if (feeder?.stopped()) {
        lastDone = feeder.nextFrom() - 1;
        yield timeCap();
        return;
      }
      yield end(null, null);
    } catch (err) {
      deps.log?.warn({ err }, "rule backtest scan failed; the answer ends with an error line");
      // Elasticsearch failed (unreachable, timed out, partial page), or a record could not be evaluated.
      const code =
        err instanceof esErrors.ElasticsearchClientError || err instanceof PartialPageError ? "CS_BACKEND_UNAVAILABLE" : "CS_INTERNAL";
      yield { type: "error", error: { code, message: `the backtest stopped: ${(err as Error).message}` } };
      yield end(code, nextFrom());
    } finally {
      await deps.es.closePointInTime({ id: pitId }, reqOpts).catch(() => {});
    }
  }
  return lines();
}

/**
 * Runs a checked backtest request (a rule's or a saved search's): its chain is the rule's (search's); `last` counts back from the newest
 * indexed block ({@link indexedHead}); then {@link startBacktest}, or for a rule with `stateCondition`
 * api/backtest/state-scan.ts `startStateBacktest` (reads through `deps.state`). Used by the route and the CLI.
 * @param accountId - the owner shown in the alerts.
 * @throws `ApiError` 409 `CS_BACKTEST_NOTHING_INDEXED` for `last` when no block is indexed; the ES
 *   client's errors when Elasticsearch cannot be reached; a state rule's refusals (`startStateBacktest`).
 */
export async function runBacktest(
  deps: BacktestScanDeps,
  request: BacktestRequest | SearchBacktestRequest,
  accountId: string,
): Promise<AsyncGenerator<BacktestLine>> {
  const { range } = request;
  const subject: BacktestSubject = "search" in request ? { search: request.search } : { rule: request.rule };
  const of = "search" in request ? request.search : request.rule;
  const chain = { technology: of.technology, blockchain: of.blockchain, network: of.network };
  const head = await indexedHead(deps, chain);
  const state = "rule" in request && ruleStateCondition(request.rule) !== null;
  const start = (run: BacktestRun) =>
    state && "rule" in run ? startStateBacktest(deps, chain, run, "last" in range) : startBacktest(deps, chain, run);
  if (!("last" in range)) return start({ ...subject, accountId, from: range.from, to: range.to, head });
  if (head === null) throw apiError("CS_BACKTEST_NOTHING_INDEXED", "no block of the chain is indexed yet", "last");
  return start({ ...subject, accountId, from: Math.max(0, head - range.last + 1), to: head, head });
}
