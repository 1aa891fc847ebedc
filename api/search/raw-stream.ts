/**
 * Pages of the Elasticsearch-compatible routes (a `_search`, a point-in-time page, a scroll page)
 * streamed to the client as Elasticsearch's response arrives, rewritten on the fly.
 *
 * Why: api/search/raw.ts writes the answer from ES's response bytes, but only once the whole
 * response is in: the API then waited for ES's last byte before sending its first, and the client
 * for the API's whole answer, so the time ES spends writing a page, the rewrite and the transfer
 * to the client added up (bench export, pages of 1000 events: ~26 ms a page through the API
 * against ~19 ms direct). Here each chunk of ES's response is rewritten and passed on as it comes,
 * so they overlap, and memory stays bounded by a chunk and one hit.
 *
 * How (the layout and the rewrite of api/search/raw.ts):
 * 1. The status and the head: a 4xx/5xx answer, a compressed body, or a head without the expected
 *    layout (`readRawHead`, at most {@link HEAD_MAX_BYTES}) is gathered whole and answered as
 *    before (`useResponseBytes` then the caller's `fallback`: errors thrown, the parse path). So
 *    every error Elasticsearch answers is still an error answer, and the context id of the head is
 *    known before the first byte is sent.
 * 2. Hits: each hit runs from its `{"_index":"` to the `},{"_index":"` that starts the next one
 *    (a separator that cannot occur inside a record, see api/search/raw.ts), or, for the last
 *    one, to the `]}}` that ends the response. A complete hit is rewritten (`rawHit`); one without
 *    the expected layout is parsed and shaped alone, as the parse path shapes every hit
 *    (api/search/envelope.ts `shapeHit`, api/search/es-shape.ts `toEsHit`), so the answer is the
 *    same as the buffered path's.
 * 3. Failures once the answer has started (the connection to ES lost, a response that does not end
 *    in `]}}`, a hit that is not JSON) destroy the stream: the client sees a truncated, invalid JSON
 *    body, never a silently shortened page.
 * @module
 */
import { Readable } from "node:stream";
import type { Client, estypes, TransportResult } from "@elastic/elasticsearch";
import type { SearchPlan } from "../dsl/validate.js";
import { type ShapeOptions, shapeHit } from "./envelope.js";
import { toEsHit } from "./es-shape.js";
import { prunedTarget } from "./partitions.js";
import type { RawEnvelope } from "./raw.js";
import {
  HEAD_MAX_BYTES,
  HIT_SEPARATOR,
  RAW_TAIL,
  type RawEsFormat,
  type RawHead,
  rawHeadEnd,
  rawHit,
  rawHitsSize,
  readRawHead,
  writeRawHits,
} from "./raw.js";
import {
  AS_STREAM,
  buildSearchRequest,
  rawOrParsed,
  requestOptions,
  type SearchOptions,
  type SearchTarget,
  type SearchWithIds,
  shapeOptions,
  useResponseBytes,
  withResponseBytes,
} from "./search.js";

/** A page being streamed (see the module notes). */
export interface EsPageStream {
  /** The answer's UTF-8 JSON, produced as ES's response arrives (backpressure-aware: ES's response is read as the client reads). */
  body: Readable;
  /** Elasticsearch's `_scroll_id` or `pit_id` of the response, when it had one. */
  contextId?: string;
  /** Hits written so far (all of them once `body` ended). */
  hits(): number;
}

/**
 * Bytes of the answer gathered before they are passed on: fewer, larger writes to the client's
 * socket than one per chunk of Elasticsearch's response (64 KiB), which cost the API more CPU
 * (socket writes, garbage) than the overlap saved.
 */
const WRITE_BYTES = 256 * 1024;

/** Reads a body chunk by chunk, remembering whether it ended. */
type Chunks = AsyncIterator<Buffer>;

/** The chunks already read, then the rest of `it`. */
async function* rest(read: readonly Buffer[], it: Chunks): AsyncGenerator<Buffer> {
  yield* read;
  for (;;) {
    const r = await it.next();
    if (r.done) return;
    yield r.value;
  }
}

