/**
 * Compares what the search API serves with a node's canonical chain, height by height: the proof
 * that the index equals the canonical chain (issue: reorgs, downtime, SIGKILL). Used by the reorg
 * matrix, the downtime test, the chaos test and `npm run bench -- reorg`.
 *
 * For every height in the range it asks the node for the block and its receipts (the same
 * {@link createRpcSource} and {@link toBlockBundle} ingest uses) and the API (`app.inject`, the
 * real routes) for every document of each kind at that height, and checks:
 * - exactly one block document, whose `_id` is the node's hash;
 * - the transaction, log, event (logs the decoder decodes) and call `_id`s equal the node's, and each
 *   document's `blockHash` is the node's hash (no duplicate `_id`, none from another branch);
 * - for each known orphaned block hash: no document of any kind carries it, and `block,tx` searched
 *   by `ids` does not find it (hashes the node still has as canonical in the range are reported in
 *   `stillCanonical` instead).
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { Config } from "../../lib/config/index.js";
import { callId, eventId, logId, type RecordKind } from "../../lib/records.js";
import type { Decoder } from "../../pipeline/decode/decoder.js";
import { callRecords } from "../../pipeline/index/calls.js";
import { createRpcSource } from "../../pipeline/ingest/rpc.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";

/** What {@link compareWithChain} found. */
export interface ChainComparison {
  /** True when nothing differs. */
  ok: boolean;
  /** Human-readable differences (at most 50). */
  problems: string[];
  /** Individual comparisons made (one per height and kind, one per orphaned hash and kind). */
  comparisons: number;
  /** Heights compared. */
  heights: number;
  /** Documents the API returned for the range, all kinds. */
  documents: number;
  /**
   * Hashes given as `orphaned` that are the node's canonical hash at a compared height (a caller
   * that read them before a reorg which then hit later blocks): not checked as orphaned (a canonical
   * block must be searchable), listed here so callers can assert it is empty.
   */
  stillCanonical: string[];
}

/** Options of {@link compareWithChain}. */
export interface CompareOptions {
  /** The node (anvil) JSON-RPC URL. */
  rpcUrl: string;
  /** The search API (built with the pipeline's config, so same chain and index prefix). */
  app: FastifyInstance;
  config: Config;
  /** The decoder the pipeline's decode stage uses (the expected events are the logs it decodes). */
  decoder: Decoder;
  /** First height (default 0). */
  from?: number;
  /** Last height (default the node's head). */
  to?: number;
  /** Block hashes known to be orphaned (none of their records may be searchable). */
  orphaned?: Iterable<string>;
  /** Also compare `call` documents (the pipeline ingests traces). Default false. */
  calls?: boolean;
}

type Hit = { _id: string; _source?: { blockHash?: string; hash?: string; blockNumber?: { num: number }; number?: { num: number } } };

/**
 * Compares the API's documents with the node's canonical chain (module doc). Read-only.
 * @throws when the node or the API fails (not for differences: those are in `problems`).
 */
