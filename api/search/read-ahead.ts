/**
 * Read-ahead of point-in-time pages (issue 30): while a client reads a page of a point in time,
 * the API already asks Elasticsearch for the page it will most likely ask next, so that
 * Elasticsearch's work on page N+1 overlaps the client's work on page N instead of following it.
 *
 * - **What is predicted.** After a page of `size` hits whose hits carry `sort` values, the next
 *   request is the same Elasticsearch request with `search_after` = the last hit's sort values and
 *   `pit.id` = the id Elasticsearch returned (what every client that pages a point in time sends:
 *   https://www.elastic.co/guide/en/elasticsearch/reference/8.19/paginate-search-results.html#search-after).
 * - **When it is used.** Only when the next Elasticsearch request, as built from the client's body,
 *   is exactly the predicted one (compared as canonical JSON: key order does not matter). Anything
 *   else (another size, another cursor, another query) drops the page fetched ahead and asks
 *   Elasticsearch as usual. The bytes are shaped at use, so the request's own answer options
 *   (`rest_total_hits_as_int`, `filter_path`) apply.
 * - **Why it is safe.** A search on a point in time reads a frozen view: the same request gives the
 *   same hits whenever it is sent, so answering it with bytes fetched a moment earlier changes
 *   nothing, and with several API instances a request landing on another instance just queries
 *   Elasticsearch (the page fetched ahead is dropped after {@link ReadAheadOptions.ttlMs}). A failed
 *   read-ahead is dropped silently: the request then asks Elasticsearch itself and gets its error.
 *   Scrolls are read ahead differently (api/search/scroll-ahead.ts): each scroll call advances
 *   Elasticsearch's cursor, so a page fetched ahead by one instance must be handed over.
 * - **Bounded.** One page per point in time; at most {@link ReadAheadOptions.maxBytes} held per
 *   instance (no read-ahead while they are reached); dropped after {@link ReadAheadOptions.ttlMs}
 *   unused, when the point in time is closed, and on the app's close.
 * @module
 */
import type { Client, estypes } from "@elastic/elasticsearch";
import { stringify } from "safe-stable-stringify";
import type { SearchPlan } from "../dsl/validate.js";
import type { RawEsFormat } from "./raw.js";
import {
  buildSearchRequest,
  hitsOf,
  type RawOrParsed,
  rawOrParsed,
  type SearchOptions,
  type SearchTarget,
  searchBytes,
  shapeOptions,
  withSearchBytes,
} from "./search.js";

/** Options of {@link ReadAhead}. */
export interface ReadAheadOptions {
  /** Most bytes of answers held ahead over all contexts (config.api.readAhead.maxBytes). */
  maxBytes: number;
  /** How long a page fetched ahead waits for its request, in ms (config.api.readAhead.ttlMs). */
  ttlMs: number;
  /** Called with `hit` (a request answered from a page fetched ahead) or `miss` (one fetched ahead and not used). */
  onOutcome?: (outcome: "hit" | "miss") => void;
  /** Clock, in ms. Default `Date.now`. */
  now?: () => number;
}

/** A page fetched ahead. */
interface Ahead {
  /** Canonical JSON of the predicted request. */
  key: string;
  /** Elasticsearch's answer (a copy the entry owns), or undefined when the fetch failed. */
  bytes: Promise<Buffer | undefined>;
  /** Bytes counted against the budget once the answer arrived. */
  size: number;
  /** When it was started, in ms. */
  at: number;
}

/** The request's canonical form: JSON with sorted keys. */
const canonical = (req: estypes.SearchRequest): string => stringify(req) ?? "";

/** `,"sort":[` as written by Elasticsearch 8 before a hit's closing brace. */
const SORT = Buffer.from(',"sort":[');
/** How an answer with hits ends after the last hit's sort values: `]}]}}`. */
const SORT_TAIL = Buffer.from("]}]}}");

/**
 * The last hit's `sort` values of an Elasticsearch search answer, read at its end (no parse of the
 * whole answer): the answer must end with `,"sort":[…]}]}}` (hits, nothing after `hits`).
 * @returns the values, or undefined when the answer does not end that way.
 */
