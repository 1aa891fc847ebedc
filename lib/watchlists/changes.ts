/**
 * The change log of a watchlist, which lets the match stage keep a Bloom filter of the list up to
 * date without reading the whole set again (lib/match/watchlist-filters.ts). Keys beside the
 * member set (lib/watchlists/store.ts):
 *
 * - `…:<id>:rev`: the list's revision, an integer raised by one by every add, before its members
 *   are written to the set (absent = 0; removes do not raise it: a removed member only has to stop
 *   matching, and every "maybe" of a filter is confirmed in the set);
 * - `…:<id>:changes`: a list of the last {@link CHANGE_LOG_ENTRIES} adds, each `<rev> <JSON array of
 *   the members sent>`, or `<rev> null` when the add sent more than {@link CHANGE_LOG_MEMBERS}
 *   members (a reader then rebuilds its filter from the set).
 *
 * The revision and its log entry are written together by one script ({@link LOG_ADD_SCRIPT}), so a
 * reader that sees revision r finds the entries up to r, unless they were trimmed.
 * @module
 */

/** How many adds the change log keeps (older ones are trimmed; a reader further behind rebuilds). */
export const CHANGE_LOG_ENTRIES = 64;
/** Most members one add logs in full (≈43 bytes each for addresses: ≤ 2.8 MB of log per list); larger adds log `null`. */
export const CHANGE_LOG_MEMBERS = 1_000;

/**
 * Lua: INCR KEYS[1] (the revision), RPUSH `<rev> ARGV[1]` on KEYS[2] (the log), trim it to the last
 * ARGV[2] entries; answers the new revision.
 */
export const LOG_ADD_SCRIPT = `
local r = redis.call('INCR', KEYS[1])
redis.call('RPUSH', KEYS[2], r .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
return r`;

/**
 * The payload logged for an add: the JSON array of its members, or `null` past {@link CHANGE_LOG_MEMBERS}.
 * @param members - the normalised members sent.
 */
export function changePayload(members: readonly string[]): string {
  return members.length > CHANGE_LOG_MEMBERS ? "null" : JSON.stringify(members);
}

/** What a reader at some revision has to apply ({@link changesSince}). */
export interface WatchlistChanges {
  /** The revision reached: the highest of the contiguous entries read. */
  rev: number;
  /** The members added after the reader's revision, up to `rev` (may repeat present members). */
  added: string[];
}

/**
 * The adds after revision `since` up to at least `to`, from the log's entries (oldest first), or
 * null when the reader must rebuild from the set: an entry in (`since`, `to`] is missing (trimmed,
 * or the list was deleted) or was logged without its members.
 * @param entries - the log (LRANGE 0 -1), `<rev> <payload>` each.
 * @param since - the reader's revision.
 * @param to - the list's revision as read (≥ `since`).
 */
export function changesSince(entries: readonly string[], since: number, to: number): WatchlistChanges | null {
  let rev = since;
  const added: string[] = [];
  for (const entry of entries) {
    const space = entry.indexOf(" ");
    const r = Number(entry.slice(0, space));
    if (!(r > since)) continue;
    if (r !== rev + 1) return null;
    const members = JSON.parse(entry.slice(space + 1)) as string[] | null;
    if (members === null) return null;
    for (const m of members) added.push(m);
    rev = r;
  }
  return rev >= to ? { rev, added } : null;
}
