/**
 * The index stage: sinks every record kind from Kafka into Elasticsearch with the bulk API
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/docs-bulk.html). Documents get
 * deterministic `_id`s (lib/records.ts `recordId`), so a replay overwrites instead of duplicating.
 * Items rejected with 429 are retried by the client's bulk helper and then, if still rejected,
 * the batch is retried as a whole; items rejected for any other reason (e.g. a mapping error)
 * are dead-lettered.
 *
 * The index equals the canonical chain (docs/reorgs.md). Four mechanisms, none of which needs
 * `_delete_by_query` (the reindex module, absent from the integ-test-zip distribution the stack
 * runs; a full distribution has it, but the design below does not depend on it and is race-free
 * where delete-by-query is not: delete-by-query deletes whatever matches at its snapshot, including
 * a transaction the new branch re-wrote under the same `_id` a moment earlier):
 * 1. **External versions.** Every document is written with `version` = the ingest sequence number
 *    of its message (`chainsift-seq` header) and `version_type: external_gte`
 *    (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/docs-index_.html#index-versioning).
 *    The new branch's records have larger numbers than the `reorgs` record, which has larger ones
 *    than the orphaned block's records. So a write of an older record never replaces a newer one
 *    (answered 409, counted as superseded, not an error), and a transaction that moved to the new
 *    branch keeps exactly one document whatever the order in which partitions are consumed.
 * 2. **Removal on a `reorgs` record.** Refresh, find every document whose block hash is the
 *    orphaned one (scroll over `blockHash`, `hash` for blocks), delete each with the reorg's
 *    sequence number as external version: ES deletes it only when the stored version is older, so
 *    a document the new branch already wrote under the same `_id` (same transaction) is never
 *    deleted, and the delete's tombstone (kept `index.gc_deletes`, 60 s) refuses a late orphaned write.
 * 3. **Canonical check around each bulk.** Before a bulk, records whose height ingest's canonical
 *    map (Redis, lib/chain/state.ts) holds another hash for are skipped; after it, the map is
 *    read again and records orphaned meanwhile are deleted (version = their own sequence + 1).
 *    Ingest changes the map before it produces the `reorgs` record, so a record written after the
 *    removal's search (a lagging partition) is caught by this second read, and one written before
 *    it by the search: no interleaving leaves an orphaned document behind. Records the first read
 *    calls orphaned are also deleted by `_id` (version = their sequence + 1): an earlier attempt at
 *    the batch may have written them before it failed (a bulk cut short, items still 429, a crash
 *    before the second read), after the removal's search.
 * 4. **Orphaned blocks outlive the map.** The map is pruned about 16 windows below the tip, the
 *    tombstones expire after 60 s, the topics keep records 7 days. The same checks also consult
 *    ingest's durable `orphaned` set (kept `ORPHANED_RETENTION_MS`, 14 days): a record of a block in
 *    it, older than the announcement that orphaned the block, is orphaned. So a rebuild from the
 *    topics or an Elasticsearch outage of any length does not bring orphaned records back.
 *
 * Partitions (es/partitions.ts): each document is written to the backing index of its block's
 * range, `<alias>-p<floor(height / N)>`, so external versions are per backing index. A transaction
 * that a reorg moves to a block of another partition is written there as a new document; its old
 * document (in the orphaned block's partition) is found and deleted by mechanisms 2 and 3, which
 * search the alias and delete by the concrete index a hit or a write names. So one document remains
 * (test/e2e/partitions.test.ts moves one across a boundary).
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import { Registry } from "prom-client";
import { indexName, kindOfIndex, MAPPINGS } from "../../es/mappings.js";
import { aliasOfIndex, createPartitionRouter, DEFAULT_PARTITIONING, ensureAlias, type Partitioning } from "../../es/partitions.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { CanonicalReader } from "../../lib/chain/state.js";
import type { ChainId } from "../../lib/config/index.js";
import { NonRetryableError, RetryableError } from "../../lib/errors.js";
import { INDEX_REORGS_STAGE } from "../../lib/kafka/consumer-health.js";
import type { Logger } from "../../lib/logger.js";
import { callId, type RecordKind, recordId } from "../../lib/records.js";
import { TOPICS, type TopicKind } from "../../topics/index.js";
import { type Bus, messageSeq } from "../kafka/bus.js";
import { type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { callRecords } from "./calls.js";
import { coalesceBatches } from "./coalesce.js";
import { countByKind, indexMetricsOf } from "./metrics.js";

/** One document to index. */
export interface IndexDoc {
  /** Its record kind. */
  kind: RecordKind;
  /** The kind's alias (`indexName`) from {@link toIndexDocs}; the indexer sets the backing index it is written to. */
  index: string;
  id: string;
  /** The document: the record as consumed (a call frame for a trace), sent to Elasticsearch as is. */
  doc: object;
  /** The Kafka record it came from (for dead-lettering). */
  input: InputRecord;
  /** Height of the block the document belongs to. */
  height: number;
  /** Hash of that block (the document's own hash for a block). */
  blockHash: string;
  /** The message's ingest sequence number (external version), or undefined when it carries none. */
  version: number | undefined;
}

