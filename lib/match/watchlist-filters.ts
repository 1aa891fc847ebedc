/**
 * In-process copies of the watchlists that rules use, kept in the match process in front of the Redis
 * sets (lib/match/watchlist-membership.ts asks them first):
 *
 * - an **address** list gets an exact copy (lib/watchlists/address-set.ts, 48 MiB per million
 *   addresses), which answers "member or not" itself: a batch needs Redis only to learn whether the
 *   list changed, and with a live change feed not even that — while the exact copies of the process
 *   fit {@link WatchlistFiltersDeps.exactMaxBytes}; a list that would pass it gets a Bloom filter;
 * - any other list gets a **Bloom filter** (lib/watchlists/bloom.ts, 2.29 MiB per million members,
 *   ≈0.03 % false positives at that size): its "no" is certain and costs one in-process hash, and a
 *   "maybe" is confirmed in the set, so matching stays exact.
 *
 * Lifecycle:
 * - Built in the background the first time a list is asked (until then its questions go to Redis):
 *   the list's revision (lib/watchlists/changes.ts) is read first, then every member by SSCAN.
 *   Building 1,000,000 members takes about a second (docs/benchmarks.md).
 * - Checked once per batch that consults it ({@link WatchlistFilters.refresh}): when the list's
 *   revision moved, the changes since are read from the change log and applied in order (adds, and
 *   for exact copies removes), and the batch is matched again, so a member added or removed through
 *   the API applies from the next batch on. With a live change feed
 *   ({@link WatchlistFiltersDeps.feed}, lib/watchlists/revision-feed.ts) the revision is read only
 *   when a change was heard, at the first batch of a live period, and at least every
 *   {@link WatchlistFiltersDeps.recheckMs}; otherwise it is read at every batch (one GET sent with
 *   the batch's other questions). A Bloom filter keeps removed members; their "maybe" is answered
 *   "no" by the set.
 * - Rebuilt (in the background, questions going to Redis meanwhile) when the log no longer reaches
 *   back to the copy's revision (more than 64 changes behind, a change of more than 1,000 members, a
 *   deleted list), or when a list outgrows its Bloom filter's capacity.
 * - Dropped when no batch has consulted it for {@link WatchlistFiltersDeps.idleMs} (a list no rule
 *   uses any more), checked at most once a minute.
 * @module
 */
import type { BloomFilter } from "bloomfilter";
import { DEFAULT_WATCHLIST_COPY_MAX_BYTES } from "../config/watchlists.js";
import { AddressSet, addressSetBytes } from "../watchlists/address-set.js";
import { addMember, createMemberFilter, mayContain, memberFilterBytes, memberFilterCapacity } from "../watchlists/bloom.js";
import type { WatchlistChange } from "../watchlists/changes.js";
import type { RevisionFeed } from "../watchlists/revision-feed.js";
import type { WatchlistKind, WatchlistStore } from "../watchlists/store.js";

/** A ready copy of one list: an exact set (address lists) or a Bloom filter. */
export interface WatchlistFilter {
  readonly accountId: string;
  readonly id: string;
  /** The list's kind (how values are normalised), `string` for a list that did not exist when built. */
  readonly kind: WatchlistKind;
  /** The list revision the filter holds every member of. */
  rev: number;
  /** Members added to the filter (an upper bound of the list's size; the exact size for an exact copy). */
  size: number;
  /** Members a Bloom filter was sized for (an exact copy grows: Infinity). */
  readonly capacity: number;
  /** The Bloom filter of a list that is not of addresses. */
  readonly bits?: BloomFilter;
  /** The exact copy of an address list. */
  readonly exact?: AddressSet;
  /** When a batch last consulted it (refresh), in ms since the epoch. */
  usedAt: number;
  /** The change feed's live period when the revision was last read (undefined: read at every batch). */
  epoch?: number;
  /** When the revision was last read, in ms since the epoch. */
  checkedAt: number;
  /**
   * Raised by every change applied to the copy, and when it is dropped for a rebuild: a batch that
   * consulted it at one version and finds another after its refresh must match again (another batch,
   * matched concurrently, may have applied the change its own refresh then found nothing left of).
   */
  version: number;
}

