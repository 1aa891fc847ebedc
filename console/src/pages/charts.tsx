/**
 * Charts (uPlot), both from the search API's aggregations:
 * - records of a kind per block (`histogram` on the block number, the newest N blocks), per hour or
 *   per day (`date_histogram` on `timestamp`), with an optional query as filter;
 * - value moved per day or hour: for a token, the sum of its Transfer events' `value` argument in
 *   token units (`date_histogram` → `nested` on `args` → `filter` on `args.name` → `sum` of
 *   `args.value.scaled`, the volume-per-day example of docs/api.md); without a token, the sum of the
 *   transactions' `value.num` in ether; both with an optional query clause as filter.
 * Each chart's container says how many points it drew (`data-points`), with the numbers in a table.
 * @module
 */
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { ApiFailure, type ChainStatus, chainKey, search } from "../api.js";
import { ErrorBox } from "../ui.js";

type Granularity = "block" | "hour" | "day";

/** Axis numbers in short form (12.5K, 3M). */
const COMPACT = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 2 });

interface Bucket {
  key: number;
  doc_count: number;
  moved?: { value: number | null };
  args?: { value?: { sum?: { value: number | null } } };
}

interface Series {
  x: number[];
  y: number[];
  time: boolean;
  label: string;
}

function Chart({ series, id }: { series: Series | null; id: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!host.current || !series) return;
    const width = Math.max(320, host.current.clientWidth || 800);
    const plot = new uPlot(
      {
        width,
        height: 280,
        ms: series.time ? 1 : 1e-3,
        scales: { x: { time: series.time } },
        series: [
          { label: series.time ? "time" : "block" },
          { label: series.label, stroke: "#1f5fbf", fill: "rgba(31,95,191,0.12)", width: 2 },
        ],
        axes: [{}, { size: 70, values: (_u: uPlot, splits: number[]) => splits.map((v) => COMPACT.format(v)) }],
      },
      [series.x, series.y],
      host.current,
    );
    return () => plot.destroy();
  }, [series]);
  if (!series) return null;
  return (
    <figure>
      <div
        id={id}
        class="chart"
        ref={host}
        data-points={series.x.length}
        role="img"
        aria-label={`${series.label}: ${series.x.length} points`}
      />
      <details>
        <summary>The {series.x.length === 1 ? "point" : `${series.x.length} points`} as a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">{series.time ? "time" : "block"}</th>
              <th scope="col">{series.label}</th>
            </tr>
          </thead>
          <tbody>
            {series.x.map((x, i) => (
              <tr key={x}>
                <td>{series.time ? new Date(x).toISOString() : x}</td>
                <td>{series.y[i]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

function parseFilter(text: string): unknown | null {
  return text.trim() === "" ? null : (JSON.parse(text) as unknown);
}

/** The aggregation body of the records chart (exported for reading; the test builds its own). */
export function recordsBody(kind: string, granularity: Granularity, filter: unknown | null, head: number | null, blocks: number): unknown {
  const blockField = kind === "block" ? "number.num" : "blockNumber.num";
  const filters: unknown[] = filter ? [filter] : [];
  let agg: unknown;
  if (granularity === "block") {
    if (head !== null) filters.push({ range: { [blockField]: { gte: Math.max(0, head - blocks + 1) } } });
    agg = { histogram: { field: blockField, interval: 1 } };
  } else {
    agg = { date_histogram: { field: "timestamp", ...(granularity === "hour" ? { fixed_interval: "1h" } : { calendar_interval: "day" }) } };
  }
  return { size: 0, query: filters.length ? { bool: { filter: filters } } : { match_all: {} }, aggs: { per: agg } };
}

export function ChartsPage({ chains }: { chains: ChainStatus[] }) {
  const [chain, setChain] = useState(chains[0] ? chainKey(chains[0]) : "");
  const [kind, setKind] = useState("event");
  const [granularity, setGranularity] = useState<Granularity>("block");
  const [blocks, setBlocks] = useState(100);
  const [filter, setFilter] = useState("");
  const [moveFilter, setMoveFilter] = useState("");
  const [movedToken, setMovedToken] = useState("");
  const [movedPer, setMovedPer] = useState<"day" | "hour">("day");
  const [records, setRecords] = useState<Series | null>(null);
  const [moved, setMoved] = useState<Series | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const served = chains.find((c) => chainKey(c) === chain);
  const fail = (err: unknown) =>
    setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "CONSOLE_FILTER_INVALID", message: String(err), path: null }]));

  const drawRecords = async (e: Event) => {
    e.preventDefault();
    if (!served) return;
    setError(null);
    try {
      const fresh = chains.find((c) => chainKey(c) === chain);
      const body = recordsBody(kind, granularity, parseFilter(filter), fresh?.ingested?.number ?? fresh?.head ?? null, blocks);
      const a = await search(served, kind, body);
      const buckets = (a.aggregations?.per as { buckets?: Bucket[] } | undefined)?.buckets ?? [];
      setRecords({
        x: buckets.map((b) => b.key),
        y: buckets.map((b) => b.doc_count),
        time: granularity !== "block",
        label: `${kind} records per ${granularity}`,
      });
    } catch (err) {
      fail(err);
    }
  };
  const drawMoved = async (e: Event) => {
    e.preventDefault();
    if (!served) return;
    setError(null);
    try {
      const f = parseFilter(moveFilter);
      const token = movedToken.trim();
      const per = {
        date_histogram: { field: "timestamp", ...(movedPer === "hour" ? { fixed_interval: "1h" } : { calendar_interval: "day" }) },
      };
      const filters: unknown[] = f ? [f] : [];
      // A token: its Transfer events' `value` argument, summed in token units (nested aggregation on args).
      if (token) filters.push({ term: { "event.raw": "Transfer" } }, { term: { address: token } });
      const body = {
        size: 0,
        query: filters.length ? { bool: { filter: filters } } : { match_all: {} },
        aggs: {
          per: token
            ? {
                ...per,
                aggs: {
                  args: {
                    nested: { path: "args" },
                    aggs: { value: { filter: { term: { "args.name": "value" } }, aggs: { sum: { sum: { field: "args.value.scaled" } } } } },
                  },
                },
              }
            : { ...per, aggs: { moved: { sum: { field: "value.num" } } } },
        },
      };
      const a = await search(served, token ? "event" : "tx", body);
      const buckets = (a.aggregations?.per as { buckets?: Bucket[] } | undefined)?.buckets ?? [];
      setMoved({
        x: buckets.map((b) => b.key),
        y: buckets.map((b) => (token ? (b.args?.value?.sum?.value ?? 0) : (b.moved?.value ?? 0) / 1e18)),
        time: true,
        label: token ? `token units moved per ${movedPer}` : `ether moved per ${movedPer}`,
      });
    } catch (err) {
      fail(err);
    }
  };

  return (
    <section>
      <h1>Charts</h1>
      <label>
        Chain{" "}
        <select id="chart-chain" value={chain} onChange={(e) => setChain(e.currentTarget.value)}>
          {chains.map((c) => (
            <option key={chainKey(c)}>{chainKey(c)}</option>
          ))}
        </select>
      </label>
      <ErrorBox error={error} />
      <h2>Records over time</h2>
      <form class="controls" onSubmit={drawRecords}>
        <label>
          Kind{" "}
          <select id="chart-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            {["event", "tx", "block", "log", "call"].map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </label>
        <label>
          Per{" "}
          <select id="chart-granularity" value={granularity} onChange={(e) => setGranularity(e.currentTarget.value as Granularity)}>
            <option value="block">block</option>
            <option value="hour">hour</option>
            <option value="day">day</option>
          </select>
        </label>
        <label>
          Newest blocks (per block){" "}
          <input
            id="chart-blocks"
            type="number"
            min={1}
            max={10000}
            value={blocks}
            onInput={(e) => setBlocks(Number(e.currentTarget.value))}
          />
        </label>
        <label class="grow">
          Filter (a query clause, JSON){" "}
          <input
            id="chart-filter"
            type="text"
            placeholder='{"term": {"event.raw": "Transfer"}}'
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </label>
        <button type="submit" id="chart-draw">
          Draw
        </button>
      </form>
      <Chart series={records} id="chart-records" />
      <h2>Value moved over time</h2>
      <form class="controls" onSubmit={drawMoved}>
        <label>
          Token contract (empty: the chain's currency){" "}
          <input
            id="moved-token"
            type="text"
            size={44}
            placeholder="0x…"
            value={movedToken}
            onInput={(e) => setMovedToken(e.currentTarget.value)}
          />
        </label>
        <label>
          Per{" "}
          <select id="moved-per" value={movedPer} onChange={(e) => setMovedPer(e.currentTarget.value as "day" | "hour")}>
            <option value="day">day</option>
            <option value="hour">hour</option>
          </select>
        </label>
        <label class="grow">
          Filter (a query clause, JSON){" "}
          <input
            id="moved-filter"
            type="text"
            placeholder='{"range": {"blockNumber.num": {"gte": 1}}}'
            value={moveFilter}
            onInput={(e) => setMoveFilter(e.currentTarget.value)}
          />
        </label>
        <button type="submit" id="moved-draw">
          Draw
        </button>
      </form>
      <p class="hint">
        A token: the sum of its Transfer events' <code>value</code> in token units (a <code>nested</code> aggregation on <code>args</code>,
        unknown decimals count as 0). Empty: the sum of the transactions' value, in ether.
      </p>
      <Chart series={moved} id="chart-moved" />
    </section>
  );
}
