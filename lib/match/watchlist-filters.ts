/**
 * Bloom filters of the watchlists that rules use, kept in the match process in front of the Redis
 * sets (lib/match/watchlist-membership.ts asks them first): most values asked are not members, and a
 * filter's "no" is certain, so they cost one in-process hash instead of a question to Redis; a
 * "maybe" is confirmed in the set as before, so matching stays exact.
 *
 * - Built in the background the first time a list is asked (until then its questions go to Redis):
 *   the list's revision (lib/watchlists/changes.ts) is read first, then every member by SSCAN into
 *   a filter sized by lib/watchlists/bloom.ts (2.29 MiB per million members, ≈0.03 % false
 *   positives at that size). Building 1,000,000 members takes about a second (docs/benchmarks.md).
 * - Checked once per batch that consults it ({@link WatchlistFilters.refresh}, one GET sent with
 *   the batch's SMISMEMBERs): when the revision moved, the members added since are read from the
 *   change log and added, so an address added through the API matches from the next batch on.
 *   A removed member stays in the filter, but its "maybe" is answered "no" by the set.
 * - Rebuilt (in the background, questions going to Redis meanwhile) when the log no longer reaches
 *   back to the filter's revision (more than 64 adds behind, an add of more than 1,000 members, a
 *   deleted list), or when the list outgrows the filter's capacity.
 * - Dropped when no batch has consulted it for {@link WatchlistFiltersDeps.idleMs} (a list no rule
 *   uses any more), checked at most once a minute.
 * @module
 */
import type { BloomFilter } from "bloomfilter";
import { addMember, createMemberFilter, mayContain, memberFilterBytes, memberFilterCapacity } from "../watchlists/bloom.js";
import type { WatchlistKind, WatchlistStore } from "../watchlists/store.js";

/** A ready filter of one list. */
export interface WatchlistFilter {
  readonly accountId: string;
  readonly id: string;
  /** The list's kind (how values are normalised), `string` for a list that did not exist when built. */
  readonly kind: WatchlistKind;
  /** The list revision the filter holds every member of. */
  rev: number;
  /** Members added to the filter (an upper bound of the list's size). */
  size: number;
  /** Members the filter was sized for. */
  readonly capacity: number;
  readonly bits: BloomFilter;
  /** When a batch last consulted it (refresh), in ms since the epoch. */
  usedAt: number;
}

/** The filters of the match process ({@link createWatchlistFilters}). */
export interface WatchlistFilters {
  /** The list's ready filter, or undefined: then it starts building it (once) and the caller asks Redis. */
  get(accountId: string, id: string): WatchlistFilter | undefined;
  /**
   * Brings a filter up to its list's revision in Redis; true when the filter changed or was dropped
   * for a rebuild (its "no"s answered before may be wrong), false when it was current.
   * @throws when Redis fails.
   */
  refresh(filter: WatchlistFilter): Promise<boolean>;
  /** Resolves when no build is under way (tests, benchmarks). */
  settled(): Promise<void>;
  /** Ready filters and the bytes of their bits. */
  stats(): { lists: number; bytes: number };
}

/**
 * False when `value` is certainly not a member of the filter's list; true when it may be.
 * @param filter - a ready filter.
 * @param value - the value asked, as the entity has it.
 */
export function mayHold(filter: WatchlistFilter, value: string): boolean {
  return mayContain(filter.bits, filter.kind, value);
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
}

/** How often idle filters are looked for, in ms. */
const SWEEP_EVERY_MS = 60_000;

const SEP = "\u0000";

/**
 * Creates the match process's filters (see the module comment).
 * @param deps - see {@link WatchlistFiltersDeps}.
 */
export function createWatchlistFilters(deps: WatchlistFiltersDeps): WatchlistFilters {
  const { store } = deps;
  const now = deps.now ?? Date.now;
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
  const building = new Map<string, Promise<void>>();
  const build = async (accountId: string, id: string): Promise<WatchlistFilter> => {
    // The revision first: members added while scanning are in the log after it.
    const rev = await store.revision(accountId, id);
    const list = await store.get(accountId, id);
    const capacity = memberFilterCapacity(list ? await store.count(accountId, id) : 0);
    const bits = createMemberFilter(capacity);
    let size = 0;
    if (list) {
      for await (const chunk of store.scanMembers(accountId, id)) {
        for (const m of chunk) addMember(bits, list.kind, m);
        size += chunk.length;
      }
    }
    return { accountId, id, kind: list?.kind ?? "string", rev, size, capacity, bits, usedAt: now() };
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
    const lists = ready.get(f.accountId);
    if (lists?.get(f.id) === f) lists.delete(f.id);
    start(f.accountId, f.id);
  };
  return {
    get(accountId, id) {
      // Nested maps: no key string to build per value asked.
      const f = ready.get(accountId)?.get(id);
      if (!f) start(accountId, id);
      return f;
    },
    async refresh(f) {
      f.usedAt = now();
      if (f.usedAt - sweptAt > SWEEP_EVERY_MS) sweep(f.usedAt);
      const rev = await store.revision(f.accountId, f.id);
      if (rev === f.rev) return false;
      const changes = rev > f.rev ? await store.changesSince(f.accountId, f.id, f.rev, rev) : null;
      if (!changes || f.size + changes.added.length > f.capacity) {
        rebuild(f);
        return true;
      }
      for (const m of changes.added) addMember(f.bits, f.kind, m);
      f.size += changes.added.length;
      f.rev = changes.rev;
      return true;
    },
    async settled() {
      while (building.size > 0) await Promise.all([...building.values()]);
    },
    stats() {
      let bytes = 0;
      let lists = 0;
      for (const byId of ready.values()) {
        for (const f of byId.values()) bytes += memberFilterBytes(f.bits);
        lists += byId.size;
      }
      return { lists, bytes };
    },
  };
}