/** The filters of the match process ({@link createWatchlistFilters}). */
export interface WatchlistFilters {
  /** The list's ready filter, or undefined: then it starts building it (once) and the caller asks Redis. */
  get(accountId: string, id: string): WatchlistFilter | undefined;
  /**
   * Brings a filter up to its list's revision in Redis; true when this call changed it or dropped it
   * for a rebuild (its "no"s answered before may be wrong), false when it was current. Calls for one
   * copy run one after another (never joined: a later caller may depend on a change heard after an
   * earlier call read the revision); compare {@link WatchlistFilter.version} to know whether the copy
   * changed since a given moment.
   * @throws when Redis fails.
   */
  refresh(filter: WatchlistFilter): Promise<boolean>;
  /** Resolves when no build is under way (tests, benchmarks). */
  settled(): Promise<void>;
  /** Ready copies and their bytes (Bloom filters' bits, exact copies' tables). */
  stats(): { lists: number; bytes: number };
}

/**
 * False when `value` is certainly not a member of the filter's list; true when it may be (for an
 * exact copy: when it is, see {@link WatchlistFilter.exact}).
 * @param filter - a ready filter.
 * @param value - the value asked, as the entity has it.
 */
export function mayHold(filter: WatchlistFilter, value: string): boolean {
  if (filter.exact) return filter.exact.has(value);
  return mayContain(filter.bits as BloomFilter, filter.kind, value);
}

/** Dependencies of {@link createWatchlistFilters}. */
export interface WatchlistFiltersDeps {
  /** The watchlist store (lib/watchlists/store.ts). */
  store: Pick<WatchlistStore, "get" | "count" | "revision" | "changesSince" | "scanMembers">;
  /** Told when a build fails (the list's questions keep going to Redis; the next ask tries again). */
  onBuildError?: (err: unknown, accountId: string, id: string) => void;
  /** A filter no batch consulted for this long is dropped, in ms. Default 600,000 (10 min). */
  idleMs?: number;
  /** Clock in ms; default `Date.now`. */
  now?: () => number;
  /** The change feed (lib/watchlists/revision-feed.ts); without it every batch reads the revisions it uses. */
  feed?: Pick<RevisionFeed, "epoch" | "takeChanged" | "drain">;
  /** With a live feed, a revision is still read again after this long without a change heard, in ms. Default 1,000. */
  recheckMs?: number;
  /**
   * Most bytes the process's exact copies of address lists may take, counted when a copy is built
   * (lib/watchlists/address-set.ts `addressSetBytes`); a list whose copy would pass it gets a Bloom
   * filter instead (its "maybe"s then go to Redis). Default {@link DEFAULT_EXACT_MAX_BYTES}.
   */
  exactMaxBytes?: number;
}

/** Default of {@link WatchlistFiltersDeps.exactMaxBytes}: the config's default, 512 MiB; the match stage passes config `watchlistCopies.copyMaxBytes` (env `CHAINSIFT_WATCHLIST_COPY_MAX_BYTES`). */
export const DEFAULT_EXACT_MAX_BYTES = DEFAULT_WATCHLIST_COPY_MAX_BYTES;

/**
 * Applies logged changes to a copy, in order; false when a Bloom filter would pass its capacity
 * (then it is rebuilt; it is left unchanged).
 */
function apply(f: WatchlistFilter, steps: readonly WatchlistChange[]): boolean {
  if (f.exact) {
    f.version++;
    const exact = f.exact;
    for (const { remove, members } of steps) {
      if (remove) for (const m of members) exact.delete(m);
      else for (const m of members) exact.add(m);
    }
    f.size = exact.size;
    return true;
  }
  const bits = f.bits as BloomFilter;
  const added = steps.filter((c) => !c.remove);
  const n = added.reduce((k, c) => k + c.members.length, 0);
  if (f.size + n > f.capacity) return false;
  f.version++;
  for (const { members } of added) for (const m of members) addMember(bits, f.kind, m);
  f.size += n;
  return true;
}

/** How often idle filters are looked for, in ms. */
const SWEEP_EVERY_MS = 60_000;

const SEP = "\u0000";

/**
 * Creates the match process's filters (see the module comment).
 * @param deps - see {@link WatchlistFiltersDeps}.
 */
