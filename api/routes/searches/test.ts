/**
 * `POST /alerting/searches/test/`: tests a saved search on history without storing it or delivering
 * anything (docs/alerting.md, "Test a saved search on history"), as `POST /alerting/rules/test/`
 * does for a rule. Body `{search, from, to}` or `{search, last}`: the saved search exactly as
 * `POST /alerting/searches/` takes it (same validation, same codes, paths under `search.`) and the
 * block range (api/backtest/request.ts `parseSearchBacktestRequest`). The answer is the rule
 * backtest's NDJSON (api/backtest/run.ts): the query is evaluated by the match stage's evaluator on
 * every indexed document of the search's kind in the range (api/backtest/search-tester.ts), so the
 * `match` lines are the records the search API answers for the same query over the same blocks.
 * Bounded by `CHAINSIFT_BACKTEST_MAX_BLOCKS` and `CHAINSIFT_BACKTEST_TIMEOUT_MS`.
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import { RULE_LIMITS } from "../../../lib/rules/validate.js";
import { parseSearchBacktestRequest } from "../../backtest/request.js";
import { ApiError } from "../../errors.js";
import { callerId, RULES_ROUTE_CONFIG, rulesValidatorCompiler } from "../rules/index.js";
import { answerBacktest, BACKTEST_RESPONSES, type RuleTestRoutesDeps } from "../rules/test.js";
import { SEARCHES_PREFIX } from "./index.js";
import { SavedSearchTestSchema } from "./schema.js";
import { checkSearchWatchlists } from "./watchlists.js";

/** The path of the route. */
export const SEARCH_TEST_PATH = `${SEARCHES_PREFIX}/test/`;

/**
 * The plugin of `POST /alerting/searches/test/` (uses the app's `es` client; its own scope with the
 * rules routes' validator compiler, so the body is checked by the route only).
 * @param deps - as the rule backtest's (api/routes/rules/test.ts `RuleTestRoutesDeps`).
 */
export function searchTestRoutes(deps: RuleTestRoutesDeps): FastifyPluginAsync {
  const { config, chains } = deps;
  return async (app) => {
    app.setValidatorCompiler(rulesValidatorCompiler);
    app.post(
      SEARCH_TEST_PATH,
      {
        config: { ...RULES_ROUTE_CONFIG, backend: "Elasticsearch" },
        schema: {
          tags: ["alerting"],
          operationId: "testSearch",
          summary: "Test a saved search on history (backtest)",
          description:
            "Body {search, from, to} or {search, last}: the saved search as POST /alerting/searches/ takes it and a block range (both ends included) or the newest `last` indexed blocks. " +
            "Evaluates the query with the match stage's evaluator against every indexed record of its kind in the range: the match lines are the records the search API finds for the same query over the same blocks; a window, absence or sequence (its second query over sequence.followedBy.kind, read too) is replayed as a rule's. Stores and delivers nothing. " +
            "Answer: 200 application/x-ndjson, lines start, match (entity and alerts rendered per action), block (counts), error, end. " +
            `Refusals: 400 CS_RULE_*, CS_SEARCH_KIND, CS_QUERY_*, CS_SEARCH_INEXACT (paths under search.), CS_RULE_NOT_SUPPORTED (a watchlist lookup without the caller's lists: the CLI), CS_RULE_WATCHLIST_UNKNOWN, CS_BACKTEST_INVALID, CS_BACKTEST_RANGE_TOO_LARGE (more than ${config.backtest.maxBlocks} blocks), CS_BACKTEST_TARGET_UNSUPPORTED (search.sequence.followedBy.kind: block documents paired with another kind); 409 CS_BACKTEST_NOTHING_INDEXED.`,
          body: SavedSearchTestSchema,
          response: BACKTEST_RESPONSES,
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request, reply) => {
        const accountId = callerId(request);
        const parsed = parseSearchBacktestRequest(request.body, chains, config.backtest.maxBlocks);
        if (!parsed.ok) throw new ApiError(parsed.errors);
        if (deps.watchlists) await checkSearchWatchlists(deps.watchlists, accountId, parsed.value.search, "search.");
        return answerBacktest(app, deps, request, reply, parsed.value);
      },
    );
  };
}