/**
 * Height and block hash of a record of any kind (NaN / "" when the record lacks them: such a
 * record is left to Elasticsearch's mapping, which refuses it, and never counts as orphaned).
 */
function blockOf(kind: RecordKind, record: object): { height: number; blockHash: string } {
  const doc = record as { number?: unknown; blockNumber?: unknown; hash?: unknown; blockHash?: unknown };
  const n = (kind === "block" ? doc.number : doc.blockNumber) as { num?: unknown } | undefined;
  const hash = kind === "block" ? doc.hash : doc.blockHash;
  return { height: typeof n?.num === "number" ? n.num : Number.NaN, blockHash: typeof hash === "string" ? hash : "" };
}

/**
 * Maps consumed records to bulk documents (pure). A trace record becomes one `call` document per
 * frame; records it cannot flatten are appended to `failures`. Records of the alerts and
 * dead-letter topics are not indexed.
 */
export function toIndexDocs(
  inputs: InputRecord[],
  chain: ChainId,
  indexPrefix: string,
  failures: HandlerFailure[] = [],
  decode: DecodeMethodOptions,
): IndexDoc[] {
  const docs: IndexDoc[] = [];
  for (const input of inputs) {
    if (input.topicKind === "traces") {
      // One trace record (a transaction's call tree) becomes one `call` document per frame.
      try {
        const version = messageSeq(input.message);
        for (const call of callRecords(input.record, decode)) {
          const at = { height: call.blockNumber.num, blockHash: call.blockHash };
          docs.push({
            kind: "call",
            index: indexName(chain, "call", indexPrefix),
            id: callId(call),
            doc: call,
            input,
            ...at,
            version,
          });
        }
      } catch (err) {
        failures.push({
          input,
          error: new NonRetryableError("CS_MALFORMED_RECORD", `trace cannot be flattened: ${(err as Error).message}`),
        });
      }
      continue;
    }
    const kind = TOPICS[input.topicKind]?.recordKind as RecordKind | null | undefined;
    if (!kind) continue;
    const doc = input.record;
    docs.push({
      kind,
      index: indexName(chain, kind, indexPrefix),
      id: recordId(kind, doc as never),
      doc,
      input,
      ...blockOf(kind, doc),
      version: messageSeq(input.message),
    });
  }
  return docs;
}

/**
 * Makes each kind's alias ready (es/partitions.ts `ensureAlias`): creates partition 0 with its
 * explicit mapping and the kind's settings behind the alias when the alias is missing, migrates a
 * concrete index of the alias's name (the layout before partitioning) in place, and adds the fields
 * a newer chainsift maps to the existing backing indices (PUT `_mapping` adds fields and never
 * changes existing ones: https://www.elastic.co/guide/en/elasticsearch/reference/8.19/indices-put-mapping.html),
 * so an upgrade indexes its new record fields into the old indices (`dynamic: strict` would refuse them).
 * @param partitioning - blocks per partition, primaries and replicas per kind; default {@link DEFAULT_PARTITIONING}.
 * @throws when Elasticsearch refuses (e.g. a mapping that conflicts with the existing one).
 */
export async function ensureIndices(
  es: Client,
  chain: ChainId,
  indexPrefix: string,
  partitioning: Partitioning = DEFAULT_PARTITIONING,
): Promise<void> {
  for (const kind of Object.keys(MAPPINGS) as RecordKind[]) await ensureAlias(es, chain, kind, indexPrefix, partitioning[kind]);
}

