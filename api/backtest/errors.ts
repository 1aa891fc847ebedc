/**
 * The error codes of rule and saved-search backtests (`POST /alerting/rules/test/`, `POST
 * /alerting/searches/test/`, `chainsift rules test`); part of
 * the API's {@link ERROR_CODES} (api/errors.ts) and of its table in docs/api.md. A rule that fails
 * validation is answered with the `CS_RULE_*` codes of `POST /alerting/rules/`, paths under `rule.`.
 * @module
 */
import type { ErrorCodeInfo } from "../errors.js";

/** Backtest error codes → HTTP status and meaning. Stable: never renamed. */
export const BACKTEST_ERROR_CODES = {
  CS_BACKTEST_INVALID: {
    status: 400,
    description:
      "Rule or saved-search backtest: the body is not {rule, from, to} or {rule, last} ({search, …} for POST /alerting/searches/test/): rule or search missing, from/to/last missing or not an integer >= 0 (last >= 1), from after to, a range and last together, or an unknown key (path names the field).",
  },
  CS_BACKTEST_RANGE_TOO_LARGE: {
    status: 400,
    description:
      "Rule or saved-search backtest: the range covers more blocks than CHAINSIFT_BACKTEST_MAX_BLOCKS (default 100000), or a state rule would read more of its blocks than CHAINSIFT_STATE_BACKTEST_MAX_READS (default 10000); split it (path to or last).",
  },
  CS_BACKTEST_TARGET_UNSUPPORTED: {
    status: 400,
    description:
      "Rule or saved-search backtest: the rule's targetType cannot be tested on history (Token: the first sight of a token needs the whole chain's history; path rule.config.targetType), a saved search's sequence pairs block documents with another kind (path search.sequence.followedBy.kind), the chain's chain id is not configured (path rule.network or search.network), or a state rule's chain has no JSON-RPC endpoint in the API (path rule.stateCondition).",
  },
  CS_BACKTEST_NOTHING_INDEXED: {
    status: 409,
    description:
      "Rule or saved-search backtest: last was given but no block of the rule's (search's) chain is indexed yet, so there is no newest block to count from.",
  },
  CS_BACKTEST_NO_ARCHIVE_STATE: {
    status: 422,
    description:
      "State-rule backtest: the chain's node does not hold the state of the range's first block read (it answered a pruned-state error such as missing trie node or header not found, or does not know the block): a backtest of a state rule needs an archive node for that range; test recent blocks the node keeps, or point the chain at an archive node (path from or last). Met at a later block, the NDJSON answer ends there with an error line of this code.",
  },
} as const satisfies Record<string, ErrorCodeInfo>;

/** One of the codes of {@link BACKTEST_ERROR_CODES}. */
export type BacktestErrorCode = keyof typeof BACKTEST_ERROR_CODES;
