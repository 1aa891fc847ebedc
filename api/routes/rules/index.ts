/**
 * The alerting-rules endpoints of the contract (7–11) plus the delivery log of a rule:
 *
 * | method | path                                       | body                 | answer                                   |
 * | ------ | ------------------------------------------ | -------------------- | ---------------------------------------- |
 * | GET    | /alerting/rules/                           | –                    | 200 `{rules, nextCursor: null}`: all, streamed |
 * | GET    | /alerting/rules/?limit=&cursor=            | –                    | 200 `{rules, nextCursor}`: one page      |
 * | GET    | /alerting/rules/:rule_id/                  | –                    | 200 rule                                 |
 * | POST   | /alerting/rules/                           | rule                 | 201 rule (+ `Location`)                  |
 * | PUT    | /alerting/rules/:rule_id/                  | fields to change     | 200 rule (version + 1)                   |
 * | DELETE | /alerting/rules/:rule_id/                  | –                    | 204                                      |
 * | GET    | /alerting/rules/:rule_id/deliveries/?limit=&offset= | –           | 200 `{total, entries, destinations}` (newest first) |
 *
 * Listing: the contract's endpoint 7 "lists all rules", so a plain GET answers every rule of the
 * caller (oldest first) in one `{rules, nextCursor: null}` body, streamed page by page from the store
 * (see {@link ruleListingChunks}); `limit` and/or `cursor` opt into one page at a time.
 *
 * Every route acts for the authenticated account (`request.account.id`, set by
 * api/plugins/auth.ts): another account's rule is answered exactly like a missing one, 404
 * `CS_RULE_NOT_FOUND`, never 403. A `:rule_id` that is not a UUID is 400 `CS_RULE_ID_INVALID`.
 *
 * Validation: bodies are parsed as plain JSON and checked by `validateRuleInput`
 * (lib/rules/validate.ts) only, which keeps additional top-level properties, coerces nothing and
 * reports every problem with a code and a JSON path. Path and query parameters are checked by
 * Fastify against the route schemas (TypeBox, ./schema.ts), with a strict conversion
 * ({@link rulesValidatorCompiler}); their failures are 400 `CS_RULE_ID_INVALID` (params) and
 * `CS_RULE_INVALID_PAGE` (query string) via the routes' `config.validationErrorCode`. This
 * plugin's encapsulated scope installs that compiler and a `JSON.stringify` serializer, so Fastify
 * never strips, coerces or refuses a rule and response schemas never reshape one.
 *
 * Errors: the routes throw the ordinary `ApiError` with the codes of {@link RULES_ERROR_CODES} and
 * leave store refusals (`RuleStoreError`) and Redis failures to the app's one error handler
 * (api/plugins/errors.ts), which answers `{error: {code, message, path}, errors: […]}`; the routes'
 * `config` ({@link RULES_ROUTE_CONFIG}) makes a POST or PUT body over 64 KiB (the routes'
 * `bodyLimit`, `RULE_LIMITS.bodyMaxBytes`) 413 `CS_RULE_TOO_LARGE` and names "the rule store" in
 * the 503 `CS_BACKEND_UNAVAILABLE` message.
 * Trailing slashes are optional when the app is created with `routerOptions.ignoreTrailingSlash`
 * (as api/app.ts does).
 * @module
 */
import { Readable } from "node:stream";
import type { FastifyContextConfig, FastifyPluginAsync, FastifyRequest, FastifySchemaCompiler } from "fastify";
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import type { DeliveryLog } from "../../../lib/alerting/deliveries.js";
import type { ActionDeliveryStatus } from "../../../lib/alerting/destinations.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { AlertDefinition, Rule } from "../../../lib/rules/model.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type RulePage, type RuleStore } from "../../../lib/rules/store.js";
import { RULE_LIMITS, validateRuleInput } from "../../../lib/rules/validate.js";
import type { WatchlistStore } from "../../../lib/watchlists/store.js";
import { ApiError, apiError } from "../../errors.js";
import { ruleValidationDetails } from "./errors.js";
import {
  DEFAULT_DELIVERIES_LIMIT,
  DeliveryListQuery,
  DeliveryPageSchema,
  MAX_DELIVERIES_LIMIT,
  RULES_ERROR_RESPONSES,
  RuleListQuery,
  RulePageSchema,
  RuleParams,
  RuleSchema,
  RulesErrorBodySchema,
  RuleWriteAnswerSchema,
  ruleBodySchemas,
} from "./schema.js";
import { type AbiLookup, resolveStateAbi } from "./state-abi.js";
import { checkRuleWatchlists } from "./watchlists.js";