/** Dependencies of {@link createIndexer}. */
export interface IndexerDeps {
  /** Elasticsearch client (e.g. the pipeline's); left open (the caller owns it). */
  es: Client;
  /**
   * The chain whose indices are written: aliases `<indexPrefix><technology>-<blockchain>-<network>-<kind>`
   * (es/mappings.ts `indexName`), backing indices `<alias>-p<partition>` (es/partitions.ts).
   */
  chain: ChainId;
  /** Prepended to every index name, e.g. `""` (config `elasticsearch.indexPrefix`); tests use a unique one. */
  indexPrefix: string;
  /**
   * Receives `removed the records of orphaned blocks`, `deleted records orphaned while they were
   * indexed` and `deleted records of orphaned blocks an earlier attempt may have written` (info)
   * lines, tagged `stage: "index"`; the last two only when something was deleted.
   */
  logger: Logger;
  /** Largest bulk request body. Default 5 MiB. */
  flushBytes?: number;
  /** Retries of 429-rejected items inside one bulk call. Default 5. */
  retries?: number;
  /**
   * Blocks per partition, primaries and replicas per kind (config `elasticsearch.partitioning`);
   * default es/partitions.ts `DEFAULT_PARTITIONING`. Every indexer of a chain must use the same.
   */
  partitioning?: Partitioning;
  /** Refresh the touched indices after each batch (tests; default false, ES refreshes every second). */
  refresh?: boolean;
  /**
   * Ingest's canonical map and durable set of orphaned blocks (lib/chain/state.ts) for the
   * canonical check around each bulk. Default none: no check (records of orphaned blocks are then
   * removed by `reorgs` records alone, which misses a record indexed after its reorg was handled).
   */
  canonical?: CanonicalReader;
  /** Registry of the stage's metrics (`chainsift_index_*`, and the shell's), e.g. the process's; default a private one. */
  registry?: Registry;
  /**
   * Chain id and token lookup for the method decoding of `call` documents (`scaled` arguments),
   * the chain context's `decode` (lib/chain-context.ts). Required: never assumed.
   */
  decode: DecodeMethodOptions;
  /**
   * Announces the aliases just written (backing indices mapped to their alias), after every bulk
   * and every delete, whether it succeeded or not (a failed one may have written some documents):
   * the API's result cache drops its answers of those aliases (lib/index-writes.ts,
   * api/search/result-cache.ts). Its rejection fails the batch with a {@link RetryableError} (the
   * batch is written again and announced again). Default: nothing announced.
   */
  onWrite?: (aliases: string[]) => Promise<void>;
}

/** What {@link Indexer.indexBatch} did, beyond the failures it returns. */
export interface IndexCounts {
  /** Documents written. */
  written: number;
  /** Documents ES kept a newer version of (409 on an external version). */
  superseded: number;
  /** Records skipped because ingest's canonical map holds another block at their height. */
  skippedOrphaned: number;
  /** Documents deleted because they belong to an orphaned block (reorgs records and the check after a bulk). */
  deletedOrphaned: number;
}

/** The index stage's pure-ish handler (needs only an ES client, and Redis for the canonical check). */
export interface Indexer {
  /**
   * Indexes a batch of records of one topic, or removes the documents of the orphaned blocks of a
   * batch of `reorgs` records; returns the records ES refused for their content.
   * @throws {RetryableError} when ES or Redis is unavailable or ES keeps answering 429.
   */
  indexBatch(inputs: InputRecord[]): Promise<HandlerFailure[]>;
  /** Running totals since the indexer was created. */
  counts(): IndexCounts;
}

/** Every index of the chain, one per record kind. */
function allIndices(chain: ChainId, indexPrefix: string): Array<{ kind: RecordKind; index: string }> {
  return (Object.keys(MAPPINGS) as RecordKind[]).map((kind) => ({ kind, index: indexName(chain, kind, indexPrefix) }));
}

/**
 * `filter_path` of the index stage's bulk requests: of the answer, only what the client's bulk
 * helper reads (`errors`; per item its `status` and `error`, which it zips with the request's
 * actions by position: every item has a `status`, so none drops out of the list).
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/common-options.html#common-options-response-filtering
 */
