/**
 * The fast path of a search answer: the hits envelope written straight from the bytes of
 * Elasticsearch's `_search` response, without decoding, parsing or serialising the records.
 *
 * Why: for answers of hundreds of records, `JSON.parse` of ES's body, the reshaping of every hit
 * and `JSON.stringify` of the envelope were most of the API's CPU time per request (bench search
 * profile: parse 26 %, serialise 18 %, plus the garbage they leave); a first version of this path
 * that worked on strings still spent most of its time decoding the body into a string and
 * encoding the answer back into UTF-8. Here the records (`_source`) and the sort values are byte
 * ranges of ES's response, copied once into the answer's buffer (of the exact size, from the
 * caller's allocator, e.g. the pool of api/search/pool.ts); only the small parts around them are
 * written anew. Measured (bench search, answers of 210–468 transactions, 8 connections): the API
 * went from ~4× to ~1.8× the direct Elasticsearch latency, and its CPU per 400 KB answer from
 * 3.3 ms (parse path) to 1.6 ms.
 *
 * What is rewritten, per {@link shapeRawEnvelope}:
 * - the head: `took`, `timed_out`, `_shards` (the four counts), `hits.total` as an integer
 *   (ES's `"terminated_early":false`, written in size 0 answers, is dropped as the parse path does),
 *   `hits.max_score` (1 for filter-only results, see api/search/envelope.ts);
 * - each hit's head: `_index` (the alias, not the backing index: es/partitions.ts), `_type` (the kind of the index), `_id`, `_score` (1 for
 *   filter-only results), `_routing` and `_parent` (the hash of the containing block or
 *   transaction, read from the hit's `fields`, i.e. the request's `docvalue_fields`), then
 *   `_source` and `sort` exactly as ES wrote them; the `fields` part is dropped.
 *
 * Why the text can be cut safely: a hit object of ES 8 is written as
 * `{"_index":…,"_id":…,"_score":…,"_source":{…}[,"fields":{…}][,"sort":[…]]}` (in that order), and
 * the key `"_index"` (like every metadata field name) cannot occur inside a document
 * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/mapping-fields.html), nor can
 * `"fields"` or `"sort"` in chainsift's documents (their mappings are `dynamic: strict` and have no
 * such keys); quotes inside JSON strings are always escaped. Anything that does not have exactly
 * this layout (shard failures, `_clusters`, `_ignored`, aggregations, a total that is not exact,
 * a compressed body, …) makes {@link shapeRawEnvelope} return `undefined`, and the caller
 * takes the parse-and-shape path instead, which gives the same envelope.
 * @module
 */

import { kindOfIndex } from "../../es/mappings.js";
import { aliasOfIndex } from "../../es/partitions.js";
import { PARENT_FIELD, type RecordKind } from "../../lib/records.js";

/** The answer of a size ≥ 0 search, ready to send. */
export interface RawEnvelope {
  /** The hits envelope as JSON (UTF-8 bytes, or text when it was made by the parse path). */
  body: Buffer | string;
  /** `hits.total`: the exact number of matches (-1 for an Elasticsearch answer without a total). */
  total: number;
  /** Number of hits in `hits.hits`. */
  hits: number;
  /** How it was written: `bytes` (from ES's response bytes, here) or `parsed` (parse and shape). */
  path: "bytes" | "parsed";
  /** Elasticsearch's `_scroll_id` or `pit_id` of the response, when it had one. */
  contextId?: string;
}

/**
 * Write Elasticsearch 8's search answer instead of the contract's envelope (the
 * Elasticsearch-compatible routes, api/search/es-shape.ts): no `_type` nor `_parent`, `hits.total`
 * as `{value, relation: "eq"}` (or the integer with `totalAsInt`; no total when Elasticsearch wrote
 * none, i.e. `track_total_hits: false`, -1 as an integer), and the scroll or point-in-time id `id`
 * first under `idKey` (chainsift's own id, never Elasticsearch's).
 */
export interface RawEsFormat {
  totalAsInt?: boolean;
  idKey?: "_scroll_id" | "pit_id";
  id?: string;
}

/** The response head up to the opening of `hits.hits`, total as an integer or as `{value, relation: "eq"}`. */
const HEAD =
  /^\{(?:"(?:_scroll_id|pit_id)":"([^"\\]*)",)?"took":(\d+),"timed_out":(true|false),(?:"terminated_early":false,)?"_shards":\{"total":(\d+),"successful":(\d+),"skipped":(\d+),"failed":(\d+)\},"hits":\{(?:"total":(?:(\d+)|\{"value":(\d+),"relation":"eq"\}),)?"max_score":(null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),"hits":\[/;
/**
 * Longest head looked at, in bytes: about 150 plus the scroll or point-in-time id, which grows
 * with the shards searched (~100 bytes each: a point in time over many block-range partitions has
 * an id of several KB, which a 512-byte window sent to the parse path). A longer head sends the
 * response to the parse path.
 */