/** The registry of a server without one: nothing is registered. */
const NO_ABIS: AbiLookup = { get: async () => null };

export { RULES_ERROR_CODES, type RulesErrorCode } from "./errors.js";

/** Dependencies of {@link rulesRoutes}. */
export interface RulesRoutesDeps {
  /** The watchlist store: `In watchlist` conditions must name one of the caller's (api/routes/rules/watchlists.ts). Absent: not checked. */
  watchlists?: Pick<WatchlistStore, "get">;
  /** The ABI registry: a view-call state subject without `abi` takes its function from the ABI registered for `to` (api/routes/rules/state-abi.ts). Absent: such a rule is refused with `CS_RULE_STATE_ABI_UNKNOWN`. */
  abis?: AbiLookup;
  /** The rule store (lib/rules/store.ts), e.g. `(await connectRuleStore(config)).store`. */
  rules: RuleStore;
  /**
   * The delivery log (lib/alerting/deliveries.ts) the notify stage writes to. Absent: the deliveries
   * endpoint still checks the rule's ownership, then answers an empty page `{total: 0, entries: []}`.
   */
  deliveries?: DeliveryLog;
  /**
   * Live delivery status of a rule's actions (destination health, queued deliveries) from the notify
   * stage's queue (lib/alerting/destinations.ts). Absent: the deliveries endpoint answers `destinations: []`.
   */
  deliveryStatus?: (ruleId: string, actions: readonly AlertDefinition[]) => Promise<ActionDeliveryStatus[]>;
  /** The chains this deployment serves; a rule's technology/blockchain/network must name one of them. */
  chains: ChainId[];
  /**
   * Where ingest gets a chain's call traces from, as it recorded at its start (pipeline/runtime.ts:
   * `debug_traceBlockByNumber`, `trace_block`, `none`, `off`), or null when no ingest has run.
   * Absent: no warning is given.
   */
  traceSource?: (chain: ChainId) => Promise<string | null>;
  /**
   * Rules read from the store per round trip while `GET /alerting/rules/` (without `limit` and
   * `cursor`) streams every rule: an integer from 1 to `MAX_LIST_LIMIT` (500); default
   * {@link LIST_STREAM_PAGE_SIZE}. It bounds the rules the route holds in memory at a time.
   */
  listPageSize?: number;
}

/** Default {@link RulesRoutesDeps.listPageSize}: 100 rules per Redis round trip (at most 6.4 MB at the 64 KiB body cap, ~100–500 KB for real rules). */
export const LIST_STREAM_PAGE_SIZE = 100;

/**
 * The JSON text of a full listing, `{"rules":[…],"nextCursor":null}`, as chunks: the opening, one
 * chunk per page (its rules serialized, comma-separated), the closing. Pages are fetched lazily: the
 * next page is requested only when the consumer asks for the chunk after the current one, so a
 * consumer that reads as the socket drains (`Readable.from`) holds at most one page of rules.
 * Rules created while the listing runs are included when they sort after the current page (cursor
 * pagination: each rule at most once, every rule that exists throughout exactly once).
 * @param first the first page (already fetched, so that a failure there is still an error answer).
 * @param next fetches the page after a `nextCursor`.
 * @throws whatever `next` throws (the stream then fails; the client sees a truncated body).
 */