export function lastSortValues(bytes: Buffer): unknown[] | undefined {
  const end = bytes.length - SORT_TAIL.length;
  if (end <= 0 || bytes.compare(SORT_TAIL, 0, SORT_TAIL.length, end) !== 0) return undefined;
  const at = bytes.lastIndexOf(SORT, end);
  if (at < 0) return undefined;
  try {
    const values = JSON.parse(`[${bytes.toString("utf8", at + SORT.length, end)}]`) as unknown;
    return Array.isArray(values) && values.length > 0 ? values : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The request that follows `req` when its answer ended with sort values `after` and point-in-time
 * id `pitId`: `req` with `search_after` and `pit.id` replaced. Pure.
 */
export function nextPageRequest(req: estypes.SearchRequest, after: unknown[], pitId: string): estypes.SearchRequest {
  return { ...req, search_after: after as estypes.SortResults, pit: { ...(req.pit as estypes.SearchPointInTimeReference), id: pitId } };
}

/** The pages fetched ahead by one API instance, one per context id (see the module notes). */
export class ReadAhead {
  private readonly pages = new Map<string, Ahead>();
  private held = 0;
  private readonly now: () => number;

  constructor(private readonly options: ReadAheadOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Bytes of answers held now. */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Starts fetching `req` ahead for context `id`, replacing the context's earlier page, unless the
   * budget is reached. `fetch` must resolve with bytes the entry may keep (a copy).
   */
  start(id: string, req: estypes.SearchRequest, fetch: () => Promise<Buffer>): void {
    this.sweep();
    this.drop(id);
    if (this.held >= this.options.maxBytes) return;
    const entry: Ahead = { key: canonical(req), bytes: Promise.resolve(undefined), size: 0, at: this.now() };
    entry.bytes = fetch().then(
      (bytes) => {
        if (this.pages.get(id) !== entry) return bytes; // replaced or dropped meanwhile: not counted
        entry.size = bytes.length;
        this.held += entry.size;
        return bytes;
      },
      () => undefined,
    );
    this.pages.set(id, entry);
  }

  /**
   * The answer fetched ahead for context `id` when `req` is exactly its predicted request (the
   * entry is removed either way; a request that differs counts a `miss`).
   * @returns the answer's bytes, or undefined: none, another request, or the read-ahead failed.
   */
  async take(id: string, req: estypes.SearchRequest): Promise<Buffer | undefined> {
    const entry = this.pages.get(id);
    if (!entry) return undefined;
    const fresh = this.now() - entry.at <= this.options.ttlMs;
    const match = fresh && entry.key === canonical(req);
    this.drop(id);
    if (!match) {
      this.options.onOutcome?.("miss");
      return undefined;
    }
    const bytes = await entry.bytes;
    this.options.onOutcome?.(bytes ? "hit" : "miss");
    return bytes;
  }

  /** Drops the page fetched ahead for context `id`, if any. */
  drop(id: string): void {
    const entry = this.pages.get(id);
    if (!entry) return;
    this.pages.delete(id);
    this.held -= entry.size;
  }

  /** Drops every page (the app's close). */
  clear(): void {
    this.pages.clear();
    this.held = 0;
  }

  /** Drops the pages older than the TTL (counted as misses). */
  private sweep(): void {
    const now = this.now();
    for (const [id, entry] of this.pages)
      if (now - entry.at > this.options.ttlMs) {
        this.drop(id);
        this.options.onOutcome?.("miss");
      }
  }
}

/**
 * Runs one page of a search on a point in time (`options.pit` set) and answers it in Elasticsearch's
 * shape (`format`): from the page read ahead for context `contextId` when the request is the
 * predicted one, else from Elasticsearch; then, when the page is full (`plan.size` hits) and its
 * hits carry sort values, reads the next page ahead (see the module notes).
 * @param readAhead - the app's read-ahead; undefined runs the page without any.
 * @throws as `withSearchBytes` (api/search/search.ts) when the page is asked of Elasticsearch.
 */
export async function runPitPage(
  es: Client,
  readAhead: ReadAhead | undefined,
  contextId: string,
  page: { plan: SearchPlan; target: SearchTarget; requestTimeoutMs: number; options: SearchOptions; format: RawEsFormat },
): Promise<RawOrParsed> {
  const { plan, target, requestTimeoutMs, options, format } = page;
  const req = buildSearchRequest(plan, target, requestTimeoutMs, options);
  let after: unknown[] | undefined;
  const use = (bytes: Buffer) => {
    const out = rawOrParsed(bytes, format, shapeOptions(plan, options));
    const hits = hitsOf(out);
    if (readAhead && hits === plan.size) after = lastSortValues(bytes);
    return out;
  };
  const ahead = readAhead && (await readAhead.take(contextId, req));
  const out = ahead ? use(ahead) : await withSearchBytes(es, req, requestTimeoutMs, use);
  const pitId = "raw" in out ? out.raw.contextId : out.parsed.pitId;
  if (readAhead && after && pitId) {
    const next = nextPageRequest(req, after, pitId);
    readAhead.start(contextId, next, () => searchBytes(es, next, requestTimeoutMs));
  }
  return out;
}