const HEAD_MAX_BYTES = 64 * 1024;
/** The opening of `hits.hits`, the end of the head (it cannot occur before: the head holds numbers, booleans and a base64 id). */
const HITS_OPEN = Buffer.from('"hits":[');

/** One hit's head, exactly: from its opening brace to the start of its `_source`. */
const HIT_HEAD = /^\{"_index":"([^"\\]+)","_id":"([^"\\]*)","_score":(null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),"_source":$/;
/** Longest hit head accepted, in bytes (index names ≤ 255 bytes, ids ≤ 512 bytes, a score). */
const HIT_WINDOW = 900;
const SOURCE_KEY = Buffer.from('"_source":');

/** Between two hits: the end of one and the head of the next (cannot occur inside a record, see module notes). */
const NEXT_HIT = Buffer.from('},{"_index":"');
const FIELDS = Buffer.from(',"fields":{"');
const SORT = Buffer.from(',"sort":[');
const TAIL = Buffer.from("]}}");
const CLOSE_BRACE = 0x7d; // }
const CLOSE_BRACKET = 0x5d; // ]

/** A parent hash as chainsift stores it (0x-hex); any other parent value sends the response to the parse path. */
const PLAIN = /^0x[0-9a-fA-F]+$/;

const kindCache = new Map<string, { kind: RecordKind | undefined; alias: string }>();
/** Kind and alias (the `_index` answered, es/partitions.ts `aliasOfIndex`) of an index a hit came from. */
function kindOf(index: string): { kind: RecordKind | undefined; alias: string } {
  let v = kindCache.get(index);
  if (!v) {
    if (kindCache.size > 10_000) kindCache.clear();
    v = { kind: kindOfIndex(index), alias: aliasOfIndex(index) };
    kindCache.set(index, v);
  }
  return v;
}

/** `,"fields":{"<field>":["` of each parent field, the start of the usual `fields` part of a hit. */
const fieldsHeads = new Map<string, Buffer>();
const FIELDS_TAIL = Buffer.from('"]}');

/**
 * The parent hash in a hit's `fields` part `buf[from, to)`: read in place when the part is exactly
 * `,"fields":{"<field>":["<value>"]}` (what Elasticsearch writes for the one doc-value field
 * asked, the value without quote nor backslash), else parsed as JSON.
 * @returns the first value of `field`, or undefined when there is none or the part is not JSON.
 */
function parentOf(buf: Buffer, from: number, to: number, field: string): string | undefined {
  let head = fieldsHeads.get(field);
  if (!head) {
    head = Buffer.from(`,"fields":{${JSON.stringify(field)}:["`);
    fieldsHeads.set(field, head);
  }
  const valueAt = from + head.length;
  const valueEnd = to - FIELDS_TAIL.length;
  if (
    valueEnd >= valueAt &&
    buf.compare(head, 0, head.length, from, valueAt) === 0 &&
    buf.compare(FIELDS_TAIL, 0, FIELDS_TAIL.length, valueEnd, to) === 0
  ) {
    const value = buf.toString("latin1", valueAt, valueEnd);
    if (!/["\\]/.test(value)) return value;
  }
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(buf.toString("utf8", from + FIELDS.length - 2, to)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const v = fields[field];
  return Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;
}

/** Allocates the buffer an answer is written into (at least `size` bytes). Default `Buffer.allocUnsafe`. */
export type Allocate = (size: number) => Buffer;

/**
 * Rewrites an ES `_search` response (made with `track_total_hits: true`, `docvalue_fields` = the
 * kinds' parent fields (`PARENT_FIELD` of lib/records.ts), no aggregations) into the hits
 * envelope (see the module notes). Pure; the answer shares no memory with the input, so the
 * input may be reused as soon as this returns.
 *
 * Two passes: the first finds every hit's parts (offsets into the input, a new head per hit), the
 * second writes them into one buffer of the exact size (from `allocate`, e.g. a pool).
 * @param response - the response body as ES sent it (a string is taken as its UTF-8 bytes).
 * @param allocate - where the answer's bytes go (its first `body.length` bytes are the answer).
 * @param es - write Elasticsearch 8's answer instead ({@link RawEsFormat}); a leading `_scroll_id`
 *   or `pit_id` of the response is read either way (`contextId`).
 * @returns the envelope, or `undefined` when the response does not have the expected layout
 *   (then parse it and use `shapeEnvelope` instead).
 */
export function shapeRawEnvelope(
  response: Buffer | string,
  allocate: Allocate = Buffer.allocUnsafe,
  es?: RawEsFormat,
): RawEnvelope | undefined {
  const buf = typeof response === "string" ? Buffer.from(response, "utf8") : response;
  // latin1 maps every byte to one char, so string offsets below are byte offsets.
  const open = buf.subarray(0, HEAD_MAX_BYTES).indexOf(HITS_OPEN);
  const head = open < 0 || open + HITS_OPEN.length > HEAD_MAX_BYTES ? null : HEAD.exec(buf.toString("latin1", 0, open + HITS_OPEN.length));
  if (!head || buf.length < head[0].length + TAIL.length || buf.compare(TAIL, 0, TAIL.length, buf.length - TAIL.length) !== 0)
    return undefined;
  const [, contextId, took, timedOut, total, successful, skipped, failed, totalInt, totalValue, maxScore] = head as unknown as string[];
  // No total (a search with track_total_hits false): only Elasticsearch's answer has none.
  const noTotal = totalInt === undefined && totalValue === undefined;
  if (noTotal && !es) return undefined;
  const start = head[0].length;
  const stop = buf.length - TAIL.length; // hits are buf[start, stop)
  const hasHits = stop > start;
  const unitScores = hasHits && (maxScore === "null" || Number(maxScore) === 0);
  // Pass 1. Per hit: its new head (latin1 text: one byte per char), then the byte ranges of its
  // _source and of its sort part (sortAt === sortEnd when it has none).
  const heads: string[] = [];
  const ranges: number[] = [];
  let size = 0;
  let at = start;
  while (at < stop) {
    const key = buf.indexOf(SOURCE_KEY, at);
    if (key < 0 || key - at > HIT_WINDOW) return undefined;
    const sourceAt = key + SOURCE_KEY.length;
    const m = HIT_HEAD.exec(buf.toString("latin1", at, sourceAt));
    if (!m) return undefined;
    const [, index, id, score] = m as unknown as [string, string, string, string];
    const { kind, alias } = kindOf(index);
    if (!kind) return undefined;
    const next = buf.indexOf(NEXT_HIT, sourceAt);
    const end = next < 0 || next >= stop ? stop - 1 : next; // the hit's closing brace
    if (buf[end] !== CLOSE_BRACE) return undefined;
    // The rest of this hit, buf[sourceAt, end): _source, then maybe fields, then maybe sort.
    let sourceEnd = end;
    let sortAt = end;
    if (buf[end - 1] === CLOSE_BRACKET) {
      const s = buf.lastIndexOf(SORT, end - SORT.length);
      if (s < sourceAt) return undefined;
      sortAt = s;
      sourceEnd = s;
    }
    const field = PARENT_FIELD[kind];
    let parent: string | undefined;
    if (field) {
      // ES writes `fields` last before `sort`: found at once, scanning back from sourceEnd.
      const f = buf.lastIndexOf(FIELDS, sourceEnd - FIELDS.length);
      if (f < sourceAt) return undefined; // no parent in `fields`: the parse path also reads _source
      parent = parentOf(buf, f, sourceEnd, field);
      // Not a plain hash: leave it to the parse path.
      if (parent === undefined || !PLAIN.test(parent)) return undefined;
      sourceEnd = f;
    } else if (buf.subarray(sourceAt, sourceEnd).lastIndexOf(FIELDS) >= 0) {
      return undefined; // a kind without a parent never gets `fields`; be safe if it does
    }
    const routing = parent === undefined ? "" : es ? `,"_routing":"${parent}"` : `,"_routing":"${parent}","_parent":"${parent}"`;
    const type = es ? "" : `"_type":"${kind}",`;
    const hitHead = `${heads.length > 0 ? "," : ""}{"_index":"${alias}",${type}"_id":"${id}","_score":${unitScores ? "1" : score}${routing},"_source":`;
    heads.push(hitHead);
    ranges.push(sourceAt, sourceEnd, sortAt, end);
    size += hitHead.length + (sourceEnd - sourceAt) + (end - sortAt) + 1;
    at = end + 2; // past "}," (or past the end)
  }
  const shards = `{"total":${total},"successful":${successful},"skipped":${skipped},"failed":${failed}}`;
  const max = unitScores ? "1" : hasHits ? maxScore : "null";
  const totalHits = noTotal ? -1 : Number(totalInt ?? totalValue);
  const ids = es?.id ? `${JSON.stringify(es.idKey)}:${JSON.stringify(es.id)},` : "";
  const totalText = es && !es.totalAsInt ? `{"value":${totalHits},"relation":"eq"}` : `${totalHits}`;
  const totalPart = noTotal && !es?.totalAsInt ? "" : `"total":${totalText},`;
  const prefix = `{${ids}"took":${took},"timed_out":${timedOut},"_shards":${shards},"hits":{${totalPart}"max_score":${max},"hits":[`;
  size += prefix.length + TAIL.length;
  // Pass 2.
  const out = allocate(size);
  let pos = out.write(prefix, 0, "latin1");
  for (let i = 0; i < heads.length; i++) {
    pos += out.write(heads[i] as string, pos, "latin1");
    pos += buf.copy(out, pos, ranges[4 * i] as number, ranges[4 * i + 1] as number);
    pos += buf.copy(out, pos, ranges[4 * i + 2] as number, ranges[4 * i + 3] as number);
    out[pos++] = CLOSE_BRACE;
  }
  pos += TAIL.copy(out, pos);
  const answer: RawEnvelope = { body: out.subarray(0, pos), total: totalHits, hits: heads.length, path: "bytes" };
  if (contextId !== undefined) answer.contextId = contextId;
  return answer;
}