export const BULK_FILTER_PATH = "errors,items.*.status,items.*.error";

/** Status of a bulk item that failed only because ES holds a newer version (or nothing to delete). */
const isBenign = (status: number | undefined, op: "index" | "delete") => status === 409 || (op === "delete" && status === 404);

/** Creates the index handler. */
export function createIndexer(deps: IndexerDeps): Indexer {
  const { es } = deps;
  const counts: IndexCounts = { written: 0, superseded: 0, skippedOrphaned: 0, deletedOrphaned: 0 };
  const indices = allIndices(deps.chain, deps.indexPrefix);
  const metrics = indexMetricsOf(deps.registry ?? new Registry());
  const router = createPartitionRouter(es, deps.chain, deps.indexPrefix, deps.partitioning ?? DEFAULT_PARTITIONING);
  /** Counts documents of one result, by their index's record kind: one `inc` per kind, not per document. */
  const countDocs = (result: string, docIndices: Iterable<string | undefined>) =>
    countByKind(metrics.documents, result, docIndices, kindOfIndex);
  const retryable = (what: string) => (err: unknown) => {
    throw new RetryableError(`${what}: ${(err as Error).message}`, { cause: err });
  };
  /**
   * Runs a write (a bulk or a delete) of documents of `docIndices`, then announces their aliases
   * ({@link IndexerDeps.onWrite}) whether the write succeeded or not; the write's error wins.
   */
  async function announced<T>(docIndices: Iterable<string>, write: () => Promise<T>): Promise<T> {
    if (!deps.onWrite) return write();
    const aliases = [...new Set([...docIndices].map(aliasOfIndex))];
    let result: T;
    try {
      result = await write();
    } catch (err) {
      await deps.onWrite(aliases).catch(() => {});
      throw err;
    }
    await deps.onWrite(aliases).catch(retryable("announcing the write failed"));
    return result;
  }

  /**
   * Docs of orphaned blocks: their height the canonical map assigns to another block (`""`: no block
   * there any more), or their block is in ingest's durable `orphaned` set with a sequence number
   * above the doc's (or the doc has none). The map is pruned about 16 windows below the tip; the set
   * lasts as long as the topics keep records (`ORPHANED_RETENTION_MS`), so a rebuild from the topics
   * or a long Elasticsearch outage still recognises them.
   */
  async function orphanedAmong(docs: readonly IndexDoc[]): Promise<Set<IndexDoc>> {
    const out = new Set<IndexDoc>();
    const canonical = deps.canonical;
    if (!canonical || docs.length === 0) return out;
    const known = docs.filter((d) => Number.isSafeInteger(d.height) && d.blockHash !== "");
    if (known.length === 0) return out;
    const [canon, orphaned] = await Promise.all([
      canonical.hashesAt(known.map((d) => d.height)),
      canonical.orphanedSince(known.map((d) => d.blockHash)),
    ]).catch(retryable("canonical map unavailable"));
    for (const d of known) {
      const c = canon.get(d.height);
      const since = orphaned.get(d.blockHash.toLowerCase());
      if ((c !== undefined && c !== d.blockHash) || (since !== undefined && (d.version === undefined || d.version < since))) out.add(d);
    }
    return out;
  }

  /**
   * Deletes the documents of `docs` (orphaned) that this attempt or an earlier one may have written:
   * each only when ES holds its version or an older one (version = its sequence number + 1), so the
   * new branch's document under the same `_id` stays.
   * @returns how many were deleted.
   */
  async function deleteOrphanedDocs(docs: Iterable<IndexDoc>, what: string): Promise<number> {
    const items = [...docs].map((d) => ({ index: d.index, id: d.id, version: d.version === undefined ? undefined : d.version + 1 }));
    if (items.length === 0) return 0;
    const deleted = await deleteVersioned(items);
    counts.deletedOrphaned += deleted;
    if (deleted > 0) deps.logger.info({ stage: "index", deleted, found: items.length }, what);
    return deleted;
  }

  /**
   * Deletes documents, each only when ES holds a version older than `version` (none: unconditionally).
   * @returns how many were deleted.
   */
  async function deleteVersioned(items: ReadonlyArray<{ index: string; id: string; version: number | undefined }>): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < items.length; i += 1000) {
      const chunk = items.slice(i, i + 1000);
      const res = await announced(
        chunk.map((d) => d.index),
        () =>
          es.bulk({
            operations: chunk.map((d) => ({
              delete:
                d.version === undefined
                  ? { _index: d.index, _id: d.id }
                  : { _index: d.index, _id: d.id, version: d.version, version_type: "external" as const },
            })),
            // Removals are rare and are the point of a reorg: visible to searches at once, not at the next 1 s refresh.
            refresh: true,
          }),
      ).catch(retryable("bulk delete failed"));
      for (const item of res.items) {
        const r = item.delete;
        if (r?.result === "deleted") {
          deleted++;
          countDocs("deleted_orphaned", [r._index]);
        } else if (r?.error && !isBenign(r.status, "delete"))
          throw new RetryableError(`delete of ${r._id} failed: ${JSON.stringify(r.error)}`);
      }
    }
    return deleted;
  }

  /** Removes every document of the orphaned blocks of a batch of reorgs records. */
  async function removeOrphaned(inputs: InputRecord<"reorgs">[], failures: HandlerFailure[]): Promise<void> {
    /** Orphaned hash → the reorg's sequence number (the version that deletes what is older). */
    const orphaned = new Map<string, number | undefined>();
    for (const input of inputs) {
      const r = input.record;
      if (typeof r?.orphanedHash !== "string") {
        failures.push({ input, error: new NonRetryableError("CS_MALFORMED_RECORD", "reorg record without orphanedHash") });
        continue;
      }
      const seq = messageSeq(input.message);
      const prev = orphaned.get(r.orphanedHash);
      orphaned.set(r.orphanedHash, prev === undefined || seq === undefined ? (seq ?? prev) : Math.max(prev, seq));
    }
    if (orphaned.size === 0) return;
    // Everything written before this point becomes visible to the search below.
    await es.indices
      .refresh({ index: indices.map((i) => i.index), ignore_unavailable: true, allow_no_indices: true })
      .catch(retryable("refresh failed"));
    const hashes = [...orphaned.keys()];
    const victims: Array<{ index: string; id: string; version: number | undefined }> = [];
    for (const { kind, index } of indices) {
      const field = kind === "block" ? "hash" : "blockHash";
      try {
        for await (const page of es.helpers.scrollSearch<Record<string, string>>({
          index,
          size: 1000,
          scroll: "30s",
          _source: [field],
          query: { terms: { [field]: hashes } },
          ignore_unavailable: true,
        })) {
          for (const hit of page.body.hits.hits) {
            const hash = hit._source?.[field];
            if (hash !== undefined) victims.push({ index: hit._index, id: hit._id as string, version: orphaned.get(hash) });
          }
        }
      } catch (err) {
        throw new RetryableError(`search for orphaned ${kind} documents failed: ${(err as Error).message}`, { cause: err });
      }
    }
    const deleted = await deleteVersioned(victims);
    counts.deletedOrphaned += deleted;
    deps.logger.info({ stage: "index", blocks: hashes.length, found: victims.length, deleted }, "removed the records of orphaned blocks");
  }

  return {
    counts: () => ({ ...counts }),
    async indexBatch(inputs) {
      const failures: HandlerFailure[] = [];
      if (inputs[0]?.topicKind === "reorgs") {
        // One batch is one partition of one topic: every input is a reorg.
        await removeOrphaned(
          inputs.filter((i): i is InputRecord<"reorgs"> => i.topicKind === "reorgs"),
          failures,
        );
        return failures;
      }
      const all = toIndexDocs(inputs, deps.chain, deps.indexPrefix, failures, deps.decode);
      // Each document goes to the backing index of its block's partition, created ahead of need.
      await router.prepare(all).catch(retryable("creating partitions failed"));
      for (const d of all) d.index = router.indexOf(d.kind, d.height);
      const stale = await orphanedAmong(all);
      counts.skippedOrphaned += stale.size;
      countDocs(
        "skipped_orphaned",
        [...stale].map((d) => d.index),
      );
      // Not only skipped: an earlier attempt at this batch may have written some of them before it failed
      // (a bulk cut short by a transport error or 429s, or a crash before the check after the bulk).
      // Records without a sequence number cannot be ordered against the new branch's: skipped only.
      await deleteOrphanedDocs(
        [...stale].filter((d) => d.version !== undefined),
        "deleted records of orphaned blocks an earlier attempt may have written",
      );
      const docs = stale.size === 0 ? all : all.filter((d) => !stale.has(d));
      if (docs.length === 0) return failures;
      let throttled = 0;
      // Every document not dropped was written. No `onSuccess`: the helper would deserialize each
      // document it sent back to hand it over (secure-json-parse, 8.5 % of the stage's CPU).
      const dropped = new Set<IndexDoc>();
      const superseded: Array<string | undefined> = [];
      // The helper hands back deserialized bodies, not our IndexDocs: find them by index, _id and version.
      const byKey = new Map<string, IndexDoc>();
      const keyOf = (index: string | undefined, id: string | undefined | null, version: number | undefined) =>
        `${index}|${id}|${version ?? ""}`;
      for (const d of docs) byKey.set(keyOf(d.index, d.id, d.version), d);
      const find = (op: { _index?: string; _id?: string | null; version?: number; _version?: number } | undefined, external: boolean) =>
        op
          ? (byKey.get(keyOf(op._index, op._id, external ? (op.version ?? op._version) : undefined)) ??
            byKey.get(keyOf(op._index, op._id, undefined)))
          : undefined;
      const endTimer = metrics.bulkSeconds.startTimer();
      try {
        await announced(
          docs.map((d) => d.index),
          () =>
            es.helpers.bulk<IndexDoc>({
              datasource: docs,
              onDocument: (d) =>
                [
                  {
                    index:
                      d.version === undefined
                        ? { _index: d.index, _id: d.id }
                        : { _index: d.index, _id: d.id, version: d.version, version_type: "external_gte" },
                  },
                  d.doc,
                ] as never,
              flushBytes: deps.flushBytes ?? 5 * 1024 * 1024,
              retries: deps.retries ?? 5,
              wait: 300,
              refreshOnCompletion: deps.refresh ?? false,
              // The answer's per-item fields the helper reads (status, error): ~20 bytes an item instead of ~250 to parse.
              filter_path: BULK_FILTER_PATH,
              onDrop: (drop) => {
                const op = (drop.operation as { index?: { _index?: string; _id?: string; version?: number } }).index;
                const doc = find(op, true);
                if (doc) dropped.add(doc);
                if (drop.status === 429) {
                  throttled++;
                  return;
                }
                if (isBenign(drop.status, "index")) {
                  superseded.push(op?._index);
                  return;
                }
                metrics.rejections.inc({ reason: (drop.error as { type?: string } | undefined)?.type ?? `status_${drop.status}` });
                if (!doc) throw new Error(`bulk item ${op?._id} refused and not found in the batch: ${JSON.stringify(drop.error)}`);
                failures.push({
                  input: doc.input,
                  error: new NonRetryableError("CS_ES_REJECTED", `Elasticsearch refused ${doc.id}: ${JSON.stringify(drop.error)}`),
                });
              },
            }),
        );
      } catch (err) {
        endTimer();
        metrics.bulkRequests.inc({ outcome: "failed" });
        throw new RetryableError(`bulk request failed: ${(err as Error).message}`, { cause: err });
      }
      endTimer();
      metrics.bulkRequests.inc({ outcome: "ok" });
      if (throttled > 0) metrics.rejections.inc({ reason: "throttled" }, throttled);
      counts.superseded += superseded.length;
      countDocs("superseded", superseded);
      const written = dropped.size === 0 ? docs : docs.filter((d) => !dropped.has(d));
      countDocs(
        "written",
        written.map((d) => d.index),
      );
      if (throttled > 0) throw new RetryableError(`${throttled} documents still rejected with 429 after retries`);
      counts.written += written.length;
      // Orphaned while the bulk ran (ingest announced a reorg meanwhile): delete what was just written,
      // unless a newer version (the new branch) replaced it already.
      await deleteOrphanedDocs(await orphanedAmong(written), "deleted records orphaned while they were indexed");
      return failures;
    },
  };
}