export function createWatchlistFilters(deps: WatchlistFiltersDeps): WatchlistFilters {
  const { store, feed } = deps;
  const now = deps.now ?? Date.now;
  const recheckMs = deps.recheckMs ?? 1_000;
  const exactMaxBytes = deps.exactMaxBytes ?? DEFAULT_EXACT_MAX_BYTES;
  const idleMs = deps.idleMs ?? 600_000;
  /** accountId → list id → filter. */
  const ready = new Map<string, Map<string, WatchlistFilter>>();
  let sweptAt = now();
  const sweep = (t: number) => {
    sweptAt = t;
    for (const [accountId, byId] of ready) {
      for (const [id, f] of byId) if (t - f.usedAt > idleMs) byId.delete(id);
      if (byId.size === 0) ready.delete(accountId);
    }
  };
  const exactBytes = () => {
    let bytes = 0;
    for (const byId of ready.values()) for (const f of byId.values()) if (f.exact) bytes += f.exact.bytes;
    return bytes;
  };
  const building = new Map<string, Promise<void>>();
  const build = async (accountId: string, id: string): Promise<WatchlistFilter> => {
    // The revision first: members added while scanning are in the log after it.
    const rev = await store.revision(accountId, id);
    const list = await store.get(accountId, id);
    const count = list ? await store.count(accountId, id) : 0;
    const kind = list?.kind ?? "string";
    const at = now();
    if (kind === "address" && exactBytes() + addressSetBytes(count) <= exactMaxBytes) {
      const exact = new AddressSet(count);
      for await (const chunk of store.scanMembers(accountId, id)) for (const m of chunk) exact.add(m);
      const capacity = Number.POSITIVE_INFINITY;
      return { accountId, id, kind, rev, size: exact.size, capacity, exact, usedAt: at, checkedAt: at, version: 0 };
    }
    const capacity = memberFilterCapacity(count);
    const bits = createMemberFilter(capacity);
    let size = 0;
    if (list) {
      for await (const chunk of store.scanMembers(accountId, id)) {
        for (const m of chunk) addMember(bits, kind, m);
        size += chunk.length;
      }
    }
    return { accountId, id, kind, rev, size, capacity, bits, usedAt: at, checkedAt: at, version: 0 };
  };
  const start = (accountId: string, id: string) => {
    const key = `${accountId}${SEP}${id}`;
    if (building.has(key)) return;
    const p = build(accountId, id).then(
      (f) => {
        let lists = ready.get(accountId);
        if (!lists) {
          lists = new Map();
          ready.set(accountId, lists);
        }
        lists.set(id, f);
      },
      (err: unknown) => deps.onBuildError?.(err, accountId, id),
    );
    building.set(key, p);
    void p.finally(() => building.delete(key));
  };
  const rebuild = (f: WatchlistFilter) => {
    f.version++;
    const lists = ready.get(f.accountId);
    if (lists?.get(f.id) === f) lists.delete(f.id);
    start(f.accountId, f.id);
  };
  /** The calls of {@link WatchlistFilters.refresh} under way, per copy (each waits for the one before). */
  const queued = new Map<WatchlistFilter, Promise<boolean>>();
  const refreshNow = async (f: WatchlistFilter): Promise<boolean> => {
    f.usedAt = now();
    if (f.usedAt - sweptAt > SWEEP_EVERY_MS) sweep(f.usedAt);
    if (feed) {
      // Messages already on the socket are heard before the feed is trusted.
      await feed.drain();
      const epoch = feed.epoch();
      const heard = feed.takeChanged(f.accountId, f.id);
      if (epoch !== undefined && f.epoch === epoch && !heard && now() - f.checkedAt < recheckMs) return false;
      // Read below; a change heard from here on marks the list again.
      f.epoch = epoch;
    }
    f.checkedAt = now();
    const rev = await store.revision(f.accountId, f.id);
    if (rev === f.rev) return false;
    const changes = rev > f.rev ? await store.changesSince(f.accountId, f.id, f.rev, rev) : null;
    if (!changes || !apply(f, changes.steps)) {
      rebuild(f);
      return true;
    }
    f.rev = changes.rev;
    return true;
  };
  return {
    get(accountId, id) {
      // Nested maps: no key string to build per value asked.
      const f = ready.get(accountId)?.get(id);
      if (!f) start(accountId, id);
      return f;
    },
    refresh(f) {
      const run = (queued.get(f) ?? Promise.resolve(false)).catch(() => false).then(() => refreshNow(f));
      queued.set(f, run);
      void run
        .finally(() => {
          if (queued.get(f) === run) queued.delete(f);
        })
        .catch(() => {});
      return run;
    },
    async settled() {
      while (building.size > 0) await Promise.all([...building.values()]);
    },
    stats() {
      let bytes = 0;
      let lists = 0;
      for (const byId of ready.values()) {
        for (const f of byId.values()) bytes += f.exact ? f.exact.bytes : memberFilterBytes(f.bits as BloomFilter);
        lists += byId.size;
      }
      return { lists, bytes };
    },
  };
}
