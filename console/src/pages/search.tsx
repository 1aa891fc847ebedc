/**
 * Search: a chain and kind(s), the query body in a JSON editor (highlighting, field-name completion,
 * the docs/api.md examples one click away), results as a table with chosen columns or as JSON,
 * paging with `search_after`, and export of every match (`size: -1`, read hit by hit as the API
 * streams it) as NDJSON or CSV, written to disk as it arrives (console/src/save.ts).
 * @module
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, apiResponse, type ChainStatus, chainKey, type Hit, type SearchAnswer, search, totalOf } from "../api.js";
import { Cell, csvField } from "../cells.js";
import type { QueryEditor } from "../editor.js";
import { fieldsOf } from "../fields.js";
import { HitSplitter } from "../hit-stream.js";
import { openSaveSink, type SaveSink } from "../save.js";
import { ErrorBox, Scroll } from "../ui.js";

const KINDS = ["event", "tx", "block", "log", "call"] as const;

/** Columns shown first for each kind (others can be picked). */
const DEFAULT_COLUMNS: Record<string, string[]> = {
  block: ["number", "hash", "timestamp", "transactionCount", "miner"],
  tx: ["blockNumber", "hash", "from", "to", "value"],
  log: ["blockNumber", "transactionHash", "address", "logIndex"],
  event: ["blockNumber", "event", "address", "transactionHash", "args"],
  call: ["blockNumber", "transactionHash", "type", "from", "to", "name"],
};

const DEFAULT_BODY = '{\n  "query": {"match_all": {}},\n  "sort": [{"blockNumber.num": "desc"}],\n  "size": 20\n}';

/**
 * How long after the page is shown the editor (CodeMirror, ~150 KB gzip) is loaded, in ms, when no
 * search is under way; a search under way is waited for, and its results painted, first: evaluating
 * and mounting the editor takes the main thread for a few hundred ms on a busy machine, which would
 * otherwise hold up the click on Search or the rendering of its results (bench/console.ts).
 */
export const EDITOR_DELAY_MS = 800;

interface Example {
  title: string;
  kinds: string;
  body: string | null;
}

function parseBody(text: string): Record<string, unknown> {
  const t = text.trim();
  if (t === "") return {};
  const v = JSON.parse(t) as unknown;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("the body must be a JSON object");
  return v as Record<string, unknown>;
}