export async function compareWithChain(opts: CompareOptions): Promise<ChainComparison> {
  const { app, config } = opts;
  const token = config.api.tokens[0];
  const base = `/${config.chain.technology}/${config.chain.blockchain}/${config.chain.network}/es`;
  const problems: string[] = [];
  let comparisons = 0;
  let documents = 0;
  const problem = (p: string) => {
    if (problems.length < 50) problems.push(p);
  };

  const search = async (kinds: string, body: Record<string, unknown>): Promise<{ total: number; hits: Hit[] }> => {
    const res = await app.inject({
      method: "POST",
      url: `${base}/${kinds}/search/`,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    if (res.statusCode !== 200) throw new Error(`search ${kinds} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    // The API answers `hits.total` as a bare integer (ES 6 style); `{ value }` is accepted too.
    const json = res.json() as { hits: { total: { value: number } | number; hits: Hit[] } };
    const total = typeof json.hits.total === "number" ? json.hits.total : json.hits.total?.value;
    if (typeof total !== "number") throw new Error(`search ${kinds}: no hits.total in ${res.body.slice(0, 200)}`);
    return { total, hits: json.hits.hits };
  };

  /** Every document of a kind in [lo, hi], grouped by height (ranges split while above 10,000 hits). */
  const docsByHeight = async (kind: RecordKind, lo: number, hi: number, out: Map<number, Hit[]>): Promise<void> => {
    const field = kind === "block" ? "number.num" : "blockNumber.num";
    const source = kind === "block" ? ["hash", "number"] : ["blockHash", "blockNumber"];
    const { total, hits } = await search(kind, {
      query: { range: { [field]: { gte: lo, lte: hi } } },
      size: 10_000,
      _source: source,
    });
    if (total > hits.length && hi > lo) {
      const mid = Math.floor((lo + hi) / 2);
      await docsByHeight(kind, lo, mid, out);
      await docsByHeight(kind, mid + 1, hi, out);
      return;
    }
    if (total > hits.length) problem(`${kind}: ${total} documents at height ${lo}, more than one page`);
    for (const h of hits) {
      const n = (kind === "block" ? h._source?.number?.num : h._source?.blockNumber?.num) ?? -1;
      const list = out.get(n) ?? [];
      list.push(h);
      out.set(n, list);
    }
  };

  const source = createRpcSource({ rpcUrl: opts.rpcUrl });
  try {
    const from = opts.from ?? 0;
    const to = opts.to ?? (await source.headNumber());
    const kinds: RecordKind[] = opts.calls ? ["block", "tx", "log", "event", "call"] : ["block", "tx", "log", "event"];
    const served = new Map<RecordKind, Map<number, Hit[]>>();
    const canonical = new Set<string>();
    for (const kind of kinds) {
      const m = new Map<number, Hit[]>();
      await docsByHeight(kind, from, to, m);
      served.set(kind, m);
      for (const list of m.values()) documents += list.length;
    }
    for (let n = from; n <= to; n++) {
      const fetched = await source.fetchBlock(n);
      if (!fetched) {
        problem(`height ${n}: the node has no block`);
        continue;
      }
      const traces = opts.calls ? await source.fetchTraces(n) : undefined;
      const bundle = toBlockBundle(fetched.block, fetched.receipts, traces);
      const hash = bundle.block.hash;
      canonical.add(hash);
      const expected: Record<RecordKind, string[]> = {
        block: [hash],
        tx: bundle.transactions.map((t) => t.hash),
        log: bundle.logs.map((l) => logId(l)),
        event: bundle.logs.flatMap((l) => {
          const ev = opts.decoder.decode(l);
          return ev ? [eventId(ev)] : [];
        }),
        call: bundle.traces.flatMap((t) => callRecords(t, { chainId: 1 }).map((c) => callId(c))),
      };
      for (const kind of kinds) {
        comparisons++;
        const hits = served.get(kind)?.get(n) ?? [];
        const ids = hits.map((h) => h._id).sort();
        const want = [...expected[kind]].sort();
        if (ids.length !== want.length || ids.some((id, i) => id !== want[i])) {
          const extra = ids.filter((id) => !want.includes(id));
          const missing = want.filter((id) => !ids.includes(id));
          problem(
            `height ${n} ${kind}: ${ids.length} served, ${want.length} on chain; extra ${extra.slice(0, 3).join(",")} missing ${missing.slice(0, 3).join(",")}`,
          );
        }
        const foreign = hits.filter((h) => (kind === "block" ? h._source?.hash : h._source?.blockHash) !== hash);
        if (foreign.length > 0) problem(`height ${n} ${kind}: ${foreign.length} documents of another block (e.g. ${foreign[0]?._id})`);
      }
    }
    const stillCanonical: string[] = [];
    for (const orphan of new Set(opts.orphaned ?? [])) {
      if (canonical.has(orphan)) {
        stillCanonical.push(orphan);
        continue;
      }
      for (const kind of kinds) {
        comparisons++;
        const field = kind === "block" ? "hash" : "blockHash";
        const { total } = await search(kind, { query: { term: { [field]: orphan } }, size: 0 });
        if (total > 0) problem(`orphaned block ${orphan}: ${total} ${kind} documents still searchable`);
      }
      comparisons++;
      const byIds = await search("block,tx", { query: { ids: { values: [orphan] } }, size: 1 });
      if (byIds.total > 0) problem(`orphaned block ${orphan}: found by block,tx ids`);
    }
    return { ok: problems.length === 0, problems, comparisons, heights: to - from + 1, documents, stillCanonical };
  } finally {
    source.destroy();
  }
}

/**
 * Compares again and again ({@link compareWithChain}, every `intervalMs`, default 500) until nothing
 * differs or `timeoutMs` (default 60 000) has passed; returns the last comparison either way, for
 * the caller to assert on (its `problems` name what still differs).
 * @throws when the node or the API fails.
 */
export async function waitForChain(opts: CompareOptions, timeoutMs = 60_000, intervalMs = 500): Promise<ChainComparison> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await compareWithChain(opts);
    if (last.ok || Date.now() >= deadline) return last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
