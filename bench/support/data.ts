/**
 * Benchmark data from the real mainnet fixtures: index prefixes, the fixture records (block, tx,
 * log, event documents) replicated with rewritten hashes, and bulk loading into Elasticsearch.
 * @module
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Readable } from "node:stream";
import type { Client } from "@elastic/elasticsearch";
import { indexName } from "../../es/mappings.js";
import { deleteIndicesOf } from "../../es/partitions.js";
import type { ChainId } from "../../lib/config/index.js";
import { type EventRecord, RECORD_KINDS, type RecordKind, recordId } from "../../lib/records.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { ensureIndices } from "../../pipeline/index/indexer.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";
import type { FixtureBlock, RpcObject } from "../../test/support/fixtures.js";

/**
 * A distinct copy of a fixture block: hashes and numbers rewritten consistently everywhere.
 * @param c - the copy index (0-based): the first 4 bytes of every hash become `c + 1`.
 * @param offset - copy `c` is numbered `fb.number + offset * (c + 1)` unless `number` is given.
 * @param number - the copy's block number.
 */
export function copyBlock(fb: FixtureBlock, c: number, offset: number, number = fb.number + offset * (c + 1)): FixtureBlock {
  const hex = `0x${number.toString(16)}`;
  const hash = rehash(String(fb.hash), c);
  const txs = (fb.block.transactions as RpcObject[]).map((t) => ({
    ...t,
    hash: rehash(String(t.hash), c),
    blockHash: hash,
    blockNumber: hex,
  }));
  const receipts = (fb.receipts ?? []).map((r) => ({
    ...r,
    transactionHash: rehash(String(r.transactionHash), c),
    blockHash: hash,
    blockNumber: hex,
    logs: (r.logs as RpcObject[]).map((l) => ({
      ...l,
      transactionHash: rehash(String(l.transactionHash), c),
      blockHash: hash,
      blockNumber: hex,
    })),
  }));
  return {
    number,
    hash,
    block: { ...fb.block, hash, number: hex, parentHash: rehash(String(fb.block.parentHash), c), transactions: txs },
    receipts,
  };
}

/**
 * `copies` copies of the fixture blocks numbered contiguously from `start` (copy `c` of base block
 * `i` is block `start + c * base.length + i`), so that a backfill of `start..start + n - 1` reads
 * them all; hashes rewritten as {@link copyBlock} does.
 */
export function contiguousCopies(base: readonly FixtureBlock[], copies: number, start: number): FixtureBlock[] {
  return Array.from({ length: copies }, (_, c) => base.map((b, i) => copyBlock(b, c, 0, start + c * base.length + i))).flat();
}

/** One document to index. */
export interface BenchDoc {
  kind: RecordKind;
  /** ES `_id` ({@link recordId}). */
  id: string;
  doc: Record<string, unknown>;
}

/** A unique index prefix for one benchmark run, e.g. `bench-search-1a2b3c4d-`. */
export function benchPrefix(name: string): string {
  return `bench-${name}-${randomBytes(4).toString("hex")}-`;
}

/** The four index names (block, tx, log, event) under a prefix. */
export function benchIndices(chain: ChainId, prefix: string): string[] {
  return RECORD_KINDS.map((k) => indexName(chain, k, prefix));
}

/**
 * The value of `--name N` in an argument list as a positive number, else `fallback`.
 * @throws {Error} when the option is present with a value that is not a positive number.
 */
