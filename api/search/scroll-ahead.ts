/**
 * Read-ahead of scroll pages (issue 30), safe with several API instances.
 *
 * A scroll is not a frozen view like a point in time (api/search/read-ahead.ts): each call of
 * Elasticsearch's scroll API advances its cursor. A page read ahead by one instance must therefore
 * reach the client whichever instance its next request lands on, or the client must get an error:
 * never an answer with the page silently missing.
 *
 * - **Claim first.** Before the current page is answered, the instance writes the claim
 *   `<redisKeyPrefix>ctx:<id>:ahead` = `{owner, token}` (expiring after the TTL), then asks
 *   Elasticsearch for the next page in the background and keeps it in memory.
 * - **Take.** A request for the next page takes the claim atomically (`GETDEL`). No claim: nothing
 *   was read ahead, Elasticsearch is asked as usual. The claim is this instance's: the page comes
 *   from memory. Another instance's: the asker publishes `{id, token}` on the owner's channel
 *   `<redisKeyPrefix>ctx:ahead:<owner>`; the owner writes the page (its bytes; a failure as `!` +
 *   JSON of the error) to `<redisKeyPrefix>ctx:<id>:page:<token>` once it has it, and the asker reads
 *   it (`GETDEL`), waiting up to {@link ScrollAheadOptions.waitMs} (the owner's call to
 *   Elasticsearch may still run). Pages cross Redis only then: paging on one instance costs two
 *   small Redis commands per page. When no instance listens on the owner's channel, or the page
 *   never comes, the answer is 404 `CS_CONTEXT_NOT_FOUND`, saying so — the outcome Elasticsearch
 *   gives when the node holding a scroll context is lost — and the caller closes the scroll
 *   (api/routes/es/paging.ts), so that a retry with its id is 404 too, not the page after the lost one. A failed read-ahead is answered with its
 *   error (the call may have advanced the cursor, as a failed scroll call to Elasticsearch may).
 * - **Bounded.** One page per scroll; no read-ahead while this instance holds
 *   {@link ScrollAheadOptions.maxBytes}; the claim and the page live as long as the scroll (its
 *   keep-alive: a client may wait between pages that long, and the page its next request would
 *   have read is the one held), then are dropped with it; clearing a
 *   scroll drops its page; closing the app first writes the pages it holds to Redis, so that
 *   another instance serves them.
 * Concurrent requests on one scroll get distinct pages (one takes the claim, the other asks
 * Elasticsearch), as concurrent scroll calls to Elasticsearch do; a claim not yet taken is never
 * replaced (`SET NX`), so no page read ahead is dropped by a concurrent request.
 * @module
 */
import { randomBytes } from "node:crypto";
import { errors as esErrors } from "@elastic/elasticsearch";
import { RESP_TYPES } from "redis";
import type { RedisClient } from "../../lib/redis.js";
import { apiError } from "../errors.js";
import { TTL_MARGIN } from "./contexts.js";

/** Options of {@link ScrollAhead}. */
export interface ScrollAheadOptions {
  redis: RedisClient;
  /** `config.redisKeyPrefix`. */
  keyPrefix: string;
  /** Most bytes of pages this instance holds ahead (config.api.readAhead.maxBytes). */
  maxBytes: number;
  /**
   * How long a page handed over waits in Redis for the instance that asked for it, in ms, at least
   * (config.api.readAhead.ttlMs); a page written by a closing instance waits as long as its claim.
   */
  ttlMs: number;
  /** Longest wait for another instance's page, in ms (config.elasticsearch.requestTimeoutMs: its call to Elasticsearch). */
  waitMs: number;
  /** Interval of the reads of another instance's page while waiting, in ms. Default 5. */
  pollMs?: number;
  /** A connection of its own for the hand-over channel (subscribed by {@link ScrollAhead.open}, destroyed by {@link ScrollAhead.close}). */
  subscriber: RedisClient;
  /** Called with `hit` (a page from this instance's memory), `handoff` (from another instance's), `miss` (read ahead, never taken). */
  onOutcome?: (outcome: "hit" | "handoff" | "miss") => void;
}

/** What a read-ahead gave: the page's bytes, or the error of its call. */
type Result = { bytes: Buffer } | { error: StoredError };

/** An error of Elasticsearch's client, as written to Redis. */
interface StoredError {
  /** HTTP status of Elasticsearch's answer; 0 for a connection error or a timeout. */
  status: number;
  body?: unknown;
  message: string;
}

