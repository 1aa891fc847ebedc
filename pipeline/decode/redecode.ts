/**
 * Re-decoding of history when an ABI is registered: the past logs of the registered contract
 * (and of the proxies whose cached implementation it is), or for an `any` registration the past
 * logs whose topic0 is one of its events, are read back from the Elasticsearch log index (the
 * `log` kind, which keeps every log's full record and, as its external version, the log's ingest
 * sequence number), decoded again and produced to the events topic, where the index stage makes
 * them searchable like live events.
 *
 * Limits (docs/decoding.md, "Re-decode"): only what the log index holds (logs not yet indexed when
 * the registration is applied are decoded live instead, since the stage already uses the new ABI);
 * at most `maxLogs` logs per registration, oldest first; logs an earlier decoder already turned into
 * a standard event are left alone.
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import type { EventRecord, LogRecord } from "../../lib/records.js";
import { eventId } from "../../lib/records.js";
import { REDECODE_HEADER, SEQ_HEADER } from "../../topics/index.js";
import type { OutgoingRecord } from "../kafka/bus.js";

/** What to read back: logs of these contracts, or logs with one of these topic0s. */
export type RedecodeSelector = { addresses: string[] } | { topic0s: string[] };

/** Dependencies of {@link redecodeHistory}. */
export interface RedecodeDeps {
  es: Client;
  /** The log index (es/mappings.ts `indexName(chain, "log", prefix)`). */
  logIndex: string;
  /** Decodes a log as the live stage would, or null; only events with no `error` and `source` `abi` are produced. */
  decode: (log: LogRecord) => EventRecord | null;
  /** Produces a batch of event records. */
  produce: (records: OutgoingRecord[]) => Promise<void>;
  /** Most logs read (config `abis.redecodeMaxLogs`). */
  maxLogs: number;
  /** Logs per Elasticsearch page; default 1000. */
  pageSize?: number;
  /** Checked before each page: true stops the re-decode there (the stage is stopping). */
  stopped?: () => boolean;
}

/** What {@link redecodeHistory} did. */
export interface RedecodeResult {
  /** Logs read from the index. */
  logs: number;
  /** Events produced. */
  events: number;
  /** Whether `maxLogs` stopped it before the end. */
  truncated: boolean;
}

/**
 * Reads the selected logs from the log index in chain order (block number, log index, transaction
 * hash) with `search_after` paging and produces their ABI-decoded events, each with the log's
 * sequence number ({@link SEQ_HEADER}) and {@link REDECODE_HEADER}.
 * @throws the Elasticsearch client's error (index missing: nothing to do, answered as 0 logs) or the producer's.
 */
export async function redecodeHistory(deps: RedecodeDeps, selector: RedecodeSelector): Promise<RedecodeResult> {
  const size = deps.pageSize ?? 1000;
  const terms: Record<string, string[]> = "addresses" in selector ? { address: selector.addresses } : { topics: selector.topic0s };
  const query = { terms };
  const result: RedecodeResult = { logs: 0, events: 0, truncated: false };
  if (("addresses" in selector ? selector.addresses : selector.topic0s).length === 0 || deps.maxLogs <= 0) return result;
  let after: unknown[] | undefined;
  for (;;) {
    const left = deps.maxLogs - result.logs;
    if (deps.stopped?.()) break;
    if (left <= 0) {
      result.truncated = true;
      break;
    }
    let page: Awaited<ReturnType<Client["search"]>>;
    try {
      page = await deps.es.search({
        index: deps.logIndex,
        query,
        size: Math.min(size, left),
        version: true,
        sort: [{ "blockNumber.num": "asc" }, { "logIndex.num": "asc" }, { transactionHash: "asc" }],
        ...(after ? { search_after: after as never } : {}),
      });
    } catch (err) {
      if ((err as { meta?: { statusCode?: number } }).meta?.statusCode === 404) return result;
      throw err;
    }
    const hits = page.hits.hits;
    if (hits.length === 0) break;
    const out: OutgoingRecord[] = [];
    for (const hit of hits) {
      const ev = deps.decode(hit._source as LogRecord);
      if (ev && ev.error === null && ev.source === "abi") {
        const headers: Record<string, string> = { [REDECODE_HEADER]: "1" };
        if (typeof hit._version === "number") headers[SEQ_HEADER] = String(hit._version);
        out.push({ kind: "events", key: eventId(ev), record: ev, headers });
      }
    }
    if (out.length > 0) await deps.produce(out);
    result.logs += hits.length;
    result.events += out.length;
    after = hits[hits.length - 1]?.sort;
    if (hits.length < Math.min(size, left) || !after) break;
  }
  return result;
}
