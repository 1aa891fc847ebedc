/**
 * Saved-search backtests, the pure part (`POST /alerting/searches/test/`, docs/alerting.md "Test a
 * saved search on history"): a saved search evaluated against the documents of its record kind read
 * back from the index, block by block, with the match stage's own code — the query compiled once by
 * the search DSL evaluator (es/evaluate.ts `compileEsQuery`, from the `esQuery` the API derived),
 * each document turned into the entity the live stage alerts with (lib/searches/model.ts
 * `searchEntity`), the alerts built and rendered as a rule backtest's (lib/match/backtest.ts
 * `alertEmitter`: same `pending`/`confirmed` modelling relative to the newest indexed block).
 *
 * The live stage evaluates the very documents the index stage stores (a transaction's trace as one
 * `call` document per frame), so a backtest over the indexed documents answers, for a range, the
 * records the live stage fired for — and the search API's answer for the same query over the same
 * blocks (the evaluator answers as Elasticsearch; test/e2e/saved-searches.test.ts checks all three).
 * Within a block, documents are taken in chain order: transaction index, then log index, then the
 * call frame's trace address.
 *
 * A query's `terms` lookups by watchlist are answered from the caller's lists as the match stage
 * answers them (lib/match/watchlist-membership.ts, `blockWithLists`: today's members, not those of
 * the block's time), as a rule backtest answers `In watchlist` ({@link searchBacktestWatchlists}), with
 * `window` or `absence` too (lib/match/window-backtest.ts `blockWithLists`).
 * @module
 */
import { compileEsQuery } from "../../es/evaluate.js";
import { watchlistClauses } from "../../es/watchlist-lookup.js";
import {
  alertEmitter,
  type BacktestBlock,
  type Backtester,
  type BacktesterOptions,
  type BlockSelection,
  backtestStoredFields,
  type IndexedRecord,
  pushMatch,
  selectWithLists,
} from "../../lib/match/backtest.js";
import type { WatchlistLookup } from "../../lib/match/evaluate.js";
import { createWatchlistMembership, type WatchlistMembership } from "../../lib/match/watchlist-membership.js";
import { type WindowBacktester, windowBacktesterOf } from "../../lib/match/window-backtest.js";
import type { RecordKind } from "../../lib/records.js";
import type { TargetType } from "../../lib/rules/model.js";
import { ruleSequence } from "../../lib/rules/schema-sequence.js";
import { SEARCH_TARGET_TYPE, type SearchConfig, type StoredSearch, searchAsRule, searchEntity } from "../../lib/searches/model.js";
import { isSearchSequence } from "../../lib/searches/sequence.js";
import { apiError } from "../errors.js";
import type { BacktestWatchlists } from "./watchlists.js";

/** A checked saved-search body (api/routes/searches/validate.ts, `create` mode): a rule's top-level fields and a {@link SearchConfig}. */
export interface SearchBacktestInput {
  name: string;
  description?: string | null;
  technology: string;
  blockchain: string;
  network: string;
  maxConfirmationCount: number;
  sendPendingAlerts?: boolean;
  /** As a rule's (lib/rules/model.ts `RuleInput.confirmOn`); a backtest models the count only. */
  confirmOn?: "count" | "finalized" | null;
  version?: number;
  config: SearchConfig;
  [extra: string]: unknown;
}

/** Options of {@link createSearchBacktester}: a rule backtest's, with the saved search in place of the rule. */
export interface SearchBacktesterOptions extends Omit<BacktesterOptions, "rule"> {
  /** The checked saved search; its state is ignored (a disabled search is tested too). */
  search: SearchBacktestInput;
}

function num(q: unknown): number {
  const n = (q as { num?: unknown } | null | undefined)?.num;
  return typeof n === "number" ? n : -1;
}

/** Chain order of two documents of one block: transaction index, log index, trace address. */
function chainOrder(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const d = num(a.transactionIndex) - num(b.transactionIndex) || num(a.logIndex) - num(b.logIndex);
  if (d !== 0) return d;
  const x = Array.isArray(a.traceAddress) ? (a.traceAddress as number[]) : [];
  const y = Array.isArray(b.traceAddress) ? (b.traceAddress as number[]) : [];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x.length - y.length;
}

/**
 * The per-record part of a saved-search backtest: the documents of the search's kind in one block,
 * in chain order, and those its query selects as the entities the live stage alerts with
 * ({@link searchEntity}). Shared by {@link createSearchBacktester} and {@link createSearchWindowBacktester}.
 * @param watchlists - answers the query's `terms` lookups by watchlist (of the search's account); absent: they never hold.
 * @throws {Error} when the search's `esQuery` cannot be compiled (a checked search always compiles).
 */
