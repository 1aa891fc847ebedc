/**
 * A block or transaction behind a hash (`POST …/block,tx/search/` with an `ids` query): its fields,
 * and for a block its transactions, for a transaction its logs, decoded events and calls.
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ChainStatus, chainKey, type Hit, search } from "../api.js";
import { Cell } from "../cells.js";
import { ErrorBox, Scroll } from "../ui.js";

interface Related {
  title: string;
  hits: Hit[];
  columns: string[];
}

export function RecordPage({ chains, chain, hash }: { chains: ChainStatus[]; chain: string; hash: string }) {
  const served = chains.find((c) => chainKey(c) === chain);
  const [record, setRecord] = useState<Hit | null>(null);
  const [related, setRelated] = useState<Related[]>([]);
  const [error, setError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    if (!served) return;
    setRecord(null);
    setRelated([]);
    (async () => {
      const found = await search(served, "block,tx", { query: { ids: { values: [hash] } }, size: 1 });
      const hit = found.hits.hits[0] ?? null;
      setRecord(hit);
      if (!hit) return;
      if (hit._index.includes("block")) {
        const txs = await search(served, "tx", { query: { term: { blockHash: hash } }, size: 1000 });
        setRelated([{ title: "Transactions", hits: txs.hits.hits, columns: ["transactionIndex", "hash", "from", "to", "value"] }]);
        return;
      }
      const of = { query: { term: { transactionHash: hash } }, size: 1000 };
      const [logs, events, calls] = await Promise.all([search(served, "log", of), search(served, "event", of), search(served, "call", of)]);
      setRelated([
        { title: "Logs", hits: logs.hits.hits, columns: ["logIndex", "address", "topics", "data"] },
        { title: "Events", hits: events.hits.hits, columns: ["logIndex", "event", "address", "args"] },
        { title: "Calls", hits: calls.hits.hits, columns: ["traceAddress", "type", "from", "to", "value", "name"] },
      ]);
    })().catch((err) =>
      setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "CONSOLE", message: String(err), path: null }])),
    );
  }, [chain, hash]);
  if (!served) return <p>Unknown chain {chain}</p>;
  return (
    <section>
      <h1>
        {record ? (record._index.includes("block") ? "Block" : "Transaction") : "Record"} <code class="wrap">{hash}</code>
      </h1>
      <p class="hint">{chain}</p>
      <ErrorBox error={error} />
      {record === null && !error && <p>Looking it up…</p>}
      {record && (
        <table id="record-fields">
          <caption class="visually-hidden">Fields</caption>
          <tbody>
            {Object.entries(record._source).map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <Cell value={v} chain={chain} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {related.map((r) => (
        <div key={r.title}>
          <h2>
            {r.title} ({r.hits.length})
          </h2>
          <Scroll label={r.title}>
            <table data-related={r.title}>
              <thead>
                <tr>
                  {r.columns.map((c) => (
                    <th scope="col" key={c}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {r.hits.map((h) => (
                  <tr key={h._id}>
                    {r.columns.map((c) => (
                      <Cell key={c} value={h._source[c]} chain={chain} />
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        </div>
      ))}
    </section>
  );
}
