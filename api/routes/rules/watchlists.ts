/**
 * The rule routes' check of `In watchlist` conditions (docs/rules.md "In watchlist"): every watchlist
 * a rule names must be one of the caller's, else `400 CS_RULE_WATCHLIST_UNKNOWN` at the definition's
 * `value`, so a typo never makes a rule that silently matches nothing.
 * @module
 */
import type { AnyDefinition } from "../../../lib/match/evaluate.js";
import type { WatchlistStore } from "../../../lib/watchlists/store.js";
import { ApiError, type ApiErrorDetail } from "../../errors.js";

/** The `In watchlist` definitions of a list with their JSON paths, at any level. */
function listed(defs: unknown, path: string, out: { id: string; path: string }[] = []): { id: string; path: string }[] {
  if (!Array.isArray(defs)) return out;
  defs.forEach((d: AnyDefinition | null, i) => {
    if (d?.operator === "In watchlist" && typeof d.value === "string") out.push({ id: d.value, path: `${path}[${i}].value` });
    listed(d?.operatorParameters, `${path}[${i}].operatorParameters`, out);
  });
  return out;
}

/**
 * Refuses a rule body whose `In watchlist` conditions name a watchlist the account does not have.
 * @param store - the watchlist store (`get`).
 * @param accountId - the caller.
 * @param config - the validated body's `config` (absent in an update that keeps it: nothing to check).
 * @param body - the validated body: the `In watchlist` conditions of its `sequence.followedBy.targetMap` are checked too.
 * @throws {ApiError} `CS_RULE_WATCHLIST_UNKNOWN` with one detail per unknown id.
 */
export async function checkRuleWatchlists(
  store: Pick<WatchlistStore, "get">,
  accountId: string,
  config: { targetMap?: unknown } | undefined,
  body: object = {},
): Promise<void> {
  const followedBy = (body as { sequence?: { followedBy?: { targetMap?: unknown } } }).sequence?.followedBy?.targetMap;
  await refuseUnknownWatchlists(store, accountId, [
    ...listed(config?.targetMap, "config.targetMap"),
    ...listed(followedBy, "sequence.followedBy.targetMap"),
  ]);
}

/**
 * Refuses watchlist references (a rule's `In watchlist` values, a saved search's `terms` lookups)
 * that name a watchlist the account does not have.
 * @param refs - each watchlist id with the request path that names it.
 * @throws {ApiError} `CS_RULE_WATCHLIST_UNKNOWN` with one detail per unknown reference.
 */
export async function refuseUnknownWatchlists(
  store: Pick<WatchlistStore, "get">,
  accountId: string,
  refs: readonly { id: string; path: string }[],
): Promise<void> {
  const details: ApiErrorDetail[] = [];
  for (const { id, path } of refs) {
    if ((await store.get(accountId, id)) === null) {
      details.push({ code: "CS_RULE_WATCHLIST_UNKNOWN", message: `the account has no watchlist with id ${id}`, path });
    }
  }
  if (details.length > 0) throw new ApiError(details);
}