/**
 * Dependencies of {@link startIndexStage} (its Parameters): the {@link IndexerDeps} (`es`, `chain`,
 * `indexPrefix`, `logger`, and optionally `flushBytes` (default 5 MiB), `retries` (default 5),
 * `refresh` (default false), `canonical` (default none) and `registry` (default a private one)),
 * plus the bus and the topics.
 */
export interface IndexStageDeps extends IndexerDeps {
  /**
   * The Kafka bus of the chain: consumer groups `bus.groupId("index")` (record topics) and
   * `bus.groupId("index-reorgs")` (the `reorgs` topic); refused records go to its `dead-letter`
   * topic. Left open on stop (the caller owns it).
   */
  bus: Bus;
  /** Topics to sink. Default blocks, transactions, logs, events, traces (as `call` documents) and reorgs (removals). */
  topics?: TopicKind[];
}

/**
 * Starts the index stage: consumes every record topic and bulk-indexes into Elasticsearch. The
 * `reorgs` topic gets a consumer of its own (group `<…>.index-reorgs`), so a removal never waits
 * behind a backlog of record batches (measured by `npm run bench -- reorg`: with one consumer for
 * everything, p99 "reorg → orphans unsearchable" reached 2.8–4.1 s under traffic). Correct in any
 * order: see the module doc. Creates the chain's indices first when missing (`ensureIndices`).
 * The partition batches of the record topics handed over together (and those arriving while a bulk
 * runs) go to Elasticsearch as one bulk (./coalesce.ts `coalesceBatches`).
 *
 * Errors of records never reject or stop the stage: a record ES refuses for its content (e.g. a
 * mapping error) becomes a {@link NonRetryableError} `CS_ES_REJECTED`, a trace that cannot be
 * flattened or a `reorgs` record without `orphanedHash` a `CS_MALFORMED_RECORD`, an undecodable
 * message a `CS_AVRO_DECODE`: each goes to the dead-letter topic. A {@link RetryableError}
 * (Elasticsearch or the canonical map unavailable, items still answered 429 after `retries`)
 * retries the whole batch with backoff (500 ms, doubling up to 30 s) without committing it.
 * @param deps - the Elasticsearch client, chain, index prefix, logger, bus and optional settings
 *   ({@link IndexStageDeps}).
 * @returns a {@link RunningConsumer}: `consumer` (the record topics' kafkajs consumer),
 *   `deadLettered()` (messages both consumers sent to the dead-letter topic so far) and `stop()`
 *   (stops both consumers and their producers; the bus and the ES client stay open).
 * @throws the Elasticsearch client's error (`@elastic/elasticsearch` `ConnectionError`,
 *   `ResponseError` for a conflicting existing mapping) when the indices cannot be created, and the
 *   kafkajs error (e.g. `KafkaJSConnectionError`) when Kafka cannot be reached; neither is a
 *   lib/errors.ts class.
 */