export function SearchPage({ chains }: { chains: ChainStatus[] }) {
  const [chain, setChain] = useState(chains[0] ? chainKey(chains[0]) : "");
  const [kind, setKind] = useState<string>("event");
  const [answer, setAnswer] = useState<SearchAnswer | null>(null);
  const [pages, setPages] = useState<unknown[][]>([]);
  const [view, setView] = useState<"table" | "json">("table");
  const [columns, setColumns] = useState<string[]>(DEFAULT_COLUMNS.event as string[]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const [exported, setExported] = useState<string>("");
  const [examples, setExamples] = useState<Example[]>([]);
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<QueryEditor | null>(null);
  /** The body until the editor is mounted (then the editor's text). */
  const [pendingBody, setPendingBody] = useState(DEFAULT_BODY);
  const pending = useRef(DEFAULT_BODY);
  /** The search under way, if any (the editor is mounted after it). */
  const inFlight = useRef<Promise<void> | null>(null);
  const bodyText = () => editor.current?.text() ?? pending.current;
  const setBodyText = (text: string) => {
    if (editor.current) editor.current.setText(text);
    pending.current = text;
    setPendingBody(text);
  };
  /** The completion list of the chosen kind, kept for an editor mounted after it arrived. */
  const fields = useRef<readonly string[]>([]);
  const served = chains.find((c) => chainKey(c) === chain);

  useEffect(() => {
    if (!host.current) return;
    // CodeMirror is a chunk of its own (console/build.ts), loaded EDITOR_DELAY_MS after the page is on
    // screen and after a search under way has painted its results: until it is mounted, the body is
    // shown as text and Search sends it, so the first results wait neither for the editor nor behind it.
    let gone = false;
    const load = async () => {
      while (inFlight.current) await inFlight.current;
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const { mountEditor } = await import("../editor.js");
      if (gone || !host.current) return;
      editor.current = mountEditor(host.current, pending.current, "Query body (JSON)");
      editor.current.setFields(fields.current);
    };
    const timer = setTimeout(() => void load(), EDITOR_DELAY_MS);
    void fetch("/console/examples.json")
      .then((r) => r.json() as Promise<Example[]>)
      .then(setExamples);
    return () => {
      gone = true;
      clearTimeout(timer);
      editor.current?.destroy();
    };
  }, []);
  useEffect(() => {
    if (!served) return;
    void fieldsOf(served, kind).then((f) => {
      fields.current = f;
      editor.current?.setFields(f);
    });
  }, [chain, kind]);

  const run = async (after: unknown[] | null, history: unknown[][]) => {
    if (!served) return;
    let done = () => {};
    inFlight.current = new Promise<void>((r) => {
      done = r;
    });
    setBusy(true);
    setError(null);
    try {
      const body = parseBody(bodyText());
      if (after) body.search_after = after;
      const a = await search(served, kind, body);
      setAnswer(a);
      setPages(history);
    } catch (err) {
      setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "CONSOLE_BODY_INVALID", message: String(err), path: null }]));
    } finally {
      setBusy(false);
      inFlight.current = null;
      done();
    }
  };
  const hits = answer?.hits.hits ?? [];
  const last = hits[hits.length - 1];
  const next = () => last?.sort && void run(last.sort, [...pages, last.sort]);
  const prev = () => {
    const history = pages.slice(0, -1);
    void run(history[history.length - 1] ?? null, history);
  };

  const exportAll = async (format: "ndjson" | "csv") => {
    if (!served) return;
    setBusy(true);
    setError(null);
    setExported("");
    let sink: SaveSink | null = null;
    let code = "CONSOLE_BODY_INVALID";
    try {
      const body = parseBody(bodyText());
      code = "CONSOLE_EXPORT_FAILED";
      delete body.search_after;
      delete body.from;
      body.size = -1;
      // The save dialog first, while the click's user activation lasts (console/src/save.ts).
      sink = await openSaveSink(`${kind}.${format}`, format === "ndjson" ? "application/x-ndjson" : "text/csv");
      if (!sink) return;
      // The API streams a size -1 answer: read it hit by hit (console/src/hit-stream.ts), so no
      // single parse of the whole answer; each hit becomes an NDJSON line or a CSV row written to
      // the sink as it arrives (to the chosen file, or a Blob built batch by batch).
      const res = await apiResponse("POST", `${served.searchPath}${kind}/search/`, body);
      const splitter = new HitSplitter();
      const cols = ["_id", ...columns];
      if (format === "csv") await sink.write(`${cols.join(",")}\r\n`);
      let rows = 0;
      const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        for (const text of splitter.feed(chunk.value)) {
          rows++;
          if (format === "ndjson") {
            await sink.write(text.includes("\n") ? `${JSON.stringify(JSON.parse(text))}\n` : `${text}\n`);
          } else {
            const h = JSON.parse(text) as Hit;
            await sink.write(`${cols.map((c) => csvField(c === "_id" ? h._id : h._source[c])).join(",")}\r\n`);
          }
        }
      }
      await sink.close();
      sink = null;
      setExported(`${rows} records exported as ${format.toUpperCase()}`);
    } catch (err) {
      await sink?.abort().catch(() => {});
      setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code, message: String(err), path: null }]));
    } finally {
      setBusy(false);
    }
  };

  const keys = [...new Set(hits.slice(0, 50).flatMap((h) => Object.keys(h._source)))];
  const pickExample = (i: number) => {
    const ex = examples[i];
    if (!ex) return;
    setKind(ex.kinds);
    setBodyText(ex.body ? JSON.stringify(JSON.parse(ex.body.replaceAll("…", "")), null, 2) : "{}");
  };

  return (
    <section>
      <h1>Search</h1>
      <div class="controls">
        <label>
          Chain{" "}
          <select id="search-chain" value={chain} onChange={(e) => setChain(e.currentTarget.value)}>
            {chains.map((c) => (
              <option key={chainKey(c)}>{chainKey(c)}</option>
            ))}
          </select>
        </label>
        <label>
          Kind{" "}
          <select
            id="search-kind"
            value={kind}
            onChange={(e) => {
              setKind(e.currentTarget.value);
              setColumns(DEFAULT_COLUMNS[e.currentTarget.value] ?? []);
            }}
          >
            {[...KINDS, ...(KINDS.includes(kind as (typeof KINDS)[number]) ? [] : [kind])].map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </label>
        <label>
          Example from docs/api.md{" "}
          <select id="search-example" onChange={(e) => pickExample(Number(e.currentTarget.value))} value="">
            <option value="">choose…</option>
            {examples.map((ex, i) => (
              <option key={ex.title} value={String(i)}>
                {ex.title}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div class="editor" ref={host}>
        {/* Shown until the editor is mounted (its shadow root then replaces it on screen). */}
        <pre class="editor-pending">{pendingBody}</pre>
      </div>
      <div class="controls">
        <button type="button" id="search-run" disabled={busy} onClick={() => run(null, [])}>
          Search
        </button>
        <button type="button" id="export-ndjson" disabled={busy} onClick={() => exportAll("ndjson")}>
          Export all as NDJSON
        </button>
        <button type="button" id="export-csv" disabled={busy} onClick={() => exportAll("csv")}>
          Export all as CSV
        </button>
        <span id="export-status">{exported}</span>
      </div>
      <ErrorBox error={error} />
      {answer && (
        <>
          <p id="search-summary">
            {totalOf(answer)} matches, page {pages.length + 1} ({hits.length} shown), took {answer.took} ms{" "}
            <button type="button" disabled={busy || pages.length === 0} onClick={prev}>
              Previous page
            </button>{" "}
            <button type="button" id="search-next" disabled={busy || !last?.sort} onClick={next}>
              Next page
            </button>
            {!last?.sort && hits.length > 0 ? " (add a sort to page with search_after)" : ""}
          </p>
          <fieldset class="view">
            <legend>Show as</legend>
            <label>
              <input type="radio" name="view" checked={view === "table"} onChange={() => setView("table")} /> table
            </label>
            <label>
              <input type="radio" name="view" checked={view === "json"} onChange={() => setView("json")} /> JSON
            </label>
          </fieldset>
          <details>
            <summary>Columns</summary>
            <div class="columns">
              {keys.map((k) => (
                <label key={k}>
                  <input
                    type="checkbox"
                    checked={columns.includes(k)}
                    onChange={(e) => setColumns(e.currentTarget.checked ? [...columns, k] : columns.filter((c) => c !== k))}
                  />{" "}
                  {k}
                </label>
              ))}
            </div>
          </details>
          {view === "table" ? (
            <Scroll label="Search results">
              <table id="search-results">
                <thead>
                  <tr>
                    <th scope="col">_id</th>
                    {columns.map((c) => (
                      <th scope="col" key={c}>
                        {c}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {hits.map((h) => (
                    <tr key={h._id} data-id={h._id}>
                      <td>{h._id.length > 24 ? `${h._id.slice(0, 12)}…${h._id.slice(-8)}` : h._id}</td>
                      {columns.map((c) => (
                        <Cell key={c} value={h._source[c]} chain={chain} />
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </Scroll>
          ) : (
            <div>
              {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region needs a focus stop (axe-core scrollable-region-focusable) */}
              <pre id="search-json" tabIndex={0}>
                {JSON.stringify(answer, null, 2)}
              </pre>
            </div>
          )}
        </>
      )}
    </section>
  );
}