/**
 * Sends a search-like call (`send` must pass the options it is given to the client) and streams
 * its answer in Elasticsearch 8's shape `format` (see the module notes), or, when the answer cannot
 * be streamed, hands the whole body to `fallback` (api/search/search.ts `rawOrParsed`).
 * @param shape - how hits without the expected layout are shaped (the parse path's options).
 * @throws the client's `ResponseError` for a 4xx/5xx answer and its connection/timeout errors
 *   before the first byte (as `withResponseBytes`); whatever `fallback` throws.
 */
export async function streamEsPage<T>(
  send: (options: typeof AS_STREAM) => Promise<unknown>,
  format: RawEsFormat,
  shape: Omit<ShapeOptions, "unitScores">,
  fallback: (bytes: Buffer) => T,
): Promise<{ stream: EsPageStream } | T> {
  const res = (await send(AS_STREAM)) as unknown as TransportResult<AsyncIterable<Buffer>, unknown>;
  const it = res.body[Symbol.asyncIterator]();
  const read: Buffer[] = [];
  let length = 0;
  let ended = false;
  const streamable =
    (res.statusCode === null || res.statusCode < 400) && !/gzip|deflate/i.test(String(res.headers?.["content-encoding"] ?? ""));
  if (streamable) {
    // Up to the head and one byte past it (the head is nearly always in the first chunk).
    while (length <= HEAD_MAX_BYTES) {
      if (length > 0) {
        const joined = read.length === 1 ? (read[0] as Buffer) : Buffer.concat(read, length);
        read.splice(0, read.length, joined);
        const end = rawHeadEnd(joined);
        if (end >= 0 && length > end) break;
      }
      const r = await it.next();
      if (r.done) {
        ended = true;
        break;
      }
      read.push(r.value);
      length += r.value.length;
    }
  }
  const first = read.length === 1 ? (read[0] as Buffer) : Buffer.concat(read, length);
  const head = streamable ? readRawHead(first, format) : undefined;
  if (!head) return useResponseBytes(res, rest(length > 0 ? [first] : [], it), fallback);
  let hits = 0;
  const body = Readable.from(
    rewrite(first, ended, it, head, shape, (n) => (hits += n)),
    { objectMode: false },
  );
  // A stream destroyed before its first read never runs the generator's finally block.
  body.once("close", () => void it.return?.());
  const stream: EsPageStream = { body, hits: () => hits };
  if (head.contextId !== undefined) stream.contextId = head.contextId;
  return { stream };
}

/** The answer's chunks: the head, then the hits of each chunk of ES's response as it comes (see the module notes). */
async function* rewrite(
  first: Buffer,
  ended: boolean,
  it: Chunks,
  head: RawHead,
  shape: Omit<ShapeOptions, "unitScores">,
  count: (n: number) => void,
): AsyncGenerator<Buffer> {
  let pending = first.subarray(head.start);
  let prefix: string | undefined = head.prefix;
  let written = 0;
  let done = ended;
  /** Where a hit cut by a chunk boundary is joined with the next chunk (reused: `encode` copies what it keeps). */
  let store = Buffer.allocUnsafeSlow(0);
  /** The answer's bytes not passed on yet: `out[0, pos)`. */
  let out = Buffer.allocUnsafeSlow(0);
  let pos = 0;
  try {
    for (;;) {
      const heads: string[] = [];
      const ranges: number[] = [];
      /** Hits without the expected layout, shaped alone: index in `heads` (an empty head) → their JSON. */
      const shaped = new Map<number, Buffer>();
      const stop = done ? pending.length - RAW_TAIL.length : pending.length;
      if (done && (stop < 0 || pending.compare(RAW_TAIL, 0, RAW_TAIL.length, stop) !== 0))
        throw new Error("Elasticsearch's response does not end its hits with ]}}");
      let at = 0;
      while (at < stop) {
        const next = pending.indexOf(HIT_SEPARATOR, at);
        // The hit's closing brace; the last hit of the response ends at the tail.
        const end = next >= 0 && next < stop ? next : done ? stop - 1 : -1;
        if (end < 0) break;
        const comma = written + heads.length > 0 ? "," : "";
        const hitHead = rawHit(pending, at, end, head.unitScores, true, ranges);
        if (hitHead !== undefined) heads.push(comma + hitHead);
        else {
          const hit = JSON.parse(pending.toString("utf8", at, end + 1)) as estypes.SearchHit<unknown>;
          shaped.set(
            heads.length,
            Buffer.from(comma + JSON.stringify(toEsHit(shapeHit(hit, { ...shape, unitScores: head.unitScores }))), "utf8"),
          );
          heads.push("");
          ranges.push(0, 0, 0, 0);
        }
        at = end + 2; // past "}," (or past the end)
      }
      const size = encodedSize(prefix, heads, ranges, shaped, done);
      if (pos + size > out.length) {
        if (pos > 0) yield out.subarray(0, pos);
        out = Buffer.allocUnsafe(Math.max(WRITE_BYTES, size));
        pos = 0;
      }
      pos = encode(out, pos, prefix, pending, heads, ranges, shaped, done);
      prefix = undefined;
      written += heads.length;
      count(heads.length);
      if (done) {
        if (pos > 0) yield out.subarray(0, pos);
        return;
      }
      const r = await it.next();
      const left = pending.subarray(Math.min(at, pending.length));
      if (r.done) {
        done = true;
        pending = left;
      } else if (left.length === 0) pending = r.value;
      else {
        // The start of a hit, then the new chunk, in this stream's own buffer (no new buffer per chunk).
        const need = left.length + r.value.length;
        if (store.length < need) {
          const bigger = Buffer.allocUnsafeSlow(Math.max(need, 2 * store.length));
          left.copy(bigger, 0);
          store = bigger;
        } else left.copy(store, 0); // may overlap: Buffer#copy moves memory like memmove
        r.value.copy(store, left.length);
        pending = store.subarray(0, need);
      }
    }
  } finally {
    // The client went away or a failure: stop reading ES's response (frees its connection).
    if (!done) await it.return?.();
  }
}