export async function startIndexStage(deps: IndexStageDeps): Promise<RunningConsumer> {
  await ensureIndices(deps.es, deps.chain, deps.indexPrefix, deps.partitioning);
  const indexer = createIndexer(deps);
  const topics = deps.topics ?? ["blocks", "transactions", "logs", "events", "traces", "reorgs"];
  const records = topics.filter((t) => t !== "reorgs");
  const common = {
    bus: deps.bus,
    logger: deps.logger,
    handler: (inputs: InputRecord[]) => indexer.indexBatch(inputs),
    ...(deps.registry ? { registry: deps.registry } : {}),
  };
  // One bulk (and one canonical check before and after) for the partition batches handed over together.
  const main = await runConsumer({ ...common, handler: coalesceBatches(common.handler), stage: "index", topics: records });
  const removals = topics.includes("reorgs") ? await runConsumer({ ...common, stage: INDEX_REORGS_STAGE, topics: ["reorgs"] }) : undefined;
  return {
    consumer: main.consumer,
    deadLettered: () => main.deadLettered() + (removals?.deadLettered() ?? 0),
    ready: () => main.ready() && (removals?.ready() ?? true),
    async stop() {
      await Promise.all([main.stop(), removals?.stop()]);
    },
  };
}

/** Consumer-group stage name of the index stage's `reorgs` consumer (see {@link startIndexStage}; defined in lib/kafka/consumer-health.ts). */
export { INDEX_REORGS_STAGE };
