/**
 * Error codes of the user-ABI routes (`/abis/…`, `/admin/abis/…`), merged into `ERROR_CODES` of
 * api/errors.ts (and the error table of docs/api.md). Stable: never renamed.
 * @module
 */
import type { ErrorCodeInfo } from "../../errors.js";

/** Every code the ABI routes answer with besides the app-wide ones. */
export const ABIS_ERROR_CODES = {
  CS_ABI_INVALID: {
    status: 400,
    description:
      "User ABIs: the body is not {abi, name?}, or the ABI is malformed; path names the offending part, e.g. abi[3].inputs[1].type (an unknown Solidity type), abi[0].inputs[2].components (a tuple without members), abi[1].name (an event without a name).",
  },
  CS_ABI_ADDRESS_INVALID: {
    status: 400,
    description: "User ABIs: the <address> path segment is neither 0x followed by 40 hex digits nor `any` (path params.address).",
  },
  CS_ABI_NOT_FOUND: {
    status: 404,
    description:
      "User ABIs: the caller's namespace (or the global one, on /admin/abis/) has no ABI for that address; another account's ABI answers the same.",
  },
  CS_ABI_LIMIT_REACHED: {
    status: 409,
    description: "User ABIs: the account already has CHAINSIFT_ABI_MAX_PER_ACCOUNT registrations (default 100); remove one first.",
  },
  CS_ABI_TOO_LARGE: { status: 413, description: "User ABIs: the registration body exceeds 512 KiB." },
  CS_RULE_STATE_ABI_UNKNOWN: {
    status: 400,
    description:
      "Alerting rules: a view-call state subject without an inline `abi` names a function that no ABI registered for its `to` address (the caller's, then the global one) has as a view or pure function (path: stateCondition.subject.function).",
  },
} as const satisfies Record<string, ErrorCodeInfo>;
