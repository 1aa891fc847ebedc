/**
 * The representative queries of `npm run bench -- search` (bench/search.ts) and their latency
 * targets: contract queries of docs/api.md with values picked from the loaded documents, and the
 * value of a token moved per day (issue 30's aggregation).
 * @module
 */
import type { EventRecord, LogRecord, RecordKind, TransactionRecord } from "../../lib/records.js";
import { volumePerDayBody } from "../../test/support/volume-query.js";
import type { BenchDoc } from "./data.js";

/** Block numbers of copy `c` are `n + OFFSET * (c + 1)` (bench/search.ts loads the copies so). */
export const OFFSET = 100_000_000;

/** Target: API p50 at most this multiple of the direct p50. */
export const P50_TARGET = 1.2;
/** Target: API p99 at most this multiple of the direct p99. */
export const P99_TARGET = 1.5;
/** Target of the aggregation queries (issue 30: the volume per day): API p50 at most this multiple of the direct p50. */
export const AGG_P50_TARGET = 1.3;

/** One benchmarked query: a search path's kinds and its contract query body. */
export interface BenchQuery {
  /** Short label for the table. */
  name: string;
  /** Kinds of the search path, e.g. `tx` or `block,tx`. */
  kinds: string;
  /** The API query body. */
  body: Record<string, unknown>;
  /** This query's target for API p50 / direct p50 (default {@link P50_TARGET}). */
  p50Target?: number;
}

function mostFrequent(values: Iterable<string | null | undefined>): string {
  const counts = new Map<string, number>();
  for (const v of values) if (v) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = "";
  let n = 0;
  for (const [v, c] of counts) {
    if (c > n) {
      best = v;
      n = c;
    }
  }
  return best;
}

/**
 * The representative queries of docs/api.md, with values picked from the loaded documents
 * (copy 0): block by number, txs of a block, tx range sorted desc, txs from/to an address
 * (bool should), logs of a contract, Transfer events of a token from an address (event.raw +
 * nested args, sorted desc), block,tx by ids, and the value of that token moved per day
 * (date_histogram → nested args → filter on the `value` argument → sum of `args.value.scaled`,
 * test/support/volume-query.ts; target {@link AGG_P50_TARGET}).
 */
export function benchQueries(docs: readonly BenchDoc[]): BenchQuery[] {
  const of = <T>(kind: RecordKind): T[] => docs.filter((d) => d.kind === kind).map((d) => d.doc as T);
  const blocks = of<{ number: { num: number }; hash: string; transactionCount: number }>("block").filter((b) => b.number.num < 2 * OFFSET);
  const txs = of<TransactionRecord>("tx").filter((t) => t.blockNumber.num < 2 * OFFSET);
  const logs = of<LogRecord>("log").filter((l) => l.blockNumber.num < 2 * OFFSET);
  const events = of<EventRecord>("event").filter((e) => e.blockNumber.num < 2 * OFFSET && e.event === "Transfer");

  const busiest = blocks.reduce((a, b) => (b.transactionCount > a.transactionCount ? b : a));
  const byNumber = [...blocks].sort((a, b) => a.number.num - b.number.num);
  const lastFour = byNumber.slice(-4);
  const address = mostFrequent(txs.flatMap((t) => [t.from, t.to]));
  const logAddress = mostFrequent(logs.map((l) => l.address));
  const pair = mostFrequent(
    events.map((e) => {
      const from = e.args.find((a) => a.name === "from")?.value.hex;
      return from ? `${e.address} ${from}` : undefined;
    }),
  );
  const [token, from] = pair.split(" ") as [string, string];
  const tx = txs.find((t) => t.blockHash === busiest.hash) ?? txs[0];

  return [
    { name: "block by number", kinds: "block", body: { query: { term: { "number.num": busiest.number.num } } } },
    { name: "txs of a block", kinds: "tx", body: { query: { bool: { filter: { term: { blockHash: busiest.hash } } } }, size: 1000 } },
    {
      name: "tx range, sort desc",
      kinds: "tx",
      body: {
        query: { range: { "blockNumber.num": { gte: lastFour[0]?.number.num, lte: lastFour.at(-1)?.number.num } } },
        sort: { "blockNumber.num": "desc" },
        size: 100,
      },
    },
    {
      name: "txs from/to (should)",
      kinds: "tx",
      body: { query: { bool: { should: [{ term: { from: address } }, { term: { to: address } }] } } },
    },
    { name: "logs by address", kinds: "log", body: { query: { term: { address: logAddress } } } },
    {
      name: "events raw+nested",
      kinds: "event",
      body: {
        query: {
          bool: {
            filter: [
              { term: { "event.raw": "Transfer" } },
              { term: { address: token } },
              {
                nested: {
                  path: "args",
                  query: { bool: { filter: [{ term: { "args.name": "from" } }, { term: { "args.value.hex": from } }] } },
                },
              },
            ],
          },
        },
        sort: { "blockNumber.num": "desc" },
        size: 20,
      },
    },
    { name: "block+tx by ids", kinds: "block,tx", body: { query: { ids: { values: [tx?.hash, busiest.hash] } } } },
    { name: "token volume per day", kinds: "event", body: volumePerDayBody(token), p50Target: AGG_P50_TARGET },
  ];
}
