/**
 * The index stage: sinks every record kind from Kafka into Elasticsearch with the bulk API
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/docs-bulk.html). Documents get
 * deterministic `_id`s (lib/records.ts `recordId`), so a replay overwrites instead of duplicating.
 * Items rejected with 429 are retried by the client's bulk helper and then, if still rejected,
 * the batch is retried as a whole; items rejected for any other reason (e.g. a mapping error)
 * are dead-lettered.
 * @module
 */
import type { Client } from "@elastic/elasticsearch";
import type { ChainId } from "../../lib/config.js";
import type { Logger } from "../../lib/logger.js";
import { callId, type RecordKind, recordId, type TraceRecord } from "../../lib/records.js";
import { TOPICS, type TopicKind } from "../../topics/index.js";
import { NonRetryableError, RetryableError } from "../errors.js";
import type { Bus } from "../kafka/bus.js";
import { type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { callRecords } from "./calls.js";
import { INDEX_SETTINGS, indexName, MAPPINGS } from "./mappings.js";

/** One document to index. */
export interface IndexDoc {
  index: string;
  id: string;
  doc: Record<string, unknown>;
  /** The Kafka record it came from (for dead-lettering). */
  input: InputRecord;
}

/**
 * Maps consumed records to bulk documents (pure). A trace record becomes one `call` document per
 * frame; records it cannot flatten are appended to `failures`. Records of the alerts and
 * dead-letter topics are not indexed.
 */
export function toIndexDocs(inputs: InputRecord[], chain: ChainId, indexPrefix: string, failures: HandlerFailure[] = []): IndexDoc[] {
  const docs: IndexDoc[] = [];
  for (const input of inputs) {
    if (input.topicKind === "traces") {
      // One trace record (a transaction's call tree) becomes one `call` document per frame.
      try {
        for (const call of callRecords(input.record as TraceRecord)) {
          docs.push({ index: indexName(chain, "call", indexPrefix), id: callId(call), doc: call as never, input });
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
    const doc = input.record as Record<string, unknown>;
    docs.push({ index: indexName(chain, kind, indexPrefix), id: recordId(kind, doc as never), doc, input });
  }
  return docs;
}

/**
 * Creates each kind's index with its explicit mapping and settings when missing.
 * @throws when Elasticsearch refuses (e.g. a conflicting existing mapping).
 */
export async function ensureIndices(es: Client, chain: ChainId, indexPrefix: string): Promise<void> {
  for (const kind of Object.keys(MAPPINGS) as RecordKind[]) {
    const index = indexName(chain, kind, indexPrefix);
    if (await es.indices.exists({ index })) continue;
    try {
      await es.indices.create({ index, settings: INDEX_SETTINGS as never, mappings: MAPPINGS[kind] as never });
    } catch (err) {
      const type = (err as { body?: { error?: { type?: string } } }).body?.error?.type;
      if (type !== "resource_already_exists_exception") throw err;
    }
  }
}

/** Dependencies of {@link createIndexer}. */
export interface IndexerDeps {
  es: Client;
  chain: ChainId;
  indexPrefix: string;
  logger: Logger;
  /** Largest bulk request body. Default 5 MiB. */
  flushBytes?: number;
  /** Retries of 429-rejected items inside one bulk call. Default 5. */
  retries?: number;
  /** Refresh the touched indices after each batch (tests; default false, ES refreshes every second). */
  refresh?: boolean;
}

/** The index stage's pure-ish handler (needs only an ES client). */
export interface Indexer {
  /** Indexes a batch; returns the records ES refused for their content. @throws {RetryableError} when ES is unavailable or keeps answering 429. */
  indexBatch(inputs: InputRecord[]): Promise<HandlerFailure[]>;
}

/** Creates the index handler. */
export function createIndexer(deps: IndexerDeps): Indexer {
  return {
    async indexBatch(inputs) {
      const failures: HandlerFailure[] = [];
      const docs = toIndexDocs(inputs, deps.chain, deps.indexPrefix, failures);
      if (docs.length === 0) return failures;
      let throttled = 0;
      try {
        await deps.es.helpers.bulk<IndexDoc>({
          datasource: docs,
          onDocument: (d) => [{ index: { _index: d.index, _id: d.id } }, d.doc] as never,
          flushBytes: deps.flushBytes ?? 5 * 1024 * 1024,
          retries: deps.retries ?? 5,
          wait: 300,
          refreshOnCompletion: deps.refresh ?? false,
          onDrop: (dropped) => {
            if (dropped.status === 429) {
              throttled++;
              return;
            }
            failures.push({
              input: dropped.document.input,
              error: new NonRetryableError(
                "CS_ES_REJECTED",
                `Elasticsearch refused ${dropped.document.id}: ${JSON.stringify(dropped.error)}`,
              ),
            });
          },
        });
      } catch (err) {
        throw new RetryableError(`bulk request failed: ${(err as Error).message}`, { cause: err });
      }
      if (throttled > 0) throw new RetryableError(`${throttled} documents still rejected with 429 after retries`);
      return failures;
    },
  };
}

/** Dependencies of {@link startIndexStage}. */
export interface IndexStageDeps extends IndexerDeps {
  bus: Bus;
  /** Topics to sink. Default blocks, transactions, logs, events, traces (as `call` documents). */
  topics?: TopicKind[];
}

/** Starts the index stage: consumes every record topic and bulk-indexes into Elasticsearch. */
export async function startIndexStage(deps: IndexStageDeps): Promise<RunningConsumer> {
  await ensureIndices(deps.es, deps.chain, deps.indexPrefix);
  const indexer = createIndexer(deps);
  return runConsumer({
    bus: deps.bus,
    logger: deps.logger,
    stage: "index",
    topics: deps.topics ?? ["blocks", "transactions", "logs", "events", "traces"],
    handler: (inputs) => indexer.indexBatch(inputs),
  });
}
