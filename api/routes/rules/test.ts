/**
 * `POST /alerting/rules/test/`: tests a rule on history without storing it or delivering anything
 * (docs/alerting.md, "Test a rule on history"). The body is checked by `parseBacktestRequest`
 * (api/backtest/request.ts: the rule exactly as `POST /alerting/rules/` validates it, plus the block
 * range); refusals are ordinary 400/409 error answers. The answer is `200` NDJSON
 * (`application/x-ndjson`, one JSON object per line, written as the scan goes; api/backtest/run.ts
 * lists the lines), so a large range neither waits for the whole scan nor holds it in memory.
 * Bounded by `CHAINSIFT_BACKTEST_MAX_BLOCKS` (range) and `CHAINSIFT_BACKTEST_TIMEOUT_MS` (time).
 * @module
 */
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { DecodeMethodOptions } from "../../../lib/chain/methods.js";
import type { ChainId, Config } from "../../../lib/config/index.js";
import type { RpcClient } from "../../../lib/rpc/client.js";
import { RULE_LIMITS } from "../../../lib/rules/validate.js";
import { component } from "../../../lib/validation/component.js";
import { type BacktestRequest, parseBacktestRequest, type SearchBacktestRequest } from "../../backtest/request.js";
import { runBacktest } from "../../backtest/run.js";
import type { BacktestWatchlists } from "../../backtest/watchlists.js";
import { ApiError } from "../../errors.js";
import { callerId, RULES_PREFIX, RULES_ROUTE_CONFIG } from "./index.js";
import { RULES_ERROR_RESPONSES, RulesErrorBodySchema } from "./schema.js";
import type { AbiLookup } from "./state-abi.js";

/**
 * One line of the NDJSON answer (OpenAPI): an object whose `type` says which line it is; the fields
 * of each type are listed in api/backtest/run.ts and docs/alerting.md.
 */
export const BacktestLineSchema = Type.Object(
  { type: Type.Enum(["start", "match", "block", "error", "end"] as const) },
  {
    additionalProperties: true,
    description: "One line of the application/x-ndjson answer (one JSON object per line)",
    // One model for both backtest routes (rules and saved searches).
    ...component("BacktestLine"),
  },
);

/** The answers of both backtest routes (OpenAPI): 200 NDJSON lines, the rules routes' errors, 409, 413, 422 (state rules). */
export const BACKTEST_RESPONSES = {
  200: {
    description: "NDJSON: start, match…, block…, [error], end",
    content: { "application/x-ndjson": { schema: BacktestLineSchema } },
  },
  ...RULES_ERROR_RESPONSES,
  409: RulesErrorBodySchema,
  413: RulesErrorBodySchema,
  422: RulesErrorBodySchema,
};

/** Dependencies of {@link ruleTestRoutes}. */
export interface RuleTestRoutesDeps {
  /** Uses `elasticsearch.indexPrefix`, `elasticsearch.requestTimeoutMs`, `backtest` (maxBlocks, timeoutMs), `notify.explorerUrls` and `stateReads.backtestMaxReads`. */
  config: Pick<Config, "elasticsearch" | "backtest" | "notify" | "stateReads">;
  /** The chains served; the rule must name one (its indices are read). */
  chains: ChainId[];
  /**
   * Decoding of Method/Call arguments of a rule's chain, as that chain's match stage's (api/served-chains.ts
   * `ServedChain.decode`); undefined for a chain whose chain id is unknown: its backtests are refused
   * with `CS_BACKTEST_TARGET_UNSUPPORTED` (never decoded with an assumed chain id).
   */
  decode: (chain: ChainId) => DecodeMethodOptions | undefined;
  /** The JSON-RPC client state-rule backtests of a chain read through (api/backtest/state-rpc.ts); absent or undefined: refused. */
  rpc?: (chain: ChainId) => RpcClient | undefined;
  /** The watchlist store `In watchlist` conditions of rule backtests read (the caller's lists, today's members); absent: refused. */
  watchlists?: BacktestWatchlists;
  /** The ABI registry a state rule's `call` subject without `abi` is resolved in (api/routes/rules/state-abi.ts); absent: such a rule is refused. */
  abis?: AbiLookup;
}

