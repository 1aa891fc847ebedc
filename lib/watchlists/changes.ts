/**
 * The change log of a watchlist, which lets the match stage keep its in-process copy of the list
 * (a Bloom filter, or an exact set for address lists: lib/match/watchlist-filters.ts) up to date
 * without reading the whole set again. Keys beside the member set (lib/watchlists/store.ts):
 *
 * - `…:<id>:rev`: the list's revision, an integer raised by one by every add or remove that changed
 *   the set (absent = 0, also after the list is deleted);
 * - `…:<id>:changes`: a list of the last {@link CHANGE_LOG_ENTRIES} changes, each `<rev> <JSON array
 *   of the members sent>` for an add, `<rev> -<JSON array>` for a remove, or `null` in place of the
 *   array when more than {@link CHANGE_LOG_MEMBERS} members were sent (a reader then rebuilds its copy
 *   from the set).
 *
 * One script ({@link WRITE_SCRIPT}) writes the set, the revision and its log entry, and publishes
 * the new revision on the store's channel ({@link changeMessage}): a reader that sees revision r
 * finds the set as of r and the entries up to r (unless trimmed), and a subscriber hears of every
 * change in the same order (lib/watchlists/revision-feed.ts).
 * @module
 */

/** How many changes the log keeps (older ones are trimmed; a reader further behind rebuilds). */
export const CHANGE_LOG_ENTRIES = 64;
/** Most members one change logs in full (≈43 bytes each for addresses: ≤ 2.8 MB of log per list); larger ones log `null`. */
export const CHANGE_LOG_MEMBERS = 1_000;
/**
 * Most members one {@link WRITE_SCRIPT} call takes (Lua's `unpack` has a stack limit of 8,000, and the
 * client's command parser one of its own): a larger add or remove is written as several changes.
 */
export const WRITE_SCRIPT_MEMBERS = 5_000;

/**
 * Lua: SADD (ARGV[1] `+`) or SREM (`-`) the members ARGV[6…] (at most {@link WRITE_SCRIPT_MEMBERS}) on KEYS[1] (the set); when
 * the set changed, INCR KEYS[2] (the revision), RPUSH the log entry (payload ARGV[2]) on KEYS[3],
 * trim it to the last ARGV[3] entries and PUBLISH `<rev> ARGV[5]` on channel ARGV[4]. Answers
 * `{changed members, revision}`.
 */
export const WRITE_SCRIPT = `
local n
if ARGV[1] == '+' then n = redis.call('SADD', KEYS[1], unpack(ARGV, 6))
else n = redis.call('SREM', KEYS[1], unpack(ARGV, 6)) end
if n == 0 then return {0, tonumber(redis.call('GET', KEYS[2]) or '0')} end
local r = redis.call('INCR', KEYS[2])
local mark = ''
if ARGV[1] == '-' then mark = '-' end
redis.call('RPUSH', KEYS[3], r .. ' ' .. mark .. ARGV[2])
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[3]), -1)
redis.call('PUBLISH', ARGV[4], r .. ' ' .. ARGV[5])
return {n, r}`;

/** Lua: DEL KEYS (the set, revision and log of a deleted list) and PUBLISH `0 ARGV[2]` on channel ARGV[1]. */
export const DELETE_SCRIPT = `
redis.call('DEL', unpack(KEYS))
redis.call('PUBLISH', ARGV[1], '0 ' .. ARGV[2])
return 0`;

/**
 * The list's part of a change message (`<rev> <list>`): `<accountId>` NUL `<id>`.
 * @param accountId - the owning account.
 * @param id - the watchlist id.
 */
export function changeMessage(accountId: string, id: string): string {
  return `${accountId}\u0000${id}`;
}

/**
 * The payload logged for a change: the JSON array of its members, or `null` past {@link CHANGE_LOG_MEMBERS}.
 * @param members - the normalised members sent.
 */
export function changePayload(members: readonly string[]): string {
  return members.length > CHANGE_LOG_MEMBERS ? "null" : JSON.stringify(members);
}

/** One logged change: members added, or removed. */
export interface WatchlistChange {
  /** True for a remove. */
  remove: boolean;
  /** The members sent (some may have been present already, or absent, for a remove). */
  members: string[];
}

/** What a reader at some revision has to apply ({@link changesSince}). */
export interface WatchlistChanges {
  /** The revision reached: the highest of the contiguous entries read. */
  rev: number;
  /** The changes after the reader's revision, up to `rev`, oldest first (apply them in order). */
  steps: WatchlistChange[];
}

/**
 * The changes after revision `since` up to at least `to`, from the log's entries (oldest first), or
 * null when the reader must rebuild from the set: an entry in (`since`, `to`] is missing (trimmed,
 * or the list was deleted) or was logged without its members.
 * @param entries - the log (LRANGE 0 -1), `<rev> <payload>` each.
 * @param since - the reader's revision.
 * @param to - the list's revision as read (≥ `since`).
 */
export function changesSince(entries: readonly string[], since: number, to: number): WatchlistChanges | null {
  let rev = since;
  const steps: WatchlistChange[] = [];
  for (const entry of entries) {
    const space = entry.indexOf(" ");
    const r = Number(entry.slice(0, space));
    if (!(r > since)) continue;
    if (r !== rev + 1) return null;
    const remove = entry.charCodeAt(space + 1) === 45;
    const members = JSON.parse(entry.slice(space + (remove ? 2 : 1))) as string[] | null;
    if (members === null) return null;
    steps.push({ remove, members });
    rev = r;
  }
  return rev >= to ? { rev, steps } : null;
}
