/**
 * The fast path of a search answer: the hits envelope written straight from the bytes of
 * Elasticsearch's `_search` response, without decoding, parsing or serialising the records.
 *
 * Why: for answers of hundreds of records, `JSON.parse` of ES's body, the reshaping of every hit
 * and `JSON.stringify` of the envelope were most of the API's CPU time per request (bench search
 * profile: parse 26 %, serialise 18 %, plus the garbage they leave); a first version of this path
 * that worked on strings still spent most of its time decoding the body into a string and
 * encoding the answer back into UTF-8. Here the records (`_source`) and the sort values are byte
 * ranges of ES's response (`Buffer.subarray`, no copy until the one final `Buffer.concat`); only
 * the small parts around them are written anew.
 *
 * What is rewritten, per {@link shapeRawEnvelope}:
 * - the head: `took`, `timed_out`, `_shards` (the four counts), `hits.total` as an integer
 *   (ES's `"terminated_early":false`, written in size 0 answers, is dropped as the parse path does),
 *   `hits.max_score` (1 for filter-only results, see api/search/envelope.ts);
 * - each hit's head: `_index`, `_type` (the kind of the index), `_id`, `_score` (1 for
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
import { PARENT_FIELD, type RecordKind } from "../../lib/records.js";
import { kindOfIndex } from "../../pipeline/index/mappings.js";

/** The answer of a size ≥ 0 search, ready to send. */
export interface RawEnvelope {
  /** The hits envelope as JSON (UTF-8 bytes, or text when it was made by the parse path). */
  body: Buffer | string;
  /** `hits.total`: the exact number of matches. */
  total: number;
  /** Number of hits in `hits.hits`. */
  hits: number;
}

/** The response head up to the opening of `hits.hits`, total as an integer or as `{value, relation: "eq"}`. */
const HEAD =
  /^\{"took":(\d+),"timed_out":(true|false),(?:"terminated_early":false,)?"_shards":\{"total":(\d+),"successful":(\d+),"skipped":(\d+),"failed":(\d+)\},"hits":\{"total":(?:(\d+)|\{"value":(\d+),"relation":"eq"\}),"max_score":(null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),"hits":\[/;
/** Bytes of the head looked at (the real head is about 150). */
const HEAD_WINDOW = 512;

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

const kindCache = new Map<string, RecordKind | undefined>();
function kindOf(index: string): RecordKind | undefined {
  if (!kindCache.has(index)) {
    if (kindCache.size > 10_000) kindCache.clear();
    kindCache.set(index, kindOfIndex(index));
  }
  return kindCache.get(index);
}

/**
 * Rewrites an ES `_search` response (made with `track_total_hits: true`, `docvalue_fields` = the
 * kinds' parent fields (`PARENT_FIELD` of lib/records.ts), no aggregations) into the hits
 * envelope (see the module notes). Pure; the answer shares no memory with the input.
 * @param response - the response body as ES sent it (a string is taken as its UTF-8 bytes).
 * @returns the envelope, or `undefined` when the response does not have the expected layout
 *   (then parse it and use `shapeEnvelope` instead).
 */
export function shapeRawEnvelope(response: Buffer | string): RawEnvelope | undefined {
  const buf = typeof response === "string" ? Buffer.from(response, "utf8") : response;
  // latin1 maps every byte to one char, so string offsets below are byte offsets.
  const head = HEAD.exec(buf.toString("latin1", 0, Math.min(buf.length, HEAD_WINDOW)));
  if (!head || buf.length < head[0].length + TAIL.length || !buf.subarray(buf.length - TAIL.length).equals(TAIL)) return undefined;
  const [, took, timedOut, total, successful, skipped, failed, totalInt, totalValue, maxScore] = head as unknown as string[];
  const start = head[0].length;
  const stop = buf.length - TAIL.length; // hits are buf[start, stop)
  const hasHits = stop > start;
  const unitScores = hasHits && (maxScore === "null" || Number(maxScore) === 0);
  const parts: Buffer[] = [];
  let count = 0;
  let at = start;
  while (at < stop) {
    const key = buf.indexOf(SOURCE_KEY, at);
    if (key < 0 || key - at > HIT_WINDOW) return undefined;
    const sourceAt = key + SOURCE_KEY.length;
    const m = HIT_HEAD.exec(buf.toString("latin1", at, sourceAt));
    if (!m) return undefined;
    const [, index, id, score] = m as unknown as [string, string, string, string];
    const kind = kindOf(index);
    if (!kind) return undefined;
    const next = buf.indexOf(NEXT_HIT, sourceAt);
    const end = next < 0 || next >= stop ? stop - 1 : next; // the hit's closing brace
    if (buf[end] !== CLOSE_BRACE) return undefined;
    // The rest of this hit, buf[sourceAt, end): _source, then maybe fields, then maybe sort.
    const rest = buf.subarray(sourceAt, end);
    let sourceEnd = rest.length;
    let sort: Buffer | undefined;
    if (rest[rest.length - 1] === CLOSE_BRACKET) {
      const s = rest.lastIndexOf(SORT);
      if (s < 0) return undefined;
      sort = rest.subarray(s);
      sourceEnd = s;
    }
    let parent: string | undefined;
    const field = PARENT_FIELD[kind];
    const f = rest.subarray(0, sourceEnd).lastIndexOf(FIELDS);
    if (f >= 0) {
      let fields: Record<string, unknown>;
      try {
        fields = JSON.parse(rest.toString("utf8", f + FIELDS.length - 2, sourceEnd)) as Record<string, unknown>;
      } catch {
        return undefined;
      }
      const v = field ? fields[field] : undefined;
      if (Array.isArray(v) && typeof v[0] === "string") parent = v[0];
      sourceEnd = f;
    }
    // A kind with a parent but no plain parent hash in `fields`: leave it to the parse path
    // (which also looks into `_source`).
    if (field && (parent === undefined || !PLAIN.test(parent))) return undefined;
    const routing = parent === undefined ? "" : `,"_routing":"${parent}","_parent":"${parent}"`;
    const hitStart = `${count > 0 ? "," : ""}{"_index":"${index}","_type":"${kind}","_id":"${id}","_score":${unitScores ? "1" : score}${routing},"_source":`;
    parts.push(Buffer.from(hitStart, "latin1"), rest.subarray(0, sourceEnd));
    if (sort) parts.push(sort);
    parts.push(CLOSING);
    count++;
    at = end + 2; // past "}," (or past the end)
  }
  const shards = `{"total":${total},"successful":${successful},"skipped":${skipped},"failed":${failed}}`;
  const max = unitScores ? "1" : hasHits ? maxScore : "null";
  const totalHits = Number(totalInt ?? totalValue);
  const prefix = `{"took":${took},"timed_out":${timedOut},"_shards":${shards},"hits":{"total":${totalHits},"max_score":${max},"hits":[`;
  return { body: Buffer.concat([Buffer.from(prefix, "latin1"), ...parts, TAIL]), total: totalHits, hits: count };
}

const CLOSING = Buffer.from("}");
