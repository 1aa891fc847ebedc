/**
 * What the pipeline must make of fixture blocks, computed with the same transforms ingest, decode
 * and index use (`toBlockBundle`, the decoder, `callRecords`): the `_id`s per record kind, the
 * decoded events, and per block how many records of each kind. Tests compare Elasticsearch with it;
 * the capacity benchmark divides by it.
 * @module
 */
import type { EventRecord, RecordKind } from "../../lib/records.js";
import { recordId } from "../../lib/records.js";
import type { Decoder } from "../../pipeline/decode/decoder.js";
import { callRecords } from "../../pipeline/index/calls.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";
import type { FixtureBlock } from "./fixtures.js";

/** Record counts of one block, per Elasticsearch kind, plus its trace records (one per transaction with traces). */
export interface BlockRecordCounts {
  number: number;
  block: number;
  tx: number;
  log: number;
  event: number;
  call: number;
  trace: number;
}

/** The expected records of a set of fixture blocks. */
export interface FixtureRecords {
  /** Document `_id`s per kind (block, tx, log, event, call). */
  ids: Map<RecordKind, Set<string>>;
  /** Every event the decoder makes of the blocks' logs. */
  events: EventRecord[];
  /** Per block, in input order. */
  perBlock: BlockRecordCounts[];
}

/**
 * Computes {@link FixtureRecords}. Call records come from the blocks' traces (`FixtureBlock.traces`),
 * as when ingest runs with traces on.
 * @throws the transforms' errors for malformed fixture data.
 */
export function fixtureRecords(blocks: readonly FixtureBlock[], decoder: Decoder): FixtureRecords {
  const ids = new Map<RecordKind, Set<string>>(
    (["block", "tx", "log", "event", "call"] as RecordKind[]).map((k) => [k, new Set<string>()]),
  );
  const add = (k: RecordKind, id: string) => ids.get(k)?.add(id);
  const events: EventRecord[] = [];
  const perBlock: BlockRecordCounts[] = [];
  for (const fb of blocks) {
    const bundle = toBlockBundle(fb.block, fb.receipts, fb.traces);
    const counts: BlockRecordCounts = { number: fb.number, block: 1, tx: 0, log: 0, event: 0, call: 0, trace: bundle.traces.length };
    add("block", recordId("block", bundle.block));
    for (const t of bundle.transactions) add("tx", recordId("tx", t));
    counts.tx = bundle.transactions.length;
    for (const l of bundle.logs) {
      add("log", recordId("log", l));
      counts.log++;
      const ev = decoder.decode(l);
      if (!ev) continue;
      add("event", recordId("event", ev));
      events.push(ev);
      counts.event++;
    }
    for (const tr of bundle.traces) {
      for (const c of callRecords(tr, { chainId: 1 })) {
        add("call", recordId("call", c));
        counts.call++;
      }
    }
    perBlock.push(counts);
  }
  return { ids, events, perBlock };
}