export async function* ruleListingChunks(first: RulePage, next: (cursor: string) => Promise<RulePage>): AsyncGenerator<string> {
  yield '{"rules":[';
  let page = first;
  let sent = 0;
  for (;;) {
    if (page.rules.length > 0) {
      yield (sent > 0 ? "," : "") + page.rules.map((r) => JSON.stringify(r)).join(",");
      sent += page.rules.length;
    }
    if (page.nextCursor === null) break;
    page = await next(page.nextCursor);
  }
  yield '],"nextCursor":null}';
}

/** Base path of the rules routes. */
export const RULES_PREFIX = "/alerting/rules";

const DIGITS = /^[0-9]{1,16}$/;
const JSON_TYPE = "application/json; charset=utf-8";

/** The authenticated account's id (api/plugins/auth.ts attaches `request.account`); 401 when there is none. */
export function callerId(request: FastifyRequest): string {
  const account = (request as unknown as { account?: { id?: unknown } | null }).account;
  if (account && typeof account.id === "string" && account.id !== "") return account.id;
  throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required: Authorization: Bearer <token>");
}

/** `:rule_id` (a UUID: checked by the route's params schema), lower-cased (ids are issued lower-case). */
function ruleIdOf(request: FastifyRequest): string {
  return (request.params as { rule_id: string }).rule_id.toLowerCase();
}

function notFound(id: string): ApiError {
  return apiError("CS_RULE_NOT_FOUND", `no rule with id ${id}`, "params.rule_id");
}

/**
 * The validator compiler of the rules routes. Bodies pass unchecked (`validateRuleInput` checks
 * them). Params and query strings are checked against their TypeBox schema after a strict
 * conversion, instead of TypeBox's lenient one (which turns `1.5` into 1 and `""` into 0): an
 * empty query value counts as absent, a string of 1–16 decimal digits becomes a number where the
 * schema wants an integer, and nothing else is converted (`1.5`, `-1`, `1e2`, a repeated
 * parameter stay as they are and fail the check).
 * @param route - Fastify's schema definition: the part's `schema` and `httpPart`.
 * @returns the validator of that part.
 */
export const rulesValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  if (httpPart === "body") return () => true;
  const check = Compile(schema);
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return (input: unknown) => {
    const value: Record<string, unknown> = { ...(input as Record<string, unknown>) };
    for (const [key, v] of Object.entries(value)) {
      if (v === "" && httpPart === "querystring") delete value[key];
      else if (typeof v === "string" && properties[key]?.type === "integer" && DIGITS.test(v)) value[key] = Number(v);
    }
    return check.Check(value) ? { value } : { error: check.Errors(value) as never };
  };
};

// No per-route `security`: the document's global `bearerAuth` (api/plugins/openapi.ts) applies.
const common = { tags: ["alerting"] };

/**
 * The `config` of every rules route, read by the app's error handler (api/plugins/errors.ts): an
 * invalid `:rule_id` is 400 `CS_RULE_ID_INVALID` and an invalid query parameter 400
 * `CS_RULE_INVALID_PAGE` (at `params.rule_id`, `querystring.<name>`), a body over the routes'
 * `bodyLimit` is 413 `CS_RULE_TOO_LARGE`, and a Redis outage is 503 `CS_BACKEND_UNAVAILABLE`
 * naming the rule store.
 */
export const RULES_ROUTE_CONFIG = {
  validationErrorCode: { params: "CS_RULE_ID_INVALID", querystring: "CS_RULE_INVALID_PAGE" },
  bodyTooLarge: { code: "CS_RULE_TOO_LARGE", message: `a rule body may have at most ${RULE_LIMITS.bodyMaxBytes} bytes` },
  backend: "the rule store",
} as const satisfies FastifyContextConfig;

/**
 * Builds the plugin of the alerting-rules routes (encapsulated: its validator and serializer apply
 * to these routes only).
 *
 * ```ts
 * await app.register(rulesRoutes({ rules, deliveries, chains }));
 * ```
 * Needs an authentication hook that sets `request.account` (api/plugins/auth.ts) and the app's
 * error handler (api/plugins/errors.ts), which answers every error of these routes.
 * @param deps see {@link RulesRoutesDeps}.
 */