interface Local {
  token: string;
  result: Promise<Result>;
  size: number;
  /** When the claim expires (ms since the epoch): the page is dropped then. */
  expiresAt: number;
}

const ERROR_MARK = 0x21; // "!"

const stored = (err: unknown): StoredError =>
  err instanceof esErrors.ResponseError
    ? { status: err.statusCode ?? 500, body: err.body, message: err.message }
    : { status: 0, message: err instanceof Error ? err.message : String(err) };

/** The error a stored failure is answered with: the client's own error classes, as a direct call would have thrown. */
function rethrow(e: StoredError): never {
  if (e.status === 0) throw new esErrors.ConnectionError(e.message);
  throw new esErrors.ResponseError({ body: e.body, statusCode: e.status, headers: {}, warnings: null, meta: {} as never });
}

const unwrap = (r: Result): Buffer => ("bytes" in r ? r.bytes : rethrow(r.error));

/** The scroll pages read ahead by one API instance (see the module notes). */
export class ScrollAhead {
  /** This instance's id in claims. */
  readonly instance = randomBytes(9).toString("base64url");
  private readonly local = new Map<string, Local>();
  private held = 0;
  private ready = false;
  private readonly bufferRedis: RedisClient;

  constructor(private readonly o: ScrollAheadOptions) {
    this.bufferRedis = o.redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }) as unknown as RedisClient;
  }

  private claimKey(id: string): string {
    return `${this.o.keyPrefix}ctx:${id}:ahead`;
  }

  private pageKey(id: string, token: string): string {
    return `${this.o.keyPrefix}ctx:${id}:page:${token}`;
  }

  /** Bytes of pages held now. */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Claims the next page of scroll `id` and starts reading it with `fetch` (the page's bytes, a copy),
   * unless this instance holds its budget. Resolves once the claim is written: call it before the
   * current page is answered.
   * @param lifeMs - how long the scroll lives without another request, in ms (its keep-alive, or
   *   what is left of its binding): the claim and the page live as long (times {@link TTL_MARGIN}),
   *   so a client that waits between pages within the keep-alive still gets the page its request's
   *   scroll call consumed; past it the scroll itself has expired in Elasticsearch.
   * Nothing is read ahead while the scroll has a claim not yet taken (`SET NX`): with concurrent
   * requests on one scroll, one may end while another's page read ahead is still unclaimed, and
   * replacing that page would lose it.
   * @throws Redis errors of the claim (then nothing is read ahead).
   */
  async start(id: string, fetch: () => Promise<Buffer>, lifeMs: number): Promise<void> {
    this.sweep();
    if (!this.ready || this.held >= this.o.maxBytes) return;
    const token = randomBytes(9).toString("base64url");
    const keepMs = Math.max(1000, Math.ceil(lifeMs * TTL_MARGIN));
    const claim = JSON.stringify({ owner: this.instance, token });
    const set = await this.o.redis.set(this.claimKey(id), claim, { condition: "NX", expiration: { type: "PX", value: keepMs } });
    if (set === null) return;
    this.forget(id); // a page of this scroll whose claim is gone (taken elsewhere, or expired)
    const result = fetch().then(
      (bytes) => ({ bytes }) as Result,
      (err: unknown) => ({ error: stored(err) }) as Result,
    );
    const entry: Local = { token, result, size: 0, expiresAt: Date.now() + keepMs };
    void result.then((r) => {
      if (this.local.get(id) === entry && "bytes" in r) {
        entry.size = r.bytes.length;
        this.held += entry.size;
      }
    });
    this.local.set(id, entry);
  }

  /** Whether pages are read ahead now (see {@link setReady}). */
  get isReady(): boolean {
    return this.ready;
  }

  /**
   * Whether this instance can hand pages over (its channel is subscribed): set by the owner of the
   * subscriber connection; while false nothing is read ahead. Default false.
   */
  setReady(ready: boolean): void {
    this.ready = ready;
  }

  /** Subscribes to this instance's hand-over channel (the connection must be open). @throws Redis errors. */
  async open(): Promise<void> {
    await this.o.subscriber.subscribe(this.channel(this.instance), (message) => {
      void this.handOver(message).catch(() => {});
    });
  }

  private channel(instance: string): string {
    return `${this.o.keyPrefix}ctx:ahead:${instance}`;
  }

  /** Writes a page another instance asked for (`{id, token}`) to Redis, once it has it; drops it for `{id, token, drop: true}` (the scroll was cleared). */
  private async handOver(message: string): Promise<void> {
    const { id, token, drop } = JSON.parse(message) as { id: string; token: string; drop?: true };
    const entry = this.local.get(id);
    if (!entry || entry.token !== token) return;
    this.forget(id);
    if (!drop) await this.write(id, entry);
  }

  private async write(id: string, entry: Local): Promise<void> {
    const r = await entry.result;
    const value = "bytes" in r ? r.bytes : Buffer.concat([Buffer.of(ERROR_MARK), Buffer.from(JSON.stringify(r.error))]);
    // As long as the claim lives (a closing instance's page may wait for a client pausing within its keep-alive).
    await this.o.redis.set(this.pageKey(id, entry.token), value, { PX: Math.max(this.o.ttlMs, entry.expiresAt - Date.now()) });
  }

  /**
   * The next page of scroll `id` if one was read ahead (by any instance); the claim is taken.
   * @returns its bytes, or undefined when none was read ahead (ask Elasticsearch).
   * @throws the read-ahead's own error (Elasticsearch's client error classes); `CS_CONTEXT_NOT_FOUND`
   *   when another instance claimed the page and it did not arrive within `waitMs`.
   */
  async take(id: string): Promise<Buffer | undefined> {
    const claim = await this.o.redis.getDel(this.claimKey(id));
    const mine = this.local.get(id);
    if (!claim) {
      if (mine) this.forget(id);
      return undefined;
    }
    const { owner, token } = JSON.parse(claim) as { owner: string; token: string };
    if (owner === this.instance && mine?.token === token) {
      this.forget(id);
      this.o.onOutcome?.("hit");
      return unwrap(await mine.result);
    }
    if (mine) this.forget(id); // an earlier page of this instance, taken elsewhere since
    const deadline = Date.now() + this.o.waitMs;
    const key = this.pageKey(id, token);
    const read = async () => (await this.bufferRedis.getDel(key)) as unknown as Buffer | null;
    let value = await read(); // written already: the owner closed, or answered an earlier ask
    if (!value) {
      const listeners = await this.o.redis.publish(this.channel(owner), JSON.stringify({ id, token }));
      for (;;) {
        value = await read();
        if (value || listeners === 0 || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, this.o.pollMs ?? 5));
      }
    }
    if (!value)
      throw apiError(
        "CS_CONTEXT_NOT_FOUND",
        "the next page of this scroll was being read ahead by an API instance that stopped before handing it over; open the scroll again",
        "scroll_id",
      );
    this.o.onOutcome?.("handoff");
    if (value[0] === ERROR_MARK) rethrow(JSON.parse(value.subarray(1).toString("utf8")) as StoredError);
    return value;
  }

  /**
   * Drops the page read ahead for scroll `id` (clearing it), whichever instance read it: the claim,
   * a copy handed over and not taken, this instance's memory, and the owner's (asked on its channel:
   * the page would otherwise count against its budget until the keep-alive ends).
   */
  async drop(id: string): Promise<void> {
    this.forget(id);
    const claim = await this.o.redis.getDel(this.claimKey(id));
    if (!claim) return;
    const { owner, token } = JSON.parse(claim) as { owner: string; token: string };
    await this.o.redis.del(this.pageKey(id, token));
    if (owner !== this.instance) await this.o.redis.publish(this.channel(owner), JSON.stringify({ id, token, drop: true }));
  }

  /** Writes the pages this instance holds to Redis (another instance serves them), then closes the hand-over connection. */
  async close(): Promise<void> {
    const held = [...this.local];
    this.local.clear();
    this.held = 0;
    this.ready = false;
    await Promise.allSettled(held.map(([id, entry]) => this.write(id, entry)));
    if (this.o.subscriber.isOpen) this.o.subscriber.destroy();
  }

  private forget(id: string): void {
    const mine = this.local.get(id);
    if (!mine) return;
    this.local.delete(id);
    this.held -= mine.size;
  }

  /** Drops the pages untaken past the TTL (counted as misses; their Redis keys expire by themselves). */
  private sweep(): void {
    const now = Date.now();
    for (const [id, entry] of this.local)
      if (now > entry.expiresAt) {
        this.forget(id);
        this.o.onOutcome?.("miss");
      }
  }
}
