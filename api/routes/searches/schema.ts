/**
 * TypeBox schemas of the saved-search routes (api/routes/searches/), for the OpenAPI document only:
 * bodies are checked by `validateSearchInput` (./validate.ts) and answers serialized with
 * `JSON.stringify`, as the rules routes do, so these schemas never strip or reshape a search.
 *
 * Three named components: `SavedSearch` (the answer: with the service-set `id`, `accountId`,
 * `version`, `esQuery`, times), `SavedSearchCreate` (the POST body: the client's fields, of which
 * name, maxConfirmationCount, technology, blockchain, network, kind, query and alerts are required;
 * never `id`, which the service assigns) and `SavedSearchUpdate` (the PUT body: any subset), plus
 * `SavedSearchTest`, the body of `POST /alerting/searches/test/`. Alerts are the rules'
 * `AlertDefinition` component, queries one `SearchDslQuery` component.
 * @module
 */
import { type TSchema, Type } from "typebox";
import { AlertDefinitionSchema, RULE_LIMITS } from "../../../lib/rules/validate.js";
import { SEARCH_KINDS } from "../../../lib/searches/model.js";
import { component } from "../../../lib/validation/component.js";

/** A search DSL query (the search API's allowlist), as the client sends it. */
const SearchDslQuerySchema = Type.Object(
  {},
  {
    additionalProperties: true,
    description: 'The search DSL query (the search API\'s allowlist), e.g. {"term": {"event": "transfer"}}',
    ...component("SearchDslQuery"),
  },
);

const Chain = (f: string) => Type.String({ description: `${f}: must name a chain this deployment serves` });

/** The fields a client sends (all optional here; {@link SavedSearchCreateSchema} lists the required ones). */
const inputProperties = {
  name: Type.String({ maxLength: RULE_LIMITS.nameMaxLength }),
  description: Type.Union([Type.String({ maxLength: RULE_LIMITS.descriptionMaxLength }), Type.Null()]),
  state: Type.Enum(["enabled", "disabled"] as const, { description: "default enabled", ...component("SavedSearchState") }),
  technology: Chain("technology"),
  blockchain: Chain("blockchain"),
  network: Chain("network"),
  maxConfirmationCount: Type.Integer({ minimum: 0 }),
  sendPendingAlerts: Type.Boolean({ description: "default false" }),
  confirmOn: Type.Union([Type.Enum(["count", "finalized"] as const, component("ConfirmOn")), Type.Null()], {
    description: "finalized: confirmed once the block is at or below the node's finalized block (docs/alerting.md)",
  }),
  version: Type.Integer({ description: "ignored on create; on update, the version the client last saw (stale: 409)" }),
  kind: Type.Enum(SEARCH_KINDS, { description: "The record kind searched", ...component("SavedSearchKind") }),
  query: SearchDslQuerySchema,
  alerts: Type.Array(AlertDefinitionSchema, {
    minItems: RULE_LIMITS.alertsMin,
    maxItems: RULE_LIMITS.alertsMax,
    description: "As a rule's config.alerts",
  }),
};

type InputKey = keyof typeof inputProperties;
const REQUIRED: readonly InputKey[] = ["name", "maxConfirmationCount", "technology", "blockchain", "network", "kind", "query", "alerts"];
const optional = (keys: readonly InputKey[]): Record<string, TSchema> =>
  Object.fromEntries(keys.map((k) => [k, Type.Optional(inputProperties[k] as TSchema)]));

/** Body of `POST /alerting/searches/`: `id` and the other service-set fields are not part of it (ignored when sent). */
export const SavedSearchCreateSchema = Type.Object(
  {
    ...Object.fromEntries(REQUIRED.map((k) => [k, inputProperties[k]])),
    ...optional((Object.keys(inputProperties) as InputKey[]).filter((k) => !REQUIRED.includes(k))),
  },
  {
    additionalProperties: true,
    description: "A saved search to create: a rule's top-level fields with kind, query and alerts in place of config (docs/rules.md)",
    ...component("SavedSearchCreate"),
  },
);

/** Body of `PUT /alerting/searches/<rule_id>/`: any subset of the fields (a fetched search PUT back is accepted). */
export const SavedSearchUpdateSchema = Type.Object(optional(Object.keys(inputProperties) as InputKey[]), {
  additionalProperties: true,
  description: "Fields of a saved search to change, merged at the top level",
  ...component("SavedSearchUpdate"),
});

/** A saved search as answered (the fields are listed in docs/rules.md). */
export const SavedSearchSchema = Type.Object(
  {
    id: Type.String({ format: "uuid", description: "Server-assigned id (UUID v4), the <rule_id> of the URLs" }),
    accountId: Type.String({ description: "Owning account (the caller)" }),
    version: Type.Integer({ minimum: 1, description: "1 on creation, incremented by every change" }),
    name: Type.String(),
    kind: inputProperties.kind,
    query: SearchDslQuerySchema,
    esQuery: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description:
        "Service-added: the query as the search API sends it to Elasticsearch, which the match stage evaluates (a terms lookup by watchlist stays a placeholder naming the list); ignored on input",
    }),
    alerts: inputProperties.alerts,
    confirmOn: Type.Optional(inputProperties.confirmOn),
  },
  {
    additionalProperties: true,
    description: "A saved search: a rule's top-level fields with kind, query and alerts in place of config",
    // One named component for every route's answer (the generated clients get one model, not one per route).
    ...component("SavedSearch"),
  },
);

/** Body of `POST /alerting/searches/test/` (api/backtest/request.ts `parseSearchBacktestRequest`). */
export const SavedSearchTestSchema = Type.Object(
  {
    search: SavedSearchCreateSchema,
    from: Type.Optional(Type.Integer({ minimum: 0, description: "First block of the range (with to)" })),
    to: Type.Optional(Type.Integer({ minimum: 0, description: "Last block of the range, included (with from)" })),
    last: Type.Optional(Type.Integer({ minimum: 1, description: "Instead of from and to: the newest `last` indexed blocks" })),
  },
  {
    additionalProperties: false,
    description: "A saved search (as POST /alerting/searches/ takes it) and a block range: {search, from, to} or {search, last}",
    ...component("SavedSearchTest"),
  },
);