/**
 * Runs a checked backtest (a rule's, or a saved search's for `POST /alerting/searches/test/`) and
 * answers its NDJSON lines as the scan goes.
 * @throws `ApiError` 400 `CS_BACKTEST_TARGET_UNSUPPORTED` (path `rule.network` or `search.network`)
 *   when the chain's chain id is not configured; what `runBacktest` throws.
 */
export async function answerBacktest(
  app: FastifyInstance,
  deps: RuleTestRoutesDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  checked: BacktestRequest | SearchBacktestRequest,
): Promise<FastifyReply> {
  const { config } = deps;
  const [key, of] = "search" in checked ? (["search", checked.search] as const) : (["rule", checked.rule] as const);
  const chain = { technology: of.technology, blockchain: of.blockchain, network: of.network };
  const decode = deps.decode(chain);
  if (decode === undefined) {
    // A served chain whose chain id the API was not given: its Method/Call values cannot be scaled (never assume mainnet).
    throw new ApiError([
      {
        code: "CS_BACKTEST_TARGET_UNSUPPORTED",
        message: `this chain's chain id is not configured: its ${key === "rule" ? "rules" : "saved searches"} cannot be tested on history`,
        path: `${key}.network`,
      },
    ]);
  }
  const scan = {
    es: app.es,
    indexPrefix: config.elasticsearch.indexPrefix,
    requestTimeoutMs: config.elasticsearch.requestTimeoutMs,
    explorers: config.notify.explorerUrls,
    timeoutMs: config.backtest.timeoutMs,
    log: request.log,
    decode,
    state: { rpc: deps.rpc?.(chain), maxReads: config.stateReads.backtestMaxReads, ...(deps.abis ? { abis: deps.abis } : {}) },
    ...(deps.watchlists ? { watchlists: deps.watchlists } : {}),
  };
  const lines = await runBacktest(scan, checked, callerId(request));
  const ndjson = async function* () {
    for await (const line of lines) yield `${JSON.stringify(line)}\n`;
  };
  return reply.type("application/x-ndjson; charset=utf-8").send(Readable.from(ndjson(), { objectMode: false }));
}

/** The path of the route. */
export const RULE_TEST_PATH = `${RULES_PREFIX}/test/`;

/**
 * The plugin of `POST /alerting/rules/test/` (uses the app's `es` client, api/plugins/elasticsearch.ts).
 * @param deps see {@link RuleTestRoutesDeps}.
 */
export function ruleTestRoutes(deps: RuleTestRoutesDeps): FastifyPluginAsync {
  const { config, chains } = deps;
  return async (app) => {
    app.post(
      RULE_TEST_PATH,
      {
        config: { ...RULES_ROUTE_CONFIG, backend: "Elasticsearch" },
        schema: {
          tags: ["alerting"],
          operationId: "testRule",
          summary: "Test a rule on history (backtest)",
          description:
            "Body {rule, from, to} or {rule, last}: the rule as POST /alerting/rules/ takes it and a block range (both ends included) or the newest `last` indexed blocks. " +
            "Evaluates the rule with the match stage's code against the records already indexed in the range; stores and delivers nothing. " +
            "Answer: 200 application/x-ndjson, lines start, match (entity and alerts rendered per action), block (counts), error, end. " +
            "A rule with window or absence is replayed over every block of the range: one match line per window that fired (entity.window: bounds, aggregate, group, first record ids). " +
            "A rule with stateCondition reads its subject at each due block of the range through the chain's JSON-RPC node (it needs archive state). " +
            `Refusals: 400 CS_RULE_* (paths under rule.), CS_BACKTEST_INVALID, CS_BACKTEST_RANGE_TOO_LARGE (more than ${config.backtest.maxBlocks} blocks), CS_BACKTEST_TARGET_UNSUPPORTED; 409 CS_BACKTEST_NOTHING_INDEXED; 422 CS_BACKTEST_NO_ARCHIVE_STATE.`,
          response: BACKTEST_RESPONSES,
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request, reply) => {
        callerId(request);
        const parsed = parseBacktestRequest(request.body, chains, config.backtest.maxBlocks);
        if (!parsed.ok) throw new ApiError(parsed.errors);
        return answerBacktest(app, deps, request, reply, parsed.value);
      },
    );
  };
}