export function numberArg(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const v = Number(args[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} needs a positive number, got ${JSON.stringify(args[i + 1])}`);
  return v;
}

/** The value of `--name VALUE` in an argument list, else `fallback`. */
export function stringArg(args: readonly string[], name: string, fallback: string): string {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : fallback;
}

/**
 * Every record of the given fixture blocks, each block copied `copies` times with rewritten
 * hashes and numbers ({@link copyBlock}, copy `c` numbered `n + offset * (c + 1)`), as ES documents.
 */
export function fixtureDocs(base: readonly FixtureBlock[], copies: number, offset: number): { blocks: FixtureBlock[]; docs: BenchDoc[] } {
  const blocks = Array.from({ length: copies }, (_, c) => base.map((b) => copyBlock(b, c, offset))).flat();
  return { blocks, docs: blockDocs(blocks) };
}

/** Every record of the given blocks as ES documents: block, transactions, logs, decoded events. */
export function blockDocs(blocks: readonly FixtureBlock[]): BenchDoc[] {
  const decoder = createDecoder({ chainId: 1 });
  const docs: BenchDoc[] = [];
  const add = <K extends RecordKind>(kind: K, rec: Parameters<typeof recordId<K>>[1]): void => {
    docs.push({ kind, id: recordId(kind, rec), doc: rec as unknown as Record<string, unknown> });
  };
  for (const fb of blocks) {
    const bundle = toBlockBundle(fb.block, fb.receipts);
    add("block", bundle.block);
    for (const t of bundle.transactions) add("tx", t);
    for (const l of bundle.logs) {
      add("log", l);
      const ev = decoder.decode(l);
      if (ev) add("event", ev);
    }
  }
  return docs;
}

/** Every decoded event of the given fixture blocks (each appears once). */
export function fixtureEvents(base: readonly FixtureBlock[]): EventRecord[] {
  const decoder = createDecoder({ chainId: 1 });
  const out: EventRecord[] = [];
  for (const fb of base) {
    for (const l of toBlockBundle(fb.block, fb.receipts).logs) {
      const ev = decoder.decode(l);
      if (ev) out.push(ev);
    }
  }
  return out;
}

/** Copy `c` of a 32-byte hash: the first 4 bytes replaced by `c + 1` (as {@link copyBlock} does). */
export function rehash(hash: string, c: number): string {
  return `0x${(c + 1).toString(16).padStart(8, "0")}${hash.slice(10)}`;
}

/**
 * At least `count` distinct event documents, produced lazily: copy `c` of every fixture event
 * gets rewritten `transactionHash` and `blockHash` ({@link rehash}) and block number
 * `n + offset * (c + 1)`; the last copy is cut so that exactly `count` are produced.
 */
export function* eventCopies(events: readonly EventRecord[], count: number, offset: number): Generator<BenchDoc> {
  if (events.length === 0) return;
  let produced = 0;
  for (let c = 0; produced < count; c++) {
    for (const ev of events) {
      if (produced >= count) return;
      const num = ev.blockNumber.num + offset * (c + 1);
      const copy: EventRecord = {
        ...ev,
        transactionHash: rehash(ev.transactionHash, c),
        blockHash: rehash(ev.blockHash, c),
        blockNumber: { num, raw: `0x${num.toString(16)}` },
      };
      produced++;
      yield { kind: "event", id: recordId("event", copy), doc: copy as unknown as Record<string, unknown> };
    }
  }
}

/**
 * Creates the record indices under `prefix` (production mappings and settings) and bulk-loads
 * `docs` into them with refresh disabled, then refreshes once and restores the refresh interval.
 * @returns the documents indexed and the seconds taken (refresh included).
 * @throws {Error} when any document is refused.
 */
export async function bulkLoad(
  es: Client,
  chain: ChainId,
  prefix: string,
  docs: Iterable<BenchDoc>,
): Promise<{ count: number; seconds: number }> {
  await ensureIndices(es, chain, prefix);
  const indices = benchIndices(chain, prefix);
  await es.indices.putSettings({ index: indices.join(","), settings: { index: { refresh_interval: "-1" } } });
  const t0 = performance.now();
  let firstDrop: unknown;
  const stats = await es.helpers.bulk<BenchDoc>({
    // The helper takes arrays, async generators and readable streams, not sync generators.
    datasource: Array.isArray(docs) ? docs : Readable.from(docs),
    onDocument: (d) => [{ index: { _index: indexName(chain, d.kind, prefix), _id: d.id } }, d.doc] as never,
    onDrop: (drop) => {
      firstDrop ??= drop.error;
    },
    flushBytes: 5 * 1024 * 1024,
    concurrency: 2,
  });
  await es.indices.refresh({ index: indices.join(",") });
  const seconds = (performance.now() - t0) / 1000;
  await es.indices.putSettings({ index: indices.join(","), settings: { index: { refresh_interval: null as never } } });
  if (stats.failed > 0) throw new Error(`bulk load: ${stats.failed} documents refused, first: ${JSON.stringify(firstDrop)}`);
  return { count: stats.successful, seconds };
}

/** Deletes the four record indices under `prefix` (by name; missing ones are ignored). Never throws. */
export async function deleteBenchIndices(es: Client, chain: ChainId, prefix: string): Promise<void> {
  await deleteIndicesOf(es, benchIndices(chain, prefix)).catch((err: unknown) =>
    console.error(`could not delete the ${prefix}* indices:`, err),
  );
}
