/**
 * Error codes of the watchlist routes (`/alerting/watchlists/…`), merged into `ERROR_CODES` of
 * api/errors.ts (and the error table of docs/api.md). Stable: never renamed.
 * @module
 */
import type { ErrorCodeInfo } from "../../errors.js";

/** Every code the watchlist routes answer with besides the app-wide ones. */
export const WATCHLISTS_ERROR_CODES = {
  CS_WATCHLIST_INVALID: {
    status: 400,
    description: "Watchlists: the create body is not {name, kind} with kind address or string, or a path parameter is malformed.",
  },
  CS_WATCHLIST_NOT_FOUND: {
    status: 404,
    description: "Watchlists: the caller has no watchlist with that id (another account's answers the same).",
  },
  CS_WATCHLIST_MEMBER_INVALID: {
    status: 400,
    description:
      "Watchlists: a member is not a value of the list's kind (address: 0x + 40 hex digits); path names it: body[3] in a JSON array, lines[4] (1-based line) in NDJSON or CSV. Nothing of the request is applied.",
  },
  CS_WATCHLIST_BATCH_TOO_LARGE: {
    status: 413,
    description: "Watchlists: one add/remove request carries more than 100,000 members or 8 MiB; split the upload.",
  },
  CS_WATCHLIST_FULL: {
    status: 409,
    description: "Watchlists: the upload would take the watchlist past its member limit (5,000,000 by default); nothing is added.",
  },
  CS_RULE_WATCHLIST_UNKNOWN: {
    status: 400,
    description:
      "Alerting rules: an `In watchlist` condition names a watchlist the caller does not have (path: the definition's value, e.g. config.targetMap[0].value); saved searches: a terms lookup names one (path: the lookup, e.g. query.terms.from.watchlist).",
  },
  CS_WATCHLIST_LIMIT_REACHED: {
    status: 409,
    description: "Watchlists: the account already holds the most watchlists allowed (100 by default); delete one first.",
  },
} as const satisfies Record<string, ErrorCodeInfo>;
