/**
 * The block side of a windowed-rule backtest (lib/match/window-backtest.ts): a window moves with
 * every block, records or not (a count falls, an absence fires at a block without records), and a
 * window of seconds needs each block's timestamp. So beside the record scan (api/backtest/run.ts)
 * the block index of the range is read in ascending pages (`search_after` on `number.num`,
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/paginate-search-results.html#search-after),
 * and every block reaches the window backtester: the ones without records of the scanned kinds
 * between the record blocks. Memory: one page of block headers.
 * @module
 */
import type { Client, estypes } from "@elastic/elasticsearch";
import { indexName } from "../../es/mappings.js";
import type { ChainId } from "../../lib/config/index.js";
import type { BacktestBlock, IndexedRecord } from "../../lib/match/backtest.js";
import type { WindowBacktestBlock, WindowBacktester, WindowBlockHeader } from "../../lib/match/window-backtest.js";

/** Where the block index is read. */
export interface BlockHeaderDeps {
  es: Client;
  /** Prepended to index names (config `elasticsearch.indexPrefix`). */
  indexPrefix: string;
  /** Client-side timeout of each ES request, in ms. */
  requestTimeoutMs: number;
  /** Headers per page; default 1,000. */
  pageSize?: number;
}

/** Unix seconds of an indexed timestamp (ISO 8601 UTC without zone, lib/records.ts), or null. */
export function unixSeconds(iso: unknown): number | null {
  if (typeof iso !== "string") return null;
  const ms = Date.parse(`${iso}Z`);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
}

/**
 * The indexed blocks `from … to` in ascending order (one per number: the first indexed), as headers.
 * @throws the ES client's errors.
 */
export async function* blockHeaders(deps: BlockHeaderDeps, chain: ChainId, from: number, to: number): AsyncGenerator<WindowBlockHeader> {
  const size = deps.pageSize ?? 1000;
  let searchAfter: estypes.SortResults | undefined;
  let last = from - 1;
  for (;;) {
    const res = await deps.es.search(
      {
        index: indexName(chain, "block", deps.indexPrefix),
        size,
        query: { range: { "number.num": { gte: from, lte: to } } },
        sort: [{ "number.num": "asc" }],
        _source: ["number", "hash", "timestamp"],
        ignore_unavailable: true,
        track_total_hits: false,
        ...(searchAfter ? { search_after: searchAfter } : {}),
      },
      { requestTimeout: deps.requestTimeoutMs },
    );
    for (const hit of res.hits.hits) {
      const b = hit._source as { number?: { num?: unknown }; hash?: unknown; timestamp?: unknown } | undefined;
      const n = b?.number?.num;
      const t = unixSeconds(b?.timestamp);
      if (typeof n !== "number" || n <= last || typeof b?.hash !== "string" || t === null) continue;
      last = n;
      yield { number: n, hash: b.hash, timestamp: t };
    }
    const tail = res.hits.hits.at(-1);
    if (!tail || res.hits.hits.length < size) return;
    searchAfter = tail.sort;
  }
}

/** Feeds a window backtester every block of the range: see {@link windowFeeder}. */
export interface WindowFeeder {
  /**
   * The block `number` with its records: first the blocks below it without records, then it.
   * @returns the results worth a line (records, or a firing), ascending.
   */
  block(number: number, hash: string, records: readonly IndexedRecord[]): Promise<WindowBacktestBlock[]>;
  /** The blocks after the last record block up to the range's end (none with records). */
  rest(): Promise<WindowBacktestBlock[]>;
  /**
   * Whether the time cap stopped it (checked before each block): the results returned so far are
   * whole blocks, and {@link WindowFeeder.nextFrom} is the first block not applied.
   */
  stopped(): boolean;
  /** The first block not applied yet. */
  nextFrom(): number;
}

/**
 * Merges the block headers of the range with the record scan's blocks for a window backtester.
 * A record block whose header is not indexed (yet) takes its records' timestamp.
 */
export function windowFeeder(
  deps: BlockHeaderDeps,
  chain: ChainId,
  range: { from: number; to: number },
  tester: WindowBacktester,
  overTime: () => boolean,
): WindowFeeder {
  const headers = blockHeaders(deps, chain, range.from, range.to);
  let next: WindowBlockHeader | null | undefined;
  const peek = async (): Promise<WindowBlockHeader | null> => {
    if (next === undefined) {
      const r = await headers.next();
      next = r.done ? null : r.value;
    }
    return next;
  };
  const worth = (r: BacktestBlock) => r.records > 0 || r.matches.length > 0;
  let applied = range.from - 1;
  let stopped = false;
  /**
   * Applies a block unless the time cap has passed (then false, and {@link WindowFeeder.stopped});
   * with `In watchlist` conditions answered when the tester can (`blockWithLists`).
   */
  const apply = async (header: WindowBlockHeader, records: readonly IndexedRecord[], out: WindowBacktestBlock[]): Promise<boolean> => {
    if (overTime()) {
      stopped = true;
      return false;
    }
    const r = tester.blockWithLists ? await tester.blockWithLists(header, records) : tester.block(header, records);
    applied = header.number;
    if (worth(r)) out.push(r);
    return true;
  };
  const emptyUpTo = async (below: number): Promise<WindowBacktestBlock[]> => {
    const out: WindowBacktestBlock[] = [];
    for (let h = await peek(); h !== null && h.number < below; h = await peek()) {
      if (!(await apply(h, [], out))) break;
      next = undefined;
    }
    return out;
  };
  return {
    async block(number, hash, records) {
      const out = await emptyUpTo(number);
      if (stopped) return out;
      const h = await peek();
      const own = h !== null && h.number === number;
      const timestamp = own ? h.timestamp : (unixSeconds(records[0]?.record.timestamp) ?? 0);
      if ((await apply({ number, hash, timestamp }, records, out)) && own) next = undefined;
      return out;
    },
    rest: () => emptyUpTo(range.to + 1),
    stopped: () => stopped,
    nextFrom: () => applied + 1,
  };
}