export function searchSelector(search: StoredSearch, watchlists?: WatchlistLookup): (records: readonly IndexedRecord[]) => BlockSelection {
  const kind: RecordKind = search.config.kind;
  const options = watchlists && { accountId: search.accountId, watchlists };
  const compiled = compileEsQuery(search.config.esQuery ?? undefined, kind, "query", options);
  if (!compiled.ok) throw new Error(`saved search: ${compiled.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  const matches = compiled.value;
  const targetType = SEARCH_TARGET_TYPE[kind] as TargetType;
  return (records) => {
    const docs = records.filter((r) => r.kind === kind).map((r) => r.record);
    docs.sort(chainOrder);
    const out: BlockSelection = { records: docs.length, entities: docs.length, selected: [] };
    for (const doc of docs) {
      const entity = searchEntity(kind, doc);
      if (matches(doc, entity.entityId)) out.selected.push({ targetType, entity });
    }
    return out;
  };
}

/** The saved search a backtest evaluates: the body with {@link backtestStoredFields}. */
function backtestSearch(options: SearchBacktesterOptions, now: () => Date): StoredSearch {
  return { ...options.search, ...backtestStoredFields(options.search, options.accountId, now) };
}

/**
 * Starts a backtest of one saved search (see the module notes). Documents of other kinds given to
 * `block` are ignored.
 * @throws {Error} when the search's `esQuery` cannot be compiled (a checked search always compiles).
 */
export function createSearchBacktester(options: SearchBacktesterOptions): Backtester {
  const now = options.now ?? (() => new Date());
  const stored = backtestSearch(options, now);
  const membership = options.watchlists;
  const select = searchSelector(stored, membership?.lookup);
  const rule = searchAsRule(stored);
  const alertsOf = alertEmitter({ ...options, rule, now });
  const emit = (blockNumber: number, blockHash: string, selection: BlockSelection): BacktestBlock => {
    const { records: count, entities, selected } = selection;
    const result: BacktestBlock = { blockNumber, blockHash, records: count, entities, matches: [], alerts: 0 };
    for (const { targetType, entity } of selected) pushMatch(result, targetType, entity, alertsOf);
    return result;
  };
  return {
    rule,
    block: (blockNumber, blockHash, records) => emit(blockNumber, blockHash, select(records)),
    ...(membership && {
      blockWithLists: async (blockNumber: number, blockHash: string, records: readonly IndexedRecord[]) =>
        emit(blockNumber, blockHash, await selectWithLists(membership, select, records)),
    }),
  };
}

/**
 * The `watchlists` option of a saved search's backtester ({@link createSearchBacktester}): a fresh
 * membership reader when the query has a `terms` lookup by watchlist, else none.
 * @param store - the watchlist store; undefined where none is reachable (the CLI: no account owns lists there).
 * @throws `ApiError` 400 `CS_RULE_NOT_SUPPORTED` at the lookup's path when the query needs lists and there is no store.
 */
export function searchBacktestWatchlists(
  store: BacktestWatchlists | undefined,
  search: SearchBacktestInput,
): { watchlists?: WatchlistMembership } {
  // Clause paths are the request's (`query.…`, `sequence.followedBy.query.…`).
  const followedBy = ruleSequence(search);
  const clauses = [
    ...watchlistClauses(search.config.esQuery).map((c) => `search.${c.path}`),
    ...(followedBy !== null && isSearchSequence(followedBy)
      ? watchlistClauses(followedBy.followedBy.esQuery ?? null).map((c) => `search.${c.path}`)
      : []),
  ];
  const [first] = clauses;
  if (first === undefined) return {};
  if (!store)
    throw apiError(
      "CS_RULE_NOT_SUPPORTED",
      "watchlist lookups are evaluated by POST /alerting/searches/test/ only (the lists belong to the caller's account)",
      first,
    );
  return { watchlists: createWatchlistMembership(store) };
}

/**
 * Starts a backtest of a saved search with `window` or `absence` (lib/match/window-backtest.ts, as a
 * windowed rule's): its query selects the records that enter the window (its watchlist lookups answered
 * from `options.watchlists`, by `blockWithLists`); feed it every block of the range (api/backtest/window-scan.ts).
 * @throws as {@link createSearchBacktester}, and as lib/match/window-backtest.ts `createWindowBacktester`.
 */
export function createSearchWindowBacktester(options: SearchBacktesterOptions): WindowBacktester {
  const now = options.now ?? (() => new Date());
  const stored = backtestSearch(options, now);
  return windowBacktesterOf(searchAsRule(stored), searchSelector(stored, options.watchlists?.lookup), { ...options, now });
}