export function rulesRoutes(deps: RulesRoutesDeps): FastifyPluginAsync {
  const { rules, deliveries, deliveryStatus } = deps;
  const chains = deps.chains;
  const bodies = ruleBodySchemas(chains);
  const pageSize = deps.listPageSize ?? LIST_STREAM_PAGE_SIZE;
  /** Why an accepted rule will not fire as is (see {@link RuleWriteAnswerSchema}); a failed lookup gives no warning. */
  const ruleWarnings = async (rule: Rule): Promise<Array<{ code: string; message: string }>> => {
    if (!deps.traceSource || (rule.config.targetType !== "Trace" && rule.config.targetType !== "Call")) return [];
    const source = await deps.traceSource(rule).catch(() => null);
    if (source !== "none" && source !== "off") return [];
    const why =
      source === "off" ? "ingest runs with CHAINSIFT_INGEST_TRACES=false" : "the node has neither debug_traceBlockByNumber nor trace_block";
    return [
      {
        code: "CS_RULE_TRACES_UNAVAILABLE",
        message: `${rule.config.targetType} rules need call traces, and ${why}: this rule will not fire until traces are available`,
      },
    ];
  };
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_LIST_LIMIT) {
    throw new RangeError(`listPageSize must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${pageSize}`);
  }

  return async (app) => {
    // Params and query strings are validated, bodies by validateRuleInput (see the module comment).
    app.setValidatorCompiler(rulesValidatorCompiler);
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    app.get(
      `${RULES_PREFIX}/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "listRules",
          summary: "List the caller's rules",
          description:
            "Oldest first (createdAt, then id). Without limit and cursor: every rule of the caller in one answer (streamed), nextCursor null. " +
            `Paging (opt-in): ?limit= (1–${MAX_LIST_LIMIT}, default ${DEFAULT_LIST_LIMIT} when only cursor is given) and ?cursor= (the previous page's nextCursor).`,
          querystring: RuleListQuery,
          response: { 200: RulePageSchema, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request, reply) => {
        const accountId = callerId(request);
        const { limit, cursor } = request.query as { limit?: number; cursor?: string };
        if (limit !== undefined || cursor !== undefined) {
          return rules.list(accountId, { limit: limit ?? DEFAULT_LIST_LIMIT, cursor: cursor ?? null });
        }
        // Every rule. The first page is read before anything is sent, so a store failure there is
        // still a proper error answer (503); a single page is answered as it is.
        const first = await rules.list(accountId, { limit: pageSize });
        if (first.nextCursor === null) return first;
        const chunks = ruleListingChunks(first, (after) => rules.list(accountId, { limit: pageSize, cursor: after }));
        return reply.type(JSON_TYPE).send(Readable.from(chunks, { objectMode: false }));
      },
    );

    app.get(
      `${RULES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "getRule",
          summary: "Get one rule",
          params: RuleParams,
          response: { 200: RuleSchema, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request) => {
        const accountId = callerId(request);
        const id = ruleIdOf(request);
        const rule = await rules.get(accountId, id);
        if (!rule) throw notFound(id);
        return rule;
      },
    );

    app.post(
      `${RULES_PREFIX}/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "createRule",
          summary: "Create a rule",
          description:
            "Required: name, maxConfirmationCount, technology, blockchain, network, config. Defaults: state enabled, sendPendingAlerts false, description null. " +
            `Additional top-level properties are stored verbatim (at most ${RULE_LIMITS.extraPropertiesMax}, ${RULE_LIMITS.extraPropertiesMaxBytes} bytes of JSON). Refusals: 400 with a CS_RULE_* code and the JSON path of every problem; ` +
            `413 CS_RULE_TOO_LARGE for a body over ${RULE_LIMITS.bodyMaxBytes} bytes; 409 CS_RULE_LIMIT_REACHED when the account has the most rules it may have.`,
          body: bodies.create,
          response: { 201: RuleWriteAnswerSchema, ...RULES_ERROR_RESPONSES, 409: RulesErrorBodySchema, 413: RulesErrorBodySchema },
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request, reply) => {
        const accountId = callerId(request);
        const checked = validateRuleInput(request.body, "create", chains);
        if (!checked.ok) throw new ApiError(ruleValidationDetails(checked.errors));
        if (deps.watchlists) await checkRuleWatchlists(deps.watchlists, accountId, checked.value.config, checked.value);
        await resolveStateAbi(deps.abis ?? NO_ABIS, accountId, checked.value);
        const rule = await rules.create(accountId, checked.value);
        const warnings = await ruleWarnings(rule);
        return reply
          .code(201)
          .header("location", `${RULES_PREFIX}/${rule.id}/`)
          .send(warnings.length > 0 ? { ...rule, warnings } : rule);
      },
    );

    app.put(
      `${RULES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "updateRule",
          summary: "Change a rule",
          description:
            "Any subset of the fields, merged at the top level (config is replaced as a whole). With version, the change applies only if it is the stored version (else 409 CS_RULE_VERSION_CONFLICT). " +
            `technology, blockchain and network cannot change. 413 CS_RULE_TOO_LARGE for a body over ${RULE_LIMITS.bodyMaxBytes} bytes.`,
          params: RuleParams,
          body: bodies.update,
          response: { 200: RuleWriteAnswerSchema, ...RULES_ERROR_RESPONSES, 409: RulesErrorBodySchema, 413: RulesErrorBodySchema },
        },
        bodyLimit: RULE_LIMITS.bodyMaxBytes,
      },
      async (request) => {
        const accountId = callerId(request);
        const id = ruleIdOf(request);
        const checked = validateRuleInput(request.body, "update", chains);
        if (!checked.ok) throw new ApiError(ruleValidationDetails(checked.errors));
        if (deps.watchlists) await checkRuleWatchlists(deps.watchlists, accountId, checked.value.config, checked.value);
        await resolveStateAbi(deps.abis ?? NO_ABIS, accountId, checked.value);
        const rule = await rules.update(accountId, id, checked.value);
        const warnings = await ruleWarnings(rule);
        return warnings.length > 0 ? { ...rule, warnings } : rule;
      },
    );

    app.delete(
      `${RULES_PREFIX}/:rule_id/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "deleteRule",
          summary: "Delete a rule",
          params: RuleParams,
          response: { 204: { type: "null" }, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request, reply) => {
        const accountId = callerId(request);
        const id = ruleIdOf(request);
        const deleted = await rules.delete(accountId, id);
        if (!deleted) throw notFound(id);
        return reply.code(204).send();
      },
    );

    app.get(
      `${RULES_PREFIX}/:rule_id/deliveries/`,
      {
        config: RULES_ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "listDeliveries",
          summary: "Delivery log of a rule",
          description: `Every delivery of every action of the rule's alerts, newest first; the newest 1000 are kept. ?limit= 1–${MAX_DELIVERIES_LIMIT} (default ${DEFAULT_DELIVERIES_LIMIT}), ?offset= from the newest.`,
          params: RuleParams,
          querystring: DeliveryListQuery,
          response: { 200: DeliveryPageSchema, ...RULES_ERROR_RESPONSES },
        },
      },
      async (request) => {
        const accountId = callerId(request);
        const id = ruleIdOf(request);
        const { limit = DEFAULT_DELIVERIES_LIMIT, offset = 0 } = request.query as { limit?: number; offset?: number };
        const rule = await rules.get(accountId, id);
        if (!rule) throw notFound(id);
        const [page, destinations] = await Promise.all([
          deliveries ? deliveries.list(rule.id, { limit, offset }) : { total: 0, entries: [] },
          deliveryStatus ? deliveryStatus(rule.id, rule.config.alerts) : [],
        ]);
        return { ...page, destinations };
      },
    );
  };
}
