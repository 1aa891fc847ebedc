/**
 * The watchlist picker of the rule form: a `<datalist>` of the caller's watchlists
 * (`GET /alerting/watchlists/`), offered by the value input of an `In watchlist` condition, so a
 * list is chosen by name while the rule stores its id (docs/rules.md "In watchlist"). Typing an id
 * still works; when the lists cannot be read (no token, an old server) the input stays free text.
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";

/** What the picker shows of a watchlist (the list route's items, docs/api.md "Watchlists"). */
interface Watchlist {
  id: string;
  name: string;
  kind: string;
}

/** The `id` of the datalist the value inputs of `In watchlist` conditions point to. */
export const WATCHLIST_OPTIONS_ID = "cs-watchlists";

/** Renders the datalist of the caller's watchlists: option value = the id, label = name and kind. */
export function WatchlistOptions() {
  const [lists, setLists] = useState<Watchlist[]>([]);
  useEffect(() => {
    let live = true;
    api<{ watchlists: Watchlist[] }>("GET", "/alerting/watchlists/")
      .then((r) => live && setLists(r.watchlists))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, []);
  return (
    <datalist id={WATCHLIST_OPTIONS_ID}>
      {lists.map((w) => (
        <option key={w.id} value={w.id} label={`${w.name} (${w.kind})`} />
      ))}
    </datalist>
  );
}