/** Bytes {@link encode} writes. */
function encodedSize(
  prefix: string | undefined,
  heads: readonly string[],
  ranges: readonly number[],
  shaped: ReadonlyMap<number, Buffer>,
  last: boolean,
): number {
  let size = (prefix?.length ?? 0) + rawHitsSize(heads, ranges) + (last ? RAW_TAIL.length : 0);
  for (const b of shaped.values()) size += b.length - 1; // an empty head and no ranges count 1 (the closing brace)
  return size;
}

/**
 * Writes a part of the answer into `out` from `pos` (room for {@link encodedSize} bytes): the head
 * (first part), the hits found in `buf`, the tail (last part).
 * @returns the position after the last byte written.
 */
function encode(
  out: Buffer,
  pos: number,
  prefix: string | undefined,
  buf: Buffer,
  heads: readonly string[],
  ranges: readonly number[],
  shaped: ReadonlyMap<number, Buffer>,
  last: boolean,
): number {
  if (prefix !== undefined) pos += out.write(prefix, pos, "latin1");
  if (shaped.size === 0) pos = writeRawHits(out, pos, buf, heads, ranges);
  else
    for (let i = 0; i < heads.length; i++) {
      const own = shaped.get(i);
      pos = own ? pos + own.copy(out, pos) : writeRawHits(out, pos, buf, heads.slice(i, i + 1), ranges.slice(4 * i, 4 * i + 4));
    }
  if (last) pos += RAW_TAIL.copy(out, pos);
  return pos;
}

/**
 * Runs a search with `size >= 0` and no aggregations for the Elasticsearch-compatible routes, its
 * answer in Elasticsearch 8's shape `format`: streamed when `stream` is set and the answer can be
 * ({@link streamEsPage}); else written from Elasticsearch's response bytes (api/search/raw.ts) when
 * the response has the layout that path expects; else the response parsed (the caller shapes it).
 * @throws as `runSearch` of api/search/search.ts (when streamed: before the first byte).
 */
export async function runEsSearchStream(
  es: Client,
  plan: SearchPlan,
  target: SearchTarget,
  requestTimeoutMs: number,
  options: SearchOptions,
  format: RawEsFormat,
  stream: boolean,
): Promise<{ stream: EsPageStream } | { raw: RawEnvelope } | { parsed: SearchWithIds }> {
  const pruned = options.pit ? target : await prunedTarget(es, target, plan.query);
  const req = buildSearchRequest(plan, pruned, requestTimeoutMs, options);
  const shape = shapeOptions(plan, options);
  const send = (o: typeof AS_STREAM) => es.search(req, { ...requestOptions(requestTimeoutMs), ...o });
  const fallback = (bytes: Buffer) => rawOrParsed(bytes, format, shape);
  return stream ? streamEsPage(send, format, shape, fallback) : withResponseBytes(send, fallback);
}
